"""Exact kernel checks of CGS-HMM and CGS-SG: every move against the exact posterior.

``site-exact`` (CGS-HMM and CGS-SG, the update of one ``z_t``)
    On corpora small enough to enumerate every path (:data:`SITE_CORPORA`: 2 and 3 letters,
    ``N`` = 2 and 3), for every configuration and every free position ``t``, the kernel's
    single-site update is run on ``(z, G)`` with one position; its only random choice is one
    uniform ``u`` and its outcome is ``k`` when ``u`` falls in the ``k``-th bin of the
    cumulative weights ``g`` it leaves in its scratch array. The one-step transition
    distribution is therefore exactly the bin widths ``g_k / sum g``, and the check also runs
    the kernel at every bin's midpoint to confirm that this ``u`` gives that ``k`` (the
    inversion). Against the exact posterior (the collapsed HMM joint, resp. Eq. 18 at fixed
    ``G``, :mod:`bayesfa.validation.pfa.variants`) it tests, to 1e-9: the transition row equals
    the exact conditional ``Pr(z_t = k | z^-t[, G], alpha)``; detailed balance
    ``pi(x) P(x, y) = pi(y) P(y, x)``; stationarity ``pi P_t = pi`` (each position's update is
    reversible). No Monte Carlo: a correct kernel passes with probability 1 (up to rounding).
    For CGS-SG the graphs are, per corpus, the full graph and a fixed-seed sample of random
    graphs (every ``z`` compatible with a graph is enumerated).
``graph-move`` (CGS-SG, Algorithm 2 lines 1-7, :func:`update_graph`)
    The scan over the edges is a composition of single-edge Gibbs updates, not reversible as
    a whole; its stationarity is tested by draws: for each of a few fixed paths ``z``,
    ``n_draws`` graphs are drawn exactly from ``Pr(G | alpha, z)`` (degrees from their exact
    law, then uniform edge sets), one graph update is applied to each, and the out-degree
    vector ``(v_0, .., v_N)`` of the result (Eq. 18 depends on ``G`` through it only) is
    compared with its exact law by a pooled Pearson chi-square; false-alarm rate ``alpha``
    (Bonferroni over the paths).
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
from numba import njit
from scipy.special import gammaln, logsumexp

from bayesfa.corpus import Corpus
from bayesfa.samplers.pfa import _cgs_sg_kernel as _sg
from bayesfa.validation.pfa.reference import all_paths, batch_counts, path_codes

ALPHA = 1e-3
TOL = 1e-9

#: (strings as 0-based letters, alphabet size, N): every path enumerable (<= 3^6 = 729); "abb"
#: and "bb" put a self-loop read twice with the same letter (Eq. 9's delta) in reach.
SITE_CORPORA = (
    ([[0, 1], [1], [], [0, 0], [0, 1, 1]], 2, 2),
    ([[0, 2], [1, 1], [2, 1], []], 3, 3),
)


def _check(**kwargs):
    from bayesfa.validation.checks import Check

    return Check(**kwargs)


def _free(tokens):
    return (np.flatnonzero(tokens[:-1] != 0) + 1).astype(np.int64)


def _site_rows(log_pi: np.ndarray, rows: np.ndarray, idx: np.ndarray, ok: np.ndarray):
    """Residuals of one position's update. ``log_pi`` ``[P]`` (``-inf`` where impossible),
    ``rows`` ``[P, N]`` the kernel's transition rows from each configuration ``x`` to
    ``idx[x, k]`` (``z_t = k + 1``), ``ok`` ``[P]`` the configurations tested.
    Returns (max |row - exact conditional|, max |pi P - pi| / max pi, max detailed-balance
    residual / max pi)."""
    pi = np.exp(log_pi - logsumexp(log_pi))
    cond_log = log_pi[idx]                                   # [P, N]
    with np.errstate(invalid="ignore"):  # rows of impossible configurations: all -inf
        exact = np.exp(cond_log - logsumexp(cond_log, axis=1, keepdims=True))
    row_err = float(np.abs(rows[ok] - exact[ok]).max()) if ok.any() else 0.0
    flow = np.zeros_like(pi)
    np.add.at(flow, idx[ok].ravel(), (pi[ok, None] * rows[ok]).ravel())
    stat = float(np.abs(flow[ok] - pi[ok]).max() / pi.max())
    # detailed balance: pi(x) P(x, y) vs pi(y) P(y, x); y = idx[x, k], x = idx[y, k_x]
    db = 0.0
    pos = {int(v): r for r, v in enumerate(np.flatnonzero(ok))}
    for x in np.flatnonzero(ok):
        kx = int(np.flatnonzero(idx[x] == x)[0])
        for k in range(idx.shape[1]):
            y = int(idx[x, k])
            if y in pos:
                db = max(db, abs(pi[x] * rows[x, k] - pi[y] * rows[y, kx]))
    return row_err, stat, db / pi.max()


# -- CGS-HMM ----------------------------------------------------------------------------------

def _hmm_rows(kernel, tokens, z_all, t, n_states, n_symbols, alpha_h, beta, variant):
    """The kernel's transition rows at position ``t`` from every path, and whether the
    inversion gives bin ``k`` at each bin's midpoint."""
    from bayesfa.samplers.pfa.cgs_hmm import new_state

    rows = np.zeros((z_all.shape[0], n_states))
    inverse_ok = True
    pos = np.array([t], dtype=np.int64)
    state = new_state(n_states, n_symbols)
    g = np.zeros(n_states + 1)
    for x in range(z_all.shape[0]):
        z = z_all[x].astype(np.int32)
        kernel.fill_counts(tokens, z, *state)
        kernel.sweep_positions(pos, np.array([0.5]), tokens, z.copy(), *state, g, alpha_h, beta,
                               variant)
        w = g[1:].copy()
        rows[x] = w / w.sum()
        edges = np.concatenate([[0.0], np.cumsum(w)]) / w.sum()
        for k in range(n_states):
            if w[k] <= 0:
                continue
            zz = z.copy()
            kernel.fill_counts(tokens, zz, *state)
            kernel.sweep_positions(pos, np.array([0.5 * (edges[k] + edges[k + 1])]), tokens, zz,
                                   *state, g, alpha_h, beta, variant)
            inverse_ok &= int(zz[t]) == k + 1
    return rows, inverse_ok


