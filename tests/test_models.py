"""The NumPyro oracles (bayesfa.models) against exact enumeration on toy data.

Statistical tests compare a Monte Carlo mean with its exact value through
``z = (mean - exact) / se``, with ``se = sd / sqrt(ESS)`` and the ESS of arviz (MCMC draws,
``(chain, draw)`` arrays) or the number of draws (independent prior draws). Each test checks
``m`` strings at once with a Bonferroni bound, so its false-alarm rate is at most
``TEST_FAILURE_RATE`` (nominal: it assumes a normal MCMC error with the arviz ESS; over 20
seeds the oracles' z-scores had variance 0.9-1.2 and max |z| never reached the bound 3.80, so
the real rate is at most a few in a thousand). Seeds are fixed, so a run is reproducible.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import math

import numpy as np
import pytest
from scipy import stats

from bayesfa.corpus import Corpus
from bayesfa.forward import forward_log_prob, xi_to_pfa
from bayesfa import exact

TEST_FAILURE_RATE = 1e-3

N_STATES = 2
TRAIN = Corpus.from_strings([[0, 1], [0], [], [0, 1, 1], [1, 0]], 2)   # 8 letters, 2^8 paths
TEST = Corpus.from_strings([[], [0], [1], [0, 1], [1, 0], [0, 0], [1, 1, 0]], 2)
EMPTY = Corpus.from_strings([], 2)


# -- helpers ---------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def pfa_exact(beta: float) -> np.ndarray:
    """Exact posterior predictive of TEST given TRAIN under the PFA prior (Eq. 4 enumerated)."""
    return exact.exact_predictive(TRAIN, TEST, N_STATES, beta)


def z_crit(m: int) -> float:
    """Two-sided Bonferroni threshold for ``m`` z-scores at ``TEST_FAILURE_RATE``."""
    return float(stats.norm.isf(TEST_FAILURE_RATE / (2 * m)))


def mcmc_z(log_p: np.ndarray, exact_log: np.ndarray) -> np.ndarray:
    """z-scores of the posterior predictive ``mean_s Pr(b | xi_s)``; log_p ``[chain, draw, n]``."""
    import arviz as az

    p = np.exp(log_p)
    ess = np.array([az.ess(p[..., k], method="mean") for k in range(p.shape[-1])])
    se = p.reshape(-1, p.shape[-1]).std(axis=0, ddof=1) / np.sqrt(ess)
    return (p.mean(axis=(0, 1)) - np.exp(exact_log)) / se


def iid_z(log_p: np.ndarray, exact_log: np.ndarray) -> np.ndarray:
    """z-scores of ``mean_s Pr(b | xi_s)`` over independent draws; log_p ``[S, n]``."""
    p = np.exp(log_p)
    se = p.std(axis=0, ddof=1) / np.sqrt(p.shape[0])
    return (p.mean(axis=0) - np.exp(exact_log)) / se


def options_for(method, argv: list[str]) -> dict:
    parser = argparse.ArgumentParser()
    method.add_arguments(parser)
    return vars(parser.parse_args(argv))


def per_draw_log_prob(arrays: dict, chains: int, corpus: Corpus) -> np.ndarray:
    """``log Pr(b | xi_s)`` as ``[chain, draw, n]`` from a fit's chain-major ``xi``."""
    lp = forward_log_prob(*xi_to_pfa(arrays["xi"]), corpus)
    return lp.reshape(chains, -1, corpus.n_strings)


def strings_upto(length: int, letters: int = 2) -> list[list[int]]:
    return [list(s) for n in range(length + 1) for s in itertools.product(range(letters), repeat=n)]


# -- likelihood pieces (deterministic) -------------------------------------------------------------

def test_jax_forward_matches_numpy_forward():
    import jax
    import jax.numpy as jnp
    from bayesfa.models import pfa

    n, letters_ = 3, 2
    conc = pfa.prior_concentration(n, letters_, 0.3)
    xi = pfa.xi_from_sample(np.random.default_rng(0).dirichlet(conc, size=(4, n + 1)), n, letters_)
    corpus = Corpus.from_strings(strings_upto(3), letters_)
    ref = forward_log_prob(*xi_to_pfa(xi), corpus)
    letters, lengths = corpus.padded()
    forward = jax.jit(pfa.forward_log_lik)
    for s in range(xi.shape[0]):
        log_xi = np.log(np.maximum(xi[s], 1e-300))
        got = forward(jnp.asarray(log_xi[:, 1:, 1:]), jnp.asarray(log_xi[:, 0, 0]), letters, lengths)
        np.testing.assert_allclose(np.asarray(got), ref[s], rtol=1e-10)


