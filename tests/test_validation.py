"""The validation suite: diagnostics, exact references, the harness and its power against mutants.

False-alarm rates. Every statistical check of the harness fails a *correct* sampler with
probability at most 1e-3 for a random seed (``ALPHA``; Bonferroni within each check, see
the module docstrings of :mod:`bayesfa.validation.harness` and
:mod:`bayesfa.validation.pfa.kernel_tests`). The tests below use fixed seeds, so they are
deterministic; the rate says how likely a correct kernel would be to trip them at a new seed.
The mutant tests assert failures that are far beyond the thresholds (z-scores of 8-40 and
p-values below 1e-10 at the seeds used), so they are not fragile either.

The mutants are the production sweep compiled with one deliberate error each
(:func:`bayesfa.samplers.pfa._cgs_pfa_kernel.build_sweep`); ``test_validate_every_mutant_fails``
(slow) runs ``bayesfa validate`` on each, and its last result is in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bayesfa.corpus import Corpus
from bayesfa.validation import diagnostics
from bayesfa import exact
from bayesfa.validation.pfa import kernel_tests, mutants, reference
from bayesfa.validation.harness import ALPHA, Report, compare, method_listing, validate_main
from bayesfa.validation.toys import TOYS, get_toy, all_strings

MUTANTS = ["cgs-pfa:mutant-no-correction", "cgs-pfa:mutant-end-beta"]
#: The check of ``bayesfa validate`` (default settings, toy "tiny", seed 0) that each mutant
#: fails most clearly and most cheaply: the CI test runs that one for every mutant.
CHEAPEST = {
    "no-correction": "path-gof-uniform-start",
    "skip-current-correction": "path-gof-uniform-start",
    "skip-next-correction": "path-gof-uniform-start",
    "skip-previous-correction": "predictive",
    "full-out": "path-gof-uniform-start",
    "full-in": "path-gof-uniform-start",
    "full-denominator": "predictive",
    "no-denominator": "path-gof-uniform-start",
    "end-beta": "path-gof-uniform-start",
    "skip-end-positions": "path-gof-uniform-start",
    "keep-below": "path-gof-uniform-start",
    "frozen": "path-gof-uniform-start",
}


# -- diagnostics ----------------------------------------------------------------------------

def _chains(seed=0, chains=4, draws=1000):
    return np.random.default_rng(seed).normal(size=(chains, draws))


def test_rhat_ess_well_mixed():
    x = _chains()
    assert diagnostics.rhat(x) < 1.01
    assert diagnostics.ess_bulk(x) > 2000
    s = diagnostics.diagnose_trace({"x": x})
    assert diagnostics.warnings(s) == []


def test_rhat_ess_stuck_chains():
    x = _chains() * 0.05 + np.arange(4)[:, None]  # each chain sits at its own level
    assert diagnostics.rhat(x) > 1.5
    assert diagnostics.ess_bulk(x) < 50
    text = " ".join(diagnostics.warnings(diagnostics.diagnose_trace({"x": x})))
    assert "R-hat" in text and "ESS" in text


def test_sticky_chain_low_ess():
    rng = np.random.default_rng(1)
    x = np.empty((4, 1000))
    for c in range(4):  # AR(1) with rho = 0.99
        e = rng.normal(size=1000)
        x[c, 0] = e[0]
        for t in range(1, 1000):
            x[c, t] = 0.99 * x[c, t - 1] + math.sqrt(1 - 0.99 ** 2) * e[t]
    s = diagnostics.diagnose_trace({"x": x})["x"]
    assert s["ess_bulk"] < 400
    assert any("ESS" in w for w in diagnostics.warnings({"x": s}))


def test_one_chain_rhat_is_none_and_noted():
    s = diagnostics.diagnose_trace({"x": _chains(chains=1)})
    assert s["x"]["rhat"] is None
    assert s["x"]["ess_bulk"] > 400
    assert diagnostics.warnings(s) == []  # one chain is the run's choice, not a fault
    assert diagnostics.notes(s) == ["R-hat needs >= 2 chains; this run has 1 (use --chains 4 to "
                                    "check that chains agree); the within-chain figures are reported"]


def test_constant_and_stuck_constant():
    const = diagnostics.diagnose_trace({"n": np.full((4, 100), 3.0)})
    assert const["n"]["rhat"] is None and const["n"]["note"] == "constant"
    assert diagnostics.warnings(const) == []
    stuck = diagnostics.diagnose_trace({"n": np.repeat(np.arange(4.0)[:, None], 100, axis=1)})
    assert stuck["n"]["rhat"] is None
    assert any("stuck" in w for w in diagnostics.warnings(stuck))


def test_mcse_mean_iid():
    x = _chains(draws=2500)
    assert diagnostics.mcse_mean(x) == pytest.approx(1 / math.sqrt(x.size), rel=0.1)
    assert diagnostics.mcse_mean(np.ones((2, 10))) == 0.0


def test_diagnose_run_and_plots(tmp_path):
    from bayesfa.rundir import save_run

    trace = {"log_joint": _chains(), "n_states": np.full((4, 1000), 2, dtype=np.int32),
             "vector": np.zeros((4, 1000, 3))}
    run = save_run(tmp_path / "run", method="test", options={}, seed=0,
                   arrays={"a": np.zeros(1)}, trace=trace)
    summary = diagnostics.diagnose(run)
    assert set(summary) == {"log_joint", "n_states"}  # vector-valued skipped
    assert {"mean", "rhat", "ess_bulk"} <= set(summary["log_joint"])
    json.dumps(summary, allow_nan=False)
    paths = diagnostics.plot_trace(run, tmp_path / "plots")
    for p in paths.values():
        with open(p, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"


# -- toys and exact references ------------------------------------------------------------

def test_toys_shape():
    for toy in TOYS.values():
        # two letters, but "abc" (issue 21: N >= 3, three letters, strings up to length 5)
        assert toy.train.alphabet_size == (3 if toy.name == "abc" else 2)
        assert 10 <= toy.train.n_letters <= 50
        assert 2 <= toy.n_states <= 3
        assert (toy.train.lengths == 0).any()
        assert toy.n_paths <= 65536
    test = all_strings()
    assert test.n_strings == 15 and test.lengths.max() == 3 and test.lengths[0] == 0
    assert get_toy("tiny").train == TOYS["tiny"].train  # deterministic


@pytest.mark.parametrize("n_states,beta", [(2, 0.5), (3, 0.3)])
def test_reference_matches_exact(n_states, beta):
    train = Corpus.from_strings([[], [0], [0, 0], [1, 0], [1]], 2)
    test = all_strings(2)
    pp = reference.PathPosterior.build(train, n_states, beta)
    paths, probs = exact.path_posterior(train, n_states, beta)
    np.testing.assert_array_equal(pp.paths, paths)
    np.testing.assert_allclose(pp.prob, probs, rtol=1e-10)
    np.testing.assert_allclose(pp.exact_predictive(test),
                               exact.exact_predictive(train, test, n_states, beta), atol=1e-10)
    np.testing.assert_allclose(pp.plugin_predictive(test),
                               exact.exact_plugin_predictive(train, test, n_states, beta), atol=1e-10)
    codes = reference.path_codes(pp.paths, train.tokens, n_states)
    np.testing.assert_array_equal(codes, np.arange(pp.paths.shape[0]))


def test_predictive_sums_below_one():
    toy = TOYS["tiny"]
    pp = reference.path_posterior(toy.train, toy.n_states, toy.beta)
    for logp in (pp.exact_predictive(all_strings()), pp.plugin_predictive(all_strings())):
        assert 0.5 < np.exp(logp).sum() < 1.0


def test_geweke_enumeration_normalised():
    ta, zz, prob = kernel_tests.geweke_exact((0, 1, 2), 2, 0.5)
    assert ta.shape[0] == (2 * 2) ** 3 and prob.sum() == pytest.approx(1.0)


# -- mutants: the production sweep compiled with one bug --------------------------------------

def test_mutants_cover_eq9_and_the_sweep():
    """Each piece of the sweep has a mutant: Eq. 9's delta term and its three exact-weight
    corrections, C versus C^{-t} in both factors and the denominator, the denominator, the end
    prior, the positions sampled, the keep-the-current-state shortcut, and a frozen kernel."""
    assert set(mutants.MUTANTS) == set(CHEAPEST)
    assert mutants.mutant_names() == [mutants.PREFIX + v for v in CHEAPEST]
    from bayesfa.samplers.pfa import _cgs_pfa_kernel as kernel

    assert kernel.build_sweep(None) is kernel.sweep_positions  # production: no switch on
    with pytest.raises(ValueError):
        kernel.build_sweep("no-such-mutation")


def test_variant_kernel_equals_real_kernel_when_correct():
    """The production sweep through the mutants' driver reproduces ``cgs-pfa`` draw for draw
    (same seed, same random-number use), so each mutant is the production sampler plus one
    bug, compiled from the same source."""
    from bayesfa.samplers.pfa.cgs_pfa import sample_cgs_pfa

    toy = TOYS["small"]
    real = sample_cgs_pfa(toy.train, 2, 0.5, 300, 100, 2, 3, seed=7)
    counts, log_joint, _, _ = mutants.sample_variant(toy.train, "control", 2, 0.5, 300, 100, 2, 3, 7)
    np.testing.assert_array_equal(real.counts, counts)
    np.testing.assert_allclose(real.log_joint, log_joint, rtol=1e-12)


@pytest.mark.slow
def test_each_mutant_changes_the_chain():
    """Each mutant of the production sweep, on the seed and toy of the test above, gives other
    counts than the production sampler: it is compiled (one specialisation a mutant, most of
    the test's 40 s, so it runs in .ci/run's slow subset, not the README's fast suite)."""
    from bayesfa.samplers.pfa.cgs_pfa import sample_cgs_pfa

    toy = TOYS["small"]
    real = sample_cgs_pfa(toy.train, 2, 0.5, 300, 100, 2, 3, seed=7)
    for variant in mutants.MUTANTS:
        c, *_ = mutants.sample_variant(toy.train, variant, 2, 0.5, 300, 100, 2, 3, 7)
        assert not np.array_equal(real.counts, c)


# -- the predictive comparison --------------------------------------------------------------

@pytest.mark.slow
def test_validate_cgs_pfa_passes():
    """``bayesfa validate cgs-pfa --json`` at its defaults: every check, in order, passes. Its
    50-70 s (most of it the 2,000 replica-exchange chains of two checks, a Python loop over
    sweeps on the toy) run in .ci/run's slow subset; each check also has its own fast tests
    (here, tests/test_blocked.py, tests/test_replica.py, tests/test_split_merge.py)."""
    text, passed = validate_main("cgs-pfa", "tiny", True, seed=0)
    assert "\n" not in text  # --json prints one line
    out = json.loads(text)
    assert passed and out["passed"]
    assert out["method"] == "cgs-pfa" and out["toy"] == "tiny"
    names = [c["name"] for c in out["checks"]]
    assert names == ["predictive", "recorded", "path-gof", "path-gof-uniform-start", "geweke",
                     "sbc", "split-merge-rows", "split-merge-invariance", "ffbs-given-theta",
                     "blocked-invariance", "blocked-chain", "replica-swap-invariance",
                     "replica-chain", "replica-blocked-chain"]
    assert names == method_listing("cgs-pfa")["checks"]  # what validate --list names
    assert all(c["passed"] for c in out["checks"])
    rows = out["checks"][0]["rows"]
    assert len(rows) == 15 and rows[0]["string"] == "ε"
    assert {"string", "estimate", "reference", "mcse", "z", "pass", "exact", "plugin_bias"} <= set(rows[0])


def test_plugin_bias_is_visible():
    """The plug-in limit differs from the exact posterior predictive by many MC errors (the
    predictive check of ``validate cgs-pfa``: the same fit, seed and toy)."""
    rows = compare("cgs-pfa", "tiny", seed=0).check("predictive").rows
    biased = [r for r in rows if r["mcse"] and abs(r["plugin_bias"]) > 10 * r["mcse"]]
    assert len(biased) >= 5
    assert rows[0]["plugin_bias"] == pytest.approx(0, abs=1e-12)  # Pr(ε) = (C_000 + N b) / (m + N A b)


def test_compare_report_text_and_json():
    report = compare("cgs-pfa", "three", seed=1, options={"iterations": 10_200})
    assert isinstance(report, Report) and report.passed
    assert "PASSED" in report.to_table()
    data = json.loads(report.to_json())
    assert data["passed"] is True and data["checks"][0]["alpha"] == ALPHA


@pytest.mark.parametrize("name", MUTANTS)
def test_compare_mutants_fail(name):
    report = compare(name, "small", seed=0)
    assert not report.passed
    assert report.check("predictive").summary["max_abs_z"] > 8


# -- kernel tests: power and calibration ----------------------------------------------------

def test_path_gof_real_kernel_passes():
    assert kernel_tests.path_gof("small", None, seed=3).passed


ORIGINAL = ["no-correction", "end-beta"]


@pytest.mark.parametrize("variant", ORIGINAL)
def test_path_gof_mutants_fail(variant):
    check = kernel_tests.path_gof("tiny", variant, seed=0)
    assert not check.passed
    assert max(r["p_value"] for r in check.rows) < 1e-10


@pytest.mark.parametrize("variant", ORIGINAL)
def test_geweke_mutants_fail(variant):
    check = kernel_tests.geweke(variant, seed=0)
    assert not check.passed
    assert max(abs(r["z"]) for r in check.rows) > 7


def test_frozen_kernel_passes_invariance_but_not_the_uniform_start():
    """Why the uniform-start check exists: a kernel that never moves leaves the posterior
    invariant, so the posterior-start path GOF cannot see it; from uniform starts its end
    states are uniform, far from the exact distribution after two sweeps."""
    assert kernel_tests.path_gof("tiny", "frozen", n_draws=5_000, seed=0).passed
    check = kernel_tests.path_gof("tiny", "frozen", start="uniform", n_draws=5_000, seed=0)
    assert not check.passed and max(r["p_value"] for r in check.rows) < 1e-100


@pytest.mark.slow
@pytest.mark.parametrize("variant", list(CHEAPEST))
def test_every_mutant_fails_a_validate_check(variant):
    """Each mutant fails the check of ``bayesfa validate`` named in :data:`CHEAPEST`, with the
    default settings of ``validate`` (toy "tiny", seed 0), far beyond its threshold."""
    name = CHEAPEST[variant]
    if name == "predictive":
        check = compare(mutants.PREFIX + variant, "tiny", seed=0).check("predictive")
        assert not check.passed and check.summary["max_abs_z"] > 6
    else:
        check = kernel_tests.path_gof("tiny", variant, start="uniform", seed=0)
        assert not check.passed and min(r["p_value"] for r in check.rows) < 1e-5


def test_sweep_distribution_is_the_exact_gibbs_sweep():
    """:func:`kernel_tests.sweep_distribution` against an independent computation: one sweep
    from a single path is the product over the positions, in order, of the brute-force
    conditionals of Eq. 4 (enumerated path by path); many sweeps reach ``Pr(z | alpha)``."""
    train = Corpus.from_strings([[0, 0], [1], [], [0, 1, 0]], 2)
    n_states, beta = 2, 0.5
    pp = reference.PathPosterior.build(train, n_states, beta)
    free = exact.free_positions(train.tokens)
    start = np.zeros(pp.prob.size)
    start[5] = 1.0
    got = kernel_tests.sweep_distribution(pp, start, 1)
    n_symbols = train.alphabet_size + 1

    def conditional(z, t):
        logp = []
        for k in range(1, n_states + 1):
            zz = z.copy()
            zz[t] = k
            logp.append(exact.log_joint(exact.counts(train.tokens, zz, n_states, n_symbols), beta))
        p = np.exp(np.array(logp) - max(logp))
        return p / p.sum()

    want = np.zeros(pp.prob.size)
    z0 = pp.paths[5]
    for path_index, z_end in enumerate(pp.paths):
        prob, z = 1.0, z0.copy()
        for t in free:  # resample z_t given the (partly updated) path, in increasing t
            prob *= conditional(z, t)[z_end[t] - 1]
            z[t] = z_end[t]
        want[path_index] = prob
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-15)
    uniform = np.full(pp.prob.size, 1.0 / pp.prob.size)
    np.testing.assert_allclose(kernel_tests.sweep_distribution(pp, uniform, 200), pp.prob, atol=1e-9)


