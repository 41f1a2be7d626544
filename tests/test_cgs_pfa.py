"""Tests of CGS-PFA (Shibata & Yoshinaka 2013, Sect. 2.3, Algorithm 1) against exact enumeration.

Statistical tests use fixed seeds and state their false-alarm rate: with the stated seed each
either passes or fails deterministically; the rate is the probability that a *correct* sampler
fails for a seed drawn at random.
"""

from __future__ import annotations

import argparse

import numpy as np
import pytest
from scipy import stats

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import get_method
from bayesfa.samplers.pfa import _cgs_pfa_kernel as kernel
from bayesfa.samplers.pfa import cgs_pfa
from bayesfa import exact
from bayesfa.validation.pfa import mutants

# 10 letters over {a, b} (0, 1), one empty string: 2**10 = 1024 paths for N = 2.
TRAIN = Corpus.from_strings([[0, 1, 0], [1, 1], [], [0, 0, 1, 1], [1]], alphabet_size=2)
# The empty string's predictive, xi~(0, 0, 0) = (C_000 + N beta) / (C_0 + N A beta), does not
# depend on z: it is checked for equality, the other strings statistically.
TEST = Corpus.from_strings([[], [0], [1, 1], [0, 1, 0], [1, 1, 1, 1], [0, 0]], alphabet_size=2)
N, BETA = 2, 0.5
CHAINS, BURN_IN, DRAWS = 200, 20, 500
Z_MAX = 4.0
# Per non-trivial string, P(|t_199| > 4) = 9e-5; Bonferroni over the 5 strings:
TEST_FAILURE_RATE = 5e-4


# ----------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------
def chain_state(corpus: Corpus, n_states: int, z: np.ndarray, beta: float):
    """The kernel's chain state for the path ``z``."""
    c, ct, ci, recip = cgs_pfa.new_counts(n_states, corpus.alphabet_size + 1)
    z = np.ascontiguousarray(z, dtype=np.int32)
    kernel.fill_counts(corpus.tokens, z, c, ct, ci, recip, beta)
    return z, c, ct, ci, recip


def random_path(corpus: Corpus, n_states: int, rng) -> np.ndarray:
    z = np.zeros(corpus.n_tokens + 1, dtype=np.int32)
    free = exact.free_positions(corpus.tokens)
    z[free] = rng.integers(1, n_states + 1, size=free.size)
    return z


def exact_conditional(corpus: Corpus, z: np.ndarray, t: int, n_states: int, beta: float) -> np.ndarray:
    """``Pr(z_t = k | z^{-t}, alpha)`` for ``k = 1..N`` by brute force from Eq. 4."""
    n_symbols = corpus.alphabet_size + 1
    zz = z.astype(np.int64).copy()
    logp = []
    for k in range(1, n_states + 1):
        zz[t] = k
        logp.append(exact.log_joint(exact.counts(corpus.tokens, zz, n_states, n_symbols), beta))
    logp = np.array(logp)
    p = np.exp(logp - logp.max())
    return p / p.sum()


def z_scores(counts: np.ndarray, train: Corpus, test: Corpus, n_states: int, beta: float):
    """``(estimate, exact, z)`` per test string for counts ``[chain, draw, N+1, A, N+1]``.

    Eq. 6 per chain; the standard error is that of the mean of the (independent) per-chain
    estimates. Where every sample gives the same value (the empty string) the estimate must
    equal the exact value to 1e-9, else ``z`` is infinite.
    """
    n_chains, n_draws = counts.shape[:2]
    flat = counts.reshape((n_chains * n_draws,) + counts.shape[2:])
    prob = np.exp(cgs_pfa.plugin_log_prob(flat, beta, test)).reshape(n_chains, n_draws, -1)
    per_chain = prob.mean(axis=1)
    estimate = per_chain.mean(axis=0)
    se = per_chain.std(axis=0, ddof=1) / np.sqrt(n_chains)
    truth = np.exp(exact.exact_plugin_predictive(train, test, n_states, beta))
    diff = estimate - truth
    constant = np.ptp(prob, axis=(0, 1)) <= 1e-12 * truth
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(constant, np.where(np.abs(diff) <= 1e-9 * truth, 0.0, np.inf), diff / se)
    return estimate, truth, z


