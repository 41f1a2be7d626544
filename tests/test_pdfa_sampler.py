"""The finite Bayesian PDFA sampler (``--method pdfa``, Pfau, Bartlett & Wood 2010)."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from bayesfa.corpus import Corpus
from bayesfa.methods import get_method
from bayesfa.validation.toys import all_strings, get_toy


def options(name: str, **kw):
    parser = argparse.ArgumentParser()
    get_method(name).add_arguments(parser)
    opts = vars(parser.parse_args([]))
    opts.update(kw)
    return opts


FAST = dict(iterations=60, burn_in=20, period=4, chains=2)


def test_same_seed_same_result_and_positive_probabilities():
    method = get_method("pdfa")
    toy = get_toy("tiny")
    opts = options("pdfa", states=2, **FAST)  # alpha, beta, gamma sampled
    a = method.fit(toy.train, opts, 3, False)
    b = method.fit(toy.train, opts, 3, False)
    for key in a.arrays:
        assert np.array_equal(a.arrays[key], b.arrays[key]), key
    for key in a.trace:
        assert np.array_equal(a.trace[key], b.trace[key]), key
    c = method.fit(toy.train, opts, 4, False)
    assert not np.array_equal(a.trace["log_joint"], c.trace["log_joint"])
    assert set(a.trace) >= {"log_joint", "n_states", "alpha", "beta", "gamma"}
    assert a.trace["log_joint"].shape == (2, 10)
    assert set(a.info["acceptance"]) >= {"entry", "mu", "alpha", "beta", "gamma"}
    assert a.info["seconds_per_sweep"] > 0
    # every test string, the empty one included, gets a positive probability, and the
    # strings up to length 3 carry less than the whole mass
    test = all_strings()
    logp = method.predict_log_prob(a.arrays, opts, test)
    assert np.all(np.isfinite(logp)) and np.all(logp < 0)
    assert np.exp(logp).sum() < 1
    logp_map = method.predict_log_prob(a.arrays, opts, test, map=True)
    assert np.all(np.isfinite(logp_map)) and not np.allclose(logp_map, logp)
    assert method.estimate_memory(toy.train, opts) > 0


def test_sequence_mode_continues_from_the_end_of_training():
    method = get_method("pdfa")
    train = Corpus.from_strings([[0, 1, 0, 1, 0, 1, 1, 0]], 2)
    opts = options("pdfa", states=2, sequence=True, alpha=1.0, beta=1.0, gamma=1.0, **FAST)
    fit = method.fit(train, opts, 0, False)
    assert fit.info["data_shape"] == "sequence"
    test = Corpus.from_strings([[0, 1], [1]], 2)
    logp = method.predict_log_prob(fit.arrays, opts, test)
    assert logp.shape == (2,) and np.all(np.isfinite(logp))
    # a sequence has no end symbol: the letters of one step sum to one
    one = Corpus.from_strings([[0]], 2), Corpus.from_strings([[1]], 2)
    total = sum(np.exp(method.predict_log_prob(fit.arrays, opts, c))[0] for c in one)
    assert total == pytest.approx(1.0, abs=1e-9)


def test_sentences_sum_to_one_over_next_symbol():
    """Pr(first symbol) over {end, a, b} from q0 sums to one (the end symbol is a symbol)."""
    method = get_method("pdfa")
    toy = get_toy("tiny")
    opts = options("pdfa", states=2, alpha=1.0, beta=1.0, gamma=1.0, **FAST)
    fit = method.fit(toy.train, opts, 0, False)
    # Pr(empty) + Pr(strings starting with a) + Pr(starting with b) = 1; the first letter's
    # probability is the q0 predictive, the same in every sample
    from bayesfa.samplers.pdia.pdfa import FINITE, per_sample_log_prob
    lp = per_sample_log_prob(FINITE, fit.arrays, opts, Corpus.from_strings([[]], 2))
    counts = fit.arrays["counts"][0, 0, 0]
    beta = 1.0
    assert np.exp(lp[0, 0, 0]) == pytest.approx((counts[0] + beta / 3) / (counts.sum() + beta))


@pytest.mark.slow
def test_validate_passes_and_mutant_fails():
    from bayesfa.validation.harness import validate

    from bayesfa.validation.pdia.pdfa import MUTANTS

    assert validate("pdfa", "tiny").passed
    for name in MUTANTS["pdfa"]:
        assert not validate(f"pdfa:mutant-{name}", "tiny").passed, name


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["pdfa", "pdia"])
def test_every_pautomac_file_gets_positive_probabilities(shared_data, name):
    from bayesfa.pautomac import read_sample

    method = get_method(name)
    opts = options(name, iterations=4, burn_in=2, period=1, chains=1, predict_draws=1)
    if "states" in opts:
        opts["states"] = 5
    files = sorted((shared_data / "pautomac").glob("*.pautomac.train"))
    assert files
    for train_path in files:
        test_path = train_path.with_name(train_path.name.replace(".train", ".test"))
        train, test = read_sample(train_path), read_sample(test_path)
        fit = method.fit(train, opts, 0, False)
        logp = method.predict_log_prob(fit.arrays, opts, test)
        assert np.all(np.isfinite(logp)), train_path.name


# -- the Gibbs step on mu (auxiliary table counts, log space) ----------------------------------

TEST_FAILURE_RATE = 1e-3


def test_log_gamma_variate_matches_gamma_cdf_for_small_shapes():
    """``log_gamma_variate(a)`` against the exact CDF of ``log G``, ``G ~ Gamma(a)``:
    ``P(log G < x) = P(a, e^x)`` (regularised incomplete gamma; ``e^(a x) / Gamma(a + 1)``
    where ``e^x`` underflows). One-sample KS per shape, Bonferroni over the shapes, false
    alarm ``TEST_FAILURE_RATE``. Shape 0.002 puts ~20 % of the mass below ``log 1e-300``."""
    from scipy import special, stats

    from bayesfa.samplers.pdia._pdfa_kernel import log_gamma_variate

    shapes = (0.002, 0.05, 0.7, 3.0)
    for a in shapes:
        rng = np.random.default_rng(7)
        x = np.array([log_gamma_variate(a, rng) for _ in range(4000)])
        assert np.all(np.isfinite(x))

        def cdf(t, a=a):
            t = np.asarray(t, dtype=float)
            tiny = t < -600
            out = np.empty_like(t)
            out[~tiny] = special.gammainc(a, np.exp(t[~tiny]))
            out[tiny] = np.exp(a * t[tiny] - special.gammaln(a + 1))
            return out

        assert stats.kstest(x, cdf).pvalue > TEST_FAILURE_RATE / len(shapes), a


def test_mu_gibbs_step_reaches_the_boundary_small_gamma_needs():
    """``move_mu`` alone on fixed seating (|Q| = 2, column 1: four entries to state 0, none to
    state 1, ``alpha = 0.7``, ``gamma = 0.1``) against the exact conditional of
    ``u = log mu_1`` by quadrature: ``p(u) ~ e^(u gamma/2) (1 - e^u)^(gamma/2 - 1)
    Gamma(alpha mu_0 + 4) / Gamma(alpha mu_0)``. Here ``mu_1`` is mostly below 1e-5, the
    region the former ``Dir(eta mu)`` MH move could not reach. z-tests on ``E[u]`` and
    ``P(mu_1 < 1e-5)`` with ArviZ-ESS standard errors, Bonferroni, false alarm
    ``TEST_FAILURE_RATE``."""
    from scipy import integrate, special, stats

    from bayesfa.samplers.pdia._pdfa_kernel import N_STATS, move_mu
    from bayesfa.validation.diagnostics import mcse_mean

    alpha, gamma = 0.7, 0.1
    v = np.array([[0, 4], [0, 0]], dtype=np.int32)
    nj = np.array([0, 4], dtype=np.int32)
    hyp = np.array([alpha, 1.0, gamma, 0.0, 0.0])

    def logw(u):
        mu0 = -np.expm1(u)
        return (gamma / 2 * u + (gamma / 2 - 1) * np.log(mu0)
                + special.gammaln(alpha * mu0 + 4) - special.gammaln(alpha * mu0))

    shift = logw(-20.0)

    def quad(f):
        pts = (-1e4, -200.0, -20.0, -1.0, -1e-6)
        return sum(integrate.quad(lambda u: f(u) * np.exp(logw(u) - shift), lo, hi,
                                  limit=200)[0] for lo, hi in zip(pts[:-1], pts[1:]))

    z_norm = quad(lambda u: 1.0)
    cut = np.log(1e-5)
    exact = np.array([quad(lambda u: u) / z_norm, quad(lambda u: float(u < cut)) / z_norm])

    rng = np.random.default_rng(3)
    mu, lmu = np.full(2, 0.5), np.full(2, np.log(0.5))
    stats_ = np.zeros(N_STATS)
    n = 20000
    draws = np.empty(n)
    for i in range(n):
        move_mu(mu, lmu, v, nj, hyp, 1, rng, stats_)
        draws[i] = lmu[1]
    assert np.all(np.isfinite(draws)) and mu.sum() == pytest.approx(1.0)
    est = [draws.mean(), (draws < cut).mean()]
    se = [mcse_mean(draws), mcse_mean((draws < cut).astype(float))]
    z = (np.array(est) - exact) / np.array(se)
    crit = stats.norm.isf(TEST_FAILURE_RATE / 4)
    assert exact[1] > 0.5  # the test reaches the region it is about
    assert np.max(np.abs(z)) < crit, (est, exact, z)


_LITERAL_PROBE = """
import argparse
from numba.core import types
from numba.core.registry import CPUDispatcher
from bayesfa.methods import get_method
from bayesfa.samplers.pdia import _pdfa_kernel
from bayesfa.validation.toys import all_strings, get_toy

