"""The finite PDFA prior with the paper's Gamma(1, 1) hyperpriors on alpha, beta, gamma.

``exact_predictive_hyper`` (enumeration of the tables, Gauss-Laguerre quadrature of the
hyperparameters) is checked against: itself with the hyperparameters fixed
(``exact_predictive``), scipy's adaptive quadrature over one hyperparameter with the others
fixed (an independent integral that uses the scalar prior ``log_delta_prior``), its own
convergence in the order, independent prior draws (ancestral sampling of alpha, beta, gamma,
mu, phi, delta, pi), and -- slow -- the NumPyro oracle with ``--hyperpriors``.

Statistical tests: ``z = (mean - exact) / se`` over ``m`` strings with a two-sided Bonferroni
bound at ``TEST_FAILURE_RATE`` (the convention of tests/test_models.py); seeds are fixed.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy import integrate, stats

from bayesfa.corpus import Corpus
from bayesfa.forward import forward_log_prob, xi_to_pfa
from bayesfa.models import pdfa

TEST_FAILURE_RATE = 1e-3

TRAIN = Corpus.from_strings([[0, 1], [0], [], [0, 1, 1], [1, 0]], 2)
TEST = Corpus.from_strings([[], [0], [1], [0, 1], [1, 0], [0, 0], [1, 1, 0]], 2)
EMPTY = Corpus.from_strings([], 2)


def z_crit(m: int) -> float:
    return float(stats.norm.isf(TEST_FAILURE_RATE / (2 * m)))


# -- deterministic checks -------------------------------------------------------------------------

def test_fixed_hyperparameters_reduce_to_exact_predictive():
    got = pdfa.exact_predictive_hyper(TRAIN, TEST, 1, alpha=0.8, beta=1.5, gamma=1.2)
    np.testing.assert_allclose(got, pdfa.exact_predictive(TRAIN, TEST, 1, 0.8, 1.5, 1.2),
                               rtol=0, atol=1e-12)


def test_prior_grid_matches_scalar_prior():
    deltas = pdfa.all_tables(2, 2)
    v = pdfa.column_counts(deltas)
    alphas, gammas = np.array([0.05, 0.7, 6.0]), np.array([0.1, 1.3, 9.0])
    for k in (0, 17, 300, 728):
        grid = pdfa.log_delta_prior_grid(v[k], alphas, gammas)
        want = [[pdfa.log_delta_prior(deltas[k:k + 1], a, g)[0] for g in gammas] for a in alphas]
        np.testing.assert_allclose(grid, want, rtol=0, atol=1e-10)


@pytest.mark.parametrize("which", ["alpha", "beta", "gamma"])
def test_quadrature_matches_scipy_integral_over_one_hyperparameter(which):
    """Integrate one hyperparameter against Exp(1) with scipy's adaptive quad_vec, the other two
    fixed, using only the scalar pieces (``log_delta_prior``, ``log_emission_marginal``)."""
    fixed = {"alpha": 0.7, "beta": 1.4, "gamma": 1.3}
    fixed.pop(which)
    deltas = pdfa.all_tables(1, 2)
    counts = pdfa.emission_counts(deltas, TRAIN)
    letters, lengths = TEST.padded()
    joint = counts[:, None] + pdfa.path_counts(deltas, letters, lengths)        # [K, n, Q, L+1]
    shift = 17.0                                                                 # keeps ~e^-17 in range
    prior = functools.lru_cache(maxsize=None)(lambda a, g: pdfa.log_delta_prior(deltas, a, g))

    def integrand(x):
        h = {**fixed, which: x}
        lp = prior(h["alpha"], h["gamma"])                                       # [K]
        den = np.exp(lp + pdfa.log_emission_marginal(counts, h["beta"]) + shift).sum()
        num = np.exp(lp[:, None] + pdfa.log_emission_marginal(joint, h["beta"]) + shift).sum(0)
        return np.exp(-x) * np.concatenate([[den], num])

    values, _ = integrate.quad_vec(integrand, 0, np.inf, epsrel=1e-10, epsabs=0)
    brute = np.log(values[1:]) - np.log(values[0])
    got = pdfa.exact_predictive_hyper(TRAIN, TEST, 1, **fixed)
    np.testing.assert_allclose(got, brute, rtol=0, atol=1e-7)


def test_quadrature_converges_in_the_order():
    """Orders 48 (default) and 64 agree to 1e-7; 16 is visibly worse (the test has power)."""
    default = pdfa.exact_predictive_hyper(TRAIN, TEST, 1)
    high = pdfa.exact_predictive_hyper(TRAIN, TEST, 1, order=64)
    low = pdfa.exact_predictive_hyper(TRAIN, TEST, 1, order=16)
    assert np.max(np.abs(default - high)) < 1e-7
    assert np.max(np.abs(low - high)) > 1e-5


def test_hyper_predictive_is_a_distribution_and_sequential():
    """Predictive masses sum to at most 1 over strings up to length 3, and Pr(train) is the
    product of the sequential predictives (the chain rule, through ``log_marginal``)."""
    post = pdfa.enumerate_posterior_hyper(TRAIN, 1)
    one_by_one = sum(pdfa.exact_predictive_hyper(TRAIN.subset(range(s)), TRAIN.subset([s]), 1)[0]
                     for s in range(TRAIN.n_strings))
    assert float(post["log_marginal"]) == pytest.approx(one_by_one, abs=1e-7)
    short = Corpus.from_strings([[]] + [[a] for a in range(2)]
                                + [[a, b] for a in range(2) for b in range(2)], 2)
    mass = np.exp(pdfa.exact_predictive_hyper(TRAIN, short, 1)).sum()
    assert 0.3 < mass < 1.0


def test_oracle_pdfa_enumeration_with_hyperpriors():
    import argparse

    from bayesfa.models.oracle_methods import ORACLE_PDFA

    parser = argparse.ArgumentParser()
    ORACLE_PDFA.add_arguments(parser)
    options = vars(parser.parse_args(["--states", "1", "--hyperpriors"]))
    result = ORACLE_PDFA.fit(TRAIN, options, seed=0, progress=False)
    assert result.info["inference"] == "enumerate" and result.info["hyperpriors"]
    got = ORACLE_PDFA.predict_log_prob(result.arrays, options, TEST)
    np.testing.assert_allclose(got, pdfa.exact_predictive_hyper(TRAIN, TEST, 1), atol=1e-12)
    post = pdfa.enumerate_posterior_hyper(TRAIN, 1)
    assert result.info["posterior_mean_beta"] == pytest.approx(float(post["mean_beta"]))


# -- independent prior draws ----------------------------------------------------------------------

def test_prior_predictive_matches_ancestral_draws_under_hyperpriors():
    """With no training data the predictive is the prior predictive: draw alpha, beta, gamma
    from Exp(1), then mu, phi, delta, pi (``sample_prior``), and average ``Pr(s | xi)``."""
    rng = np.random.default_rng(11)
    n_draws = 4000
    hyper = rng.exponential(size=(n_draws, 3))
    xi = np.stack([pdfa.sample_prior(rng, 1, 1, 2, a, b, g)[1][0] for a, b, g in hyper])
    p = np.exp(forward_log_prob(*xi_to_pfa(xi), TEST))                           # [S, n]
    exact_log = pdfa.exact_predictive_hyper(EMPTY, TEST, 1)
    z = (p.mean(0) - np.exp(exact_log)) / (p.std(0, ddof=1) / np.sqrt(n_draws))
    assert np.max(np.abs(z)) < z_crit(z.size), z
    # power: the prior predictive with the hyperparameters fixed at their prior mean differs
    fixed = pdfa.exact_predictive(EMPTY, TEST, 1, 1.0, 1.0, 1.0)
    z_fixed = (p.mean(0) - np.exp(fixed)) / (p.std(0, ddof=1) / np.sqrt(n_draws))
    assert np.max(np.abs(z_fixed)) > z_crit(z.size), z_fixed


# -- the NumPyro oracle with hyperpriors (slow: about 100 s on a shared core) ---------------------

@pytest.mark.slow
def test_oracle_pdfa_mcmc_with_hyperpriors_matches_quadrature():
    import argparse

    import arviz as az

    from bayesfa.models.oracle_methods import ORACLE_PDFA

    parser = argparse.ArgumentParser()
    ORACLE_PDFA.add_arguments(parser)
    options = vars(parser.parse_args(["--states", "1", "--pdfa-inference", "mcmc", "--hyperpriors",
                                      "--iterations", "6000", "--burn-in", "1000", "--chains", "2"]))
    result = ORACLE_PDFA.fit(TRAIN, options, seed=0, progress=False)
    assert result.info["inference"] == "mcmc" and result.info["max_r_hat"] < 1.05
    p = np.exp(forward_log_prob(*xi_to_pfa(result.arrays["xi"]), TEST)).reshape(2, -1, TEST.n_strings)
    post = pdfa.enumerate_posterior_hyper(TRAIN, 1)
    # predictive of every test string and the posterior mean of every hyperparameter
    draws = np.concatenate([p, np.stack([result.trace[h] for h in ("alpha", "beta", "gamma")], -1)], -1)
    exact = np.concatenate([np.exp(pdfa.exact_predictive_hyper(TRAIN, TEST, 1)),
                            [float(post[f"mean_{h}"]) for h in ("alpha", "beta", "gamma")]])
    ess = np.array([az.ess(draws[..., k], method="mean") for k in range(draws.shape[-1])])
    se = draws.reshape(-1, draws.shape[-1]).std(axis=0, ddof=1) / np.sqrt(ess)
    z = (draws.mean(axis=(0, 1)) - exact) / se
    assert np.max(np.abs(z)) < z_crit(z.size), z
    # power: the posterior predictive with alpha = beta = gamma = 1 fixed is rejected
    fixed = np.exp(pdfa.exact_predictive(TRAIN, TEST, 1, 1.0, 1.0, 1.0))
    z_fixed = (p.mean(axis=(0, 1)) - fixed) / se[:TEST.n_strings]
    assert np.max(np.abs(z_fixed)) > z_crit(TEST.n_strings), z_fixed


# -- the finite PDFA sampler's hyperparameter moves against the quadrature (slow: ~2-5 min) ------

@pytest.mark.slow
@pytest.mark.parametrize("free", [("alpha", "beta", "gamma"), ("gamma",)])
def test_pdfa_sampler_hyperparameter_moves_match_quadrature(free):
    """``--method pdfa`` with the hyperparameters in ``free`` sampled under Gamma(1, 1) (the
    others fixed at 1): the posterior means of the free ones and the posterior predictive,
    over 16 independent single-chain fits, against :func:`enumerate_posterior_hyper`. A t-test
    over the replicates (15 degrees of freedom, Bonferroni over the quantities) at
    ``TEST_FAILURE_RATE``."""
    import argparse

    from bayesfa.methods import get_method

    method = get_method("pdfa")
    parser = argparse.ArgumentParser()
    method.add_arguments(parser)
    fixed = {h: 1.0 for h in ("alpha", "beta", "gamma") if h not in free}
    argv = ["--states", "1", "--iterations", "10000", "--burn-in", "1000", "--period", "2",
            "--chains", "1"] + [x for h, v in fixed.items() for x in (f"--{h}", str(v))]
    options = vars(parser.parse_args(argv))
    values = []
    for seed in range(16):
        result = method.fit(TRAIN, options, 100 + seed, False)
        values.append([float(result.trace[h].mean()) for h in free]
                      + list(np.exp(method.predict_log_prob(result.arrays, options, TEST))))
    values = np.array(values)
    post = pdfa.enumerate_posterior_hyper(TRAIN, 1, **fixed)
    exact = np.array([float(post[f"mean_{h}"]) for h in free]
                     + list(np.exp(pdfa.exact_predictive_hyper(TRAIN, TEST, 1, **fixed))))
    t = (values.mean(0) - exact) / (values.std(0, ddof=1) / np.sqrt(len(values)))
    crit = float(stats.t.isf(TEST_FAILURE_RATE / (2 * t.size), df=len(values) - 1))
    labels = [f"mean {h}" for h in free] + [f"Pr(test {k})" for k in range(TEST.n_strings)]
    assert np.max(np.abs(t)) < crit, dict(zip(labels, np.round(t, 2)))
