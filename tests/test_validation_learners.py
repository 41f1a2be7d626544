"""``bayesfa validate`` for the methods that do not sample (issue 21, item 4) and
``bayesfa validate --list``: each new validate passes on the method, its mutants fail, the
listing reads the specs' hooks, and "not applicable" exits 0.

Every check here is exact (rounding tolerances) except ``memoizer``'s ``joint-vs-hpyp`` and
``hpyp``'s ``hyper-conditional``, which have false-alarm rate 1e-3 each at the fixed seeds used.
"""

from __future__ import annotations

import json
import math
import sys
import types

import numpy as np
import pytest

from bayesfa.cli import main
from bayesfa.corpus import Corpus
from bayesfa.methods import REGISTRY, get_method, method_names
from bayesfa.validation.harness import hooks, mutant_names_of, validate

DETERMINISTIC = ["cvb0", "cvb2", "gcvb0", "hmm-em", "estatemerge", "alergia", "evgram", "cvgram"]

#: mutant -> a check that must fail for it
MUTANT_CATCHER = {
    "cvb0:mutant-no-delta-term": "moments",
    "cvb0:mutant-no-lemma1-correction": "moments",
    "cvb2:mutant-no-half-in-taylor": "update",
    "cvb2:mutant-no-variance": "update",
    "gcvb0:mutant-grad-no-log-q": "gradient",
    "gcvb0:mutant-grad-no-incoming": "gradient",
    "estatemerge:mutant-no-folded-factor": "merges",
    "alergia:mutant-merged-counts-test": "merges",
}


@pytest.mark.parametrize("method", DETERMINISTIC)
def test_validate_passes_with_exact_checks(method):
    report = validate(method, "tiny", 0)
    assert report.passed, report.to_table()
    assert report.info["exact"] and all(c.alpha == 0 for c in report.checks)
    assert [c.name for c in report.checks] == hooks(get_method(method)).check_names()


@pytest.mark.slow
@pytest.mark.parametrize("mutant", sorted(MUTANT_CATCHER))
def test_mutant_fails_its_check(mutant):
    assert mutant in mutant_names_of(mutant.partition(":")[0])
    report = validate(mutant, "tiny", 0)
    assert not report.passed
    assert not report.check(MUTANT_CATCHER[mutant]).passed, report.to_table()


def test_cvb_fixed_point_is_not_the_symmetric_one():
    """At the toy's beta the fit sits at q = 1/N, where every symmetric update is stationary:
    the checks use beta = 0.1, where it does not."""
    report = validate("cvb2", "tiny", 0)
    rows = report.check("fixed-point").rows
    assert max(abs(r["q_t"][0] - r["q_t"][1]) for r in rows) > 0.4


def test_validate_cvb0_from_the_cli_exits_0(capsys):
    assert main(["validate", "cvb0"]) == 0
    out = capsys.readouterr().out
    assert "PASSED" in out and "FAILED" not in out