# ----------------------------------------------------------------------------------------
# (a) the sampler's predictive converges to the exact one
# ----------------------------------------------------------------------------------------
def test_predictive_matches_exact_enumeration():
    res = cgs_pfa.sample_cgs_pfa(TRAIN, N, BETA, iterations=BURN_IN + DRAWS, burn_in=BURN_IN,
                                 period=1, chains=CHAINS, seed=20130101)
    estimate, truth, z = z_scores(res.counts, TRAIN, TEST, N, BETA)
    assert np.all(np.abs(z) < Z_MAX), (estimate, truth, z)
    # and the front's Eq. 6 estimate is the same mean over all samples
    np.testing.assert_allclose(np.exp(cgs_pfa.predict_log_prob(res.counts, BETA, TEST)), estimate,
                               rtol=1e-10)


# ----------------------------------------------------------------------------------------
# (b) the same check fails for deliberately broken kernels (and passes for the reference)
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant, broken", [
    ("control", False),  # the copied kernel with no bug: passes
    ("no-correction", True),  # Eq. 9 without the delta correction
    ("end-beta", True),  # beta instead of N beta on the end transition (Eq. 2)
])
@pytest.mark.slow
def test_check_detects_broken_kernels(variant, broken):
    """The deliberately broken kernels of :mod:`bayesfa.validation.pfa.mutants` fail the check."""
    counts, *_ = mutants.sample_variant(TRAIN, variant, N, BETA, iterations=BURN_IN + DRAWS,
                                        burn_in=BURN_IN, period=1, chains=CHAINS, seed=20130101)
    _, _, z = z_scores(counts, TRAIN, TEST, N, BETA)
    if broken:
        assert np.max(np.abs(z)) > 2 * Z_MAX, z
    else:
        assert np.all(np.abs(z) < Z_MAX), z


# ----------------------------------------------------------------------------------------
# (c) the kernel's conditional is Eq. 9 exactly
# ----------------------------------------------------------------------------------------
CORPUS_3 = Corpus.from_strings([[0, 0, 0, 1], [2, 2], [], [1, 0, 0], [0], [2, 1, 1, 1, 2]], alphabet_size=3)


@pytest.mark.parametrize("n_states", [1, 3, 5])
def test_inversion_equals_exact_conditional(n_states):
    """For every free position of several random paths, the state drawn with uniform ``u`` is
    the inverse CDF of the brute-force conditional (Eq. 4) at ``u``; deterministic."""
    rng = np.random.default_rng(7)
    grid = (np.arange(200) + 0.5) / 200
    for _ in range(6):
        z0 = random_path(CORPUS_3, n_states, rng)
        for t in exact.free_positions(CORPUS_3.tokens):
            cdf = np.cumsum(exact_conditional(CORPUS_3, z0, t, n_states, BETA))
            want = 1 + np.searchsorted(cdf, grid, side="right")
            near = np.min(np.abs(grid[:, None] - cdf[None, :-1]), axis=1, initial=1.0) < 1e-5
            for u, k in zip(grid[~near], want[~near]):
                z, c, ct, ci, recip = chain_state(CORPUS_3, n_states, z0, BETA)
                g = np.zeros(c.shape[2], dtype=np.float32)
                kernel.sweep_positions(np.array([t]), np.array([u]), CORPUS_3.tokens, z, c, ct, ci,
                                       recip, g, BETA)
                assert z[t] == k, (t, u, z[t], k)