def hmm_site_check(variant: int = 0, *, alpha_h: float = 0.25, beta: float = 1.0,
                   alpha: float = ALPHA, label: str = "cgs-hmm kernel"):
    """The ``site-exact`` check of the CGS-HMM kernel (module docstring)."""
    from bayesfa.samplers.pfa import _cgs_hmm_kernel as kernel
    from bayesfa.validation.pfa.variants_reference import hmm_log_joint

    t0 = time.perf_counter()
    rows_out = []
    for strings, letters, n_states in SITE_CORPORA:
        corpus = Corpus.from_strings(strings, letters)
        tokens = corpus.tokens.astype(np.int32)
        n_symbols = letters + 1
        z_all = all_paths(tokens, n_states)
        log_pi = hmm_log_joint(batch_counts(tokens, z_all, n_states, n_symbols), alpha_h, beta)
        worst = [0.0, 0.0, 0.0]
        inv = True
        for t in _free(tokens):
            zz = np.repeat(z_all[:, None, :], n_states, axis=1)
            zz[:, :, t] = np.arange(1, n_states + 1)
            idx = path_codes(zz, tokens, n_states)
            rows, ok_inv = _hmm_rows(kernel, tokens, z_all, int(t), n_states, n_symbols, alpha_h,
                                     beta, variant)
            inv &= ok_inv
            res = _site_rows(log_pi, rows, idx, np.ones(z_all.shape[0], dtype=bool))
            worst = [max(a, b) for a, b in zip(worst, res)]
        rows_out.append(_site_row(strings, letters, n_states, z_all.shape[0], worst, inv))
    return _site_check(rows_out, f"{label}: single-site update of z_t, exact one-step transition "
                                 f"(alpha={alpha_h}, beta={beta}) vs the collapsed HMM posterior",
                       alpha, t0)


def _site_row(strings, letters, n_states, n_configs, worst, inv):
    from bayesfa.validation.toys import format_string

    row_err, stat, db = worst
    return {"corpus": " ".join(format_string(s) for s in strings), "letters": letters,
            "N": n_states, "configurations": n_configs, "max_row_error": row_err,
            "stationarity": stat, "detailed_balance": db, "inversion": bool(inv),
            "pass": bool(row_err <= TOL and stat <= TOL and db <= TOL and inv)}


