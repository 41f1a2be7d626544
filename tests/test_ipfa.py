"""The infinite PFA (``--method ipfa``, issue 23): registry, input checks, reproducibility,
the weak limit (CGS-PFA), the hyperparameter updates, PAutomaC 24, and (slow) the validation
against exact enumeration with its mutants.

Statistical tests use fixed seeds and state their false-alarm rate (two-sided z-tests with
ArviZ-ESS standard errors, Bonferroni over the strings or statistics)."""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import gammaln

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import get_method
from bayesfa.samplers.pfa import _ipfa_kernel as kern
from bayesfa.samplers.pfa.ipfa import (_run_chain, per_sample_log_prob, plugin_xi,
                                       predict_log_prob, sample_ipfa)
from bayesfa.validation.diagnostics import ess_mean
from bayesfa.validation.toys import all_strings, get_toy

FALSE_ALARM = 1e-3
FIXED = {"alpha_prior": "fixed", "gamma_prior": "fixed"}


def _options(**over):
    parser = argparse.ArgumentParser()
    get_method("ipfa").add_arguments(parser)
    options = vars(parser.parse_args([]))
    options.update(over)
    return options


def _z_test(probs: np.ndarray, reference: np.ndarray, alpha: float = FALSE_ALARM):
    """``(max |z|, critical z)`` of the per-string z-tests of ``probs [chain, draw, n]``
    against ``reference [n]`` (probabilities); strings constant over the draws must match to
    1e-9 relative (z = inf otherwise)."""
    crit = stats.norm.isf(alpha / (2 * reference.size))
    worst = 0.0
    for s in range(reference.size):
        x = probs[:, :, s]
        sd = x.std(ddof=1)
        if sd <= 1e-12 * x.mean():
            z = 0.0 if abs(x.mean() - reference[s]) <= 1e-9 * reference[s] else math.inf
        else:
            z = (x.mean() - reference[s]) / (sd / math.sqrt(ess_mean(x)))
        worst = max(worst, abs(z))
    return worst, crit


# -- registry and input ---------------------------------------------------------------------

def test_registry_options_and_spec():
    method = get_method("ipfa")
    options = _options()
    assert options["truncate"] == 0 and options["alpha_prior"] == "1,0.1"
    assert method.validation == "bayesfa.validation.pfa.ipfa:SPEC"
    from bayesfa.samplers.pfa._ipfa_blocked_kernel import MUTATIONS as BLOCKED
    from bayesfa.validation.harness import mutant_names_of

    assert set(mutant_names_of("ipfa")) == {f"ipfa:mutant-{m}" for m in [*kern.MUTATIONS, *BLOCKED]}
    assert method.estimate_memory(get_toy("tiny").train, options) > 0
    from bayesfa.online import supports_online
    from bayesfa.validation.harness import method_listing

    assert supports_online(method)
    assert method_listing("ipfa")["checks"] == ["predictive", "recorded", "geweke", "geweke-hyper",
                                                "blocked-posterior", "blocked-posterior-hyper",
                                                "blocked-step0-posterior",
                                                "blocked-step0-posterior-hyper",
                                                "slice-given-theta", "blocked-slice-posterior",
                                                "blocked-slice-posterior-hyper",
                                                "blocked-slice-step0-posterior",
                                                "blocked-slice-step0-posterior-hyper",
                                                "blocked-split-merge"]
    # the slice FFBS's scratch is counted when --paths slice (the default) asks for it (on
    # 40,000 tokens, where the chain's state, not prediction, sets the peak)
    rng = np.random.default_rng(0)
    long = Corpus.from_strings([rng.integers(0, 3, size=19).tolist() for _ in range(2_000)], 3)
    blocked = _options(sampler="blocked", max_draws=1)
    assert (method.estimate_memory(long, dict(blocked, paths="dense"))
            < method.estimate_memory(long, dict(blocked, paths="slice"))
            == method.estimate_memory(long, blocked))
    # a cap on kept draws lowers the estimate; online prediction raises it
    big = _options(iterations=10_000, burn_in=5_000, period=10, sampler="direct")
    train = get_toy("tiny").train
    assert (method.estimate_memory(train, dict(big, max_draws=1))
            < method.estimate_memory(train, big)
            < method.estimate_memory(train, dict(big, predict_sha256="0" * 64)))