def test_inversion_equals_exact_conditional_at_equal_states():
    """As above, at positions where ``z_{t-1} = z_t = z_{t+1}`` (set so in otherwise random
    paths, which rarely give it), with the letters ``a_{t-1} <, =, > a_t``: the cases of Eq.
    9's corrections (C^{-t} in both factors, the delta term) that hinge on the letters."""
    n_states = 3
    # inside the strings, letters go up, stay and go down
    corpus = Corpus.from_strings([[0, 0, 1, 1, 2, 2, 1, 1, 0], [1, 2, 0, 2, 1], []], alphabet_size=3)
    grid = (np.arange(100) + 0.5) / 100
    tokens = corpus.tokens
    free = exact.free_positions(tokens)
    inner = [t for t in free if t - 1 in free and t + 1 in free]
    assert {np.sign(tokens[t - 1] - tokens[t]) for t in inner} == {-1, 0, 1}
    rng = np.random.default_rng(21)
    for _ in range(4):
        for t in inner:
            z0 = random_path(corpus, n_states, rng)
            z0[t - 1:t + 2] = rng.integers(1, n_states + 1)
            cdf = np.cumsum(exact_conditional(corpus, z0, t, n_states, BETA))
            want = 1 + np.searchsorted(cdf, grid, side="right")
            near = np.min(np.abs(grid[:, None] - cdf[None, :-1]), axis=1, initial=1.0) < 1e-5
            for u, k in zip(grid[~near], want[~near]):
                z, c, ct, ci, recip = chain_state(corpus, n_states, z0, BETA)
                g = np.zeros(c.shape[2], dtype=np.float32)
                kernel.sweep_positions(np.array([t]), np.array([u]), tokens, z, c, ct, ci, recip,
                                       g, BETA)
                assert z[t] == k, (t, u, z[t], k)


def test_padded_width_is_the_smallest_multiple_of_lanes_holding_every_state():
    for n_states in range(0, 200):
        width = kernel.padded_width(n_states)
        assert width % kernel.LANES == 0 and n_states + 1 <= width < n_states + 1 + kernel.LANES


def test_counts_past_the_last_state_are_ignored():
    """``log_joint`` and ``n_edges`` read ``c [N+1, A, W]`` only up to column ``N``: junk in the
    padding columns changes neither (the kernel's tables are padded to ``W`` columns)."""
    n_states = 17  # W = 32 < 2 (N + 1): a loop past column N would also leave the array
    rng = np.random.default_rng(5)
    z0 = random_path(CORPUS_3, n_states, rng)
    z, c, ct, ci, recip = chain_state(CORPUS_3, n_states, z0, BETA)
    assert c.shape[2] > n_states + 1
    clean = (kernel.log_joint(c, BETA), kernel.n_edges(c))
    c[:, :, n_states + 1:] = 7
    assert (kernel.log_joint(c, BETA), kernel.n_edges(c)) == clean


def test_sweeps_and_draws_are_sweep_positions_with_one_uniform_block_per_sweep():
    """``sweeps(n)`` is ``n`` calls of ``sweep_positions`` over every free position with
    ``rng.random(M)`` each; ``sample_draws`` records after every ``period`` of them, and
    counts in ``out_stats[d, 0]`` the positions that changed state in those sweeps (each
    position is resampled once a sweep, so that is where consecutive paths differ)."""
    n_states, period, n_draws = 3, 2, 3
    free = exact.free_positions(CORPUS_3.tokens).astype(np.int64)
    z0 = random_path(CORPUS_3, n_states, np.random.default_rng(8))
    by_hand = chain_state(CORPUS_3, n_states, z0.copy(), BETA)
    rng = np.random.default_rng(9)
    g = np.zeros(by_hand[1].shape[2], dtype=np.float32)
    want_z = []
    for _ in range(period * n_draws):
        kernel.sweep_positions(free, rng.random(free.size), CORPUS_3.tokens, *by_hand, g, BETA)
        want_z.append(by_hand[0].copy())
    assert any((a != z0).any() for a in want_z)
    state = chain_state(CORPUS_3, n_states, z0.copy(), BETA)
    kernel.sweeps(period, free, CORPUS_3.tokens, *state, np.random.default_rng(9), BETA)
    np.testing.assert_array_equal(state[0], want_z[period - 1])
    state = chain_state(CORPUS_3, n_states, z0.copy(), BETA)
    width = n_states + 1
    out = np.zeros((n_draws, width, CORPUS_3.alphabet_size + 1, width), dtype=np.int32)
    lj, used, edges = np.zeros(n_draws), np.zeros(n_draws, np.int32), np.zeros(n_draws, np.int32)
    stats = np.full((n_draws, kernel.STATS), -1, dtype=np.int64)
    kernel.sample_draws(period, free, CORPUS_3.tokens, *state, np.random.default_rng(9), BETA,
                        out, lj, used, edges, stats)
    np.testing.assert_array_equal(state[0], want_z[-1])
    paths = [z0] + want_z
    for d in range(n_draws):
        counts = exact.counts(CORPUS_3.tokens, want_z[period * (d + 1) - 1], n_states,
                              CORPUS_3.alphabet_size + 1)
        np.testing.assert_array_equal(out[d], counts)
        moved = sum(int(np.count_nonzero(paths[s + 1] != paths[s]))
                    for s in range(period * d, period * (d + 1)))
        assert stats[d, 0] == moved
    assert stats[:, 0].sum() > 0  # the toy's chain moves
    np.testing.assert_array_equal(stats[:, 1:], -1)  # no Metropolis-Hastings step in Gibbs