@pytest.mark.parametrize("variant", ORIGINAL)
def test_sbc_catches_the_original_mutants(variant):
    """SBC at its default (CI) setting: 3,000 replicates of 19 draws (the correct kernel's
    run is part of ``test_validate_cgs_pfa_passes``)."""
    check = kernel_tests.sbc(variant, seed=0)
    assert not check.passed
    assert min(r["p_value"] for r in check.rows) < 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("toy", ["small", "three"])
def test_validate_cgs_pfa_other_toys(toy):
    text, passed = validate_main("cgs-pfa", toy, False, seed=0)
    assert passed, text


@pytest.mark.slow
@pytest.mark.parametrize("name", mutants.mutant_names())
def test_validate_every_mutant_fails(name):
    """``bayesfa validate cgs-pfa:mutant-NAME`` fails for every mutant (slow: about a minute
    each; last result in benchmarks/RESULTS.md). The original two fail every check but SBC
    at least, the frozen one the uniform-start path GOF and the predictive check."""
    out = json.loads(validate_main(name, "tiny", True, seed=0)[0])
    assert not out["passed"]
    failed = {c["name"] for c in out["checks"] if not c["passed"]}
    assert CHEAPEST[name[len(mutants.PREFIX):]] in failed
    if name in MUTANTS:
        assert {"predictive", "path-gof", "path-gof-uniform-start", "geweke", "sbc"} <= failed