@pytest.mark.parametrize("n, length, truncate, letters", [(5, 2000, 3, 2), (300, 400, 3, 2),
                                                          (40, 1000, 5, 3)])
def test_online_predict_memory_is_each_jobs_draw_plugin_and_accumulator(n, length, truncate,
                                                                        letters):
    """``--predict``'s term of the estimate, per job running a chain: one draw's ``xi~`` (the
    array ``plugin_xi`` returns, and its normalised copy), the forward pass
    (``forward_bytes``), ``plugin_log_prob``'s ``[1, n_strings]`` row and the chain's
    ``LogMeanAccumulator`` (held for the whole chain), all measured on the arrays themselves.
    The settings make the fit, not the offline prediction, the peak (8 jobs, long strings)."""
    from bayesfa.memory import forward_bytes
    from bayesfa.online import LogMeanAccumulator
    from bayesfa.samplers.pfa.ipfa import plugin_log_prob

    rng = np.random.default_rng(n)
    corpus = Corpus.from_strings([list(rng.integers(0, letters, length)) for _ in range(n)],
                                 letters)
    opts = _options(iterations=4, burn_in=2, period=2, chains=8, jobs=8, truncate=truncate,
                    gamma_prior="fixed", sampler="direct")
    method = get_method("ipfa")
    delta = (method.estimate_memory(corpus, dict(opts, predict_sha256="0" * 64))
             - method.estimate_memory(corpus, opts))
    k, a = truncate, letters + 1
    counts = np.ones((1, k + 1, a, k + 1))  # every label in use: none lumped (lump_unused)
    beta_bar = np.full((1, k + 1), 1.0 / (k + 1))
    xi = plugin_xi(counts, beta_bar, np.ones(1))
    row = plugin_log_prob(counts, beta_bar, np.ones(1), corpus)
    acc = LogMeanAccumulator(corpus.n_strings)
    assert xi.shape == (1, k + 2, a, k + 2) and row.shape == (1, n)
    per_job = (2 * xi.nbytes + forward_bytes(1, k + 2, corpus) + row.nbytes
               + acc.log_sum.nbytes)
    assert delta == 8 * per_job


def test_blocked_sampler_memory_is_each_jobs_theta_and_ffbs_filter():
    """``--sampler blocked``'s term of the estimate, per job running a chain: the sweep's
    scratch (``_ipfa_blocked_kernel.scratch``: ``theta`` and the FFBS filter, one row a letter
    of the longest string), measured on the arrays; the estimate takes the filter at ``T``
    rows, so one string of ``T - 1`` letters holds all but one row of it (``--paths dense``;
    slice's scratch on top is the test above's)."""
    from bayesfa.samplers.pfa._ipfa_blocked_kernel import scratch

    rng = np.random.default_rng(2)
    method = get_method("ipfa")
    for strings in ([list(rng.integers(0, 2, 500))],
                    [list(rng.integers(0, 2, rng.integers(0, 60))) for _ in range(40)]):
        corpus = Corpus.from_strings(strings, 2)
        opts = _options(iterations=4, burn_in=2, period=2, chains=8, jobs=8, truncate=7,
                        gamma_prior="fixed", sampler="direct")
        delta = (method.estimate_memory(corpus, dict(opts, sampler="blocked", paths="dense"))
                 - method.estimate_memory(corpus, opts))
        theta, filt = scratch(corpus.tokens, 7, 3)
        held = theta.nbytes + filt.nbytes
        assert delta % 8 == 0 and delta // 8 >= held
        if len(strings) == 1:
            assert delta // 8 == held + 8 * 8, (delta // 8, held)


@pytest.mark.parametrize("kwargs, match", [
    ({"alpha_prior": "1"}, "SHAPE,RATE"),
    ({"gamma_prior": "0,1"}, "shape > 0"),
    ({"truncate": 3, "sampler": "direct"}, "gamma-prior fixed"),
    ({"alpha": -1.0}, "alpha"),
    ({"truncate": -2, "gamma_prior": "fixed"}, "truncate"),
])
def test_bad_input_is_one_line(kwargs, match):
    with pytest.raises(InputError, match=match) as err:
        sample_ipfa(get_toy("tiny").train, iterations=4, burn_in=2, period=1, chains=1, **kwargs)
    assert "\n" not in str(err.value)