def site_margin(rows) -> float:
    """The ``site-exact`` check's statistic over its threshold (issue 39, item 4): the largest
    residual over :data:`TOL` (row error, stationarity, detailed balance), ``inf`` where the
    inversion is wrong."""
    if not all(r["inversion"] for r in rows):
        return math.inf
    return max(max(r["max_row_error"], r["stationarity"], r["detailed_balance"]) for r in rows) / TOL


def _site_check(rows, description, alpha, t0):
    return _check(name="site-exact", passed=all(r["pass"] for r in rows), description=description,
                  alpha=alpha, columns=["corpus", "letters", "N", "configurations", "max_row_error",
                                        "stationarity", "detailed_balance", "inversion", "pass"],
                  rows=rows, summary={"tolerance": TOL, "margin": site_margin(rows),
                                      "seconds": time.perf_counter() - t0},
                  notes=["exact (no Monte Carlo): the kernel's one-step distribution is read from "
                         "its cumulative weights and the inversion checked at each bin's midpoint; "
                         f"residuals relative to max pi, pass at <= {TOL:g}"])


# -- CGS-SG -----------------------------------------------------------------------------------

def _edge_mask(n_states, n_symbols):
    mask = np.zeros((n_states + 1, n_symbols, n_states + 1), dtype=bool)
    mask[:, 1:, 1:] = True
    mask[:, 0, 0] = True
    return mask


def _sg_graphs(z_all, tokens, n_states, n_symbols, rng, n_random):
    """The full graph and ``n_random`` random graphs, each ``G_min`` of a random path plus
    every other edge with probability 0.5 (or 0.2 for every other graph)."""
    mask = _edge_mask(n_states, n_symbols)
    graphs = [mask.copy()]
    c = batch_counts(tokens, z_all, n_states, n_symbols) > 0
    for r in range(n_random):
        x = rng.integers(z_all.shape[0])
        extra = 0.5 if r % 2 == 0 else 0.2
        graphs.append(mask & (c[x] | (rng.random(mask.shape) < extra)))
    return graphs


def sg_site_check(variant: int = 0, *, beta: float = 0.5, n_graphs: int = 12, seed: int = 0,
                  alpha: float = ALPHA, label: str = "cgs-sg kernel"):
    """The ``site-exact`` check of the CGS-SG kernel's update of ``z_t`` at fixed ``G``
    (module docstring); ``n_graphs`` random graphs per corpus besides the full one."""
    from bayesfa.samplers.pfa import _cgs_sg_kernel as kernel
    from bayesfa.samplers.pfa.cgs_sg import new_state
    from bayesfa.validation.pfa.variants_reference import sg_log_joint

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    rows_out = []
    for strings, letters, n_states in SITE_CORPORA:
        corpus = Corpus.from_strings(strings, letters)
        tokens = corpus.tokens.astype(np.int32)
        n_symbols = letters + 1
        z_all = all_paths(tokens, n_states)
        counts = batch_counts(tokens, z_all, n_states, n_symbols)
        worst = [0.0, 0.0, 0.0]
        inv = True
        n_conf = 0
        st = new_state(n_states, n_symbols)
        c, ct, ci, gr, grt, v, meta = st
        g = np.zeros(n_states + 1)
        for graph in _sg_graphs(z_all, tokens, n_states, n_symbols, rng, n_graphs):
            inside = ((counts > 0) <= graph).all(axis=(1, 2, 3))
            log_pi = np.where(inside, sg_log_joint(counts, np.broadcast_to(graph, counts.shape),
                                                   beta), -np.inf)
            n_conf += int(inside.sum())
            for t in _free(tokens):
                zz = np.repeat(z_all[:, None, :], n_states, axis=1)
                zz[:, :, t] = np.arange(1, n_states + 1)
                idx = path_codes(zz, tokens, n_states)
                rows = np.zeros((z_all.shape[0], n_states))
                for x in np.flatnonzero(inside):
                    z = z_all[x].astype(np.int32)
                    w = None
                    for k in range(-1, n_states):
                        zc = z.copy()
                        kernel.fill_counts(tokens, zc, c, ct, ci)
                        gr[...] = graph
                        kernel.set_graph(gr, grt, v, meta, False)
                        meta[1] = 0
                        u = 0.5 if k < 0 else 0.5 * (edges[k] + edges[k + 1])
                        if k >= 0 and w[k] <= 0:
                            continue
                        kernel.sweep_uniforms(np.array([t], dtype=np.int64), np.array([u]), tokens,
                                              zc, c, ct, ci, gr, grt, v, meta, g, rng, beta,
                                              10 ** 9, variant)
                        if k < 0:
                            w = g[1:].copy()
                            edges = np.concatenate([[0.0], np.cumsum(w)]) / w.sum()
                            rows[x] = w / w.sum()
                        else:
                            inv &= int(zc[t]) == k + 1
                res = _site_rows(log_pi, rows, idx, inside)
                worst = [max(a, b) for a, b in zip(worst, res)]
        rows_out.append(_site_row(strings, letters, n_states, n_conf, worst, inv))
    return _site_check(rows_out, f"{label}: single-site update of z_t at fixed G, exact one-step "
                                 f"transition (beta={beta}; full graph + {n_graphs} random graphs "
                                 f"per corpus) vs Eq. 18", alpha, t0)