@pytest.fixture(scope="module")
def pfa_prior_xi():
    """20000 draws of ``xi`` from the NumPyro PFA prior (beta = 0.5)."""
    from bayesfa.models import pfa

    return pfa.sample_prior_xi(3, 20_000, N_STATES, 2, 0.5)


@pytest.fixture(scope="module")
def hmm_prior_xi():
    """20000 draws of ``xi`` from the NumPyro HMM prior (alpha = 0.5, beta = 0.3)."""
    from bayesfa.models import hmm

    return hmm.sample_prior_xi(5, 20_000, N_STATES, 2, 0.5, 0.3)


def test_xi_layouts_are_distributions(pfa_prior_xi, hmm_prior_xi):
    from bayesfa.models import hmm, pdfa, pfa

    rng = np.random.default_rng(0)
    for xi in (pfa_prior_xi[:100], hmm_prior_xi[:100], pdfa.sample_prior(rng, 100, 2, 3, 1.0, 1.0, 1.0)[1]):
        np.testing.assert_allclose(xi.sum(axis=(-2, -1)), 1.0)
        assert np.all(xi[..., 0, 1:] == 0)                     # the end marker goes to state 0
    assert np.all(pfa_prior_xi[:100, :, 1:, 0] == 0)           # letters never enter state 0
    w = np.arange(3 * 7).reshape(3, 7)                          # N = 2, 3 letters
    xi = pfa.xi_from_sample(w, 2, 3)
    assert xi[1, 0, 0] == w[1, 0] and xi[1, 3, 1] == w[1, 1 + 2 * 2 + 0]
    eta, theta = rng.dirichlet(np.ones(4), size=3), rng.dirichlet(np.ones(2), size=3)
    xi = hmm.xi_from_hmm(eta, theta)
    assert xi[2, 3, 1] == pytest.approx(eta[2, 3] * theta[2, 0]) and xi[2, 0, 0] == eta[2, 0]


def test_pdfa_xi_matches_pdfa_automaton():
    from bayesfa.automata import PDFA
    from bayesfa.models import pdfa

    rng = np.random.default_rng(1)
    delta, xi = pdfa.sample_prior(rng, 5, 2, 2, 1.0, 1.0, 1.0)
    corpus = Corpus.from_strings(strings_upto(3), 2)
    for d, x in zip(delta, xi):
        pi = np.array([x[q, 1 + a, d[q, a]] for q in range(3) for a in range(2)]).reshape(3, 2)
        ref = PDFA(d, pi, x[:, 0, 0]).log_prob(corpus)
        np.testing.assert_allclose(forward_log_prob(*xi_to_pfa(x), corpus), ref, rtol=1e-12)


def test_pdfa_jax_counts_and_log_density_match_numpy():
    import jax
    import jax.numpy as jnp
    from numpyro.infer.util import log_density
    from scipy.special import gammaln
    from bayesfa.models import pdfa
    from bayesfa.models.pfa import unique_padded

    rng = np.random.default_rng(2)
    letters, lengths, weights = unique_padded(TRAIN)
    deltas = rng.integers(0, 3, size=(4, 3, 2))
    ref = pdfa.emission_counts(deltas, TRAIN)
    mu = np.array([0.5, 0.3, 0.2])
    kwargs = dict(letters=letters, lengths=lengths, weights=weights, n_states=2, n_letters=2,
                  alpha=0.7, beta=1.3, gamma=0.9)
    counts = jax.jit(lambda d: pdfa._jax_path_counts(d, letters, lengths, weights, 3, 2))
    density = jax.jit(lambda d: log_density(pdfa.pdfa_model, (), kwargs, {"mu": mu, "delta": d})[0])
    for d, c in zip(deltas, ref):
        np.testing.assert_allclose(np.asarray(counts(jnp.asarray(d))), c)
        lp = density(jnp.asarray(d))
        v = pdfa.column_counts(d)
        polya = (2 * (gammaln(0.7) - gammaln(3.7))
                 + (gammaln(0.7 * mu[:, None] + v) - gammaln(0.7 * mu[:, None])).sum())
        expected = (stats.dirichlet.logpdf(mu, np.full(3, 0.3)) + polya
                    + pdfa.log_emission_marginal(c, 1.3))
        np.testing.assert_allclose(float(lp), expected, rtol=1e-10)


# -- exact enumerations ------------------------------------------------------------------------------