# -- reproducibility -----------------------------------------------------------------------

def test_same_seed_bit_identical_and_jobs_do_not_matter():
    train = get_toy("small").train
    opts = _options(iterations=60, burn_in=20, period=4, chains=2, states=3)
    method = get_method("ipfa")
    a = method.fit(train, opts, 7, False)
    b = method.fit(train, dict(opts, jobs=2), 7, False)
    c = method.fit(train, opts, 8, False)
    for key in a.arrays:
        assert np.array_equal(a.arrays[key], b.arrays[key]), key
    for key in a.trace:
        assert np.array_equal(a.trace[key], b.trace[key]), key
    assert not np.array_equal(a.trace["log_joint"], c.trace["log_joint"])


def test_growing_the_arrays_changes_nothing():
    """A chain started with room for 3 states grows its arrays (many states at gamma = 30)
    and ends bit-identical to one started with room for 31."""
    tokens = np.ascontiguousarray(get_toy("small").train.tokens, dtype=np.int32)
    args = (tokens, 3, 3, 10.0, 30.0, [0.0, 0.0, 0.0, 0.0], 0, 20, 2, 30,
            np.random.SeedSequence(3))
    small = _run_chain(*args, capacity=3)
    large = _run_chain(*args)
    assert small["capacity"] > 3 and max(small["n_states"]) > 3
    for key in ("log_joint", "n_states", "alpha", "gamma"):
        assert small[key] == large[key], key
    for x, y in zip(small["counts"], large["counts"]):
        assert np.array_equal(x, y)
    assert np.array_equal(small["z"], large["z"])


def test_alpha_hold_keeps_alpha_for_its_sweeps_then_frees_it():
    """``alpha_hold = H``: the first H sweeps run as with alpha fixed (same path, same draws
    from the Generator), the prior applies from sweep H + 1. With H = burn-in = 8 and one draw
    one sweep later, the path equals the alpha-fixed chain's (the last sweep resamples alpha
    only after z, the tables and beta), alpha has moved, and without the hold the path differs."""
    tokens = np.ascontiguousarray(get_toy("small").train.tokens, dtype=np.int32)
    prior = [1.0, 0.1, 0.0, 0.0]

    def run(priors, hold):
        return _run_chain(tokens, 3, 3, 30.0, 2.0, priors, 0, 8, 1, 1,
                          np.random.SeedSequence(5), alpha_hold=hold)

    fixed, held, free = run([0.0, 0.0, 0.0, 0.0], 0), run(prior, 8), run(prior, 0)
    assert np.array_equal(fixed["z"], held["z"])
    assert np.array_equal(fixed["counts"][0], held["counts"][0])
    assert fixed["log_joint"] != held["log_joint"]  # evaluated at each chain's own alpha
    assert fixed["alpha"] == [30.0] and held["alpha"][0] != 30.0
    assert not np.array_equal(free["z"], held["z"])


@pytest.mark.parametrize("hold", [-1, 11, True])
def test_alpha_hold_outside_the_burn_in_is_one_line(hold):
    with pytest.raises(InputError, match="alpha_hold") as err:
        sample_ipfa(get_toy("tiny").train, iterations=20, burn_in=10, period=1, chains=1,
                    alpha_hold=hold)
    assert "\n" not in str(err.value)


# -- online prediction (Eq. 6 draw by draw) ----------------------------------------------------