# -- CGS-SG: the graph move ---------------------------------------------------------------------

def degree_law(c: np.ndarray, beta: float):
    """Exact ``Pr(v_0, .., v_N | alpha, z)`` under Eq. 18 (uniform ``Pr(v)``) for counts ``c``
    ``[N+1, A, N+1]``: ``(degree vectors [K, N+1], probabilities [K])``, from
    ``sum over G with these degrees = prod_i binom(F_i, v_i - m_i) Gamma(v_i beta) /
    Gamma(C_i + v_i beta) / binom(E, |G|) / (E + 1)`` (written from Eq. 18, apart from
    :func:`bayesfa.validation.pfa.variants.sg_graph_sum`)."""
    c = np.asarray(c)
    q, n_sym = c.shape[0], c.shape[1]
    mask = _edge_mask(q - 1, n_sym)
    per_state = int(mask[0].sum())
    n_full = per_state * q
    m = ((c > 0) & mask).sum(axis=(1, 2))
    ci = c.sum(axis=(1, 2))
    ranges = [range(int(m[i]), per_state + 1) for i in range(q)]
    vecs = np.array(list(itertools.product(*ranges)), dtype=np.int64)
    logp = np.zeros(vecs.shape[0])
    for i in range(q):
        d = vecs[:, i].astype(np.float64)
        f = per_state - m[i]
        logp += gammaln(f + 1.0) - gammaln(d - m[i] + 1.0) - gammaln(f - (d - m[i]) + 1.0)
        if ci[i] > 0:
            logp += gammaln(d * beta) - gammaln(ci[i] + d * beta)
    k = vecs.sum(axis=1).astype(np.float64)
    logp -= gammaln(n_full + 1.0) - gammaln(k + 1.0) - gammaln(n_full - k + 1.0)
    return vecs, np.exp(logp - logsumexp(logp))