def test_inversion_at_the_top_of_the_unit_interval():
    """``u = 1 - 2**-53`` (the largest double below 1) draws the inverse CDF at ``u``, not state
    ``N``: with beta = 1e-20 and state 2 unused, ``Pr(z_t = 2 | ...)`` is ~1e-21, so every
    position must keep state 1. (With ``u * total`` in float32, ``u`` rounded to 1 and the
    scan fell off the top: state ``N`` was forced.)"""
    corpus = Corpus.from_strings([[0, 0, 0, 0], [0, 0], []], 2)
    beta, n_states, u = 1e-20, 2, 1.0 - 2.0 ** -53
    assert u < 1.0 and np.float32(u) == 1.0
    z0 = np.zeros(corpus.n_tokens + 1, dtype=np.int32)
    free = exact.free_positions(corpus.tokens)
    z0[free] = 1
    for t in free:
        cond = exact_conditional(corpus, z0, t, n_states, beta)
        assert cond[1] < 1e-16  # so the inverse CDF at u is state 1
        z, c, ct, ci, recip = chain_state(corpus, n_states, z0.copy(), beta)
        g = np.zeros(c.shape[2], dtype=np.float32)
        kernel.sweep_positions(np.array([t]), np.array([u]), corpus.tokens, z, c, ct, ci, recip, g,
                               beta)
        assert z[t] == 1, (t, cond)


def _threshold_below(corpus, z0, t, n_states, beta):
    """The two adjacent doubles ``lo < hi`` where the sweep's draw at ``t`` changes from a
    state below ``z_t`` (at ``lo``) to ``z_t`` itself (at ``hi``): ``u * total`` crosses the
    kernel's own ``below``, the sum of ``g_k`` over ``k < z_t`` (bisection; the draw is
    monotone in ``u``, the inverse CDF)."""
    def draw(u):
        z, c, ct, ci, recip = chain_state(corpus, n_states, z0.copy(), beta)
        g = np.zeros(c.shape[2], dtype=np.float32)
        kernel.sweep_positions(np.array([t]), np.array([u]), corpus.tokens, z, c, ct, ci, recip,
                               g, beta)
        return int(z[t])

    old, lo, hi = int(z0[t]), 0.0, 1.0
    while lo < (mid := (lo + hi) / 2) < hi:
        if draw(mid) < old:
            lo = mid
        else:
            hi = mid
    return draw(lo), draw(hi)


def test_inversion_just_below_and_at_the_top_of_the_cdf_with_many_states():
    """At the largest ``u`` that draws a state below ``z_t = old``, the draw is ``old - 1``
    (Eq. 9's inverse CDF over ``k = 1..N``: the state whose interval ends at ``old``'s), and at
    ``u = 1 - 2**-53`` it is ``N``: deterministic, 40 states, every free position with
    ``old >= 2`` of a random path.

    This is what reaches the sweep's two fallbacks (``k = old - 1`` when ``target < below``
    but the sequential scan over ``k < old`` never exceeds ``target``; ``k = N`` when the scan
    above ``old`` does not): the kernel's ``below`` and ``total`` are the float32 sums of the
    vectorised weight loop (fastmath: reassociated, 8 lanes), which differ from the scan's
    sequential float32 sums in the last bits, so a ``u * total`` that falls between the two
    sums reaches the fallback. Random uniforms land there with probability ~1e-7 a position;
    the bisection lands there exactly. With 40 states, 66 of the 164 positions below reach the
    first fallback (counted with its mutant ``k = old & 1``, which then draws state 0 or 1;
    cosmic-ray's surviving mutant of issue 39, killed by this test)."""
    rng = np.random.default_rng(3)
    strings = [list(rng.integers(0, 3, size=rng.integers(0, 12))) for _ in range(30)]
    corpus = Corpus.from_strings(strings, alphabet_size=3)
    n_states = 40
    free = exact.free_positions(corpus.tokens)
    z0 = np.zeros(corpus.n_tokens + 1, dtype=np.int32)
    z0[free] = rng.integers(1, n_states + 1, size=free.size)
    top = 1.0 - 2.0 ** -53
    checked = 0
    for t in free:
        old = int(z0[t])
        z, c, ct, ci, recip = chain_state(corpus, n_states, z0.copy(), BETA)
        g = np.zeros(c.shape[2], dtype=np.float32)
        kernel.sweep_positions(np.array([t]), np.array([top]), corpus.tokens, z, c, ct, ci, recip,
                               g, BETA)
        assert z[t] == n_states, (t, old, z[t])
        if old < 2:
            continue
        assert _threshold_below(corpus, z0, t, n_states, BETA) == (old - 1, old), (t, old)
        checked += 1
    assert checked == 164  # the positions the docstring counts