def test_online_prediction_equals_the_stored_draws():
    """``predict=`` folds each draw's plug-in (new state included) into Eq. 6 as it is made:
    bit for bit the fold of the stored draws' plug-ins (each at its own states in use, in
    draw order), equal to :func:`predict_log_prob` of the stored draws up to rounding; a cap
    on kept draws changes neither the chains nor the prediction, and keeps exactly the
    draws ``kept_draw_indices`` names."""
    from bayesfa.online import LogMeanAccumulator, combine_log_means
    from bayesfa.samplers.pfa.cgs_pfa import kept_draw_indices
    from bayesfa.samplers.pfa.ipfa import plugin_log_prob

    train, test = get_toy("small").train, all_strings()
    kw = dict(states=3, iterations=100, burn_in=20, period=4, chains=2, seed=5,
              alpha_prior="2,0.5", gamma_prior="2,1", sampler="direct")
    full = sample_ipfa(train, **kw)
    online = sample_ipfa(train, predict=test, **kw)
    capped = sample_ipfa(train, predict=test, max_draws=3, **kw)
    n_draws = full.log_joint.shape[1]
    sums = []
    for c in range(2):
        acc = LogMeanAccumulator(test.n_strings)
        for d in range(n_draws):
            k = full.n_states[c, d]
            acc.add(plugin_log_prob(full.counts[c, d, None, :k + 1, :, :k + 1],
                                    full.beta_bar[c, d, None, :k + 1], full.alpha[c, d:d + 1],
                                    test))
        sums.append(acc.log_mean())
    folded = combine_log_means(np.array(sums), [n_draws, n_draws])
    assert np.array_equal(online.predict_log_mean, folded)
    stored = predict_log_prob({"counts": full.counts, "beta_bar": full.beta_bar,
                               "alpha": full.alpha}, test)
    np.testing.assert_allclose(online.predict_log_mean, stored, rtol=1e-12, atol=0)
    assert np.array_equal(capped.predict_log_mean, online.predict_log_mean)
    for key in ("log_joint", "n_states", "alpha", "gamma", "z"):
        assert np.array_equal(getattr(capped, key), getattr(full, key)), key
    kept = kept_draw_indices(n_draws, 3)
    assert np.array_equal(capped.kept, kept) and capped.counts.shape[1] == 3 and online.kept is None
    k1 = capped.counts.shape[2]
    assert np.array_equal(capped.counts, full.counts[:, kept, :k1, :, :k1])
    assert np.array_equal(capped.beta_bar, full.beta_bar[:, kept, :k1])
    assert np.array_equal(capped.kept_alpha, full.alpha[:, kept])
    assert capped.info["kept_draws_per_chain"] == 3 and capped.info["predict_strings"] == 15


def test_fit_and_predict_online_through_the_registry():
    """:func:`bayesfa.online.fit_and_predict` takes the online path for ipfa: every draw
    averaged, only ``max_draws`` kept, and the kept draws predict what their plug-ins say."""
    from bayesfa.online import fit_and_predict

    train, test = get_toy("small").train, all_strings()
    opts = _options(iterations=60, burn_in=20, period=4, chains=2, states=3, max_draws=2)
    pred, fit = fit_and_predict("ipfa", train, opts, 3, test, return_fit=True)
    assert pred.info["online"] and pred.n_draws == 20
    assert fit.arrays["counts"].shape[:2] == (2, 2) and fit.arrays["alpha"].shape == (2, 2)
    assert "predict_log_mean" not in fit.arrays
    assert np.all(np.isfinite(pred.log_mean)) and np.all(pred.log_mean < 0)
    assert np.array_equal(pred.log_mean, get_method("ipfa").fit(
        train, dict(opts, max_draws=None), 3, False, predict=test).arrays["predict_log_mean"])


# -- the weak limit: CGS-PFA ----------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_prior_weights_below_the_floor_are_stored_as_zero(dtype):
    """``refresh_weights`` stores ``alpha beta_k / A`` exactly from the floor up (2**-100, the
    floor itself kept) and 0 below it: the weak limit's unused states, with shares below
    1e-38, once made every weight of theirs a subnormal float and step 0 ten times slower."""
    alpha, n_sym = 2.0, 4
    shares = np.array([0.0, 0.5, 2.0 ** -100 * n_sym / alpha, 2.0 ** -101 * n_sym / alpha,
                       1e-45, 0.0])
    shares[0] = 1.0 - shares.sum()  # beta sums to 1 (beta[0] unused when truncated)
    ci = np.array([0, 3, 0, 0, 0, 0], dtype=np.int32)
    recip = np.zeros(6, dtype=dtype)
    bk = np.zeros(6, dtype=dtype)
    meta = np.zeros(2, dtype=np.int64)
    kern.refresh_weights(ci, recip, bk, shares, meta, alpha, n_sym, True)
    assert bk[1] == dtype(alpha * 0.5 / n_sym)
    assert bk[2] == dtype(2.0 ** -100)
    assert bk[3] == 0 and bk[4] == 0 and bk[5] == 0
    assert not np.any((bk != 0) & (np.abs(bk) < np.finfo(dtype).tiny))
    assert list(meta) == [5, 5] and recip[2] == dtype(1.0 / alpha)


