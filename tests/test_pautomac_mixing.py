"""benchmarks/pautomac_mixing.py: the draw plan, the Eq. 6 and held-out-weighted mixing of
chains' per-string predictions, and that its ``single`` strategy is Table 3's chain and Eq. 6.

Deterministic (no statistical test): references are computed in probability space with plain
numpy, apart from the code they check.
"""

from __future__ import annotations


import numpy as np
import pytest

import benchmodules


@pytest.fixture(scope="module")
def mixing():
    return benchmodules.load("pautomac_mixing.py")


def test_chain_plan_is_table3_burn_in_and_keeps_both_halves(mixing):
    # 10,000 sweeps, period 100: draws at 100..10,000, Eq. 6 over 5,100..10,000 (Table 3's 50)
    assert mixing.chain_plan(10_000, 100) == (100, 100, 50)
    assert mixing.chain_plan(2_500, 100) == (100, 25, 12)  # Eq. 6 from sweep 1,300: 13 draws
    assert mixing.chain_plan(200, 100) == (100, 2, 1)
    assert mixing.chain_plan(50, 100) == (25, 2, 1)
    for sweeps in range(1, 400, 7):
        for period in (1, 3, 10, 100):
            p, n, first = mixing.chain_plan(sweeps, period)
            run = n * p
            assert 1 <= p <= period and run <= sweeps and n - first >= 1
            # every draw from ``first`` on is made after half the sweeps run, none before it
            assert (first + 1) * p > run // 2 and first * p <= run // 2


def test_mix_weighted_is_the_mixture_in_probability_space(mixing):
    rng = np.random.default_rng(1)
    log_means = np.log(rng.uniform(0.01, 0.9, size=(3, 7)))
    w = np.array([0.2, 0.5, 0.3])
    expected = np.log((w[:, None] * np.exp(log_means)).sum(axis=0))
    np.testing.assert_allclose(mixing.mix_weighted(log_means, w), expected, rtol=1e-13)
    # a one-hot weight is that chain's prediction; a weight 0 drops a chain
    np.testing.assert_allclose(mixing.mix_weighted(log_means, np.array([0.0, 1.0, 0.0])),
                               log_means[1], rtol=1e-13)
    # equal weights on chains of equal draws are Eq. 6 over all their draws
    np.testing.assert_allclose(mixing.mix_weighted(log_means, np.full(3, 1 / 3)),
                               mixing.mix_equal(log_means, [12, 12, 12]), rtol=1e-13)


def test_mix_equal_weights_each_draw_equally(mixing):
    rng = np.random.default_rng(2)
    log_means = np.log(rng.uniform(0.01, 0.9, size=(2, 5)))
    n = np.array([3, 9])  # Eq. 6: every draw counts once, so a chain by its number of draws
    expected = np.log((n[:, None] * np.exp(log_means)).sum(axis=0) / n.sum())
    np.testing.assert_allclose(mixing.mix_equal(log_means, n), expected, rtol=1e-13)


def test_heldout_weights_are_the_softmax_of_heldout_log_likelihoods(mixing):
    np.testing.assert_allclose(mixing.heldout_weights([0.0, np.log(3.0)]), [0.25, 0.75], rtol=1e-14)
    # held-out sums of whole slices (thousands of nats, hundreds apart): no overflow, sums to 1
    w = mixing.heldout_weights([-4536.4, -4883.0, -5164.3])
    assert np.isfinite(w).all() and abs(w.sum() - 1.0) < 1e-15 and w[0] == 1.0
    np.testing.assert_allclose(w[1:], np.exp([-4883.0 + 4536.4, -5164.3 + 4536.4]), rtol=1e-9)
    np.testing.assert_allclose(mixing.heldout_weights([-10.0, -11.0]),
                               mixing.heldout_weights([5000.0, 4999.0]), rtol=1e-14)


def test_spearman_needs_three_varying_pairs(mixing):
    assert mixing.spearman([1.0, 2.0], [3.0, 1.0]) == (None, None)
    assert mixing.spearman([1.0, 1.0, 1.0], [3.0, 1.0, 2.0]) == (None, None)
    rho, p = mixing.spearman([-3.0, -2.0, -1.0, 0.0], [0.4, 0.3, 0.2, 0.01])
    assert rho == pytest.approx(-1.0) and 0.0 <= p <= 1.0