def test_validate_mutant_from_the_cli_exits_1(capsys):
    assert main(["validate", "cvb0:mutant-no-delta-term", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "failed" and not data["passed"]


def test_memoizer_agrees_with_the_hpyp_and_its_mutant_does_not(monkeypatch):
    """500 particles instead of 2 000 and strings up to length 1, to stay fast (the mutant's
    |z| is ~20 there)."""
    from bayesfa.validation.ngram import hpyp

    monkeypatch.setattr(hpyp, "MEMOIZER_PARTICLES", 500)
    monkeypatch.setattr(hpyp, "MEMOIZER_TEST_LENGTH", 1)
    report = validate("memoizer", "tiny", 0)
    assert report.passed, report.to_table()
    assert report.check("compressed-tree").summary == {} and report.check("compressed-tree").passed
    bad = validate("memoizer:mutant-no-join-discount", "tiny", 0)
    assert bad.check("compressed-tree").passed  # the model is right, the seating is not
    assert not bad.check("joint-vs-hpyp").passed


@pytest.mark.parametrize("variant,ok", [(0, True), (2, False), (3, False), (4, False)])
def test_hpyp_hyperparameter_move_against_its_exact_conditional(variant, ok):
    """Variant 4 (``hyper-skip-two-customers``, the audit's slip of issue 39) is caught because
    the fixed seating holds restaurants of exactly two customers: p < 1e-12 against a
    threshold of 2.5e-4 at seed 0 (seeds 0-4: p 1e-33 to 6e-30 for d_1 against the exact
    CDF). The correct move fails with probability 1e-3 (the check's alpha)."""
    from bayesfa.validation.ngram.hpyp import hyper_conditional_check

    check = hyper_conditional_check(seed=0, variant=variant)
    assert check.passed == ok, check.to_table()
    assert {r["parameter"] for r in check.rows} == {"d_0", "theta_0", "d_1", "theta_1"}
    if variant == 4:
        assert check.summary["min_p_value"] < 1e-12


def test_hpyp_hyper_seating_covers_every_case_of_the_move():
    """Restaurants of 1 customer, of exactly 2 (at one table and at two), and of many, with
    one table and several; table sizes 1, 2 and more; and the root's customers are the
    children's tables plus one datum (the seating is a valid HPYP state)."""
    from bayesfa.validation.ngram.hpyp import hyper_seating

    depth, c, t, cs, ts, sizes, off = hyper_seating()
    children = depth == 1
    assert {1, 2} <= set(cs[children].tolist()) and cs[children].max() >= 4
    two = children & (cs == 2)
    assert set(ts[two].tolist()) == {1, 2}
    assert {1} < set(ts.tolist())
    table_sizes = {int(x) for u in range(depth.size) for w in range(c.shape[1])
                   for x in sizes[off[u, w]:off[u, w] + t[u, w]]}
    assert {1, 2, 3} <= table_sizes
    np.testing.assert_array_equal(c[0] - t[children].sum(axis=0), [1, 0, 0])


def test_exact_hyper_draws_match_the_grid_posterior():
    """The rejection sampler of the reference against a numerical integration of the same
    conditional (posterior mean of d at depth 1; 5 standard errors)."""
    from bayesfa.validation.ngram.hpyp import exact_hyper_draws, hyper_log_likelihood

    nodes = [(3, 4, [2, 1, 1]), (2, 3, [2, 1])]
    prior = np.array([1.0, 1.0, 1.0, 1.0])
    d, th = exact_hyper_draws(nodes, prior, 20_000, np.random.default_rng(1))
    gd, gt = np.meshgrid(np.linspace(5e-4, 1 - 5e-4, 1000), np.linspace(5e-3, 40, 4000))
    w = np.exp(hyper_log_likelihood(gd, gt, nodes) - gt)  # Gamma(1, 1) prior on theta
    mean_d = float((w * gd).sum() / w.sum())
    assert abs(d.mean() - mean_d) < 5 * d.std() / math.sqrt(d.size)


def test_exact_hyper_cdfs_match_an_independent_quadrature():
    """The check's exact marginal CDFs (midpoint rule on its grid) against scipy's adaptive
    quadrature of the same conditional at a few points, to 2e-4 (the KS statistic at 10,000
    draws resolves 1e-2); and each is a CDF (0 at the left end, 1 at the right)."""
    from scipy import integrate

    from bayesfa.validation.ngram.hpyp import exact_hyper_cdfs, hyper_log_likelihood

    nodes = [(3, 4, [2, 1, 1]), (2, 3, [2, 1])]
    prior = np.array([1.0, 1.0, 1.0, 1.0])
    cdf_d, cdf_t = exact_hyper_cdfs(nodes, prior)

    def dens(th, d):  # Beta(1, 1) x Gamma(1, 1) prior times the seating's factor
        return math.exp(float(hyper_log_likelihood(np.array(d), np.array(th), nodes)) - th)

    total = integrate.dblquad(dens, 0.0, 1.0, 0.0, 60.0, epsabs=1e-11)[0]
    for x in (0.2, 0.5, 0.8):
        want = integrate.dblquad(dens, 0.0, x, 0.0, 60.0, epsabs=1e-11)[0] / total
        assert abs(float(cdf_d(x)) - want) < 2e-4
    for x in (0.5, 1.5, 4.0):
        want = integrate.dblquad(dens, 0.0, 1.0, 0.0, x, epsabs=1e-11)[0] / total
        assert abs(float(cdf_t(x)) - want) < 2e-4
    assert float(cdf_d(0.0)) == 0.0 and float(cdf_t(100.0)) == 1.0


def test_greedy_reference_evidence_by_hand():
    """Eq. 21 by hand on the prefix tree of {"a"} (symbols: end, a, b): the root read one
    "a", the node "a" one end; merged into one state (a loop on "a"): one "a" and one end."""
    from scipy.special import gammaln

    from bayesfa.validation.learners.greedy import Automaton

    beta = 0.5
    m = Automaton(Corpus.from_strings([[0]], 2))
    root = (gammaln(1 + beta) - gammaln(beta)) + gammaln(3 * beta) - gammaln(1 + 3 * beta)
    leaf = (gammaln(1 + beta) - gammaln(beta)) + gammaln(3 * beta) - gammaln(1 + 3 * beta)
    assert m.log_evidence(beta) == pytest.approx(root + leaf, abs=1e-12)
    m.merge((), (1,))  # "a" folded into the root: counts (end 1, a 1)
    both = 2 * (gammaln(1 + beta) - gammaln(beta)) + gammaln(3 * beta) - gammaln(2 + 3 * beta)
    assert m.log_evidence(beta) == pytest.approx(both, abs=1e-12)


def test_greedy_mismatch_is_caught(monkeypatch):
    """The ``merges`` check compares whole machines: a method that learns another machine
    (here: ALERGIA with another significance than the reference's) fails it."""
    from bayesfa.learners.greedy import alergia as module

    real = module.alergia
    monkeypatch.setattr(module, "alergia", lambda corpus, alpha: real(corpus, 2.0))
    report = validate("alergia", "tiny", 0)
    assert not report.check("merges").passed


# -- validate --list ------------------------------------------------------------------------

def test_list_names_every_method_with_its_mutants(capsys):
    assert main(["validate", "--list"]) == 0
    out = capsys.readouterr().out
    for name in method_names():
        assert f"\n{name}: " in "\n" + out
        for mutant in mutant_names_of(name):
            assert mutant in out
    assert main(["validate", "--list", "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert [e["method"] for e in entries] == method_names()
    by_name = {e["method"]: e for e in entries}
    assert by_name["cvb0"]["checks"] == ["moments", "update", "fixed-point", "expected-counts"]
    assert by_name["hpyp"]["checks"] == ["predictive", "recorded", "hyper-conditional"]
    assert by_name["memoizer"]["mutants"] == ["memoizer:mutant-no-join-discount"]


def test_list_reads_the_spec_hooks(monkeypatch):
    """Checks and mutants come from the specs (check_names, mutant_names), not from a list
    in the harness."""
    from bayesfa.validation.harness import method_listing
    from bayesfa.validation.learners import cvb

    monkeypatch.setattr(cvb.CVBSpec, "check_names", lambda self: ["a-new-check"])
    monkeypatch.setattr(cvb.CVBSpec, "mutant_names", lambda self: ["a-new-mutant"])
    entry = method_listing("cvb0")
    assert entry["checks"] == ["a-new-check"]
    assert entry["mutants"] == ["cvb0:mutant-a-new-mutant"]


def test_list_and_method_together_is_an_input_error(capsys):
    assert main(["validate", "cvb0", "--list"]) == 2
    assert main(["validate"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "Traceback" not in err


def test_not_applicable_exits_0(monkeypatch, capsys):
    """A spec with ``not_applicable`` reports the reason and exit 0, never FAILED."""
    from bayesfa.learners.cvb import CVB0

    class Spec:
        not_applicable = "this toy method has no model to enumerate"

    method = types.SimpleNamespace(**{k: getattr(CVB0, k) for k in ("add_arguments", "fit")},
                                   name="fake", validation="fake_na_spec:SPEC")
    monkeypatch.setitem(sys.modules, "fake_na_method", types.SimpleNamespace(METHOD=method))
    monkeypatch.setitem(sys.modules, "fake_na_spec", types.SimpleNamespace(SPEC=Spec()))
    monkeypatch.setitem(REGISTRY, "fake", "fake_na_method:METHOD")
    assert main(["validate", "fake"]) == 0
    out = capsys.readouterr().out
    assert "NOT APPLICABLE" in out and "no model to enumerate" in out and "FAILED" not in out
    assert main(["validate", "fake", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "not applicable"
    assert main(["validate", "--list", "--json"]) == 0
    entry = {e["method"]: e for e in json.loads(capsys.readouterr().out)}["fake"]
    assert entry["kind"] == "not applicable" and entry["notes"] == [Spec.not_applicable]