def test_log_joint_and_plugin_at_uniform_beta_are_cgs_pfa():
    """With beta_k = 1/N on N states and alpha = N A beta, the collapsed joint is Eq. 4 and
    the plug-in is CGS-PFA's (Sect. 2.3) exactly (deterministic)."""
    from bayesfa.samplers.pfa import _cgs_pfa_kernel as cgs
    from bayesfa.samplers.pfa.cgs_pfa import new_counts
    from bayesfa.samplers.pfa.cgs_pfa import plugin_xi as cgs_plugin

    train = get_toy("small").train
    n, beta_cgs = 3, 0.4
    a = train.alphabet_size + 1
    alpha = n * a * beta_cgs
    tokens = np.ascontiguousarray(train.tokens, dtype=np.int32)
    rng = np.random.default_rng(0)
    for _ in range(5):
        z = np.zeros(tokens.size + 1, dtype=np.int32)
        free = np.flatnonzero(tokens[:-1] != 0) + 1
        z[free] = rng.integers(1, n + 1, size=free.size)
        w = kern.padded_width(n)
        c = np.zeros((n + 1, a, w), np.float32)
        ct = np.zeros((a, n + 1, w), np.float32)
        ci = np.zeros(n + 1, np.int32)
        recip, bk, g = (np.zeros(w, np.float32) for _ in range(3))
        beta = np.full(n + 1, 1.0 / n)
        beta[0] = 0.0
        meta = np.zeros(2, np.int64)
        kern.fill_state(tokens, z, c, ct, ci, recip, bk, beta, meta, alpha, True)
        c2, ct2, ci2, recip2 = new_counts(n, a)
        cgs.fill_counts(tokens, z, c2, ct2, ci2, recip2, beta_cgs)
        assert kern.log_joint(c, ci, beta, meta, alpha, False) == pytest.approx(
            cgs.log_joint(c2, beta_cgs), rel=1e-12, abs=1e-9)
        counts = c[:, :, :n + 1].astype(np.int32)[None]
        bbar = np.full((1, n + 1), 1.0 / n)
        bbar[0, 0] = 0.0  # no new-state mass
        xi = plugin_xi(counts, bbar, np.array([alpha]))
        assert np.allclose(xi[0, :n + 1, :, :n + 1], cgs_plugin(counts[0], beta_cgs), rtol=1e-12)
        assert np.all(xi[0, :n + 1, :, n + 1] == 0)


def test_weak_limit_predictive_agrees_with_cgs_pfa():
    """``--truncate N`` with gamma = 1e8 and alpha = N A beta is CGS-PFA with N states: its
    predictive on the toy matches CGS-PFA's exact plug-in limit (every path enumerated,
    :mod:`bayesfa.validation.pfa.reference`). False-alarm rate 1e-3 (Bonferroni over 15
    strings)."""
    from bayesfa.validation.pfa.reference import path_posterior

    toy = get_toy("tiny")
    n, beta_cgs = toy.n_states, toy.beta
    alpha = n * (toy.train.alphabet_size + 1) * beta_cgs
    test = all_strings()
    res = sample_ipfa(toy.train, states=n, iterations=8_200, burn_in=200, period=2, chains=4,
                      seed=11, alpha=alpha, gamma=1e8, truncate=n, sampler="direct", **FIXED)
    assert res.counts.shape[2] == n + 1 and np.all(res.n_states == n)
    probs = np.exp(per_sample_log_prob({"counts": res.counts, "beta_bar": res.beta_bar,
                                        "alpha": res.alpha}, test))
    ref = np.exp(path_posterior(toy.train, n, beta_cgs).plugin_predictive(test))
    worst, crit = _z_test(probs, ref)
    assert worst <= crit, (worst, crit)


# -- the hyperparameter updates -------------------------------------------------------------

def _posterior_mean(log_density, upper):
    grid_max = integrate.quad(lambda x: math.exp(log_density(x)), 0, upper, limit=200)[0]
    mean = integrate.quad(lambda x: x * math.exp(log_density(x)), 0, upper, limit=200)[0]
    return mean / grid_max


