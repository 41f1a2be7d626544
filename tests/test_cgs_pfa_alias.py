"""Tests of the alias-MH kernel of CGS-PFA (``--kernel alias-mh``, issue 12).

The kernel (:mod:`bayesfa.samplers._cgs_pfa_alias_kernel`) is Metropolis-Hastings within Gibbs
for Eq. 9 of Shibata & Yoshinaka (2013) with O(1) alias-table proposals. Correctness is checked
against exact enumeration on the toys of :mod:`bayesfa.validation.toys`:
:func:`bayesfa.validation.kernel_tests.path_gof` from uniform starts compares the end states
of 20,000 chains after two sweeps with :func:`~bayesfa.validation.kernel_tests.alias_sweep_distribution`,
the exact distribution after two sweeps of this kernel (which converges to the posterior).
False-alarm rate of each such check: 1e-3 for a seed drawn at random (Bonferroni over its two
chi-square tests); the seeds are fixed, so the tests are deterministic. The mutants fail with
p-values below 1e-20 at these seeds (asserted below 1e-8), so those tests are not fragile.

Slow tests (``-m slow``): ``bayesfa validate cgs-pfa --kernel alias-mh`` (predictive, path GOF
from posterior and uniform starts, Geweke, SBC) and ``bayesfa validate`` of each alias mutant;
their last results are in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from bayesfa.cli import main
from bayesfa.errors import InputError
from bayesfa.samplers import _cgs_pfa_alias_kernel as alias
from bayesfa.samplers import _cgs_pfa_kernel as gibbs
from bayesfa.samplers import cgs_pfa
from bayesfa.validation import kernel_tests, mutants
from bayesfa.validation.harness import validate_main
from bayesfa.validation.reference import path_posterior
from bayesfa.validation.toys import get_toy


def _state(toy, seed):
    tokens = toy.train.tokens
    rng = np.random.default_rng(seed)
    positions = cgs_pfa._free_positions(tokens)
    z = np.zeros(tokens.size + 1, dtype=np.int32)
    z[positions] = rng.integers(1, toy.n_states + 1, size=positions.size, dtype=np.int32)
    state = cgs_pfa.new_counts(toy.n_states, toy.train.alphabet_size + 1)
    gibbs.fill_counts(tokens, z, *state, toy.beta)
    return positions, tokens, z, state, rng


def test_sweeps_keep_counts_and_do_not_depend_on_grouping():
    """After alias-MH sweeps the counts are those of ``z`` (Definition 2), the chain moves, and
    four sweeps in one call equal four calls of one sweep (tables live within a call)."""
    toy = get_toy("three")
    positions, tokens, z, state, rng = _state(toy, 1)
    z2, state2, rng2 = z.copy(), tuple(a.copy() for a in state), np.random.default_rng(1)
    rng2.integers(1, toy.n_states + 1, size=positions.size, dtype=np.int32)  # the same draws as _state
    start = z.copy()
    alias.sweeps(4, positions, tokens, z, *state, rng, toy.beta)
    for _ in range(4):
        alias.sweeps(1, positions, tokens, z2, *state2, rng2, toy.beta)
    np.testing.assert_array_equal(z, z2)
    assert not np.array_equal(z, start)
    fresh = cgs_pfa.new_counts(toy.n_states, toy.train.alphabet_size + 1)
    gibbs.fill_counts(tokens, z, *fresh, toy.beta)
    for got, want in zip(state, fresh):
        np.testing.assert_array_equal(got, want)


def test_front_reproducible_and_checkpoint_keyed_by_kernel(tmp_path):
    """Same seed, same draws; a chain checkpointed by the Gibbs kernel is not reused for the
    alias-MH kernel (the kernel is part of the chain's fingerprint), and an alias-MH run
    resumed from its own finished checkpoint returns the same draws."""
    toy = get_toy("small")
    args = (toy.train, 3, 0.5, 120, 20, 2, 2)
    a = cgs_pfa.sample_cgs_pfa(*args, seed=5, kernel="alias-mh")
    b = cgs_pfa.sample_cgs_pfa(*args, seed=5, kernel="alias-mh")
    np.testing.assert_array_equal(a.counts, b.counts)
    assert a.info["kernel"] == "alias-mh"
    g = cgs_pfa.sample_cgs_pfa(*args, seed=5, kernel="gibbs", checkpoint_dir=tmp_path)
    assert not np.array_equal(g.counts, a.counts)
    c = cgs_pfa.sample_cgs_pfa(*args, seed=5, kernel="alias-mh", checkpoint_dir=tmp_path)
    assert c.info["chains_resumed"] == 0
    np.testing.assert_array_equal(c.counts, a.counts)
    d = cgs_pfa.sample_cgs_pfa(*args, seed=5, kernel="alias-mh", checkpoint_dir=tmp_path)
    assert d.info["chains_resumed"] == 2
    np.testing.assert_array_equal(d.counts, a.counts)


def test_choose_kernel_and_cli_option(monkeypatch):
    if cgs_pfa.ALIAS_MH_MIN_STATES is None:  # no measured crossover: auto is always gibbs
        assert cgs_pfa.choose_kernel("auto", 10**6) == "gibbs"
    monkeypatch.setattr(cgs_pfa, "ALIAS_MH_MIN_STATES", 150)
    assert cgs_pfa.choose_kernel("auto", 150) == "alias-mh"
    assert cgs_pfa.choose_kernel("auto", 149) == "gibbs"
    assert cgs_pfa.choose_kernel("gibbs", 1000) == "gibbs"
    with pytest.raises(InputError):
        cgs_pfa.choose_kernel("metropolis", 10)
    with pytest.raises(InputError):
        cgs_pfa.sample_cgs_pfa(get_toy("tiny").train, 2, 0.5, 10, 0, 1, 1, seed=0, kernel="auto")
    import argparse

    parser = argparse.ArgumentParser()
    cgs_pfa.METHOD.add_arguments(parser)
    assert vars(parser.parse_args([]))["kernel"] == "auto"
    assert vars(parser.parse_args(["--kernel", "alias-mh"]))["kernel"] == "alias-mh"


def test_validate_cli_rejects_bad_kernel_use(capsys):
    with pytest.raises(SystemExit) as err:
        main(["validate", "cgs-pfa", "--kernel", "metropolis"])
    assert err.value.code == 2
    assert main(["validate", "oracle-pfa", "--kernel", "alias-mh"]) == 2
    assert "cgs-pfa only" in capsys.readouterr().err


def test_alias_sweep_distribution_reaches_the_posterior():
    """The exact alias-MH sweep of :func:`kernel_tests.alias_sweep_distribution` is a
    stochastic map that converges to ``Pr(z | alpha)`` (it leaves it invariant), and after two
    sweeps it differs from the Gibbs sweep's distribution (it is another kernel)."""
    toy = get_toy("tiny")
    pp = path_posterior(toy.train, toy.n_states, toy.beta)
    uniform = np.full(pp.prob.size, 1.0 / pp.prob.size)
    two = kernel_tests.alias_sweep_distribution(pp, uniform, 2)
    assert two.sum() == pytest.approx(1.0) and two.min() >= 0
    assert np.abs(two - kernel_tests.sweep_distribution(pp, uniform, 2)).sum() > 1e-3
    np.testing.assert_allclose(kernel_tests.alias_sweep_distribution(pp, pp.prob, 1), pp.prob,
                               atol=1e-12)
    np.testing.assert_allclose(kernel_tests.alias_sweep_distribution(pp, uniform, 300), pp.prob,
                               atol=1e-9)


def test_alias_kernel_matches_its_exact_sweep_distribution():
    """20,000 chains from uniform starts, two alias-MH sweeps each, against the exact
    distribution (false-alarm rate 1e-3)."""
    check = kernel_tests.path_gof("tiny", None, start="uniform", seed=0, kernel="alias-mh")
    assert check.passed, check.to_table()
    assert "alias-MH" in check.description


@pytest.mark.parametrize("variant", list(mutants.ALIAS_MUTANTS))
def test_alias_mutants_fail_the_uniform_start_check(variant):
    """Each alias mutant (delta term dropped; the stale table's own probabilities replaced
    by the current counts' in the ratio) fails the cheapest check that catches it."""
    check = kernel_tests.path_gof("tiny", variant, start="uniform", seed=0)
    assert not check.passed
    assert min(r["p_value"] for r in check.rows) < 1e-8


def test_alias_mutants_are_known_to_validate():
    names = mutants.all_mutant_names()
    assert names[:len(mutants.mutant_names())] == mutants.mutant_names()
    assert {"cgs-pfa:mutant-alias-no-delta", "cgs-pfa:mutant-alias-stale-table"} <= set(names)
    assert mutants.Kernel("alias-no-delta").kernel_name == "alias-mh"
    assert alias.build_sweep(None) is alias.sweeps
    with pytest.raises(ValueError):
        alias.build_sweep("no-such-mutation")


def test_control_driver_reproduces_the_front():
    """The validation driver with the production alias-MH kernel reproduces ``cgs-pfa
    --kernel alias-mh`` draw for draw, so the alias mutants are the production sampler plus
    one bug."""
    toy = get_toy("small")
    real = cgs_pfa.sample_cgs_pfa(toy.train, 2, 0.5, 200, 50, 2, 2, seed=3, kernel="alias-mh")
    counts, *_ = mutants.sample_variant(toy.train, "control", 2, 0.5, 200, 50, 2, 2, 3,
                                        kernel_name="alias-mh")
    np.testing.assert_array_equal(real.counts, counts)


@pytest.mark.slow
def test_validate_alias_kernel_passes():
    """``bayesfa validate cgs-pfa --kernel alias-mh``: every check passes (about 2 minutes)."""
    out = json.loads(validate_main("cgs-pfa", "tiny", True, seed=0, kernel="alias-mh")[0])
    assert out["passed"], [c["name"] for c in out["checks"] if not c["passed"]]
    assert [c["name"] for c in out["checks"]] == ["predictive", "path-gof", "path-gof-uniform-start",
                                                  "geweke", "sbc"]


@pytest.mark.slow
@pytest.mark.parametrize("variant", list(mutants.ALIAS_MUTANTS))
def test_validate_alias_mutants_fail(variant):
    out = json.loads(validate_main(mutants.PREFIX + variant, "tiny", True, seed=0)[0])
    assert not out["passed"]
    failed = {c["name"] for c in out["checks"] if not c["passed"]}
    assert {"path-gof", "path-gof-uniform-start"} <= failed