def test_pdfa_delta_prior_is_normalised_and_matches_integral():
    from scipy.integrate import quad
    from scipy.special import gammaln, logsumexp
    from bayesfa.models import pdfa

    for alpha, gamma in ((1.0, 1.0), (0.3, 0.5), (2.0, 3.0)):
        total = logsumexp(pdfa.log_delta_prior(pdfa.all_tables(2, 2), alpha, gamma))
        assert abs(total) < 1e-10
    # |Q| = 2: E_mu over the 1-d Beta(gamma/2, gamma/2) by quadrature
    alpha, gamma = 0.7, 1.5
    tables = pdfa.all_tables(1, 2)
    got = np.exp(pdfa.log_delta_prior(tables, alpha, gamma))
    for d, value in zip(tables, got):
        v = pdfa.column_counts(d)

        def integrand(m0):
            mu = np.array([m0, 1 - m0])
            polya = (2 * (gammaln(alpha) - gammaln(alpha + 2))
                     + (gammaln(alpha * mu[:, None] + v) - gammaln(alpha * mu[:, None])).sum())
            return np.exp(polya) * stats.beta.pdf(m0, gamma / 2, gamma / 2)

        assert value == pytest.approx(quad(integrand, 0, 1, limit=200)[0], rel=1e-7)


def test_exact_prior_predictive_of_empty_string():
    """``Pr('') = E[xi_000]``: ``N beta / (N A beta) = 1/A`` (PFA), ``E[eta_00] = 1/A`` (HMM),
    ``E[pi_0(end)] = 1/(L+1)`` (PDFA)."""
    from bayesfa.models import hmm, pdfa

    empty_string = Corpus.from_strings([[]], 2)
    assert np.exp(exact.log_marginal(empty_string, 2, 0.4)) == pytest.approx(1 / 3)
    assert np.exp(hmm.exact_predictive(EMPTY, empty_string, 2, 0.3, 0.7)[0]) == pytest.approx(1 / 3)
    assert np.exp(pdfa.exact_predictive(EMPTY, empty_string, 2, 0.5, 2.0, 0.8)[0]) == pytest.approx(1 / 3)


def test_pdfa_exact_predictive_is_a_distribution_over_strings():
    from bayesfa.models import pdfa

    probs = np.exp(pdfa.exact_predictive(TRAIN, Corpus.from_strings(strings_upto(10), 2),
                                         2, 1.0, 1.0, 1.0))
    assert 0.98 < probs.sum() <= 1.0 + 1e-12   # the rest is strings longer than 10


# -- prior predictive (independent draws against the enumerations) ------------------------------------

def test_pfa_prior_predictive(pfa_prior_xi):
    from bayesfa.models import pfa

    beta, xi = 0.5, pfa_prior_xi
    n_draws = xi.shape[0]
    # E[xi_000] = N beta / (N A beta) = 1/A
    z0 = (xi[:, 0, 0, 0].mean() - 1 / 3) / (xi[:, 0, 0, 0].std(ddof=1) / np.sqrt(n_draws))
    exact_log = np.array([exact.log_marginal(TEST.subset([s]), N_STATES, beta)
                          for s in range(TEST.n_strings)])
    z = iid_z(forward_log_prob(*xi_to_pfa(xi), TEST), exact_log)
    assert np.max(np.abs(np.append(z, z0))) < z_crit(z.size + 1), z
    # strings sampled from the prior predictive: chi-square against the exact probabilities
    sample = pfa.sample_strings(xi, np.random.default_rng(4))
    cells = strings_upto(2)
    index = {tuple(c): k for k, c in enumerate(cells)}
    observed = np.zeros(len(cells) + 1)
    for s in sample.strings():
        observed[index.get(tuple(s), len(cells))] += 1
    p = np.exp([exact.log_marginal(Corpus.from_strings([c], 2), N_STATES, beta) for c in cells])
    expected = n_draws * np.append(p, 1 - p.sum())
    assert stats.chisquare(observed, expected).pvalue > TEST_FAILURE_RATE


def test_hmm_prior_predictive(hmm_prior_xi):
    from bayesfa.models import hmm

    alpha, beta, xi = 0.5, 0.3, hmm_prior_xi
    z = iid_z(forward_log_prob(*xi_to_pfa(xi), TEST),
              hmm.exact_predictive(EMPTY, TEST, N_STATES, alpha, beta))
    assert np.max(np.abs(z)) < z_crit(z.size), z


def test_pdfa_prior_predictive_ancestral_matches_enumeration():
    """Ancestral draws of mu, phi, delta, pi against the enumeration with phi, mu, pi integrated."""
    from bayesfa.models import pdfa

    alpha, beta, gamma, n_draws = 0.8, 1.5, 1.2, 50_000
    _, xi = pdfa.sample_prior(np.random.default_rng(6), n_draws, N_STATES, 2, alpha, beta, gamma)
    z = iid_z(forward_log_prob(*xi_to_pfa(xi), TEST),
              pdfa.exact_predictive(EMPTY, TEST, N_STATES, alpha, beta, gamma))
    assert np.max(np.abs(z)) < z_crit(z.size), z