def test_a_sweep_is_its_positions_one_at_a_time():
    """``sweep_positions`` over all free positions equals the same positions resampled one
    call at a time with the same uniforms (z and every count table): a sweep neither stops
    early nor skips a position after one that keeps its state. Deterministic; the seeds are
    chosen so that the sweeps contain kept positions followed by moves (asserted)."""
    n_states = 3
    free = exact.free_positions(CORPUS_3.tokens)
    kept_then_moved = 0
    for seed in range(6):
        rng = np.random.default_rng(100 + seed)
        z0 = random_path(CORPUS_3, n_states, rng)
        uniforms = rng.random(free.size)
        whole = chain_state(CORPUS_3, n_states, z0.copy(), BETA)
        g = np.zeros(whole[1].shape[2], dtype=np.float32)
        kernel.sweep_positions(free, uniforms, CORPUS_3.tokens, *whole, g, BETA)
        one = chain_state(CORPUS_3, n_states, z0.copy(), BETA)
        kept = False
        for m, t in enumerate(free):
            before = int(one[0][t])
            kernel.sweep_positions(free[m:m + 1], uniforms[m:m + 1], CORPUS_3.tokens, *one, g, BETA)
            if one[0][t] == before:
                kept = True
            elif kept:
                kept_then_moved += 1
        for a, b in zip(whole, one):
            np.testing.assert_array_equal(a, b)
    assert kept_then_moved > 0


def test_conditional_goodness_of_fit():
    """Repeated resampling of one position draws iid from its conditional; chi-square test at
    positions covering every case of Eq. 9. Each p-value > 1e-3 / n_positions (false-alarm
    rate 1e-3)."""
    n_states = 4
    rng = np.random.default_rng(11)
    z0 = random_path(CORPUS_3, n_states, rng)
    # t = 2 in "a a a b": z_{t-1} = z_t = z_{t+1} (the delta term of Eq. 9 and C^{-t} != C at
    # two k); t = 4: end transition; t = 18 in "c b b b c": a_{t-1} = a_t, z_t = z_{t+1}.
    z0[1:4] = 2
    z0[17:20] = [1, 3, 3]
    tokens = CORPUS_3.tokens
    positions = [2, 3, 4, 11, 17, 18, 19]
    n_draws = 4000
    for t in positions:
        assert tokens[t - 1] != 0
        expected = exact_conditional(CORPUS_3, z0, t, n_states, BETA) * n_draws
        z, c, ct, ci, recip = chain_state(CORPUS_3, n_states, z0, BETA)
        g = np.zeros(c.shape[2], dtype=np.float32)
        seen = np.zeros(n_states, dtype=np.int64)
        for u in rng.random(n_draws):
            kernel.sweep_positions(np.array([t]), np.array([u]), tokens, z, c, ct, ci, recip, g, BETA)
            seen[z[t] - 1] += 1
        keep = expected > 0
        p_value = stats.chisquare(seen[keep], expected[keep]).pvalue
        assert p_value > 1e-3 / len(positions), (t, seen, expected)