@njit(cache=True)
def _graph_move_draws(c, ct, ci, gr, grt, v, meta, mask, degrees, rng,
                      beta, variant, base):
    """For each row of ``degrees`` ``[D, N+1]``: a graph with these out-degrees, ``G_min`` plus
    uniformly chosen other edges, then one graph update; returns the codes
    ``sum_i v_i base^i`` of the resulting degree vectors ``[D]``."""
    q = c.shape[0]
    n_sym = c.shape[1]
    out = np.empty(degrees.shape[0], dtype=np.int64)
    free = np.empty(n_sym * q, dtype=np.int64)
    for d in range(degrees.shape[0]):
        gr[:] = 0
        for i in range(q):
            nf = 0
            m = 0
            for a in range(n_sym):
                for j in range(q):
                    if mask[i, a, j]:
                        if c[i, a, j] > 0:
                            gr[i, a, j] = 1
                            m += 1
                        else:
                            free[nf] = a * q + j
                            nf += 1
            need = degrees[d, i] - m
            for r in range(need):  # partial Fisher-Yates
                s = r + rng.integers(0, nf - r)
                tmp = free[r]
                free[r] = free[s]
                free[s] = tmp
                gr[i, free[r] // q, free[r] % q] = 1
        _sg.set_graph(gr, grt, v, meta, False)
        meta[1] = 0
        _sg.update_graph(c, ci, gr, grt, v, meta, rng, beta, variant)
        code = 0
        mult = 1
        for i in range(q):
            code += v[i] * mult
            mult *= base
        out[d] = code
    return out


#: (strings, alphabet size, N, paths): the paths ``z`` (full ``[T + 1]`` arrays) whose graph
#: conditional is tested; one leaves state 2 unvisited (``C_i = 0``: Eq. 18's "otherwise").
GRAPH_CASES = (
    ([[0, 1], [1], [], [0, 0]], 2, 2, [[0, 1, 2, 0, 1, 0, 0, 2, 1, 0], [0, 1, 1, 0, 1, 0, 0, 1, 1, 0]]),
    ([[0, 2], [1], [2, 1]], 3, 3, [[0, 1, 3, 0, 2, 0, 3, 1, 0]]),
)


def sg_graph_check(variant: int = 0, *, beta: float = 0.5, n_draws: int = 200_000, seed: int = 0,
                   alpha: float = ALPHA, label: str = "cgs-sg kernel"):
    """The ``graph-move`` check (module docstring): pooled Pearson chi-square of the degree
    vector after one :func:`update_graph` from exact draws of ``Pr(G | alpha, z)``."""
    from bayesfa.samplers.pfa import _cgs_sg_kernel as kernel
    from bayesfa.samplers.pfa.cgs_sg import new_state
    from bayesfa.validation.pfa.kernel_tests import pooled_chi2
    from bayesfa.validation.toys import format_string

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    cases = [(s, le, n, z) for s, le, n, zs in GRAPH_CASES for z in zs]
    level = alpha / len(cases)
    rows = []
    for strings, letters, n_states, z in cases:
        corpus = Corpus.from_strings(strings, letters)
        tokens = corpus.tokens.astype(np.int32)
        z = np.asarray(z, dtype=np.int32)
        assert z.size == tokens.size + 1
        n_symbols = letters + 1
        st = new_state(n_states, n_symbols)
        c, ct, ci, gr, grt, v, meta = st
        kernel.fill_counts(tokens, z, c, ct, ci)
        vecs, prob = degree_law(c, beta)
        base = int(_edge_mask(n_states, n_symbols)[0].sum()) + 1
        codes = (vecs * base ** np.arange(n_states + 1)).sum(axis=1)
        starts = vecs[rng.choice(prob.size, size=n_draws, p=prob)]
        got = _graph_move_draws(c, ct, ci, gr, grt, v, meta,
                                _edge_mask(n_states, n_symbols), starts, rng, beta, variant, base)
        lookup = {int(k): r for r, k in enumerate(codes)}
        observed = np.zeros(prob.size + 1)  # last cell: a degree vector of probability 0
        for k, n in zip(*np.unique(got, return_counts=True)):
            observed[lookup.get(int(k), prob.size)] += n
        if observed[-1] > 0:
            chi2, dof, p, cells = math.inf, 0, 0.0, int(prob.size)
        else:
            chi2, dof, p, cells = pooled_chi2(observed[:-1], prob)
        rows.append({"corpus": " ".join(format_string(s) for s in strings), "N": n_states,
                     "z": " ".join(str(x) for x in z), "draws": n_draws, "cells": cells,
                     "chi2": chi2, "dof": dof, "p_value": p, "pass": bool(p >= level)})
    return _check(name="graph-move", passed=all(r["pass"] for r in rows),
                  description=(f"{label}: one update of G (Alg. 2, lines 1-7) from exact draws of "
                               f"Pr(G | alpha, z), beta={beta}: law of the out-degrees vs Eq. 18"),
                  alpha=alpha, columns=["corpus", "N", "z", "draws", "cells", "chi2", "dof",
                                        "p_value", "pass"],
                  rows=rows, summary={"level_per_path": level, "seconds": time.perf_counter() - t0},
                  notes=[f"false-alarm rate {alpha:g}: pooled Pearson chi-square (cells with "
                         f"expectation < 5 pooled), p < {level:.2e} fails (Bonferroni over "
                         f"{len(rows)} paths)"])
