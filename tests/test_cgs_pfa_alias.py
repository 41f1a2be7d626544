"""Tests of the Metropolis-Hastings kernels of CGS-PFA (issue 12): ``--kernel alias-mh`` and
``--kernel bucket-mh``.

The kernels (:mod:`bayesfa.samplers.pfa._cgs_pfa_alias_kernel`,
:mod:`bayesfa.samplers.pfa._cgs_pfa_bucket_kernel`) are Metropolis-Hastings within Gibbs for Eq. 9
of Shibata & Yoshinaka (2013) with O(1) proposals: from alias tables (two steps per position),
resp. table-free from token buckets of the other block (one step from the mixture of the two
factors' proposals; its two-step variant is checked too). Correctness is checked
against exact enumeration on the toys of :mod:`bayesfa.validation.toys`:
:func:`bayesfa.validation.pfa.kernel_tests.path_gof` from uniform starts compares the end states
of 20,000 chains after two sweeps with :func:`~bayesfa.validation.pfa.kernel_tests.alias_sweep_distribution`
(resp. ``bucket_sweep_distribution``), the exact distribution after two sweeps of the kernel
(which converges to the posterior).
False-alarm rate of each such check: 1e-3 for a seed drawn at random (Bonferroni over its two
chi-square tests); the seeds are fixed, so the tests are deterministic. The mutants fail with
p-values below 1e-20 at these seeds (asserted below 1e-8), so those tests are not fragile.

Slow tests (``-m slow``): ``bayesfa validate cgs-pfa --kernel alias-mh|bucket-mh`` (predictive,
path GOF from posterior and uniform starts, Geweke, SBC) and ``bayesfa validate`` of each mutant;
their last results are in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from bayesfa.samplers.chains import free_positions
from bayesfa.cli import main
from bayesfa.errors import InputError
from bayesfa.samplers.pfa import _cgs_pfa_alias_kernel as alias
from bayesfa.samplers.pfa import _cgs_pfa_bucket_kernel as bucket
from bayesfa.samplers.pfa import _cgs_pfa_kernel as gibbs
from bayesfa.samplers.pfa import cgs_pfa
from bayesfa.validation.pfa import kernel_tests, mutants
from bayesfa.validation.harness import validate_main
from bayesfa.validation.pfa.reference import batch_counts, path_codes, path_posterior
from bayesfa.validation.toys import get_toy


def _state(toy, seed):
    tokens = toy.train.tokens
    rng = np.random.default_rng(seed)
    positions = free_positions(tokens)
    z = np.zeros(tokens.size + 1, dtype=np.int32)
    z[positions] = rng.integers(1, toy.n_states + 1, size=positions.size, dtype=np.int32)
    state = cgs_pfa.new_counts(toy.n_states, toy.train.alphabet_size + 1)
    gibbs.fill_counts(tokens, z, *state, toy.beta)
    return positions, tokens, z, state, rng


MH = {"alias-mh": alias, "bucket-mh": bucket}
MH_MUTANTS = [*mutants.ALIAS_MUTANTS, *mutants.BUCKET_MUTANTS]


@pytest.mark.parametrize("module", [alias, bucket])
def test_sweeps_keep_counts_and_do_not_depend_on_grouping(module):
    """After MH sweeps the counts are those of ``z`` (Definition 2), the chain moves, and
    four sweeps in one call equal four calls of one sweep (tables, buckets and block counts
    live within a call)."""
    toy = get_toy("three")
    positions, tokens, z, state, rng = _state(toy, 1)
    z2, state2, rng2 = z.copy(), tuple(a.copy() for a in state), np.random.default_rng(1)
    rng2.integers(1, toy.n_states + 1, size=positions.size, dtype=np.int32)  # the same draws as _state
    start = z.copy()
    module.sweeps(4, positions, tokens, z, *state, rng, toy.beta)
    for _ in range(4):
        module.sweeps(1, positions, tokens, z2, *state2, rng2, toy.beta)
    np.testing.assert_array_equal(z, z2)
    assert not np.array_equal(z, start)
    fresh = cgs_pfa.new_counts(toy.n_states, toy.train.alphabet_size + 1)
    gibbs.fill_counts(tokens, z, *fresh, toy.beta)
    for got, want in zip(state, fresh):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("module, per_position", [(alias, 2), (bucket, bucket.STEPS)],
                         ids=["alias-mh", "bucket-mh"])
@pytest.mark.parametrize("n_sweeps", [1, 3])
def test_a_sweep_draws_its_documented_uniforms_per_position(module, per_position, n_sweeps):
    """Random numbers (the kernel's docstring): ``2 M`` uniforms per sweep for alias-MH,
    ``STEPS * M`` for bucket-MH (``M`` free positions), whatever the blocks and chunks: after
    ``n`` sweeps the Generator is where ``rng.random(per_position * M * n)`` leaves it. Both
    blocks hold free positions, so block 1's draws start at an index ``m0 > 0``."""
    toy = get_toy("three")
    positions, tokens, z, state, rng = _state(toy, 3)
    m_split = int(np.searchsorted(positions, module._block_split(tokens)))
    assert 0 < m_split < positions.size
    ref = np.random.default_rng()
    ref.bit_generator.state = rng.bit_generator.state
    module.sweeps(n_sweeps, positions, tokens, z, *state, rng, toy.beta)
    ref.random(per_position * positions.size * n_sweeps)
    assert rng.bit_generator.state == ref.bit_generator.state


def test_buckets_hold_the_other_blocks_transitions():
    """The counting sort of a block's tokens: in bucket ``(p, a')`` holds the successor states
    of its transitions ``(p, a', k)`` and out bucket ``(a, n)`` the source states ``k >= 1`` of
    ``(k, a, n)``, as many times as ``C_{p a' k}`` resp. ``C_{k a n}`` (Definition 2)."""
    toy = get_toy("three")
    positions, tokens, z, _, rng = _state(toy, 2)
    n, a_size = toy.n_states, toy.train.alphabet_size + 1
    h = int(bucket._block_split(tokens))
    assert 0 < h <= tokens.size and tokens[h - 1] == 0
    keys = a_size * (n + 1) + 1
    in_start, out_start = np.empty(keys, np.int64), np.empty(keys, np.int64)
    cursor = np.empty((2, keys), np.int64)
    in_vals, out_vals = np.empty(tokens.size, np.int32), np.empty(tokens.size, np.int32)
    for lo, hi in ((0, h), (h, tokens.size)):
        bucket._fill_buckets(tokens, z, lo, hi, n, a_size, in_start, in_vals, out_start, out_vals,
                            cursor)
        counts = batch_counts(tokens[lo:hi], z[None, lo:hi + 1], n, a_size)[0]
        co = np.zeros((n + 1, a_size, n + 1), np.float32)
        bucket._count_block(tokens, z, lo, hi, co)
        np.testing.assert_array_equal(co, counts)
        for p in range(n + 1):
            for a in range(1, a_size):
                key = p * a_size + a
                got = np.bincount(in_vals[in_start[key]:in_start[key + 1]], minlength=n + 1)
                np.testing.assert_array_equal(got, counts[p, a])
        for a in range(a_size):
            for j in range(n + 1):
                key = a * (n + 1) + j
                got = np.bincount(out_vals[out_start[key]:out_start[key + 1]], minlength=n + 1)
                np.testing.assert_array_equal(got[1:], counts[1:, a, j])
                assert got[0] == 0


@pytest.mark.parametrize("kernel", list(MH))
def test_front_reproducible_and_checkpoint_keyed_by_kernel(tmp_path, kernel):
    """Same seed, same draws; a chain checkpointed by the Gibbs kernel is not reused for the
    alias-MH kernel (the kernel is part of the chain's fingerprint), and an alias-MH run
    resumed from its own finished checkpoint returns the same draws."""
    toy = get_toy("small")
    args = (toy.train, 3, 0.5, 120, 20, 2, 2)
    a = cgs_pfa.sample_cgs_pfa(*args, seed=5, kernel=kernel)
    b = cgs_pfa.sample_cgs_pfa(*args, seed=5, kernel=kernel)
    np.testing.assert_array_equal(a.counts, b.counts)
    assert a.info["kernel"] == kernel
    g = cgs_pfa.sample_cgs_pfa(*args, seed=5, kernel="gibbs", checkpoint_dir=tmp_path)
    assert not np.array_equal(g.counts, a.counts)
    c = cgs_pfa.sample_cgs_pfa(*args, seed=5, kernel=kernel, checkpoint_dir=tmp_path)
    assert c.info["chains_resumed"] == 0
    np.testing.assert_array_equal(c.counts, a.counts)
    d = cgs_pfa.sample_cgs_pfa(*args, seed=5, kernel=kernel, checkpoint_dir=tmp_path)
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
    assert vars(parser.parse_args(["--kernel", "bucket-mh"]))["kernel"] == "bucket-mh"


def test_validate_cli_rejects_bad_kernel_use(capsys):
    with pytest.raises(SystemExit) as err:
        main(["validate", "cgs-pfa", "--kernel", "metropolis"])
    assert err.value.code == 2
    assert main(["validate", "oracle-pfa", "--kernel", "alias-mh"]) == 2
    assert "cgs-pfa only" in capsys.readouterr().err


def test_alias_sweep_distribution_reaches_the_posterior():
    """The exact MH sweeps of :func:`kernel_tests.alias_sweep_distribution` and
    :func:`kernel_tests.bucket_sweep_distribution` (one and two steps) are stochastic maps that
    converge to ``Pr(z | alpha)`` (they leave it invariant), and after two sweeps they differ
    from the Gibbs sweep's distribution and from each other (they are other kernels)."""
    toy = get_toy("tiny")
    pp = path_posterior(toy.train, toy.n_states, toy.beta)
    uniform = np.full(pp.prob.size, 1.0 / pp.prob.size)
    exact = [kernel_tests.alias_sweep_distribution,
             lambda *a: kernel_tests.bucket_sweep_distribution(*a, steps=1),
             lambda *a: kernel_tests.bucket_sweep_distribution(*a, steps=2)]
    twos = [kernel_tests.sweep_distribution(pp, uniform, 2)]
    for dist in exact:
        two = dist(pp, uniform, 2)
        assert two.sum() == pytest.approx(1.0) and two.min() >= 0
        assert min(np.abs(two - other).sum() for other in twos) > 1e-3
        twos.append(two)
        np.testing.assert_allclose(dist(pp, pp.prob, 1), pp.prob, atol=1e-12)
        np.testing.assert_allclose(dist(pp, uniform, 300), pp.prob, atol=1e-9)


@pytest.mark.parametrize("kernel", list(MH))
def test_alias_kernel_matches_its_exact_sweep_distribution(kernel):
    """20,000 chains from uniform starts, two MH sweeps each, against the exact
    distribution (false-alarm rate 1e-3)."""
    check = kernel_tests.path_gof("tiny", None, start="uniform", seed=0, kernel=kernel)
    assert check.passed, check.to_table()
    assert f"{kernel[:-3]}-MH" in check.description


def test_two_step_variant_against_its_exact_sweep_distribution():
    """The two-step variant of the bucket kernel (an out step then an in step per position,
    ``build_sweep(None, 2)``): 20,000 chains from uniform starts, two sweeps each, against
    ``bucket_sweep_distribution(..., steps=2)``, Pearson chi-square over the paths (false-alarm
    rate 1e-3 for a random seed; fixed seed). (Its mutants failed it with p = 6e-20 and 0,
    benchmarks/RESULTS.md; not repeated here: the one-step mutants below cover the switches.)"""
    toy = get_toy("tiny")
    pp = path_posterior(toy.train, toy.n_states, toy.beta)
    tokens = toy.train.tokens
    positions = free_positions(tokens)
    rng = np.random.default_rng(0)
    sweep = bucket.build_sweep(None, 2)
    state = cgs_pfa.new_counts(toy.n_states, toy.train.alphabet_size + 1)
    ends = np.zeros((20_000, tokens.size + 1), dtype=np.int32)
    for z in ends:
        z[positions] = rng.integers(1, toy.n_states + 1, size=positions.size, dtype=np.int32)
        gibbs.fill_counts(tokens, z, *state, toy.beta)
        sweep(2, positions, tokens, z, *state, rng, toy.beta)
    target = kernel_tests.bucket_sweep_distribution(pp, np.full(pp.prob.size, 1 / pp.prob.size), 2,
                                                    steps=2)
    observed = np.bincount(path_codes(ends, tokens, toy.n_states), minlength=pp.prob.size)
    assert kernel_tests.pooled_chi2(observed, target)[2] >= 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("variant", MH_MUTANTS)
def test_alias_mutants_fail_the_uniform_start_check(variant):
    """Each MH mutant (delta term dropped; the proposal's own probabilities replaced by the
    current counts' in the ratio) fails the cheapest check that catches it."""
    check = kernel_tests.path_gof("tiny", variant, start="uniform", seed=0)
    assert not check.passed
    assert min(r["p_value"] for r in check.rows) < 1e-8


def test_alias_mutants_are_known_to_validate():
    names = mutants.all_mutant_names()
    assert names[:len(mutants.mutant_names())] == mutants.mutant_names()
    assert {"cgs-pfa:mutant-alias-no-delta", "cgs-pfa:mutant-alias-stale-table"} <= set(names)
    assert {"cgs-pfa:mutant-bucket-no-delta", "cgs-pfa:mutant-bucket-current-counts"} <= set(names)
    assert mutants.Kernel("alias-no-delta").kernel_name == "alias-mh"
    assert mutants.Kernel("bucket-no-delta").kernel_name == "bucket-mh"
    assert alias.build_sweep(None) is alias.sweeps
    assert bucket.build_sweep(None) is bucket.sweeps
    for module in (alias, bucket):
        with pytest.raises(ValueError):
            module.build_sweep("no-such-mutation")
    with pytest.raises(ValueError):
        bucket.build_sweep(None, 3)


@pytest.mark.parametrize("kernel", list(MH))
def test_control_driver_reproduces_the_front(kernel):
    """The validation driver with the production MH kernel reproduces ``cgs-pfa --kernel
    KERNEL`` draw for draw, so its mutants are the production sampler plus one bug."""
    toy = get_toy("small")
    real = cgs_pfa.sample_cgs_pfa(toy.train, 2, 0.5, 200, 50, 2, 2, seed=3, kernel=kernel)
    counts, *_ = mutants.sample_variant(toy.train, "control", 2, 0.5, 200, 50, 2, 2, 3,
                                        kernel_name=kernel)
    np.testing.assert_array_equal(real.counts, counts)


@pytest.mark.slow
@pytest.mark.parametrize("kernel", list(MH))
def test_validate_alias_kernel_passes(kernel):
    """``bayesfa validate cgs-pfa --kernel KERNEL``: every check passes (about 2 minutes)."""
    out = json.loads(validate_main("cgs-pfa", "tiny", True, seed=0, kernel=kernel)[0])
    assert out["passed"], [c["name"] for c in out["checks"] if not c["passed"]]
    assert [c["name"] for c in out["checks"]] == ["predictive", "recorded", "path-gof",
                                                  "path-gof-uniform-start", "geweke", "sbc"]


@pytest.mark.slow
@pytest.mark.parametrize("variant", MH_MUTANTS)
def test_validate_alias_mutants_fail(variant):
    out = json.loads(validate_main(mutants.PREFIX + variant, "tiny", True, seed=0)[0])
    assert not out["passed"]
    failed = {c["name"] for c in out["checks"] if not c["passed"]}
    assert {"path-gof", "path-gof-uniform-start"} <= failed