# -- oracles (NUTS / DiscreteHMCGibbs: about a minute each, slow) ---------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", ["oracle-pfa", "oracle-hmm", "oracle-pdfa"])
def test_oracle_matches_exact_predictive(name):
    """Each oracle's posterior predictive on the tiny toy agrees with its model's exact
    enumeration (oracle-pdfa is run with MCMC, not its default enumeration)."""
    report = compare(name, "tiny", seed=0)
    assert report.passed, report.to_table()
    assert "unavailable" not in report.check("predictive").description


def test_budget_options():
    from bayesfa.validation.harness import budget_options

    toy = TOYS["three"]
    cgs = budget_options("cgs-pfa", toy)
    assert cgs["states"] == 3 and cgs["beta"] == toy.beta and cgs["chains"] == 4
    hmm = budget_options("oracle-hmm", toy)
    assert hmm["states"] == 3 and hmm["alpha"] == 0.4 and hmm["beta"] == 0.7
    pdfa = budget_options("oracle-pdfa", toy, overrides={"chains": 2})
    assert pdfa["pdfa_inference"] == "mcmc" and pdfa["chains"] == 2 and "jobs" in pdfa


def test_sampler_statistics_not_held_to_rhat():
    rng = np.random.default_rng(0)
    trace = {"num_steps": np.repeat(np.arange(4.0)[:, None], 50, axis=1) + rng.random((4, 50)),
             "diverging": np.zeros((4, 50))}
    trace["diverging"][0, :3] = 1
    w = diagnostics.warnings(diagnostics.diagnose_trace(trace))
    assert w == ["3 divergent transitions (NUTS): the posterior may be biased"]