def test_counts_stay_consistent_with_z():
    rng = np.random.default_rng(3)
    for n_states in (1, 4, 40):
        z, c, ct, ci, recip = chain_state(CORPUS_3, n_states, random_path(CORPUS_3, n_states, rng), 0.1)
        positions = exact.free_positions(CORPUS_3.tokens)
        kernel.sweeps(50, positions, CORPUS_3.tokens, z, c, ct, ci, recip, rng, 0.1)
        want = chain_state(CORPUS_3, n_states, z, 0.1)
        for got, ref in zip((c, ct, ci), want[1:4]):
            np.testing.assert_array_equal(got, ref)
        np.testing.assert_allclose(recip, want[4], rtol=1e-6)
        np.testing.assert_array_equal(c[:, :, n_states + 1:], 0)
        assert np.all(z[positions] >= 1) and np.all(z[positions] <= n_states)
        np.testing.assert_array_equal(np.delete(z, positions), 0)


def test_log_joint_equals_eq4():
    rng = np.random.default_rng(5)
    for n_states, beta in ((1, 0.3), (3, 0.1), (6, 2.0)):
        z = random_path(CORPUS_3, n_states, rng)
        _, c, _, _, _ = chain_state(CORPUS_3, n_states, z, beta)
        want = exact.log_joint(exact.counts(CORPUS_3.tokens, z.astype(np.int64), n_states, 4), beta)
        assert kernel.log_joint(c, beta) == pytest.approx(want, rel=1e-12, abs=1e-9)


def test_trace_and_counts_of_a_run():
    res = cgs_pfa.sample_cgs_pfa(CORPUS_3, 4, 0.2, iterations=30, burn_in=10, period=4, chains=2, seed=1)
    assert res.counts.shape == (2, 5, 5, 4, 5) and res.counts.dtype == np.int32
    for name in ("log_joint", "n_states", "n_edges"):
        assert getattr(res, name).shape == (2, 5)
    last = exact.counts(CORPUS_3.tokens, res.z[1].astype(np.int64), 4, 4)
    np.testing.assert_array_equal(res.counts[1, -1], last)
    assert res.log_joint[1, -1] == pytest.approx(exact.log_joint(last, 0.2), rel=1e-12)
    assert res.n_edges[1, -1] == np.count_nonzero(last)
    assert res.n_states[1, -1] == np.count_nonzero(last[1:].sum(axis=(1, 2)))
    # every draw's counts describe CORPUS_3: C_0 = strings, C_000 = empty strings, total = T
    np.testing.assert_array_equal(res.counts.sum(axis=(2, 3, 4)), CORPUS_3.n_tokens)
    np.testing.assert_array_equal(res.counts[:, :, 0, 0, 0], 1)


def test_prediction_does_not_depend_on_chunking(monkeypatch):
    res = cgs_pfa.sample_cgs_pfa(CORPUS_3, 4, 0.2, iterations=30, burn_in=10, period=2, chains=3, seed=2)
    whole = cgs_pfa.predict_log_prob(res.counts, 0.2, CORPUS_3)
    monkeypatch.setattr(cgs_pfa, "_XI_CHUNK_BYTES", 3 * 8 * 5 * 4 * 5)  # 3 samples per chunk
    np.testing.assert_array_equal(cgs_pfa.predict_log_prob(res.counts, 0.2, CORPUS_3), whole)


def test_same_seed_same_result_and_jobs_do_not_matter():
    kw = dict(n_states=3, beta=0.1, iterations=25, burn_in=5, period=2, chains=3)
    a = cgs_pfa.sample_cgs_pfa(CORPUS_3, seed=42, **kw)
    b = cgs_pfa.sample_cgs_pfa(CORPUS_3, seed=42, **kw)
    c = cgs_pfa.sample_cgs_pfa(CORPUS_3, seed=42, jobs=2, **kw)
    d = cgs_pfa.sample_cgs_pfa(CORPUS_3, seed=43, **kw)
    for other in (b, c):
        for name in ("counts", "log_joint", "n_states", "n_edges", "z"):
            np.testing.assert_array_equal(getattr(a, name), getattr(other, name))
    assert not np.array_equal(a.z, d.z)
    # chains differ from each other
    assert not np.array_equal(a.z[0], a.z[1])