def test_alpha_and_gamma_updates_leave_their_posteriors_invariant():
    """The auxiliary-variable updates (Teh et al. 2006, App. A; Escobar & West 1995) run
    alone at fixed tables: their chain's mean matches the posterior mean by quadrature,
    ``p(alpha | n, m) ~ Gamma(1, 0.1) alpha^m prod_i Gamma(alpha) / Gamma(alpha + n_i)`` and
    ``p(gamma | K, m..) ~ Gamma(2, 0.5) gamma^K Gamma(gamma) / Gamma(gamma + m..)``.
    False-alarm rate 1e-3 (Bonferroni over the two)."""
    n_i = np.array([40, 7, 12, 0, 3], dtype=np.int32)
    m_i = np.array([9, 3, 5, 0, 2], dtype=np.int64)
    meta = np.array([3, 4], dtype=np.int64)
    a_shape, a_rate, g_shape, g_rate = 1.0, 0.1, 2.0, 0.5
    k_used, m_tot = 4, 11
    rng = np.random.default_rng(5)
    chains, draws = 4, 3000
    xa = np.empty((chains, draws))
    xg = np.empty((chains, draws))
    for c in range(chains):
        alpha, gamma = 1.0, 1.0
        for d in range(draws):
            alpha = kern.resample_alpha(n_i, m_i, meta, alpha, a_shape, a_rate, rng, 1)
            gamma = kern.resample_gamma(k_used, m_tot, gamma, g_shape, g_rate, rng, 1)
            xa[c, d], xg[c, d] = alpha, gamma

    def log_pa(x):
        return ((a_shape - 1) * math.log(x) - a_rate * x + m_i.sum() * math.log(x)
                + sum(gammaln(x) - gammaln(x + n) for n in n_i if n > 0))

    def log_pg(x):
        return ((g_shape - 1) * math.log(x) - g_rate * x + k_used * math.log(x)
                + gammaln(x) - gammaln(x + m_tot))

    crit = stats.norm.isf(FALSE_ALARM / 4)
    for x, logp, upper in ((xa, log_pa, 60.0), (xg, log_pg, 80.0)):
        ref = _posterior_mean(logp, upper)
        z = (x.mean() - ref) / (x.std(ddof=1) / math.sqrt(ess_mean(x)))
        assert abs(z) <= crit, (x.mean(), ref, z)


# -- PAutomaC ---------------------------------------------------------------------------------

def test_pautomac_24_every_test_string_positive():
    from bayesfa.datasets import pautomac_path
    from bayesfa.pautomac import read_sample

    train = read_sample(pautomac_path(24, "train"))
    test = read_sample(pautomac_path(24, "test"))
    method = get_method("ipfa")
    opts = _options(iterations=12, burn_in=2, period=5, chains=1)
    fit = method.fit(train, opts, 0, False)
    logp = method.predict_log_prob(fit.arrays, opts, test)
    assert logp.shape == (test.n_strings,)
    assert np.all(np.isfinite(logp)) and np.all(logp < 0)
    assert fit.trace["n_states"].min() >= 1
    # the new state's mass is in the plug-in: a letter-string the training data never has
    odd = Corpus.from_strings([[4] * 30], train.alphabet_size)
    assert np.isfinite(predict_log_prob(fit.arrays, odd)[0])
    # the same chains predicting online, one draw's counts kept
    from bayesfa.online import fit_and_predict

    pred = fit_and_predict("ipfa", train, dict(opts, max_draws=1), 0, test)
    assert pred.info["online"] and pred.n_draws == 2
    np.testing.assert_allclose(pred.log_mean, logp, rtol=1e-12, atol=0)


# -- exactness: validate ipfa (slow) --------------------------------------------------------

def test_exact_reference_basic_facts():
    """The enumeration: probabilities of all strings up to length 3 sum below 1, and the
    empty string has its closed form ``(C_000 + alpha/A) / (C_0 + alpha)``."""
    from bayesfa.validation.pfa.ipfa import plugin_predictive

    toy = get_toy("three")
    ref = np.exp(plugin_predictive(toy.train, all_strings(), 10.0, 1.0))
    assert 0.5 < ref.sum() < 1.0
    n_strings = toy.train.n_strings
    n_empty = sum(len(toy.train.string(s)) == 0 for s in range(n_strings))
    assert ref[0] == pytest.approx((n_empty + 10.0 / 3) / (n_strings + 10.0), rel=1e-12)


