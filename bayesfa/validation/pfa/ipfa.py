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

``geweke``, ``geweke-hyper``
    Geweke's (2004) joint distribution test of the sampler's sweep (:func:`geweke`) on
    ``Pr(letters, z | lengths)`` with ``alpha``, ``gamma`` fixed, and on ``Pr(letters, z,
    alpha, gamma | lengths)`` with both under Gamma hyperpriors: the sampler's sweeps
    alternated with Gibbs sweeps of the letters, against the exact moments of label-invariant
    statistics (states used, self-loops, repeated self-loops, end concentration, occupancy
    ``sum_k C_k^2``, letter frequency; ``alpha`` and ``gamma`` when sampled) from the
    enumeration of every letter string and partition with the tables and ``beta`` summed
    (:func:`geweke_exact`: the sums of ``predictive``'s reference, coded apart and checked
    against it in ``tests/test_ipfa.py``; nothing of the sampler). Each has false-alarm rate 1e-3 (Bonferroni over its statistics).
    Measured on seeds 0-4 (issue 23): the sampler's largest |z| 0.96-1.59 (fixed) and
    0.91-2.65 (sampled), critical 3.76 and 3.84; ``no-new-state``, ``no-correction`` and
    ``no-merge`` fail both at every seed (|z| >= 10); ``no-beta-update`` fails only 3 of the
    10: without beta's Gibbs step every other update still leaves the target invariant, and
    the chain mixes slowly (an error of ergodicity, which a test started at stationarity
    barely sees); ``predictive`` fails it (|z| 33 at seed 0).

``blocked-posterior``, ``blocked-posterior-hyper``, ``blocked-step0-posterior``, ``blocked-step0-posterior-hyper``
    the weak-limit blocked sampler (``--sampler blocked``; its steps 1-6 alone, then its whole
    sweep with step 0) against the truncated model's exact
    posterior of the paths (and of ``alpha``, ``gamma`` when sampled) on its own toy:
    :mod:`bayesfa.validation.pfa.ipfa_blocked`. Its fit has no predictive reference here (the
    enumeration above is of the HDP, not of the weak limit).

