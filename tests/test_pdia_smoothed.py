"""The smoothed PDIA (``--method pdia-smoothed``): emission kernel, exact reference, front."""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest
from scipy import integrate, special

from bayesfa.corpus import Corpus
from bayesfa.methods import get_method
from bayesfa.validation.pdia.smoothed import FIXED, log_emission_marginal
from bayesfa.validation.toys import all_strings, get_toy


def options(**kw):
    parser = argparse.ArgumentParser()
    get_method("pdia-smoothed").add_arguments(parser)
    opts = vars(parser.parse_args([]))
    opts.update(kw)
    return opts


def test_emission_marginal_matches_quadrature_over_pi0():
    """Antoniak's table-count sum against a direct integral over ``pi0`` (two symbols;
    ``beta0 = 2``: a smooth integrand, so that the quadrature is accurate)."""
    counts, beta, beta0 = [[2, 1], [0, 3], [1, 1]], 0.7, 2.0

    def integrand(p):
        out = 1.0
        for row in counts:
            a = np.array([beta * p, beta * (1 - p)])
            out *= math.exp(special.gammaln(beta) - special.gammaln(beta + sum(row))
                            + np.sum(special.gammaln(a + row) - special.gammaln(a)))
        return out * math.exp(special.gammaln(beta0) - 2 * special.gammaln(beta0 / 2)) \
            * (p * (1 - p)) ** (beta0 / 2 - 1)

    value, err = integrate.quad(integrand, 0, 1, limit=200, epsabs=0, epsrel=1e-12)
    assert err < 1e-10 * value
    assert log_emission_marginal(counts, beta, beta0) == pytest.approx(math.log(value), abs=1e-9)


def test_three_d_table_is_the_base_measure_likelihood():
    """The kernel's 3-D ``lg`` (compile-time switch of ``_pdfa_kernel``): with a uniform
    ``pi0`` it reproduces the PDIA's 2-D table, with any ``pi0`` the lgamma sum."""
    from bayesfa.samplers.pdia import _pdfa_kernel as K
    from bayesfa.samplers.pdia._smoothed_emission_kernel import fill_lg_base, log_emission_beta

    rng = np.random.default_rng(0)
    cnt = rng.integers(0, 6, size=(5, 4)).astype(np.int32)
    cnt[2] = 0
    cnt[:, 0] = [0, 4, 0, 0, 0]  # every emission of symbol 0 from one state: the row's last
    # entry, lg[0, 0, lim[0]], is read (issue 39: the rows filled one entry short lived)
    ctot = cnt.sum(axis=1).astype(np.int32)
    n = int(ctot.max()) + 2
    lg2 = np.zeros((2, n))
    K.fill_lg(lg2, 1.7, 4)
    lg3 = np.zeros((1, 5, n + 1))
    lim = np.append(cnt.sum(axis=0), ctot.sum()).astype(np.int64)  # as the front sets it
    fill_lg_base(lg3, 1.7, np.full(4, 0.25), lim)
    assert K.loglik(cnt, ctot, 5, lg3) == pytest.approx(K.loglik(cnt, ctot, 5, lg2), rel=1e-12)
    pi0 = rng.dirichlet(np.ones(4))
    fill_lg_base(lg3, 1.7, pi0, lim)
    assert K.loglik(cnt, ctot, 5, lg3) == pytest.approx(log_emission_beta(cnt, ctot, 5, 1.7, pi0),
                                                         rel=1e-10)
    # a symbol some state emits whose pi0 is 0 has probability 0: log -inf, not +inf (issue
    # 39: the sign dropped lived), while one no state emits costs nothing
    pi0[1], pi0[3] = 0.0, pi0[1] + pi0[3]
    assert log_emission_beta(cnt, ctot, 5, 1.7, pi0) == -np.inf
    unused = cnt.copy()
    unused[:, 1] = 0
    assert np.isfinite(log_emission_beta(unused, unused.sum(axis=1).astype(np.int32), 5, 1.7,
                                         pi0))