def test_geweke_exact_side_is_the_enumeration():
    """The Geweke reference's weights, summed over the partitions of one letter string, are
    the data's marginal likelihood of the predictive's enumeration (written separately,
    :func:`bayesfa.validation.pfa.ipfa._enumerate`); by the letters' symmetry the mean count
    of one letter is half the letters; and the Geweke chain runs (deterministic checks)."""
    from scipy.special import logsumexp

    from bayesfa.validation.pfa import ipfa as v

    lengths, (a, g) = (0, 1, 2, 3), (2.5, 0.7)
    ex = v.geweke_exact(lengths, (a, g))
    n_part = ex.partitions.shape[0]
    lw = np.empty(ex.arrays[1].shape[0])
    v._log_weights(*ex.arrays[1:], 3, a, g, lw)
    none = np.zeros((1, 1), dtype=np.int64)
    for ia in (0, 17, ex.assignments.shape[0] - 1):
        tokens = ex.base.copy()
        tokens[ex.letter_pos] = ex.assignments[ia]
        _, den = v._enumerate(tokens, ex.free, 3, a, g, none, np.zeros(1, dtype=np.int64))
        assert logsumexp(lw[ia * n_part:(ia + 1) * n_part]) == pytest.approx(den, rel=1e-12)
    assert ex.mean[ex.names.index("letter_a")] == pytest.approx(3.0, rel=1e-12)
    assert n_part == 203 and ex.assignments.shape[0] == 64
    check = v.geweke(None, lengths=lengths, fixed=(a, g), n_chains=2, n_iterations=50,
                     burn_in=5, seed=0)
    assert [r["statistic"] for r in check.rows] == list(v.GEWEKE_STATISTICS)
    assert check.summary["n_configurations"] == 203 * 64


@pytest.mark.slow
def test_geweke_hyper_grid_is_fine_enough():
    """``geweke-hyper``'s exact means on its 41 x 41 grid agree with 81 x 81 to 1e-8."""
    from bayesfa.validation.pfa import ipfa as v

    a = v.geweke_exact(v.GEWEKE_HYPER_LENGTHS, priors=v.GEWEKE_PRIORS, grid=v.GEWEKE_GRID)
    b = v.geweke_exact(v.GEWEKE_HYPER_LENGTHS, priors=v.GEWEKE_PRIORS, grid=81)
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("variant", [None, "no-new-state", "no-correction", "no-merge"])
def test_geweke_passes_and_mutants_fail(variant):
    """Both Geweke tests pass the sampler and fail ``no-new-state``, ``no-correction`` and
    ``no-merge`` (seed 0, as ``validate ipfa``; on seeds 0-4 the sampler's largest |z| was 1.6
    and 2.7, each of these mutants' at least 10). ``no-beta-update`` is left out: it leaves
    the target invariant (only beta's own Gibbs step is missing) and mixes slowly, which
    Geweke's test caught on 3 of 10 (seed, test) pairs; the predictive check fails it.
    False-alarm rate 1e-3 per test."""
    from bayesfa.validation.pfa import ipfa as v

    for check in (v.geweke(variant, seed=0), v.geweke(variant, priors=v.GEWEKE_PRIORS, seed=1)):
        assert check.passed == (variant is None), check.to_table()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ipfa"] + [f"ipfa:mutant-{m}" for m in kern.MUTATIONS])
def test_validate_ipfa_passes_and_its_mutants_fail(name):
    """``bayesfa validate ipfa`` on the tiny toy (false-alarm rate 1e-3) passes; each mutant
    fails (measured on seeds 0-4: see the report of issue 23)."""
    from bayesfa.validation.harness import validate

    report = validate(name, "tiny", seed=0)
    assert report.passed == (name == "ipfa"), report.to_table()