# -- posterior predictive of the oracles against enumeration ------------------------------------------

@pytest.fixture(scope="module")
def pfa_fit():
    from bayesfa.models.oracle_methods import ORACLE_PFA

    options = options_for(ORACLE_PFA, ["--states", "2", "--beta", "0.5", "--iterations", "2500",
                                       "--burn-in", "500", "--chains", "2"])
    return options, ORACLE_PFA.fit(TRAIN, options, seed=0, progress=False)


def test_oracle_pfa_fit_result(pfa_fit):
    from bayesfa.models.oracle_methods import ORACLE_PFA

    options, result = pfa_fit
    assert result.arrays["xi"].shape == (2 * 2000, 3, 3, 3)
    assert result.trace["potential_energy"].shape == (2, 2000)
    assert result.info["divergences"] == 0 and result.info["max_r_hat"] < 1.05
    got = ORACLE_PFA.predict_log_prob(result.arrays, options, TEST)
    lp = per_draw_log_prob(result.arrays, 2, TEST)
    np.testing.assert_allclose(got, np.log(np.exp(lp).mean(axis=(0, 1))), rtol=1e-10)


def test_oracle_pfa_same_seed_same_draws(pfa_fit):
    from bayesfa.models.oracle_methods import ORACLE_PFA

    options, result = pfa_fit
    again = ORACLE_PFA.fit(TRAIN, options, seed=0, progress=True)    # compiled runner is cached
    np.testing.assert_array_equal(again.arrays["xi"], result.arrays["xi"])


def test_oracle_pfa_matches_exact_enumeration(pfa_fit):
    options, result = pfa_fit
    lp = per_draw_log_prob(result.arrays, options["chains"], TEST)
    z = mcmc_z(lp, pfa_exact(options["beta"]))
    assert np.max(np.abs(z)) < z_crit(z.size), z


def test_oracle_pfa_detects_wrong_beta(pfa_fit):
    """Power: the same draws (beta = 0.5) are rejected against the enumeration at beta = 0.25."""
    options, result = pfa_fit
    lp = per_draw_log_prob(result.arrays, options["chains"], TEST)
    z = mcmc_z(lp, pfa_exact(0.25))
    assert np.max(np.abs(z)) > z_crit(z.size), z


@pytest.fixture(scope="module")
def hmm_fit():
    from bayesfa.models.oracle_methods import ORACLE_HMM

    options = options_for(ORACLE_HMM, ["--states", "2", "--alpha", "0.5", "--beta", "0.5",
                                       "--iterations", "2500", "--burn-in", "500", "--chains", "2"])
    return options, ORACLE_HMM.fit(TRAIN, options, seed=1, progress=False)


def test_oracle_hmm_matches_exact_enumeration(hmm_fit):
    from bayesfa.models import hmm

    options, result = hmm_fit
    assert result.info["divergences"] == 0 and result.info["max_r_hat"] < 1.05
    lp = per_draw_log_prob(result.arrays, options["chains"], TEST)
    z = mcmc_z(lp, hmm.exact_predictive(TRAIN, TEST, N_STATES, options["alpha"], options["beta"]))
    assert np.max(np.abs(z)) < z_crit(z.size), z
    # power: the PFA posterior with the same beta is a different model
    z_pfa = mcmc_z(lp, pfa_exact(options["beta"]))
    assert np.max(np.abs(z_pfa)) > z_crit(z.size), z_pfa