def test_fit_seed_trace_predict_map_and_sequence():
    method = get_method("pdia-smoothed")
    toy = get_toy("tiny")
    opts = options(iterations=40, burn_in=10, period=3, chains=2)
    fit = method.fit(toy.train, opts, 3, False)
    again = method.fit(toy.train, opts, 3, False)
    for key in fit.arrays:
        assert np.array_equal(fit.arrays[key], again.arrays[key]), key
    assert set(fit.info["sampled_hyperparameters"]) == {"alpha", "beta", "alpha0", "d", "d0",
                                                        "beta0"}
    assert set(fit.trace) >= {"log_joint", "n_states", "beta", "beta0", "pi0_entropy"}
    assert {"pi0", "beta", "beta0", "entry"} <= set(fit.info["acceptance"])
    assert len(np.unique(fit.trace["beta0"])) > 1  # beta0 moves
    p0 = np.exp(fit.arrays["lpi0"])
    assert np.allclose(p0.sum(axis=-1), 1.0) and len(np.unique(p0[..., 0])) > 1
    test = all_strings()
    for kw in ({}, {"map": True}):
        logp = method.predict_log_prob(fit.arrays, opts, test, **kw)
        assert np.all(np.isfinite(logp)) and np.all(logp < 0)
    # one long sequence: the next letter's predictive sums to one over the letters
    seq = options(iterations=20, burn_in=6, period=2, chains=1, sequence=True, **FIXED)
    fit = method.fit(Corpus.from_strings([[0, 1, 1, 0, 1, 0]], 2), seq, 0, False)
    total = sum(np.exp(method.predict_log_prob(fit.arrays, seq, Corpus.from_strings([[a]], 2)))[0]
                for a in (0, 1))
    assert total == pytest.approx(1.0, abs=1e-9)


#: two letters (the ``tiny`` toy) and three (an odd alphabet, where ``S ^ 1`` is not ``S + 1``)
MEMORY_CORPORA = {"tiny": lambda: get_toy("tiny").train,
                  "three-letters": lambda: Corpus.from_strings(
                      [[0, 1, 2], [2, 2], [], [1, 0, 1, 2, 0], [0]] * 3, 3)}


@pytest.mark.parametrize("toy", sorted(MEMORY_CORPORA))
def test_memory_estimate_is_the_pdias_plus_the_emission_arrays_and_draws(toy):
    """``estimate_memory`` is the PDIA's plus what the smoothed emissions hold: the arrays
    ``Emission.prepare`` adds to a chain or replaces (``lg``; measured on a real chain
    state) and the stored
    ``lpi0`` and ``beta0`` of a fit (measured on its arrays), exactly (the estimate counts
    every one at the size it has for sentences). The 3-D table alone is 8 (S + 1) (T + 3)
    bytes: a slip in it (issue 39's survivor ``* (T + 3)`` -> ``| (T + 3)``) fails. Two toys:
    on ``tiny`` alone the terms' bits did not overlap, so ``+`` -> ``|`` or ``^`` between them
    and ``S = A ^ 1`` for ``A + 1`` (two letters) lived (issue 39)."""
    from bayesfa.samplers.pdia import pdfa
    from bayesfa.samplers.pdia.pdia import state_capacity
    from bayesfa.samplers.pdia.pdia_smoothed import Emission

    method, pdia = get_method("pdia-smoothed"), get_method("pdia")
    corpus = MEMORY_CORPORA[toy]()
    opts = options(iterations=12, burn_in=4, period=2, chains=2)
    st = pdfa.ChainState(pdfa.CRF, pdfa.as_symbols(corpus, False), state_capacity(corpus, opts))
    before = {k: id(v) for k, v in vars(st).items() if isinstance(v, np.ndarray)}
    hyp, fixed = pdfa.hyper_values(pdfa.CRF, opts)
    Emission().prepare(st, hyp, fixed, opts, np.random.default_rng(0))
    # new arrays, and lg, which replaces the PDIA's 2-D one (counted in the PDIA's estimate)
    added = {k: v.nbytes for k, v in vars(st).items()
             if isinstance(v, np.ndarray) and before.get(k) != id(v)}
    assert set(added) == {"ehyp", "pi0", "lpi0", "lg", "lg_lim"}
    fit = method.fit(corpus, opts, 0, False)
    stored = fit.arrays["lpi0"].nbytes + fit.arrays["beta0"].nbytes
    extra = method.estimate_memory(corpus, opts) - pdia.estimate_memory(corpus, opts)
    assert extra == sum(added.values()) + stored, (extra, added, stored)


def test_pi0_gibbs_step_against_the_exact_predictive():
    """Training strings "a", "a": one transition configuration (q0 -a-> q1), so the
    posterior's randomness is ``pi0`` alone and the predictive checks the Gibbs step on it
    (and the emission likelihood it is conditioned on). z-test per string with ArviZ-ESS
    standard errors, false-alarm rate 1e-3 (Bonferroni over the 3 strings), fixed seed."""
    from scipy import stats as sps

    from bayesfa.validation.diagnostics import ess_mean
    from bayesfa.validation.pdia.smoothed import PDIA_SMOOTHED, exact_predictive

    method = get_method("pdia-smoothed")
    train = Corpus.from_strings([[0], [0]], 2)
    test = Corpus.from_strings([[], [0], [0, 0]], 2)
    opts = options(iterations=1_010, burn_in=10, period=1, chains=2, **FIXED)
    fit = method.fit(train, opts, 0, False)
    exact, _ = exact_predictive(train, test, FIXED)
    probs = np.exp(PDIA_SMOOTHED.per_sample_log_prob(fit.arrays, opts, test))
    crit = sps.norm.isf(1e-3 / (2 * 3))
    for s in range(3):
        x = probs[:, :, s]
        se = x.std(ddof=1) / math.sqrt(ess_mean(x))
        assert abs(x.mean() - math.exp(exact[s])) < crit * se, (s, x.mean(), math.exp(exact[s]))
    # the uniform-base mutant's predictive misses (same draws, no Monte Carlo slack needed)
    uniform = PDIA_SMOOTHED.mutant("uniform-predictive")
    lp = uniform.per_sample_log_prob(fit.arrays, opts, test)
    assert abs(np.exp(lp[:, :, 2]).mean() - math.exp(exact[2])) > crit * se