@pytest.mark.parametrize("online", [False, True])
def test_interrupted_fit_resumes_bit_identical(tmp_path, monkeypatch, online):
    """A fit stopped after its 5th draw (checkpoint after every draw) and run again in the
    same folder ends bit-identical to an uninterrupted fit; a finished chain is reused. With
    ``online``: the test strings predicted draw by draw and 3 draws kept per chain."""
    from bayesfa.samplers.pfa import ipfa

    train = get_toy("small").train
    opts = _options(iterations=50, burn_in=10, period=4, chains=2, states=3, checkpoint_every=0.0,
                    max_draws=3 if online else None)
    extra = {"predict": all_strings()} if online else {}
    method = get_method("ipfa")
    whole = method.fit(train, opts, 4, False, **extra)
    real_draw = ipfa._Chain.draw
    calls = {"n": 0}

    def flaky_draw(self, mutation=None):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real_draw(self, mutation)

    monkeypatch.setattr(ipfa._Chain, "draw", flaky_draw)
    with pytest.raises(KeyboardInterrupt):
        method.fit(train, opts, 4, False, workdir=tmp_path, **extra)
    monkeypatch.setattr(ipfa._Chain, "draw", real_draw)
    resumed = method.fit(train, opts, 4, False, workdir=tmp_path, **extra)
    assert resumed.info["chains_resumed_mid_chain"] == 1
    again = method.fit(train, opts, 4, False, workdir=tmp_path, **extra)
    assert again.info["chains_resumed"] == 2
    assert ("predict_log_mean" in whole.arrays) == online
    for fit in (resumed, again):
        for key in whole.arrays:
            assert np.array_equal(whole.arrays[key], fit.arrays[key]), key
        for key in whole.trace:
            assert np.array_equal(whole.trace[key], fit.trace[key]), key


@pytest.mark.slow
def test_hyperpriors_predictive_matches_enumeration():
    """With alpha ~ Gamma(2, 0.5) and gamma ~ Gamma(2, 1) sampled (auxiliary variables), the
    direct sampler's predictive on a 6-position data set matches the enumeration integrated
    over (alpha, gamma) on a grid (:func:`bayesfa.validation.pfa.ipfa.plugin_predictive_with_priors`).
    False-alarm rate 1e-3 (Bonferroni over 15 strings). The enumeration is the HDP-PFA's, the
    direct sampler's target; the blocked default samples the weak-limit truncation, checked
    against it in tests/test_ipfa_blocked.py (this test ran the default after it changed, z =
    75 against 4.0, until the sampler was named)."""
    from bayesfa.validation.pfa.ipfa import plugin_predictive_with_priors

    train = Corpus.from_strings([[0, 1], [0], [1], [0, 0], []], 2)
    test = all_strings()
    res = sample_ipfa(train, states=2, iterations=40_200, burn_in=200, period=2, chains=4,
                      seed=2, alpha=1.0, gamma=1.0, alpha_prior="2,0.5", gamma_prior="2,1",
                      sampler="direct")
    probs = np.exp(per_sample_log_prob({"counts": res.counts, "beta_bar": res.beta_bar,
                                        "alpha": res.alpha}, test))
    ref = np.exp(plugin_predictive_with_priors(train, test, (2.0, 0.5), (2.0, 1.0)))
    worst, crit = _z_test(probs, ref)
    assert worst <= crit, (worst, crit)


_CACHE_PROBE = """
from bayesfa.samplers.pfa import _ipfa_kernel as kern
from bayesfa.samplers.pfa.ipfa import sample_ipfa
from bayesfa.validation.toys import get_toy

sample_ipfa(get_toy("small").train, states=3, iterations=4, burn_in=2, period=1, chains=1, seed=0,
            sampler="direct")  # the direct sampler's sweep only (the blocked one compiles its own)
import inspect
sweep = inspect.getclosurevars(kern.sweeps.py_func).nonlocals["sweep_positions"]
stats = sweep.stats  # the fastmath sweep_positions, a closure cell of sweeps
print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
"""


@pytest.mark.slow
def test_the_sweep_loads_from_numba_cache_in_a_new_process(tmp_path):
    """The compiled sweep over positions (``sweep_positions``, the fastmath kernel) is found in
    numba's cache by the next process (two processes compiling from an empty cache, about 20 s:
    in .ci/run's slow subset). (Its caller ``sweeps`` is compiled in each process on
    purpose, see tests/test_reproducible_compiles.py; while it was cached, a closure over the
    compiled sweep missed the cache at every start, its pickle differing in each process.)"""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}

    def probe():
        out = subprocess.run([sys.executable, "-c", _CACHE_PROBE], env=env, check=True,
                             capture_output=True, text=True).stdout.split()
        return int(out[0]), int(out[1])

    assert probe() == (0, 1)  # a fresh cache: compiled once
    assert probe() == (1, 0)  # the next process: loaded, not compiled