train = get_toy("small").train
for name in ("pdfa", "pdia", "pdia-smoothed"):
    method, parser = get_method(name), argparse.ArgumentParser()
    method.add_arguments(parser)
    opts = dict(vars(parser.parse_args([])), iterations=6, burn_in=2, period=2, chains=1)
    method.predict_log_prob(method.fit(train, opts, 0, False).arrays, opts, all_strings(4))
for name, d in vars(_pdfa_kernel).items():
    if isinstance(d, CPUDispatcher) and d.py_func.__module__ == _pdfa_kernel.__name__:
        for sig in d.overloads:
            if any(isinstance(t, types.Literal) for t in sig):
                print(name, sig)
"""


@pytest.mark.slow
def test_the_kernel_compiles_one_specialisation_a_signature_not_one_a_literal(tmp_path):
    """numba specialises a compiled callee on each constant it is passed (``Literal[bool]``,
    ``Literal[int]``): ``move_entry(..., False, ...)`` and ``(..., True, ...)`` were two
    compiles of the largest function and of its callees, 9 of the 34 s the first PDFA fit spent
    compiling. The kernel passes its constants (and the states it reads from int32 arrays) to
    its callees as ``np.bool_`` / ``np.int64`` values: after a fit and a prediction of each
    method, in a process of its own (other tests' compiled callers, validation code among them,
    may add specialisations of their own), no function of the kernel has a literal argument
    type. The process compiles into an empty numba cache: code loaded from the cache adds no
    callee specialisation, so on a warm cache the check saw nothing (it passed in the whole
    suite while a cold run found ``_undo_new``'s ``n_new`` and ``move_mu``'s ``nf`` and
    ``variant`` from the smoothed kernel passed as literals). About 45 CPU s of compiling:
    slow, in ``.ci/run``'s slow subset."""
    import os
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _LITERAL_PROBE], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