@pytest.mark.slow
def test_validate_passes_and_mutants_fail():
    """``bayesfa validate pdia-smoothed`` (exact enumeration and Geweke) and its mutants;
    last result in benchmarks/RESULTS.md."""
    from bayesfa.validation.harness import validate

    assert validate("pdia-smoothed", "tiny").passed
    from bayesfa.validation.pdia.smoothed import PDIA_SMOOTHED

    for name in PDIA_SMOOTHED.mutant_names():  # emission and transition-kernel mutants
        assert not validate(f"pdia-smoothed:mutant-{name}", "tiny").passed, name


def test_acceptance_rates_are_accepted_over_proposed_of_each_move():
    """``info["acceptance"]`` holds each emission move's accepted / proposed, and only for a
    move that was proposed: with ``--pi0-moves 0`` no ``pi0`` step runs (no rate), while
    ``beta`` and ``beta0`` are proposed once a sweep (40 sweeps of 2 chains: rates in
    eightieths), each accepted some times and rejected some. Issue 39: a rate over the
    ``pi0`` steps' count, floor division, and a rate read for an index shifted off the move's
    lived."""
    fit = get_method("pdia-smoothed").fit(
        get_toy("tiny").train, options(iterations=40, burn_in=10, period=3, chains=2,
                                       pi0_moves=0), 3, False)
    acc = fit.info["acceptance"]
    assert "pi0" not in acc
    for name in ("beta", "beta0"):
        assert 0 < acc[name] < 1, (name, acc[name])
        assert acc[name] * 80 == pytest.approx(round(acc[name] * 80), abs=1e-9), (name, acc)


def test_predictions_read_every_draw_unless_map_is_asked():
    """``predict_log_prob`` and ``perplexity_log_prob`` read the samples of every draw by
    default (the API passes ``map`` and ``per_symbol`` only when asked): the same as
    ``map=False``, ``per_symbol=False`` and ``letters_only=False``, not the MAP sample's, the
    per-symbol reading nor the letters' alone (issue 39: a default of ``map=True`` in either,
    and of ``per_symbol=True`` or ``letters_only=True``, lived)."""
    method = get_method("pdia-smoothed")
    opts = options(iterations=40, burn_in=10, period=3, chains=2)
    fit = method.fit(get_toy("tiny").train, opts, 3, False)
    test = Corpus.from_strings([[1, 0, 1, 1], [0], []], 2)
    default = method.predict_log_prob(fit.arrays, opts, test)
    np.testing.assert_array_equal(default,
                                  method.predict_log_prob(fit.arrays, opts, test, map=False))
    assert not np.array_equal(default, method.predict_log_prob(fit.arrays, opts, test, map=True))

    def perplexity(**kw):
        return method.perplexity_log_prob(fit.arrays, opts, test, continuation=False, **kw)

    default = perplexity()
    assert default == perplexity(map=False, per_symbol=False, letters_only=False)
    assert default != perplexity(map=True) and default != perplexity(per_symbol=True)
    assert default != perplexity(letters_only=True)  # issue 39: its default True lived


def test_each_hyperparameter_step_leaves_its_conditional_invariant():
    """validate's ``move-hyper`` check (:func:`hyper_step_check`: the MH steps on ``beta`` and
    ``beta0`` from exact draws of their conditionals, Kolmogorov-Smirnov, false-alarm rate
    1e-3 at a fixed seed) passes, and both steps move. Issue 39: ``beta0``'s current target
    ``-old + log Dir`` -> ``-old % log Dir`` and its acceptance inverted passed every test and
    validate's Geweke test at seed 0; this check fails them, a dropped Jacobian and a wrong
    Dirichlet normaliser."""
    from bayesfa.validation.pdia.smoothed import hyper_step_check

    check = hyper_step_check(seed=0)
    assert check.passed, check.to_table()
    assert [r["hyperparameter"] for r in check.rows] == ["beta", "beta0"]
    assert all(0.2 < r["accepted"] < 0.95 for r in check.rows), check.to_table()