def test_empty_strings():
    only_empty = Corpus.from_strings([[], []], alphabet_size=2)
    res = cgs_pfa.sample_cgs_pfa(only_empty, 3, 0.5, iterations=4, burn_in=0, period=2, chains=2, seed=0)
    assert res.counts.shape == (2, 2, 4, 3, 4)
    np.testing.assert_array_equal(res.n_states, 0)
    # Pr(empty) = xi~(0,0,0) = (2 + 3 * 0.5) / (2 + 3 * 3 * 0.5); a letter: 0.5 * 3 / 6.5 * ...
    lp = cgs_pfa.predict_log_prob(res.counts, 0.5, Corpus.from_strings([[]], 2))
    assert lp[0] == pytest.approx(np.log(3.5 / 6.5), rel=1e-12)
    # an empty string in TRAIN: xi~(0,0,0) with C_000 = 1, C_0 = 5
    res = cgs_pfa.sample_cgs_pfa(TRAIN, N, BETA, iterations=3, burn_in=1, period=1, chains=1, seed=0)
    lp = cgs_pfa.predict_log_prob(res.counts, BETA, Corpus.from_strings([[]], 2))
    assert lp[0] == pytest.approx(np.log((1 + N * BETA) / (5 + N * 3 * BETA)), rel=1e-12)


def test_argument_checks(monkeypatch):
    good = dict(n_states=2, beta=0.1, iterations=10, burn_in=5, period=1, chains=1, seed=0)
    for key, bad in (("n_states", 0), ("beta", 0.0), ("beta", float("nan")), ("iterations", 0),
                     ("burn_in", -1), ("period", 0), ("chains", 0), ("jobs", 0), ("n_states", 2.5)):
        with pytest.raises(InputError):
            cgs_pfa.sample_cgs_pfa(TRAIN, **{**good, key: bad})
    with pytest.raises(InputError, match="keeps no sample"):
        cgs_pfa.sample_cgs_pfa(TRAIN, **{**good, "burn_in": 10})
    monkeypatch.setattr(cgs_pfa, "FLOAT32_EXACT_TOKENS", TRAIN.n_tokens)  # no longer a refusal:
    assert cgs_pfa.sample_cgs_pfa(TRAIN, **good).info["count_dtype"] == "float64"  # wider counts
    monkeypatch.undo()
    res = cgs_pfa.sample_cgs_pfa(TRAIN, **good)
    with pytest.raises(InputError, match="letters"):
        cgs_pfa.predict_log_prob(res.counts, 0.1, Corpus.from_strings([[2]], 3))


def test_method_protocol():
    method = get_method("cgs-pfa")
    assert method is cgs_pfa.METHOD and method.name == "cgs-pfa"
    parser = argparse.ArgumentParser()
    method.add_arguments(parser)
    options = vars(parser.parse_args(["--states", "3", "--iterations", "12", "--burn-in", "4",
                                      "--period", "2", "--chains", "2"]))
    assert options["beta"] == 0.1 and options["jobs"] == 1
    fit = method.fit(CORPUS_3, options, seed=9, progress=False)
    assert fit.arrays["counts"].shape == (2, 4, 4, 4, 4)
    assert set(fit.trace) == {"log_joint", "n_states", "n_edges", "moved"}
    assert all(v.shape == (2, 4) for v in fit.trace.values())
    lp = method.predict_log_prob(fit.arrays, options, CORPUS_3)
    assert lp.shape == (CORPUS_3.n_strings,) and np.all(np.isfinite(lp)) and np.all(lp < 0)
    again = method.fit(CORPUS_3, options, seed=9, progress=True)  # the bar goes to stderr
    np.testing.assert_array_equal(again.arrays["counts"], fit.arrays["counts"])


# ----------------------------------------------------------------------------------------
# heavier
# ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_predictive_matches_exact_three_states_three_letters():
    """N = 3 over 3 letters (3**9 paths); same protocol and failure rate as above."""
    train = Corpus.from_strings([[0, 2, 0], [1], [], [2, 2, 1, 0], [1]], alphabet_size=3)
    test = Corpus.from_strings([[], [2], [0, 0], [2, 2, 1], [1, 0]], alphabet_size=3)
    res = cgs_pfa.sample_cgs_pfa(train, 3, 0.3, iterations=1030, burn_in=30, period=1, chains=200,
                                 seed=77, jobs=2)
    estimate, truth, z = z_scores(res.counts, train, test, 3, 0.3)
    assert np.all(np.abs(z) < Z_MAX), (estimate, truth, z)


