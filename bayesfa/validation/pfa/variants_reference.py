"""Exact predictive references of CGS-HMM, CGS-HMM(*) and CGS-SG, written apart from the samplers.

Nothing here calls the estimators' code (``hmm_xi``, ``sg_xi``, ``plugin_xi``,
``bayesfa.forward.forward_log_prob``): each plug-in is written again from the paper's
equation and the string probability is computed by a forward pass of its own
(:func:`forward_prob`) or, for CGS-SG, by summing the paths of the test string
(:func:`sg_predictive`). The train paths are enumerated by
:func:`bayesfa.validation.pfa.reference.all_paths` (validation code) and weighted by the
collapsed joints written here from the models' definitions (:func:`hmm_log_joint`, the
Dirichlet-multinomial form of the HMM of Sect. 4.4; :func:`sg_log_joint`, Eq. 18), which
:mod:`bayesfa.validation.pfa.variants` re-exports.

Reference: C. Shibata and R. Yoshinaka, "A comparison of collapsed Bayesian methods for
probabilistic finite automata", Machine Learning 96, 2014: Sect. 3 (Eq. 18), Sect. 4.4 (Eq. 20
and the CGS-HMM(*) plug-in).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.special import gammaln, logsumexp

from bayesfa.corpus import Corpus
from bayesfa.validation.pfa.reference import all_paths, batch_counts


# -- the collapsed joints, vectorised over count arrays [..., N+1, A, N+1] ---------------

def _dir_mult(counts: np.ndarray, conc: float) -> np.ndarray:
    k = counts.shape[-1]
    return (gammaln(k * conc) - gammaln(counts.sum(-1) + k * conc)
            + (gammaln(counts + conc) - gammaln(conc)).sum(-1))


def hmm_log_joint(c: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """``log Pr(alpha, z)`` of the collapsed HMM from ``C_iaj`` ``[..., N+1, A, N+1]``."""
    c = np.asarray(c, dtype=np.float64)
    emit = c.sum(axis=-1)
    move = c[..., 1:, 1:].sum(axis=-2)
    return _dir_mult(emit, alpha).sum(-1) + _dir_mult(move, beta).sum(-1)


def edge_mask(n_states: int, n_symbols: int) -> np.ndarray:
    """bool ``[N+1, A, N+1]``: the edges of the fully connected NFA (Sect. 3)."""
    mask = np.zeros((n_states + 1, n_symbols, n_states + 1), dtype=bool)
    mask[:, 1:, 1:] = True
    mask[:, 0, 0] = True
    return mask


def sg_log_joint(c: np.ndarray, graph: np.ndarray, beta: float) -> np.ndarray:
    """``log Pr(G, alpha, z)`` of Eq. 18 (uniform ``Pr(v)``) for ``C`` and ``G``
    ``[..., N+1, A, N+1]`` with ``G >= G_min`` (not checked)."""
    c = np.asarray(c, dtype=np.float64)
    g = np.asarray(graph, dtype=bool)
    n_full = int(edge_mask(c.shape[-3] - 1, c.shape[-2]).sum())
    v = g.sum(axis=-1).sum(axis=-1)
    ci = c.sum(axis=(-2, -1))
    cells = np.where(c > 0, gammaln(c + beta) - gammaln(beta), 0.0).sum(axis=(-3, -2, -1))
    safe = np.maximum(v, 1) * beta
    states = np.where(v > 0, gammaln(safe) - gammaln(ci + safe), 0.0).sum(-1)
    size = v.sum(-1)
    log_binom = gammaln(n_full + 1.0) - gammaln(size + 1.0) - gammaln(n_full - size + 1.0)
    return cells + states - log_binom - math.log(n_full + 1.0)


def _classes(train: Corpus, n_states: int):
    """``(class_counts [U, N+1, A, N+1], multiplicity [U])`` of all paths of ``train``."""
    n_symbols = train.alphabet_size + 1
    paths = all_paths(train.tokens, n_states)
    c = batch_counts(train.tokens, paths, n_states, n_symbols)
    flat = np.ascontiguousarray(c.reshape(c.shape[0], -1).astype(np.int16))
    uniq, first, mult = np.unique(flat, axis=0, return_index=True, return_counts=True)
    return c[first], mult



# -- plug-ins, from the paper --------------------------------------------------------------

def eq20_xi(c: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """Eq. 20 ``xi~_iaj = (C_ia + alpha) / (C_i + A alpha) * (C_ij + beta) / (C_i - C_i00 + N beta)``
    for ``a != 0, j >= 1`` and ``xi~_i00 = (C_i0 + alpha) / (C_i + A alpha)``, ``c``
    ``[..., N+1, A, N+1]``. The move total ``C_i - C_i00`` (moves out of ``i``: ``theta_i``
    is used after non-end letters only) replaces the printed ``C_i``, under which the rows do
    not sum to 1 (the mutant ``unnormalised-eq20``)."""
    c = np.asarray(c, dtype=np.float64)
    q, n_sym = c.shape[-3], c.shape[-2]
    n = q - 1
    xi = np.zeros(c.shape)
    for i in range(q):
        c_i = c[..., i, :, :].sum(axis=(-2, -1))
        c_i00 = c[..., i, 0, 0]
        for a in range(n_sym):
            eta = (c[..., i, a, :].sum(axis=-1) + alpha) / (c_i + n_sym * alpha)
            if a == 0:
                xi[..., i, 0, 0] = eta
                continue
            for j in range(1, q):
                c_ij = c[..., i, 1:, j].sum(axis=-1)
                xi[..., i, a, j] = eta * (c_ij + beta) / (c_i - c_i00 + n * beta)
    return xi


def star_xi_reference(c: np.ndarray, beta: float) -> np.ndarray:
    """CGS-HMM(*) (Sect. 4.4) as the method defines it: ``(C_iaj + beta) / (C_i + N A beta)``
    on ``a != 0, j >= 1`` and ``(C_i00 + N beta) / (C_i + N A beta)`` on the end edge (the
    PFA prior of Eq. 2 puts ``N beta`` there, so the rows sum to 1)."""
    c = np.asarray(c, dtype=np.float64)
    q, n_sym = c.shape[-3], c.shape[-2]
    n = q - 1
    xi = np.zeros(c.shape)
    tot = c.sum(axis=(-2, -1)) + n * n_sym * beta  # [..., N+1]
    xi[..., 1:, 1:] = (c[..., 1:, 1:] + beta) / tot[..., None, None]
    xi[..., :, 0, 0] = (c[..., :, 0, 0] + n * beta) / tot
    return xi


# -- an own forward pass ----------------------------------------------------------------------

def forward_prob(xi: np.ndarray, strings: list) -> np.ndarray:
    """``Pr(b | xi)`` ``[S, n_strings]`` for ``xi`` ``[S, N+1, A, N+1]`` and 0-based letter
    strings: start in state 0, ``f <- f xi[:, :, b_t + 1, :]`` per letter, then the end edge
    ``sum_i f_i xi_i00``."""
    xi = np.asarray(xi, dtype=np.float64)
    s, q = xi.shape[0], xi.shape[1]
    out = np.empty((s, len(strings)))
    for m, b in enumerate(strings):
        f = np.zeros((s, q))
        f[:, 0] = 1.0
        for letter in b:
            f = np.einsum("si,sij->sj", f, xi[:, :, int(letter) + 1, :])
        out[:, m] = (f * xi[:, :, 0, 0]).sum(axis=1)
    return out


def _test_strings(test: Corpus) -> list:
    return [list(test.string(s)) for s in range(test.n_strings)]




def hmm_predictive(train: Corpus, test: Corpus, n_states: int, alpha: float, beta: float,
                   star: bool) -> np.ndarray:
    """``log sum_z Pr_HMM(z | alpha) Pr(b | xi~(z))`` per test string: every train path ``z``
    (grouped by count vector), weighted by the collapsed HMM joint, ``xi~`` of Eq. 20
    (:func:`eq20_xi`) or of CGS-HMM(*) (:func:`star_xi_reference`), own forward pass."""
    cls, mult = _classes(train, n_states)
    logw = hmm_log_joint(cls, alpha, beta) + np.log(mult)
    w = np.exp(logw - logsumexp(logw))
    xi = star_xi_reference(cls, beta) if star else eq20_xi(cls, alpha, beta)
    p = forward_prob(xi, _test_strings(test))
    return np.log(w @ p)


# -- CGS-SG: G summed out exactly, given the degrees --------------------------------------

def _log_binom(n, k):
    n = np.asarray(n, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    ok = (k >= 0) & (k <= n)
    out = gammaln(n + 1) - gammaln(np.where(ok, k, 0) + 1) - gammaln(np.where(ok, n - k, 0) + 1)
    return np.where(ok, out, -np.inf)


def _convolve_all(polys: np.ndarray) -> np.ndarray:
    """Product of the polynomials ``polys`` ``[U, Q, D]`` (coefficient of degree d last axis)
    over ``Q``: ``[U, Q (D - 1) + 1]``."""
    out = polys[:, 0]
    for i in range(1, polys.shape[1]):
        nxt = np.zeros((out.shape[0], out.shape[1] + polys.shape[2] - 1))
        for d in range(polys.shape[2]):
            nxt[:, d:d + out.shape[1]] += out * polys[:, i, d:d + 1]
        out = nxt
    return out


def sg_predictive(train: Corpus, test: Corpus, n_states: int, beta: float) -> np.ndarray:
    """``log sum_{z, G} Pr(z, G | alpha) Pr(b | xi~(z, G))`` per test string, exactly, with
    ``Pr(z, G, alpha)`` of Eq. 18 (uniform ``Pr(v)``) and ``xi~_e = [e in G] (C_e + beta) /
    (C_i + v_i beta)`` (Sect. 3; Eq. 6 with ``E[xi | alpha, z, G]``).

    No graph is enumerated: Eq. 18 depends on ``G`` through the out-degrees ``v_i`` only, and
    given the degrees the rows of ``G`` are independent uniform supersets of ``G_min(z)``'s
    rows. ``Pr(b | xi~)`` is a sum over the paths ``y`` of ``b`` of products of ``xi~_e``
    over the path's edges; for one path, with ``n_i`` path edges out of ``i`` of which ``s_i``
    distinct ones are outside ``G_min`` (``F_i`` such edges in the full row, ``m_i`` in
    ``G_min``), ``Pr(those edges in G | v_i) = binom(F_i - s_i, v_i - m_i - s_i) /
    binom(F_i, v_i - m_i)``, so ``sum_G Pr(G, alpha, z) prod_e xi~_e = prod_e (C_e + beta)
    prod_{C_e > 0} Gamma(C_e + beta) / Gamma(beta) * sum_K Pr(v = K) / binom(E, K) *
    [prod_i h_i](K)`` with ``h_i(d) = binom(F_i - s_i, d - m_i - s_i) Gamma(d beta) /
    Gamma(C_i + d beta) / (C_i + d beta)^{n_i}`` (polynomials in the degree, convolved)."""
    n_sym = train.alphabet_size + 1
    q = n_states + 1
    cls, mult = _classes(train, n_states)  # [U, Q, A, Q]
    cls = cls.astype(np.float64)
    u = cls.shape[0]
    per_state = (n_sym - 1) * n_states + 1
    n_full = q * per_state
    mask = np.zeros((q, n_sym, q), dtype=bool)
    mask[:, 1:, 1:] = True
    mask[:, 0, 0] = True
    used = cls > 0
    m = used.sum(axis=(2, 3))                     # [U, Q]
    f = per_state - m
    c_i = cls.sum(axis=(2, 3))                    # [U, Q]
    d = np.arange(per_state + 1)[None, None, :]
    dd = np.broadcast_to(d, (u, q, per_state + 1)).astype(np.float64)
    state = np.where(dd > 0, gammaln(np.maximum(dd, 1) * beta)
                     - gammaln(c_i[..., None] + np.maximum(dd, 1) * beta), 0.0)
    base = _log_binom(f[..., None], dd - m[..., None]) + state       # [U, Q, D]
    scale = base.max(axis=-1)                                          # [U, Q]
    k = np.arange(q * per_state + 1)
    log_w = -_log_binom(n_full, k) - math.log(n_full + 1.0)            # [K]
    w = np.exp(log_w - log_w.max())
    den = _convolve_all(np.exp(base - scale[..., None])) @ w           # [U]
    cells = np.where(used, gammaln(cls + beta) - gammaln(beta), 0.0).sum(axis=(1, 2, 3))
    log_class = np.log(mult) + cells + scale.sum(axis=1) + np.log(den)
    weight = np.exp(log_class - logsumexp(log_class))                  # [U]
    test = test.with_alphabet(train.alphabet_size)
    out = np.empty(test.n_strings)
    cache: dict = {}
    nn = np.arange(per_state + 1)
    table = _log_binom(nn[:, None], nn[None, :])  # log binom(n, k), n, k = 0..P
    log_den = np.log(c_i[..., None] + np.maximum(dd, 1e-300) * beta)
    pre = (table, log_den, state - scale[..., None])
    for sidx, b in enumerate(_test_strings(test)):
        total = np.zeros(u)
        for y in itertools.product(range(1, q), repeat=len(b)):
            states = (0,) + y
            edges = [(states[t], int(b[t]) + 1, states[t + 1]) for t in range(len(b))]
            edges.append((states[-1], 0, 0))
            key = tuple(edges)
            if key not in cache:
                cache[key] = _path_term(edges, cls, used, m, f, dd, pre, w, den, beta)
            total += cache[key]
        out[sidx] = math.log(weight @ total)
    return out


def _path_term(edges, cls, used, m, f, dd, pre, w, den, beta):
    """``E[prod_e xi~_e | alpha, z]`` ``[U]`` over ``G ~ Pr(G | alpha, z)`` for the path's
    ``edges`` (see :func:`sg_predictive`); ``pre``: the log-binomial table, ``log(C_i + d
    beta)`` and the scaled state factor."""
    table, log_den, state = pre
    u, q = m.shape
    n_out = np.zeros(q)
    numer = np.ones(u)
    distinct: dict = {}
    for (i, a, j) in edges:
        n_out[i] += 1
        numer = numer * (cls[:, i, a, j] + beta)
        distinct[(i, a, j)] = True
    s = np.zeros((u, q), dtype=np.int64)
    for (i, a, j) in distinct:
        s[:, i] += ~used[:, i, a, j]
    top = (f - s)[..., None] + 0 * dd.astype(np.int64)
    kk = dd.astype(np.int64) - (m + s)[..., None]
    ok = (kk >= 0) & (kk <= top)
    lb = np.where(ok, table[np.clip(top, 0, None), np.clip(kk, 0, table.shape[1] - 1)], -np.inf)
    log_h = lb + state - n_out[None, :, None] * log_den
    poly = _convolve_all(np.exp(log_h))
    return numer * (poly @ w) / den