def test_single_is_table3s_chain_and_eq6(mixing, tmp_path):
    """Recorded from sweep 0 and Eq. 6 over the second half, ``single`` predicts what
    pautomac_table3.py's unit predicts (burn-in L/2, online Eq. 6) with the same seed."""
    from bayesfa.corpus import Corpus
    from bayesfa.online import fit_and_predict

    rng = np.random.default_rng(3)
    strings = [rng.integers(0, 3, size=rng.integers(1, 8)) for _ in range(80)]
    train, test = Corpus.from_strings(strings[:60], 3), Corpus.from_strings(strings[60:], 3)
    settings = {"sweeps": 40, "chains": 2, "screen_fraction": 0.1, "period": 5, "beta": 0.05,
                "checkpoint_every": 120.0}
    unit = mixing._Unit(train, test, np.full(test.n_strings, -np.log(test.n_strings)), 4, 0.05,
                        7, settings, tmp_path)
    got = mixing._single(unit, 40, 2)
    table3 = fit_and_predict("cgs-pfa", train, {"states": 4, "beta": 0.05, "iterations": 40,
                                                "burn_in": 20, "period": 5, "chains": 1, "jobs": 1,
                                                "holdout": 0.0, "max_draws": 1}, 7, test)
    assert got["chains"][0]["eq6_draws"] == table3.n_draws == 4
    np.testing.assert_allclose(got["log_mean"], table3.log_mean, rtol=1e-12)
    assert got["chains"][0]["log_joint_trace"][-table3.n_draws:] == table3.trace["log_joint"][0].tolist()


def _toy_run(mixing, tmp_path, extra: dict):
    """``(unit, train, test, fit options)``: a toy unit (seed 7, N = 4, 40 sweeps) with the
    strategy options ``extra``, and the ``fit`` options of the same chain (burn-in 20)."""
    from bayesfa.corpus import Corpus

    rng = np.random.default_rng(3)
    strings = [rng.integers(0, 3, size=rng.integers(1, 8)) for _ in range(80)]
    train, test = Corpus.from_strings(strings[:60], 3), Corpus.from_strings(strings[60:], 3)
    settings = {"sweeps": 40, "chains": 2, "screen_fraction": 0.1, "period": 5, "beta": 0.05,
                "checkpoint_every": 120.0, **extra}
    unit = mixing._Unit(train, test, np.full(test.n_strings, -np.log(test.n_strings)), 4, 0.05,
                        7, settings, tmp_path)
    options = {"states": 4, "beta": 0.05, "iterations": 40, "burn_in": 20, "period": 5,
               "chains": 1, "jobs": 1, "holdout": 0.0, "max_draws": 1, **extra}
    return unit, train, test, options


def test_anneal_is_the_annealed_fit_and_eq6_over_the_same_draws(mixing, tmp_path):
    """``anneal`` with ``--anneal 10`` predicts what ``fit --anneal 10 --burn-in 20`` predicts
    (online Eq. 6 over the draws past half the sweeps) with the same seed: the trace starts
    after the tempered sweeps, and Eq. 6 is over the same draws as ``single``'s."""
    from bayesfa.online import fit_and_predict

    unit, train, test, options = _toy_run(mixing, tmp_path, {"anneal": 10, "anneal_start": 0.1})
    got = mixing._anneal(unit, 40, 2)
    fit = fit_and_predict("cgs-pfa", train, options, 7, test)
    assert got["sweeps"] == 40 and got["chains"][0]["eq6_draws"] == fit.n_draws == 4
    np.testing.assert_allclose(got["log_mean"], fit.log_mean, rtol=1e-12)
    assert got["chains"][0]["log_joint_trace"][-fit.n_draws:] == fit.trace["log_joint"][0].tolist()
    assert len(got["chains"][0]["log_joint_trace"]) == 6  # sweeps 15, 20, ..., 40


def test_split_merge_is_the_fit_with_split_merge_and_eq6_over_single_draws(mixing, tmp_path):
    """``split-merge`` predicts what ``fit --split-merge 0.5`` predicts with the same seed
    (online Eq. 6 over the draws past half the sweeps, as ``single``'s), and differs from
    ``single`` (the moves change the chain)."""
    from bayesfa.online import fit_and_predict

    extra = {"split_merge": 0.5, "split_merge_scans": 2}
    unit, train, test, options = _toy_run(mixing, tmp_path, extra)
    got = mixing._split_merge(unit, 40, 2)
    fit = fit_and_predict("cgs-pfa", train, options, 7, test)
    assert got["sweeps"] == 40 and got["split_merge"] == 0.5
    np.testing.assert_allclose(got["log_mean"], fit.log_mean, rtol=1e-12)
    plain = mixing._single(_toy_run(mixing, tmp_path / "plain", extra)[0], 40, 2)
    assert not np.allclose(plain["log_mean"], got["log_mean"])