def pdfa_predictive_by_hand(train: Corpus, test: Corpus, alpha: float, beta: float,
                            gamma: float) -> np.ndarray:
    """``log Pr(b | train)`` of the PDFA prior with one state besides ``q0`` (|Q| = 2), two
    letters, computed independently of :mod:`bayesfa.models.pdfa`: every table ``delta`` by
    ``itertools``; its prior as the sequential Polya urn of each letter column given ``mu``,
    integrated over ``mu_0 ~ Beta(gamma/2, gamma/2)`` by quadrature; the emissions by tracing
    each string through ``delta`` and the Dirichlet-multinomial of the counts."""
    from scipy.integrate import quad
    from scipy.special import gammaln

    n_q, n_sym = 2, 3

    def prior(delta):
        def integrand(m0):
            mu = (m0, 1.0 - m0)
            p = 1.0
            for j in range(2):  # column j: delta[0, j] then delta[1, j] from the urn Dir(alpha mu)
                seen = [0, 0]
                for i in range(n_q):
                    p *= (alpha * mu[delta[i][j]] + seen[delta[i][j]]) / (alpha + i)
                    seen[delta[i][j]] += 1
            return p * stats.beta.pdf(m0, gamma / 2, gamma / 2)

        return quad(integrand, 0, 1, limit=200, epsabs=0, epsrel=1e-12)[0]

    def log_evidence(strings, delta):
        c = np.zeros((n_q, n_sym))
        for s in strings:
            q = 0
            for a in s:
                c[q, a + 1] += 1
                q = delta[q][a]
            c[q, 0] += 1
        conc = beta / n_sym
        return float((gammaln(beta) - gammaln(beta + c.sum(1))).sum()
                     + (gammaln(c + conc) - gammaln(conc)).sum())

    tables = [((a, b), (c, d)) for a, b, c, d in itertools.product(range(n_q), repeat=4)]
    priors = np.array([prior(t) for t in tables])
    assert priors.sum() == pytest.approx(1.0, rel=1e-9)
    base = train.strings()
    p_train = sum(w * math.exp(log_evidence(base, t)) for w, t in zip(priors, tables))
    return np.array([math.log(sum(w * math.exp(log_evidence(base + [b], t))
                                  for w, t in zip(priors, tables)) / p_train)
                     for b in test.strings()])


def test_oracle_pdfa_enumeration_method():
    """The enumeration oracle (the default on toys) against :func:`pdfa_predictive_by_hand`,
    which shares no code with it; and ``Pr(train)`` against the product of the sequential
    predictives."""
    from bayesfa.models import pdfa
    from bayesfa.models.oracle_methods import ORACLE_PDFA

    options = options_for(ORACLE_PDFA, ["--states", "1", "--alpha", "0.8", "--beta", "1.3",
                                        "--gamma", "1.2"])
    result = ORACLE_PDFA.fit(TRAIN, options, seed=0, progress=False)
    assert result.info["inference"] == "enumerate" and result.info["tables"] == 16
    got = ORACLE_PDFA.predict_log_prob(result.arrays, options, TEST)
    np.testing.assert_allclose(got, pdfa_predictive_by_hand(TRAIN, TEST, 0.8, 1.3, 1.2), rtol=1e-8)
    # Pr(train) = prod of sequential predictives
    one_by_one = sum(pdfa.exact_predictive(TRAIN.subset(range(s)), TRAIN.subset([s]), 1, 0.8, 1.3,
                                           1.2)[0] for s in range(TRAIN.n_strings))
    assert result.info["log_marginal"] == pytest.approx(one_by_one)


@pytest.mark.slow
def test_oracle_pdfa_mcmc_matches_enumeration():
    from bayesfa.models import pdfa
    from bayesfa.models.oracle_methods import ORACLE_PDFA

    options = options_for(ORACLE_PDFA, ["--states", "2", "--pdfa-inference", "mcmc",
                                        "--iterations", "8000", "--burn-in", "1000",
                                        "--chains", "2"])
    result = ORACLE_PDFA.fit(TRAIN, options, seed=2, progress=False)
    assert result.info["inference"] == "mcmc" and result.info["max_r_hat"] < 1.05
    lp = per_draw_log_prob(result.arrays, options["chains"], TEST)
    exact_log = pdfa.exact_predictive(TRAIN, TEST, 2, options["alpha"], options["beta"],
                                      options["gamma"])
    z = mcmc_z(lp, exact_log)
    assert np.max(np.abs(z)) < z_crit(z.size), z
    # power: a wrong emission mass is detected
    z_wrong = mcmc_z(lp, pdfa.exact_predictive(TRAIN, TEST, 2, options["alpha"], 3.0,
                                               options["gamma"]))
    assert np.max(np.abs(z_wrong)) > z_crit(z.size), z_wrong


@pytest.mark.slow
@pytest.mark.parametrize("seed", [10, 11, 12])
def test_oracle_pfa_small_beta_matches_exact(seed):
    """beta = 0.1 (the paper's setting): Dirichlet mass near the simplex boundary."""
    from bayesfa.models.oracle_methods import ORACLE_PFA

    options = options_for(ORACLE_PFA, ["--states", "2", "--beta", "0.1", "--iterations", "6000",
                                       "--burn-in", "1000", "--chains", "2"])
    result = ORACLE_PFA.fit(TRAIN, options, seed=seed, progress=False)
    lp = per_draw_log_prob(result.arrays, 2, TEST)
    z = mcmc_z(lp, pfa_exact(0.1))
    assert np.max(np.abs(z)) < z_crit(z.size), z
