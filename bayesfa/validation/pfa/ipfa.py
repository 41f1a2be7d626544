"""Validation spec of the iPFA (``bayesfa validate ipfa``) for :mod:`bayesfa.validation.harness`.

``predictive``
    the sampler's Eq. 6 with its plug-in ``xi~ = E[xi | z, m, alpha, gamma]`` (see
    :mod:`bayesfa.samplers.pfa.ipfa`) for all strings up to length 3, against the exact limit
    of that estimator, ``sum_{z, m} Pr(z, m | data) Pr(b | xi~(z, m))``, computed here from the
    model's definition alone (:func:`plugin_predictive`), with ``alpha`` and ``gamma`` fixed:

    - every assignment of states to the free positions up to relabelling (restricted growth
      strings: Bell(F) partitions of the ``F`` free positions, states numbered by first visit);
    - ``beta`` integrated out exactly: ``Pr(z | beta, alpha)`` is Eq. 4 with the Dirichlet
      parameters ``alpha H(a, j)``; each ``Gamma(x + C) / Gamma(x)`` is expanded as
      ``sum_m s(C, m) x^m`` (unsigned Stirling numbers of the first kind: ``m`` tables of the
      franchise in that cell), so that ``beta`` enters as ``prod_k beta_k^{t_k}`` with
      ``t_k`` the tables serving state ``k``; summing over the labellings of the partition,
      ``E prod beta_{l_k}^{t_k}`` under ``GEM(gamma)`` is the Ewens partition function
      ``gamma^K Gamma(gamma) / Gamma(gamma + t.) prod_k Gamma(t_k)``;
    - the table configurations summed exactly per state (the cells' Stirling polynomials
      convolved), every vector ``(t_1..t_K)`` enumerated, and given it
      ``(beta_1..beta_K, beta_u) ~ Dir(t_1, .., t_K, gamma)``, whose mean makes ``xi~``.

    The test statistic, its tolerance and its false-alarm rate are the harness's.

    With Gamma hyperpriors on ``alpha`` and ``gamma`` (options ``alpha_prior``,
    ``gamma_prior``) the reference is the same sum integrated over both on a grid
    (:func:`plugin_predictive_with_priors`), for data with at most
    :data:`MAX_FREE_WITH_PRIORS` free positions (the toys have more: ``tests/test_ipfa.py``
    runs it on a 6-position data set).

Mutants (``ipfa:mutant-NAME``, :data:`bayesfa.samplers.pfa._ipfa_kernel.MUTATIONS`) run the
same checks on deliberately wrong kernels and must fail.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numba import njit

from bayesfa.corpus import Corpus

#: Fixed hyperparameters and budget of ``bayesfa validate ipfa`` on a toy.
BUDGET = {"iterations": 40_200, "burn_in": 200, "period": 2, "chains": 4, "jobs": 1,
          "alpha": 10.0, "gamma": 1.0, "alpha_prior": "fixed", "gamma_prior": "fixed",
          "truncate": 0}
#: Most free positions the enumeration takes (Bell(12) = 4.2 million partitions).
MAX_FREE = 12


@njit(cache=True)
def _stirling(n_max):
    """Unsigned Stirling numbers of the first kind ``s[n, m]``, ``n, m <= n_max`` (float64):
    ``x (x + 1) .. (x + n - 1) = sum_m s[n, m] x^m``."""
    s = np.zeros((n_max + 1, n_max + 1))
    s[0, 0] = 1.0
    for n in range(1, n_max + 1):
        for m in range(1, n + 1):
            s[n, m] = (n - 1) * s[n - 1, m] + s[n - 1, m - 1]
    return s


@njit(cache=True)
def _enumerate(tokens, free, n_symbols, alpha, gamma, letters, lengths):
    """``(log sum_w w Pr(b | xi~), log sum_w w)`` per test string (module docstring).

    tokens int64 ``[T]``, free int64 ``[F]``: positions of ``z`` that are free; letters int64
    ``[n, L]`` (test letters, 1-based) with ``lengths [n]``."""
    n_tok = tokens.shape[0]
    f = free.shape[0]
    n_test = letters.shape[0]
    stir = _stirling(n_tok + 1)
    x = alpha / n_symbols  # alpha H(a, j) = x beta_j, and x at the end
    kmax = f
    z = np.zeros(n_tok + 1, dtype=np.int64)
    r = np.ones(max(f, 1), dtype=np.int64)
    mx = np.ones(max(f, 1), dtype=np.int64)
    cnt = np.zeros((kmax + 1, n_symbols, kmax + 1))
    ci = np.zeros(kmax + 1)
    big = n_tok + 2
    poly = np.zeros((kmax + 1, big))
    tmp = np.zeros(big)
    lo = np.zeros(kmax + 1, dtype=np.int64)
    hi = np.zeros(kmax + 1, dtype=np.int64)
    t = np.zeros(kmax + 1, dtype=np.int64)
    xi = np.zeros((kmax + 2, n_symbols, kmax + 2))
    v = np.zeros(kmax + 2)
    v2 = np.zeros(kmax + 2)
    m_run = -np.inf
    num = np.zeros(n_test)
    den = 0.0
    lg_gamma = math.lgamma(gamma)
    while True:
        # -- the path of the partition r
        z[:] = 0
        k_used = 0
        for i in range(f):
            z[free[i]] = r[i]
            if r[i] > k_used:
                k_used = r[i]
        cnt[:] = 0.0
        ci[:] = 0.0
        for s in range(n_tok):
            cnt[z[s], tokens[s], z[s + 1]] += 1.0
            ci[z[s]] += 1.0
        base = 0.0
        for i in range(k_used + 1):
            if ci[i] > 0:
                base += math.lgamma(alpha) - math.lgamma(alpha + ci[i])
            if cnt[i, 0, 0] > 0:
                base += math.lgamma(x + cnt[i, 0, 0]) - math.lgamma(x)
        # -- Stirling polynomial in t_k of every state k's column
        for k in range(1, k_used + 1):
            poly[k, :] = 0.0
            poly[k, 0] = 1.0
            deg = 0
            for i in range(k_used + 1):
                for a in range(1, n_symbols):
                    c = int(cnt[i, a, k])
                    if c == 0:
                        continue
                    tmp[:] = 0.0
                    for d in range(deg + 1):
                        if poly[k, d] == 0.0:
                            continue
                        for m in range(1, c + 1):
                            tmp[d + m] += poly[k, d] * stir[c, m] * x ** m
                    deg += c
                    poly[k, :deg + 1] = tmp[:deg + 1]
            lo[k] = 0
            while poly[k, lo[k]] == 0.0:
                lo[k] += 1
            hi[k] = deg
            t[k] = lo[k]
        # -- every vector of table totals (t_1..t_K)
        while True:
            tt = 0
            lw = base + k_used * math.log(gamma) + lg_gamma
            for k in range(1, k_used + 1):
                tt += t[k]
                lw += math.log(poly[k, t[k]]) + math.lgamma(t[k])
            lw -= math.lgamma(gamma + tt)
            # plug-in xi~: states 0..K, the new state K+1
            q = k_used + 2
            new = k_used + 1
            for i in range(q):
                tot = ci[i] + alpha if i <= k_used else alpha
                for a in range(n_symbols):
                    for j in range(q):
                        val = 0.0
                        if a == 0:
                            if j == 0:
                                val = x
                        elif j >= 1 and j <= k_used:
                            val = x * t[j] / (tt + gamma)
                        elif j == new:
                            val = x * gamma / (tt + gamma)
                        if i <= k_used and j <= k_used:
                            val += cnt[i, a, j]
                        xi[i, a, j] = val / tot
            if lw > m_run:  # rescale the running sums to the new maximum
                scale = math.exp(m_run - lw) if m_run > -np.inf else 0.0
                for s in range(n_test):
                    num[s] *= scale
                den *= scale
                m_run = lw
            w = math.exp(lw - m_run)
            den += w
            for s in range(n_test):
                v[:q] = 0.0
                v[0] = 1.0
                for l in range(lengths[s]):
                    a = letters[s, l]
                    for j in range(q):
                        acc = 0.0
                        for i in range(q):
                            acc += v[i] * xi[i, a, j]
                        v2[j] = acc
                    v[:q] = v2[:q]
                p = 0.0
                for i in range(q):
                    p += v[i] * xi[i, 0, 0]
                num[s] += w * p
            # next vector
            k = k_used
            while k >= 1 and t[k] == hi[k]:
                t[k] = lo[k]
                k -= 1
            if k < 1:
                break
            t[k] += 1
            while poly[k, t[k]] == 0.0:
                t[k] += 1
        # -- next restricted growth string
        i = f - 1
        while i >= 1 and r[i] > mx[i - 1]:
            i -= 1
        if i < 1:
            break
        r[i] += 1
        mx[i] = max(mx[i - 1], r[i])
        for j in range(i + 1, f):
            r[j] = 1
            mx[j] = mx[i]
    out = np.empty(n_test)
    for s in range(n_test):
        out[s] = math.log(num[s]) + m_run if num[s] > 0 else -np.inf
    return out, math.log(den) + m_run


@functools.lru_cache(maxsize=16)
def _cached(tokens: bytes, n_symbols: int, alpha: float, gamma: float, letters: bytes,
            shape: tuple, lengths: bytes) -> np.ndarray:
    tok = np.frombuffer(tokens, dtype=np.int64)
    free = (np.flatnonzero(tok[:-1] != 0) + 1).astype(np.int64)
    if free.size > MAX_FREE:
        raise ValueError(f"{free.size} free positions: too many partitions to enumerate "
                         f"(at most {MAX_FREE})")
    let = np.frombuffer(letters, dtype=np.int64).reshape(shape)
    num, den = _enumerate(tok, free, n_symbols, alpha, gamma, let,
                          np.frombuffer(lengths, dtype=np.int64))
    return num - den


def plugin_predictive(train: Corpus, test: Corpus, alpha: float, gamma: float) -> np.ndarray:
    """``log sum_{z, m} Pr(z, m | train) Pr(b | xi~(z, m))`` per string ``b`` of ``test``, by
    enumeration (module docstring); ``alpha``, ``gamma`` fixed. float64 ``[n_strings]``."""
    n_symbols = train.alphabet_size + 1
    test = test.with_alphabet(train.alphabet_size)
    tokens = np.asarray(train.tokens, dtype=np.int64)
    strings = [np.asarray(test.string(s), dtype=np.int64) + 1 for s in range(test.n_strings)]
    width = max(1, max(len(s) for s in strings))
    letters = np.zeros((len(strings), width), dtype=np.int64)
    for s, b in enumerate(strings):
        letters[s, :b.size] = b
    lengths = np.array([s.size for s in strings], dtype=np.int64)
    return _cached(tokens.tobytes(), n_symbols, float(alpha), float(gamma), letters.tobytes(),
                   letters.shape, lengths.tobytes()).copy()


#: Most free positions for the reference with Gamma hyperpriors (a grid of enumerations).
MAX_FREE_WITH_PRIORS = 7
#: The hyperprior integral's grid of each concentration: ``PRIOR_GRID[2]`` log-spaced nodes
#: from the prior's ``PRIOR_GRID[0]`` quantile to its ``1 - PRIOR_GRID[1]`` quantile (the
#: trapezoid rule in log alpha, log gamma; 81 and 161 nodes agree to 1e-9 on the test toy).
PRIOR_GRID = (1e-9, 1e-12, 81)


@njit(cache=True)
def _enumerate_grid(tokens, free, n_symbols, alphas, gammas, letters, lengths):
    """:func:`_enumerate` at every ``(alphas[i], gammas[j])``: ``(num [I, J, n], den [I, J])``."""
    num = np.empty((alphas.shape[0], gammas.shape[0], letters.shape[0]))
    den = np.empty((alphas.shape[0], gammas.shape[0]))
    for i in range(alphas.shape[0]):
        for j in range(gammas.shape[0]):
            num[i, j], den[i, j] = _enumerate(tokens, free, n_symbols, alphas[i], gammas[j],
                                              letters, lengths)
    return num, den


def _test_arrays(train: Corpus, test: Corpus):
    test = test.with_alphabet(train.alphabet_size)
    strings = [np.asarray(test.string(s), dtype=np.int64) + 1 for s in range(test.n_strings)]
    width = max(1, max(len(x) for x in strings))
    letters = np.zeros((len(strings), width), dtype=np.int64)
    for s, x in enumerate(strings):
        letters[s, :x.size] = x
    return letters, np.array([x.size for x in strings], dtype=np.int64)


def plugin_predictive_with_priors(train: Corpus, test: Corpus, alpha_prior: tuple[float, float],
                                  gamma_prior: tuple[float, float]) -> np.ndarray:
    """The limit of the estimator with ``alpha ~ Gamma(alpha_prior)``, ``gamma ~
    Gamma(gamma_prior)`` (shape, rate): ``int int p(a) p(g) N_b(a, g) / int int p(a) p(g)
    D(a, g)`` with ``N_b = sum_{z,m} Pr(data, z, m | a, g) Pr(b | xi~)`` and ``D = Pr(data | a,
    g)`` from :func:`_enumerate` on a log-spaced grid (:data:`PRIOR_GRID`, trapezoid rule
    in the logs). For at most :data:`MAX_FREE_WITH_PRIORS` free positions."""
    from scipy import stats
    from scipy.special import gammaln, logsumexp

    tokens = np.asarray(train.tokens)
    if int((tokens[:-1] != 0).sum()) > MAX_FREE_WITH_PRIORS:
        raise ValueError(f"more than {MAX_FREE_WITH_PRIORS} free positions: too many for the "
                         f"hyperprior grid")
    q_lo, q_hi, n = PRIOR_GRID

    def nodes(shape_rate):  # the grid and log(prior density x Jacobian x trapezoid weight)
        shape, rate = shape_rate
        law = stats.gamma(shape, scale=1.0 / rate)
        x = np.geomspace(law.ppf(q_lo), law.isf(q_hi), n)
        w = np.full(n, math.log(x[1] / x[0]))
        w[[0, -1]] *= 0.5
        return x, (shape * math.log(rate) - gammaln(shape) + shape * np.log(x) - rate * x
                   + np.log(w))

    grid_a, la = nodes(alpha_prior)
    grid_g, lg = nodes(gamma_prior)
    tok = np.asarray(train.tokens, dtype=np.int64)
    free = (np.flatnonzero(tok[:-1] != 0) + 1).astype(np.int64)
    letters, lengths = _test_arrays(train, test)
    num, den = _enumerate_grid(tok, free, train.alphabet_size + 1, grid_a, grid_g, letters, lengths)
    shift = la[:, None] + lg[None, :]
    return (logsumexp((num + shift[..., None]).reshape(-1, test.n_strings), axis=0)
            - logsumexp(den + shift))


class _Spec:
    """Validation hooks of the iPFA (``bayesfa validate ipfa``)."""

    validation_budget = BUDGET

    def exact_reference(self, toy, test: Corpus, options: dict[str, Any]) -> dict[str, Any]:
        from bayesfa.samplers.pfa.ipfa import parse_gamma_prior

        if options.get("truncate", 0):
            return {"reference": None, "exact": None,
                    "kind": "unavailable (the enumeration is for the HDP, not --truncate)"}
        a_prior = parse_gamma_prior(options.get("alpha_prior", "fixed"))
        g_prior = parse_gamma_prior(options.get("gamma_prior", "fixed"))
        if a_prior is not None or g_prior is not None:
            if a_prior is None or g_prior is None:
                return {"reference": None, "exact": None,
                        "kind": "unavailable (hyperpriors on both alpha and gamma, or neither)"}
            try:
                ref = plugin_predictive_with_priors(toy.train, test, a_prior, g_prior)
            except ValueError as err:
                return {"reference": None, "exact": None, "kind": f"unavailable ({err})"}
            return {"reference": ref, "exact": None,
                    "kind": f"exact plug-in limit of the HDP model with alpha ~ Gamma{a_prior}, "
                            f"gamma ~ Gamma{g_prior}: every partition, beta and the tables summed "
                            f"exactly on a {PRIOR_GRID[2]}x{PRIOR_GRID[2]} grid of (log alpha, log gamma)"}
        alpha, gamma = float(options["alpha"]), float(options["gamma"])
        try:
            ref = plugin_predictive(toy.train, test, alpha, gamma)
        except ValueError as err:
            return {"reference": None, "exact": None, "kind": f"unavailable ({err})"}
        return {"reference": ref, "exact": None,
                "kind": f"exact plug-in limit sum_(z,m) Pr(z,m|data) Pr(b|xi~(z,m)) of the HDP "
                        f"model (alpha={alpha:g}, gamma={gamma:g} fixed): every partition of the "
                        f"free positions, beta and the franchise's tables summed exactly"}

    def per_sample_log_prob(self, arrays, options, test):
        from bayesfa.samplers.pfa.ipfa import per_sample_log_prob

        return per_sample_log_prob(arrays, test)

    def mutant_names(self) -> list[str]:
        from bayesfa.samplers.pfa._ipfa_kernel import MUTATIONS

        return list(MUTATIONS)

    def mutant(self, variant: str):
        from bayesfa.samplers.pfa.ipfa import _IPFA
        from bayesfa.validation.harness import carry_spec

        method = _IPFA(mutation=variant)
        method.summary = "ipfa with a deliberately wrong kernel; for validation only"
        return carry_spec(method, self, f"ipfa:mutant-{variant}")


SPEC = _Spec()