Mutants (``ipfa:mutant-NAME``, :data:`bayesfa.samplers.pfa._ipfa_kernel.MUTATIONS` and the
blocked sampler's :data:`bayesfa.samplers.pfa._ipfa_blocked_kernel.MUTATIONS`, ``blocked-...``)
run the checks of their sampler on deliberately wrong kernels and must fail;
``log-joint-end-prior`` (:data:`~bayesfa.samplers.pfa._ipfa_kernel.RECORDING_MUTATIONS`) slips
only in the recorded log joint, which the ``recorded`` check (:func:`recompute_trace`: every
trace entry recomputed from the kept draws' counts, weights ``beta`` and table counts) sees.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from typing import Any, NamedTuple

import numpy as np
from numba import njit
from scipy import stats as sps

from bayesfa.corpus import Corpus
from bayesfa.validation.checks import Check

#: Fixed hyperparameters and budget of ``bayesfa validate ipfa`` on a toy. The predictive check
#: runs the direct sampler, whose target (the HDP itself) the enumeration gives exactly; the
#: default blocked sampler samples the weak limit, checked exactly by the ``blocked-*`` checks
#: (:func:`bayesfa.validation.pfa.ipfa_blocked.blocked_checks`) on its own toy, and shares the
#: front's plug-in and Eq. 6 with the direct sampler (its draws are stored alike).
BUDGET = {"iterations": 40_200, "burn_in": 200, "period": 2, "chains": 4, "jobs": 1,
          "alpha": 10.0, "gamma": 1.0, "alpha_prior": "fixed", "gamma_prior": "fixed",
          "truncate": 0, "sampler": "direct"}
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
    from scipy.special import logsumexp

    tokens = np.asarray(train.tokens)
    if int((tokens[:-1] != 0).sum()) > MAX_FREE_WITH_PRIORS:
        raise ValueError(f"more than {MAX_FREE_WITH_PRIORS} free positions: too many for the "
                         f"hyperprior grid")
    grid_a, la = _prior_nodes(alpha_prior, PRIOR_GRID[2])
    grid_g, lg = _prior_nodes(gamma_prior, PRIOR_GRID[2])
    tok = np.asarray(train.tokens, dtype=np.int64)
    free = (np.flatnonzero(tok[:-1] != 0) + 1).astype(np.int64)
    letters, lengths = _test_arrays(train, test)
    num, den = _enumerate_grid(tok, free, train.alphabet_size + 1, grid_a, grid_g, letters, lengths)
    shift = la[:, None] + lg[None, :]
    return (logsumexp((num + shift[..., None]).reshape(-1, test.n_strings), axis=0)
            - logsumexp(den + shift))


# -- Geweke's joint distribution test --------------------------------------------------------

#: String lengths of the Geweke tests: hyperparameters fixed (877 partitions of the 7 free
#: positions x 128 letter strings) and sampled (203 x 64, on the hyperprior grid).
GEWEKE_LENGTHS = (0, 1, 1, 2, 3)
GEWEKE_HYPER_LENGTHS = (0, 1, 2, 3)
#: Fixed ``(alpha, gamma)`` of ``geweke``; Gamma (shape, rate) hyperpriors of ``geweke-hyper``.
GEWEKE_FIXED = (3.0, 1.0)
GEWEKE_PRIORS = ((2.0, 0.5), (2.0, 1.0))
#: Chains, recorded iterations per chain (after GEWEKE_BURN_IN), of each Geweke test.
GEWEKE_CHAINS, GEWEKE_ITERATIONS, GEWEKE_BURN_IN = 4, 20_000, 200
#: Nodes per hyperparameter of ``geweke-hyper``'s exact side (41 and 81 agree to 1e-9 on
#: every mean, far below the chains' standard errors: tests/test_ipfa.py).
GEWEKE_GRID = 41
GEWEKE_STATISTICS = ("states_used", "self_loops", "repeated_self_loops", "end_concentration",
                     "occupancy", "letter_a")


def _growth_strings(n: int) -> np.ndarray:
    """Every restricted growth string of length ``n`` (labels from 1, first visits in order):
    one per partition of ``n`` positions, int64 ``[Bell(n), n]``."""
    out: list[list[int]] = []

    def grow(prefix, top):
        if len(prefix) == n:
            out.append(prefix)
            return
        for k in range(1, top + 2):
            grow(prefix + [k], max(top, k))

    grow([], 0)
    return np.array(out, dtype=np.int64).reshape(-1, n)


@njit(cache=True)
def _statistics_of(tokens, z, n_symbols, cnt, ci):
    """The test functions of ``(letters, z)`` (label-invariant, :data:`GEWEKE_STATISTICS`);
    fills ``cnt [Kc+1, A, Kc+1]`` and ``ci`` with ``C_iaj`` and ``C_i`` as it goes."""
    cnt[:] = 0.0
    ci[:] = 0.0
    n_tok = tokens.shape[0]
    letter_a = 0.0
    repeated = 0.0
    for t in range(n_tok):
        cnt[z[t], tokens[t], z[t + 1]] += 1.0
        ci[z[t]] += 1.0
        if tokens[t] == 1:
            letter_a += 1.0
        if (t >= 1 and tokens[t] != 0 and tokens[t] == tokens[t - 1] and z[t - 1] == z[t]
                and z[t] == z[t + 1]):
            repeated += 1.0
    k_used = 0.0
    loops = 0.0
    end = 0.0
    occ = 0.0
    for i in range(1, ci.shape[0]):
        if ci[i] > 0:
            k_used += 1.0
        occ += ci[i] * ci[i]
        end += cnt[i, 0, 0] * cnt[i, 0, 0]
        for a in range(1, n_symbols):
            loops += cnt[i, a, i]
    out = np.empty(6)
    out[0] = k_used
    out[1] = loops
    out[2] = repeated
    out[3] = end
    out[4] = occ
    out[5] = letter_a
    return out


@njit(cache=True)
def _configurations(base, letter_pos, assignments, partitions, free, n_symbols):
    """Every ``(letters, partition)``: its statistics ``[N, 6]``, ``K [N]``, the table
    polynomial ``Q [N, L+1]`` (``L`` letters: ``Q[T] = sum over (t_1..t_K), sum t = T, of
    prod_k P_k[t_k] Gamma(t_k)``, ``P_k`` the Stirling coefficients of state ``k``'s column,
    the ``x^m`` factors left out), ``C_i [N, F+1]`` and ``C_i00 [N, F+1]``."""
    n_tok = base.shape[0]
    f = free.shape[0]
    n_let = letter_pos.shape[0]
    n_conf = assignments.shape[0] * partitions.shape[0]
    stir = _stirling(n_tok + 1)
    stats = np.empty((n_conf, 6))
    k_of = np.empty(n_conf, dtype=np.int64)
    q = np.zeros((n_conf, n_let + 1))
    c_row = np.zeros((n_conf, f + 1))
    c_end = np.zeros((n_conf, f + 1))
    tokens = base.copy()
    z = np.zeros(n_tok + 1, dtype=np.int64)
    cnt = np.zeros((f + 1, n_symbols, f + 1))
    ci = np.zeros(f + 1)
    poly = np.zeros(n_let + 1)
    tmp = np.zeros(n_let + 1)
    acc = np.zeros(n_let + 1)
    n = 0
    for ia in range(assignments.shape[0]):
        for i in range(n_let):
            tokens[letter_pos[i]] = assignments[ia, i]
        for ip in range(partitions.shape[0]):
            k_used = 0
            for i in range(f):
                z[free[i]] = partitions[ip, i]
                k_used = max(k_used, partitions[ip, i])
            stats[n] = _statistics_of(tokens, z, n_symbols, cnt, ci)
            k_of[n] = k_used
            for i in range(f + 1):
                c_row[n, i] = ci[i]
                c_end[n, i] = cnt[i, 0, 0]
            acc[:] = 0.0
            acc[0] = 1.0
            deg_acc = 0
            for k in range(1, k_used + 1):
                poly[:] = 0.0
                poly[0] = 1.0
                deg = 0
                for i in range(k_used + 1):
                    for a in range(1, n_symbols):
                        c = int(cnt[i, a, k])
                        if c == 0:
                            continue
                        tmp[:] = 0.0
                        for d in range(deg + 1):
                            for m in range(1, c + 1):
                                tmp[d + m] += poly[d] * stir[c, m]
                        deg += c
                        poly[:deg + 1] = tmp[:deg + 1]
                for d in range(1, deg + 1):
                    poly[d] *= math.gamma(d)
                tmp[:] = 0.0
                for d1 in range(deg_acc + 1):
                    for d2 in range(1, deg + 1):
                        tmp[d1 + d2] += acc[d1] * poly[d2]
                deg_acc += deg
                acc[:] = tmp
            q[n] = acc
            n += 1
    return stats, k_of, q, c_row, c_end


@njit(cache=True)
def _log_weights(k_of, q, c_row, c_end, n_symbols, alpha, gamma, out):
    """``log Pr(letters, partition | alpha, gamma)`` of every configuration into ``out``:
    Eq. 4 with the prior ``alpha H``, ``beta`` integrated out over the tables as in
    :func:`_enumerate`, ``sum_T Q[T] x^T gamma^K Gamma(gamma) / Gamma(gamma + T)`` with ``x =
    alpha / A`` (module docstring)."""
    x = alpha / n_symbols
    n_let = q.shape[1] - 1
    width = c_row.shape[1]
    top = int(c_row.max()) + 1
    la = np.empty(top)
    lx = np.empty(top)
    for c in range(top):
        la[c] = math.lgamma(alpha) - math.lgamma(alpha + c)
        lx[c] = math.lgamma(x + c) - math.lgamma(x)
    pt = np.empty(n_let + 1)
    for t in range(n_let + 1):
        pt[t] = math.exp(t * math.log(x) - math.lgamma(gamma + t))
    lg = math.log(gamma)
    lgg = math.lgamma(gamma)
    for n in range(k_of.shape[0]):
        w = 0.0
        for i in range(width):
            c = int(c_row[n, i])
            if c > 0:
                w += la[c]
            w += lx[int(c_end[n, i])]
        s = 0.0
        for t in range(n_let + 1):
            s += q[n, t] * pt[t]
        out[n] = w + k_of[n] * lg + lgg + math.log(s)


@njit(cache=True)
def _moments_grid(stats, k_of, q, c_row, c_end, n_symbols, alphas, gammas):
    """At every ``(alphas[i], gammas[j])``: ``log sum_conf Pr(conf | a, g)`` ``[I, J]`` and the
    first two moments of each statistic given ``(a, g)`` ``[2, S, I, J]``."""
    n_s = stats.shape[1]
    log_z = np.empty((alphas.shape[0], gammas.shape[0]))
    mom = np.zeros((2, n_s, alphas.shape[0], gammas.shape[0]))
    lw = np.empty(k_of.shape[0])
    for i in range(alphas.shape[0]):
        for j in range(gammas.shape[0]):
            _log_weights(k_of, q, c_row, c_end, n_symbols, alphas[i], gammas[j], lw)
            top = lw.max()
            tot = 0.0
            for n in range(lw.shape[0]):
                w = math.exp(lw[n] - top)
                tot += w
                for s in range(n_s):
                    mom[0, s, i, j] += w * stats[n, s]
                    mom[1, s, i, j] += w * stats[n, s] * stats[n, s]
            mom[:, :, i, j] /= tot
            log_z[i, j] = math.log(tot) + top
    return log_z, mom


def _prior_nodes(shape_rate, n: int):
    """The hyperprior grid of one concentration (:data:`PRIOR_GRID`'s quantiles, ``n``
    nodes): the nodes and ``log`` (prior density x Jacobian x trapezoid weight in the log)."""
    from scipy import stats
    from scipy.special import gammaln

    q_lo, q_hi, _ = PRIOR_GRID
    shape, rate = shape_rate
    law = stats.gamma(shape, scale=1.0 / rate)
    x = np.geomspace(law.ppf(q_lo), law.isf(q_hi), n)
    w = np.full(n, math.log(x[1] / x[0]))
    w[[0, -1]] *= 0.5
    return x, (shape * math.log(rate) - gammaln(shape) + shape * np.log(x) - rate * x + np.log(w))


class _GewekeExact(NamedTuple):
    """The enumerated side of a Geweke test: every ``(letters, partition)`` (``assignments
    [ia]`` x ``partitions[ip]``, configuration ``ia * n_partitions + ip``) and the exact
    moments of the statistics (``alpha`` and ``gamma`` among them when sampled)."""

    base: np.ndarray
    letter_pos: np.ndarray
    free: np.ndarray
    assignments: np.ndarray
    partitions: np.ndarray
    arrays: tuple
    names: list
    mean: np.ndarray
    second: np.ndarray
    nodes: tuple | None  # (alphas, gammas, node probabilities [I, J]) with hyperpriors


def geweke_exact(lengths, fixed=GEWEKE_FIXED, priors=None, n_letters: int = 2,
                 grid: int = GEWEKE_GRID) -> _GewekeExact:
    """(Cached) :func:`_geweke_exact`."""
    return _geweke_exact(tuple(int(n) for n in lengths), tuple(float(x) for x in fixed),
                         None if priors is None
                         else tuple(tuple(float(x) for x in p) for p in priors),
                         int(n_letters), int(grid))


@functools.lru_cache(maxsize=4)
def _geweke_exact(lengths, fixed, priors, n_letters: int, grid: int) -> _GewekeExact:
    """Exact moments of the Geweke statistics under ``Pr(letters, z[, alpha, gamma] |
    lengths)`` of the HDP model, by enumeration (every letter string of the lengths, every
    partition of the free positions, the tables and ``beta`` summed as in :func:`_enumerate`);
    with ``priors`` (``((shape, rate) of alpha, (shape, rate) of gamma)``) integrated over a
    ``grid x grid`` grid of both (:func:`_prior_nodes`)."""
    base = Corpus.from_strings([[0] * n for n in lengths], n_letters).tokens.astype(np.int64)
    letter_pos = np.flatnonzero(base != 0).astype(np.int64)
    free = (np.flatnonzero(base[:-1] != 0) + 1).astype(np.int64)
    n_symbols = n_letters + 1
    assignments = np.array(list(itertools.product(range(1, n_symbols), repeat=letter_pos.size)),
                           dtype=np.int64).reshape(-1, letter_pos.size)
    partitions = _growth_strings(free.size)
    arrays = _configurations(base, letter_pos, assignments, partitions, free, n_symbols)
    names = list(GEWEKE_STATISTICS)
    if priors is None:
        log_z, mom = _moments_grid(*arrays, n_symbols, np.array([fixed[0]]), np.array([fixed[1]]))
        return _GewekeExact(base, letter_pos, free, assignments, partitions, arrays, names,
                            mom[0, :, 0, 0], mom[1, :, 0, 0], None)
    alphas, la = _prior_nodes(priors[0], grid)
    gammas, lg = _prior_nodes(priors[1], grid)
    log_z, mom = _moments_grid(*arrays, n_symbols, alphas, gammas)
    lp = log_z + la[:, None] + lg[None, :]
    p = np.exp(lp - lp.max())
    p /= p.sum()
    mean = np.einsum("sij,ij->s", mom[0], p)
    second = np.einsum("sij,ij->s", mom[1], p)
    a_m = np.array([p.sum(axis=1) @ alphas, p.sum(axis=0) @ gammas])
    a_2 = np.array([p.sum(axis=1) @ alphas ** 2, p.sum(axis=0) @ gammas ** 2])
    return _GewekeExact(base, letter_pos, free, assignments, partitions, arrays,
                        names + ["alpha", "gamma"], np.concatenate([mean, a_m]),
                        np.concatenate([second, a_2]), (alphas, gammas, p))


@njit(cache=True)
def letter_sweep(tokens, z, beta, alpha, n_symbols, cnt, rng):
    """One Gibbs sweep of the letters given ``z``, ``beta``, ``alpha`` (the iPFA's chain
    state): ``a_t = b`` (``b = 1..A-1``) with probability proportional to ``C^{-t}_{z_t b
    z_{t+1}} + alpha beta_{z_{t+1}} / A`` (Eq. 4 with the prior ``alpha H``; ``C_i`` does not
    change). ``cnt`` float64 scratch ``[>= K+1, A, >= K+1]``. One ``rng.random()`` per letter."""
    cnt[:] = 0.0
    for t in range(tokens.shape[0]):
        cnt[z[t], tokens[t], z[t + 1]] += 1.0
    for t in range(tokens.shape[0]):
        a = tokens[t]
        if a == 0:
            continue
        i = z[t]
        j = z[t + 1]
        h = alpha * beta[j] / n_symbols
        cnt[i, a, j] -= 1.0
        total = 0.0
        for b in range(1, n_symbols):
            total += cnt[i, b, j] + h
        u = rng.random() * total
        new = n_symbols - 1  # reached only through rounding
        acc = 0.0
        for b in range(1, n_symbols):
            acc += cnt[i, b, j] + h
            if u < acc:
                new = b
                break
        cnt[i, new, j] += 1.0
        tokens[t] = new


def geweke(variant: str | None = None, *, priors=None, lengths=None, fixed=GEWEKE_FIXED,
           n_chains: int = GEWEKE_CHAINS, n_iterations: int = GEWEKE_ITERATIONS,
           burn_in: int = GEWEKE_BURN_IN, seed: int = 0, alpha: float = 1e-3) -> Check:
    """Geweke's (2004) joint distribution test of the iPFA sweep (``variant``: a mutant of
    :data:`bayesfa.samplers.pfa._ipfa_kernel.MUTATIONS`, None for production), on
    ``Pr(letters, z[, alpha, gamma] | lengths)``.

    *Successive-conditional* side: each iteration is one sweep of the sampler (``z``, the
    tables, ``gamma``, ``beta``, ``alpha``: :func:`bayesfa.samplers.pfa._ipfa_kernel.sweeps`
    through the front's chain, states added, removed and relabelled as in a fit) followed by
    one Gibbs sweep of the letters given ``z``, ``beta``, ``alpha`` (:func:`letter_sweep`);
    the end markers, hence the lengths, never move, so both updates leave the joint
    invariant. The chains start from exact draws of ``(letters, z)`` (and of the grid node of
    ``(alpha, gamma)`` with hyperpriors), ``beta ~ Dir(1, .., 1, gamma)``, and drop
    ``burn_in`` iterations. *Marginal-conditional* side: exact, :func:`geweke_exact`.
    Two-sided z-test per statistic, the standard error from ArviZ's ESS of the chains;
    false-alarm rate ``alpha``, Bonferroni over the statistics."""
    from bayesfa.samplers.pfa import _ipfa_kernel as kern
    from bayesfa.samplers.pfa.ipfa import _Chain
    from bayesfa.validation.diagnostics import ess_mean

    t0 = time.perf_counter()
    if lengths is None:
        lengths = GEWEKE_LENGTHS if priors is None else GEWEKE_HYPER_LENGTHS
    n_symbols = 3
    ex = geweke_exact(lengths, fixed, priors)
    rng = np.random.default_rng(seed)
    sweeps = kern.build_sweeps(variant)
    prior_vec = np.zeros(4) if priors is None else np.array([*priors[0], *priors[1]], dtype=float)
    n_part = ex.partitions.shape[0]
    lw = np.empty(ex.arrays[1].shape[0])
    f = ex.free.size
    n_stat = len(ex.names)
    rec = np.empty((n_chains, n_iterations, n_stat))
    cnt = np.zeros((f + 2, n_symbols, f + 2))
    cnt_s = np.zeros((f + 2, n_symbols, f + 2))
    ci_s = np.zeros(f + 2)
    for ch in range(n_chains):
        if ex.nodes is None:
            a0, g0 = fixed
        else:
            alphas, gammas, p = ex.nodes
            node = rng.choice(p.size, p=p.ravel())
            a0, g0 = alphas[node // gammas.size], gammas[node % gammas.size]
        _log_weights(ex.arrays[1], ex.arrays[2], ex.arrays[3], ex.arrays[4], n_symbols, a0, g0, lw)
        w = np.exp(lw - lw.max())
        conf = rng.choice(w.size, p=w / w.sum())
        tokens = ex.base.astype(np.int32)
        tokens[ex.letter_pos] = ex.assignments[conf // n_part]
        z = np.zeros(tokens.size + 1, dtype=np.int32)
        z[ex.free] = ex.partitions[conf % n_part]
        k = int(z.max())
        d = rng.dirichlet(np.r_[np.ones(k), g0])
        beta = np.r_[d[k], d[:k]]
        chain = _Chain.restore(tokens, n_symbols, z, beta, np.array([a0, g0]), 0)
        for it in range(burn_in + n_iterations):
            chain.run(1, rng, prior_vec, sweeps)
            letter_sweep(chain.tokens, chain.z, chain.beta, float(chain.hyper[0]), n_symbols,
                         cnt, rng)
            kern.fill_state(chain.tokens, chain.z, chain.c, chain.ct, chain.ci, chain.recip,
                            chain.bk, chain.beta, chain.meta, float(chain.hyper[0]), False)
            if it >= burn_in:
                row = rec[ch, it - burn_in]
                row[:6] = _statistics_of(chain.tokens, chain.z, n_symbols, cnt_s, ci_s)
                if n_stat > 6:
                    row[6:] = chain.hyper
    crit = float(sps.norm.isf(alpha / (2 * n_stat)))
    rows = []
    for s, name in enumerate(ex.names):
        mean = float(ex.mean[s])
        sd = math.sqrt(max(float(ex.second[s]) - mean ** 2, 0.0))
        x = rec[:, :, s]
        est = float(x.mean())
        if sd <= 1e-12 * max(1.0, abs(mean)):
            se, zs = 0.0, (0.0 if abs(est - mean) <= 1e-9 * max(1.0, abs(mean)) else math.inf)
        else:
            ess = ess_mean(x)
            se = float(np.std(x, ddof=1) / math.sqrt(ess)) if ess > 0 else math.nan
            zs = (est - mean) / se if se > 0 else (0.0 if abs(est - mean) < 1e-9 else math.inf)
        rows.append({"statistic": name, "exact": mean, "successive": est, "mcse": se, "z": zs,
                     "pass": bool(abs(zs) <= crit)})
    label = "ipfa" if variant is None else f"ipfa:mutant-{variant}"
    hyper = (f"alpha={fixed[0]:g}, gamma={fixed[1]:g} fixed" if priors is None else
             f"alpha ~ Gamma{tuple(priors[0])}, gamma ~ Gamma{tuple(priors[1])} sampled "
             f"(exact side on a {GEWEKE_GRID}x{GEWEKE_GRID} grid)")
    return Check(
        name="geweke" if priors is None else "geweke-hyper", passed=all(r["pass"] for r in rows),
        description=(f"{label}: Geweke joint test on Pr(letters, z"
                     f"{'' if priors is None else ', alpha, gamma'} | lengths {list(lengths)}), "
                     f"{hyper}; successive-conditional chain "
                     f"(1 sampler sweep + 1 letter sweep per step) vs exact enumeration"),
        alpha=alpha, columns=["statistic", "exact", "successive", "mcse", "z", "pass"], rows=rows,
        summary={"n_chains": n_chains, "n_iterations": n_iterations, "burn_in": burn_in,
                 "critical_z": crit, "n_configurations": int(lw.size),
                 "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g} (two-sided z-tests, Bonferroni over {n_stat} "
               f"statistics; MC standard errors from ArviZ ESS)"])


# -- the recorded check --------------------------------------------------------------------------

def draw_log_joint(counts, beta, alpha) -> np.ndarray:
    """``log Pr(data, z | beta, alpha)`` of recorded draws, ``counts [S, K+1, A, K+1]``,
    ``beta [S, K+1]`` (``beta[0] = beta_u``, not read), ``alpha [S]``: Eq. 4 of Shibata &
    Yoshinaka (2013) with each row's Dirichlet parameters ``alpha H(a, j)`` (``H(a, j) =
    beta_j / A`` for a letter, ``H(end) = 1 / A``; Teh et al. 2006, Sect. 5.3), per row ``i``
    with ``C_i > 0``: ``log Gamma(alpha) - log Gamma(C_i + alpha) + sum_{C_iaj > 0}
    [log Gamma(C_iaj + alpha H(a, j)) - log Gamma(alpha H(a, j))]``; scipy's ``gammaln`` on
    whole arrays, not the kernel's loop."""
    from scipy.special import gammaln

    c = np.asarray(counts, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=np.float64).reshape(-1)
    n_symbols = c.shape[-2]
    prm = np.broadcast_to((alpha[:, None] * beta / n_symbols)[:, None, None, :], c.shape).copy()
    prm[:, :, 0, :] = (alpha / n_symbols)[:, None, None]
    used = c > 0
    cell = np.where(used, gammaln(np.where(used, c + prm, 1.0)) - gammaln(np.where(used, prm, 1.0)),
                    0.0).sum(axis=(-3, -2, -1))
    rows = c.sum(axis=(-2, -1))
    row = np.where(rows > 0, gammaln(alpha)[:, None] - gammaln(rows + alpha[:, None]), 0.0)
    return cell + row.sum(axis=-1)


def recompute_trace(arrays, trace, options, train):
    """The ``recorded`` check's recomputations (:mod:`bayesfa.validation.recorded`) for the
    iPFA, on the draws whose state is kept (``--max-draws``: the front's rule): the log
    joint by :func:`draw_log_joint` from the recorded counts, weights ``beta`` and
    ``alpha`` (1e-9), the states in use (``C_i > 0``, ``i >= 1``), ``alpha`` and ``gamma``
    against the kept draws' recorded values. Rows: the counts are a path's through the data
    (:func:`bayesfa.validation.pfa.reference.counts_consistency`); ``beta_bar`` is ``E[beta
    | m, gamma]`` from the recorded table counts (``m_.k / (m.. + gamma)``, the new state
    ``gamma / (m.. + gamma)``; truncated ``(gamma / L + m_.k) / (gamma + m..)``, Teh et al.
    2006, Sect. 5.3); the weights are a distribution (``sum beta = 1``, positive on the states
    in use) and each state in use has a table (``m_.k >= 1``). ``moved`` of a blocked fit is a
    fraction of the positions per sweep in ``[0, 2]`` (step 0 moves each position once and
    step 2 may change it again; the rate check's ``[0, 1]`` is for one pass)."""
    from bayesfa.samplers.pfa.cgs_pfa import kept_draw_indices  # which draws kept counts
    from bayesfa.validation.pfa.reference import counts_consistency
    from bayesfa.validation.recorded import Recomputed

    kept = kept_draw_indices(np.shape(trace["log_joint"])[1], options.get("max_draws"))
    counts = np.asarray(arrays["counts"])
    shape = counts.shape[:2]
    flat = counts.reshape((-1,) + counts.shape[2:])
    beta = np.asarray(arrays["beta"], dtype=np.float64)
    tables = np.asarray(arrays["tables"], dtype=np.float64)
    alpha = np.asarray(arrays["alpha"], dtype=np.float64)
    gamma = np.asarray(arrays["gamma"], dtype=np.float64)
    lj = draw_log_joint(flat, beta.reshape(flat.shape[0], -1), alpha.reshape(-1)).reshape(shape)

    def rec(name):
        return np.asarray(trace[name])[:, kept]

    in_use = counts[:, :, 1:].sum(axis=(3, 4)) > 0  # [chain, kept, K]
    out = {"log_joint": Recomputed(lj, rec("log_joint"), 1e-9,
                                   "Eq. 4 with the prior alpha H(a, j) from the recorded counts, "
                                   "beta and alpha (ipfa.draw_log_joint, scipy gammaln)"),
           "n_states": Recomputed(in_use.sum(axis=2), rec("n_states"), 0.0,
                                  "states i >= 1 with C_i > 0"),
           "alpha": Recomputed(alpha, rec("alpha"), 0.0, "the kept draws' recorded alpha"),
           "gamma": Recomputed(gamma, rec("gamma"), 0.0, "the kept draws' recorded gamma")}
    if options.get("sampler", "direct") == "blocked":  # step 0's moves and step 2's added
        from bayesfa.validation.recorded import NotRecomputable

        moved = np.asarray(trace["moved"], dtype=np.float64)
        out["moved"] = NotRecomputable(moved, moved.shape, 0.0, 2.0,
                                       "a sampler statistic: with --sampler blocked step 0's "
                                       "moves and step 2's changes per position, so up to 2")
    m = tables[:, :, 1:]
    tot = m.sum(axis=2)
    truncate = int(options.get("truncate", 0)) or (
        0 if options.get("sampler", "direct") == "direct" else -1)
    want = np.zeros_like(np.asarray(arrays["beta_bar"], dtype=np.float64))
    if truncate == 0:  # the HDP: slot 0 the new state's mass
        want[:, :, 1:] = m / (tot + gamma)[:, :, None]
        want[:, :, 0] = gamma / (tot + gamma)
    else:  # the weak limit over the L recorded labels
        n_lab = m.shape[2]
        want[:, :, 1:] = (gamma[:, :, None] / n_lab + m) / (gamma + tot)[:, :, None]
    diff = np.abs(want - np.asarray(arrays["beta_bar"]))
    bad_bar = (diff > 1e-12).any(axis=2)
    s_beta = beta.sum(axis=2)
    bad_beta = (np.abs(s_beta - 1.0) > 1e-9) | ((beta[:, :, 1:] <= 0) & in_use).any(axis=2)
    bad_beta |= ((m < 1) & in_use).any(axis=2)
    rows = [counts_consistency(counts, train.tokens),
            {"quantity": "beta_bar", "draws": int(bad_bar.size), "max_diff": float(diff.max()),
             "tolerance": 1e-12, "pass": not bool(bad_bar.any()),
             "how": "E[beta | m, gamma] from the recorded table counts m_.k and gamma"},
            {"quantity": "beta, tables (the recorded state)", "draws": int(bad_beta.size),
             "max_diff": float(bad_beta.sum()), "tolerance": 0.0,
             "pass": not bool(bad_beta.any()),
             "how": "sum beta = 1, beta_k > 0 and m_.k >= 1 on the states in use "
                    "(draws breaking any)"}]
    return out, rows


class _Spec:
    """Validation hooks of the iPFA (``bayesfa validate ipfa``); ``variant``: a mutant's name
    (:data:`bayesfa.samplers.pfa._ipfa_kernel.MUTATIONS`), None for the sampler itself."""

    validation_budget = BUDGET

    def __init__(self, variant: str | None = None):
        from bayesfa.samplers.pfa._ipfa_blocked_kernel import MUTATIONS as BLOCKED

        self.variant = variant
        self.blocked = variant in BLOCKED  # a mutant of the weak limit's blocked sampler
        if self.blocked:  # its fit has no exact reference (below): a short one, for the
            # recorded check; no predictive comparison is reported (nothing to compare with)
            from bayesfa.samplers.pfa._ffbs_kernel import SLICE_MUTATIONS

            self.validation_budget = {**BUDGET, "iterations": 2_200, "chains": 2,
                                      "sampler": "blocked",  # the paths its mutant is of
                                      "paths": "slice" if variant in SLICE_MUTATIONS else "dense"}
            self.predictive = False

    def check_names(self) -> list[str]:
        from bayesfa.samplers.pfa._ffbs_kernel import SLICE_MUTATIONS

        blocked = ["blocked-posterior", "blocked-posterior-hyper", "blocked-step0-posterior",
                   "blocked-step0-posterior-hyper"]
        sliced = ["slice-given-theta"] + [n.replace("blocked-", "blocked-slice-", 1) for n in blocked]
        if self.blocked:
            return ["recorded"] + (sliced if self.variant in SLICE_MUTATIONS else blocked)
        return (["predictive", "geweke", "geweke-hyper"]
                + ([] if self.variant else blocked + sliced + ["blocked-split-merge"]))

    def kernel_checks(self, toy, *, seed: int = 0, alpha: float = 1e-3) -> list[Check]:
        """Geweke's joint test of the direct sampler with ``alpha``, ``gamma`` fixed
        (:data:`GEWEKE_FIXED`) and with both sampled under :data:`GEWEKE_PRIORS`
        (:func:`geweke`), then the blocked sampler's exact checks on its own toy
        (:func:`bayesfa.validation.pfa.ipfa_blocked.blocked_checks`, with step 2's dense FFBS and
        with its slice FFBS, ``--paths slice``) and its split-merge move's
        (:func:`bayesfa.validation.pfa.ipfa_split.split_merge_check`); a mutant runs those of
        its sampler only. Each has false-alarm rate ``alpha``. Their data are their own, not
        the toy's."""
        from bayesfa.validation.pfa.ipfa_blocked import blocked_checks

        if self.blocked:
            return blocked_checks(self.variant, seed=seed, alpha=alpha)
        checks = [geweke(self.variant, seed=seed, alpha=alpha),
                  geweke(self.variant, priors=GEWEKE_PRIORS, seed=seed + 1, alpha=alpha)]
        if self.variant is None:
            from bayesfa.validation.pfa.ipfa_split import split_merge_check

            checks += blocked_checks(None, seed=seed, alpha=alpha)
            checks += blocked_checks(None, seed=seed, alpha=alpha, paths="slice")
            checks.append(split_merge_check(seed=seed, alpha=alpha))
        return checks

    def exact_reference(self, toy, test: Corpus, options: dict[str, Any]) -> dict[str, Any]:
        from bayesfa.samplers.pfa.ipfa import parse_gamma_prior

        if self.blocked or options.get("sampler", "direct") == "blocked":
            return {"reference": None, "exact": None,
                    "kind": "unavailable (the blocked sampler's model is the weak limit; its "
                            "exact checks are blocked-posterior, blocked-posterior-hyper and their "
                            "blocked-step0- twins)"}
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

    def recompute_trace(self, arrays, trace, options, train):
        return recompute_trace(arrays, trace, options, train)

    def per_sample_log_prob(self, arrays, options, test):
        from bayesfa.samplers.pfa.ipfa import per_sample_log_prob

        return per_sample_log_prob(arrays, test)

    def mutant_names(self) -> list[str]:
        from bayesfa.samplers.pfa._ipfa_blocked_kernel import MUTATIONS as BLOCKED
        from bayesfa.samplers.pfa._ipfa_kernel import MUTATIONS

        return list(MUTATIONS) + list(BLOCKED)

    def mutant(self, variant: str):
        from bayesfa.samplers.pfa.ipfa import _IPFA
        from bayesfa.validation.harness import carry_spec

        method = _IPFA(mutation=variant)
        method.summary = "ipfa with a deliberately wrong kernel; for validation only"
        return carry_spec(method, type(self)(variant), f"ipfa:mutant-{variant}")


SPEC = _Spec()