@pytest.mark.slow
def test_forkserver_workers_give_the_same_result(monkeypatch):
    import multiprocessing

    kw = dict(n_states=3, beta=0.1, iterations=25, burn_in=5, period=2, chains=3, seed=42)
    a = cgs_pfa.sample_cgs_pfa(CORPUS_3, **kw)
    monkeypatch.setattr(cgs_pfa, "mp_context", lambda: multiprocessing.get_context("forkserver"))
    b = cgs_pfa.sample_cgs_pfa(CORPUS_3, jobs=2, **kw)
    np.testing.assert_array_equal(a.counts, b.counts)


def test_checkpoints_resume_without_rerunning_finished_chains(tmp_path, monkeypatch):
    corpus = Corpus.from_strings([[0, 1, 1], [1, 0], [], [0, 0, 1, 0]], 2)
    kwargs = dict(n_states=3, beta=0.3, iterations=60, burn_in=20, period=4, chains=3, seed=11)
    full = cgs_pfa.sample_cgs_pfa(corpus, **kwargs, checkpoint_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"chain-{c:04d}.npz" for c in range(3)]
    (tmp_path / "chain-0001.npz").unlink()  # as if interrupted before chain 1 was saved
    calls = []
    run_chain = cgs_pfa._run_chain
    monkeypatch.setattr(cgs_pfa, "_run_chain", lambda *a, **k: calls.append(1) or run_chain(*a, **k))
    resumed = cgs_pfa.sample_cgs_pfa(corpus, **kwargs, checkpoint_dir=tmp_path)
    assert len(calls) == 1 and resumed.info["chains_resumed"] == 2
    np.testing.assert_array_equal(resumed.counts, full.counts)
    np.testing.assert_array_equal(resumed.log_joint, full.log_joint)
    # other settings never reuse these chains
    other = cgs_pfa.sample_cgs_pfa(corpus, **{**kwargs, "beta": 0.4}, checkpoint_dir=tmp_path)
    assert other.info["chains_resumed"] == 0 and len(calls) == 4


_BOUNDS_RUN = """
import numpy as np
from bayesfa.corpus import Corpus
from bayesfa.samplers.chains import free_positions
from bayesfa.samplers.pfa import _cgs_pfa_kernel as k
rng = np.random.default_rng(0)
corpus = Corpus.from_strings([rng.integers(0, 3, size=6).tolist() for _ in range(40)], 3)
tokens = corpus.tokens
pos = free_positions(tokens).astype(np.int64)
for n in (31, 32):
    w = k.padded_width(n)
    a = corpus.alphabet_size + 1
    c = np.zeros((n + 1, a, w), np.float32)
    ct = np.zeros((a, n + 1, w), np.float32)
    ci = np.zeros(n + 1, np.int32)
    recip = np.zeros(w, np.float32)
    z = np.zeros(tokens.size + 1, np.int32)
    z[pos] = rng.integers(1, n + 1, size=pos.size)
    k.fill_counts(tokens, z, c, ct, ci, recip, 0.05)
    k.sweeps(3, pos, tokens, z, c, ct, ci, recip, rng, 0.05)
    k.tempered_sweeps(3, pos, tokens, z, c, ct, ci, recip, rng, 0.05, 0.5)
"""


def test_sweeps_stay_in_bounds_when_a_row_has_no_padding(tmp_path):
    """At ``N = 31`` the count rows are exactly ``N + 1 = 32`` wide (``padded_width``: no spare
    column), at ``N = 32`` 64: the plain and the tempered sweep run in a fresh process under
    ``NUMBA_BOUNDSCHECK=1`` (a cache of its own) without an index error. Production compiles
    without bounds checks, so a loop one past ``N`` (the tempered weights' ``g_k^b``, issue
    39's seed-6 mutant of ``_cgs_pfa_kernel``) would write past ``g`` unseen at every other
    ``N``, where the padding absorbs it."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", _BOUNDS_RUN], env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
