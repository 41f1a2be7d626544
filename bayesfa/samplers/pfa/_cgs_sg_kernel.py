"""Numba kernels of CGS-SG, the collapsed Gibbs sampler of sparse PFAs of Shibata & Yoshinaka
(2013), Sect. 3: the underlying NFA ``G`` and the state path ``z`` are sampled jointly
(Algorithm 2, Eq. 18), with the update of ``G`` placed inside the loop over ``z_t``.

Model. The full edge set has ``E = (N+1)((A-1)N + 1)`` edges: ``(i, a, j)`` for ``a, j != 0``
and the end edges ``(i, 0, 0)``, for every state ``i = 0..N``. ``Pr(G) = Pr(v = |G|) /
binom(E, |G|)`` with ``Pr(v)`` uniform on ``0..E``; given ``G``, each state's outgoing
``xi_i`` is Dirichlet with parameter ``beta`` on each of its ``v_i`` edges in ``G`` (the end
edge included, also ``beta``). Integrating ``xi`` out gives Eq. 18:

``Pr(G, alpha, z) = prod_{e in G} Gamma(C_e + beta) / Gamma(beta)
                    * prod_{i: v_i > 0} Gamma(v_i beta) / Gamma(C_i + v_i beta)
                    / binom(E, |G|) * Pr(v = |G|)``, zero unless ``G_min(z) <= G``.

Chain state (C-contiguous, mutated in place; ``T`` tokens in the layout of
:mod:`bayesfa.corpus`):

- ``z`` int32 ``[T + 1]`` as in CGS-PFA (0 at ``t = 0``, ``t = T`` and after an end marker);
- ``c`` int32 ``[N+1, A, N+1]``: ``C_iaj``; ``ct`` int32 ``[A, N+1, N+1]``: ``ct[a, j, i] = C_iaj``;
- ``ci`` int64 ``[N+1]``: ``C_i``;
- ``gr`` uint8 ``[N+1, A, N+1]``: 1 where ``(i, a, j)`` is in ``G`` (always 0 on the cells that
  are not edges); ``grt`` uint8 ``[A, N+1, N+1]`` its transpose as ``ct``;
- ``v`` int64 ``[N+1]``: out-degrees ``v_i`` of ``G``;
- ``meta`` int64 ``[3]``: ``|G|``, positions updated since the last update of ``G``, ``E``.

Invariants between updates: ``c, ct, ci`` are the counts of ``(tokens, z)``; ``G`` contains
``G_min = {e : C_e > 0}``; ``v`` and ``|G|`` match ``gr``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bayesfa.samplers.pfa._cgs_pfa_kernel import count_transitions

#: ``variant`` codes: 0 is the sampler; the others are deliberately wrong kernels used by
#: :mod:`bayesfa.validation.pfa.variants` to show that the checks have power.
CORRECT = 0
NO_CORRECTION = 1  # drop the delta of g_k (a self-loop read twice with the same letter)
NO_STATE_FACTOR = 2  # the update of G ignores Gamma(C_i + v_i beta) / Gamma(v_i beta)
VP_FOR_VK = 3  # g_k's denominator C_k + v_{z_{t-1}} beta (the out-degree of the previous state)
STALE_TOTAL = 4  # g_k's denominator C_k + v_k beta with C_k, not C^{-t}_k (z_t's visit kept)
SIZE_RATIO_FLIPPED = 5  # the update of G uses (E - k) / (k + 1) instead of (k + 1) / (E - k)


def n_full_edges(n_states: int, n_symbols: int) -> int:
    """``E``, the number of edges of the fully connected NFA (Sect. 3; 49,231 at N = 90, A = 7)."""
    return (n_states + 1) * ((n_symbols - 1) * n_states + 1)


#: Recompute ``c, ct, ci`` in place from ``tokens [T]`` and ``z [T + 1]`` (Definition 2).
fill_counts = count_transitions


@njit(cache=True)
def set_graph(gr, grt, v, meta, full):
    """With ``full``: set ``G`` to every edge of the full NFA. Then (either way) recompute
    ``grt``, ``v`` and ``|G|`` (``meta[0]``) from ``gr``."""
    n_states = gr.shape[0] - 1
    n_symbols = gr.shape[1]
    if full:
        gr[:] = 0
        for i in range(n_states + 1):
            gr[i, 0, 0] = 1
            for a in range(1, n_symbols):
                for j in range(1, n_states + 1):
                    gr[i, a, j] = 1
    grt[:] = 0
    v[:] = 0
    total = 0
    for i in range(n_states + 1):
        for a in range(n_symbols):
            for j in range(n_states + 1):
                if gr[i, a, j]:
                    grt[a, j, i] = 1
                    v[i] += 1
                    total += 1
    meta[0] = total


@njit(cache=True, inline="always")
def _log_state_ratio(ci_i, v_i, beta):
    """``log`` of ``Gamma(C_i + v beta) Gamma((v+1) beta) / (Gamma(v beta) Gamma(C_i + (v+1) beta))``
    (the state factor of the ratio below Eq. 18), 0 when ``C_i = 0``."""
    if ci_i == 0:
        return 0.0
    return (math.lgamma(ci_i + v_i * beta) - math.lgamma(v_i * beta)
            + math.lgamma((v_i + 1) * beta) - math.lgamma(ci_i + (v_i + 1) * beta))


@njit(cache=True, boundscheck=False)
def update_graph(c, ci, gr, grt, v, meta, rng, beta, variant):
    """Algorithm 2, lines 1-7: for every edge ``e`` of the full NFA with ``C_e = 0``, remove it
    from ``G`` and add it back with probability ``r / (1 + r)``, ``r = Pr(G + e | alpha, z) /
    Pr(G - e | alpha, z)`` (below Eq. 18, uniform ``Pr(v)``): the state factor times
    ``(k + 1) / (E - k)``, ``k = |G - e|``. Edges with ``C_e > 0`` (``G_min``) stay."""
    n_states = c.shape[0] - 1
    n_symbols = c.shape[1]
    n_full = meta[2]
    per_state = (n_symbols - 1) * n_states + 1
    # the state factor depends on (C_i, v_i) only: computed once per degree met (v_i drifts
    # by +-1 as edges flip), cache[v] valid where stamp[v] == i + 1
    cache = np.empty(per_state + 1)
    stamp = np.zeros(per_state + 1, dtype=np.int64)
    uniforms = rng.random(n_full)  # one per edge, drawn at once (much cheaper than one by one)
    e = 0
    size = meta[0]
    for i in range(n_states + 1):
        last_v = -1
        state_ratio = 1.0
        vi = v[i]
        for a in range(n_symbols):
            lo = 0 if a == 0 else 1
            hi = 1 if a == 0 else n_states + 1
            for j in range(lo, hi):
                e += 1
                if c[i, a, j] > 0:
                    continue
                # remove e (branch-free: the outcomes are coin flips, badly predicted)
                was = np.int64(gr[i, a, j])
                vi -= was
                size -= was
                if vi != last_v:  # the state factor changes only with v_i
                    last_v = vi
                    if stamp[vi] != i + 1:
                        stamp[vi] = i + 1
                        cache[vi] = 1.0 if variant == NO_STATE_FACTOR else math.exp(
                            _log_state_ratio(ci[i], vi, beta))
                    state_ratio = cache[vi]
                if variant == SIZE_RATIO_FLIPPED:
                    ratio = state_ratio * (n_full - size) / (size + 1)
                else:
                    ratio = state_ratio * (size + 1) / (n_full - size)
                # ... and add it back with probability ratio / (1 + ratio)
                now = np.int64(uniforms[e - 1] * (1.0 + ratio) < ratio)
                gr[i, a, j] = np.uint8(now)
                grt[a, j, i] = np.uint8(now)
                vi += now
                size += now
        v[i] = vi
    meta[0] = size


@njit(cache=True, inline="always")
def _denominator(ci, v, k, p, old, beta, variant):
    """``C^{-t}_k + v_k beta`` as wrongly computed by the mutants ``VP_FOR_VK`` (``v_p``,
    ``p = z_{t-1}``) and ``STALE_TOTAL`` (``C_k``: plus one when ``k = z_t``)."""
    if variant == VP_FOR_VK:
        return ci[k] + v[p] * beta
    if k == old:
        return ci[k] + 1 + v[k] * beta
    return ci[k] + v[k] * beta


@njit(cache=True, boundscheck=False)
def sweep(positions, tokens, z, c, ct, ci, gr, grt, v, meta, g, rng, beta, interval, variant):
    """One single iteration of Algorithm 2 with ``G`` updated inside the loop over ``z_t``
    (Sect. 3, last paragraph): each position ``t`` (``tokens[t-1] != 0``) gets
    ``z_t = k`` with probability ``g_k(G) / sum_i g_i(G)``,

    ``g_k = 0`` if ``(z_{t-1}, a_{t-1}, k)`` or ``(k, a_t, z_{t+1})`` is not in ``G``, else
    ``(C_{k a_t z_{t+1}} + beta)(C_{z_{t-1} a_{t-1} k} + delta + beta) / (C_k + v_k beta)``
    (``C^{-t}`` counts), and after every ``interval`` positions (counted across sweeps in
    ``meta[1]``) ``G`` is resampled by :func:`update_graph`. g float64 ``[N+1]`` scratch; one
    ``rng.random(M)`` at the start supplies the uniforms of ``z``, each graph update draws
    its own ``rng.random(E)``. Returns the positions whose state changed (int64).
    """
    uniforms = rng.random(positions.shape[0])
    return sweep_uniforms(positions, uniforms, tokens, z, c, ct, ci, gr, grt, v, meta, g, rng, beta,
                   interval, variant)


@njit(cache=True, boundscheck=False)
def sweep_uniforms(positions, uniforms, tokens, z, c, ct, ci, gr, grt, v, meta, g, rng, beta,
                   interval, variant):
    """:func:`sweep` with the uniforms of ``z`` given (``uniforms`` float64 ``[M]``): ``z_t = k``
    for the first ``k`` with ``uniforms[m] sum_i g_i < g_1 + .. + g_k``. The exact kernel
    check of :mod:`bayesfa.validation.pfa.variants_kernel` calls it with chosen uniforms.
    Returns the positions whose state changed (int64; the sampler statistic ``moved``)."""
    moves = 0
    n_states = c.shape[0] - 1
    for m in range(positions.shape[0]):
        t = positions[m]
        ap = tokens[t - 1]
        a = tokens[t]
        p = z[t - 1]
        n = z[t + 1]
        old = z[t]
        c[p, ap, old] -= 1
        ct[ap, old, p] -= 1
        c[old, a, n] -= 1
        ct[a, n, old] -= 1
        ci[old] -= 1
        total = 0.0
        for k in range(1, n_states + 1):
            if gr[p, ap, k] and grt[a, n, k]:
                if variant == CORRECT or variant == NO_CORRECTION or variant == NO_STATE_FACTOR \
                        or variant == SIZE_RATIO_FLIPPED:
                    w = (ct[a, n, k] + beta) * (c[p, ap, k] + beta) / (ci[k] + v[k] * beta)
                else:
                    w = (ct[a, n, k] + beta) * (c[p, ap, k] + beta) / _denominator(
                        ci, v, k, p, old, beta, variant)
            else:
                w = 0.0
            g[k] = w
            total += w
        if p == n and ap == a and variant != NO_CORRECTION and gr[p, ap, p] and grt[a, n, p]:
            if variant == STALE_TOTAL:
                extra = (ct[a, n, p] + beta) / _denominator(ci, v, p, p, old, beta, variant)
            else:
                extra = (ct[a, n, p] + beta) / (ci[p] + v[p] * beta)
            g[p] += extra
            total += extra
        target = uniforms[m] * total
        k = old
        acc = 0.0
        for kk in range(1, n_states + 1):
            acc += g[kk]
            if target < acc and g[kk] > 0:
                k = kk
                break
        c[p, ap, k] += 1
        ct[ap, k, p] += 1
        c[k, a, n] += 1
        ct[a, n, k] += 1
        ci[k] += 1
        moves += k != old
        z[t] = k
        meta[1] += 1
        if meta[1] >= interval:
            meta[1] = 0
            update_graph(c, ci, gr, grt, v, meta, rng, beta, variant)
    return moves


@njit(cache=True)
def sweeps(n_sweeps, positions, tokens, z, c, ct, ci, gr, grt, v, meta, rng, beta, interval, variant):
    """``n_sweeps`` single iterations (:func:`sweep`); returns the positions moved, summed."""
    g = np.zeros(c.shape[0])
    moves = 0
    for _ in range(n_sweeps):
        moves += sweep(positions, tokens, z, c, ct, ci, gr, grt, v, meta, g, rng, beta, interval, variant)
    return moves


@njit(cache=True)
def log_joint(c, ci, gr, v, meta, beta):
    """``log Pr(G, alpha, z)`` of Eq. 18 with ``Pr(v) = 1 / (E + 1)``."""
    n_states = c.shape[0] - 1
    n_symbols = c.shape[1]
    n_full = meta[2]
    size = meta[0]
    lg_b = math.lgamma(beta)
    out = 0.0
    for i in range(n_states + 1):
        for a in range(n_symbols):
            for j in range(n_states + 1):
                if c[i, a, j] > 0:
                    out += math.lgamma(c[i, a, j] + beta) - lg_b
        if v[i] > 0:
            out += math.lgamma(v[i] * beta) - math.lgamma(ci[i] + v[i] * beta)
    out -= (math.lgamma(n_full + 1.0) - math.lgamma(size + 1.0) - math.lgamma(n_full - size + 1.0))
    out -= math.log(n_full + 1.0)
    return out


@njit(cache=True)
def table_rows(c, ci):
    """Table 1's rows from ``C``: ``(valid states i >= 1, valid pairs (i, a), valid edges)``."""
    states = 0
    pairs = 0
    edges = 0
    for i in range(c.shape[0]):
        if i > 0 and ci[i] > 0:
            states += 1
        for a in range(c.shape[1]):
            seen = False
            for j in range(c.shape[2]):
                if c[i, a, j] > 0:
                    edges += 1
                    seen = True
            if seen:
                pairs += 1
    return states, pairs, edges


@njit(cache=True)
def sample_draws(period, positions, tokens, z, c, ct, ci, gr, grt, v, meta, rng, beta, interval,
                 variant, out_counts, out_graph, out_log_joint, out_states, out_pairs, out_edges,
                 out_graph_edges, out_moves):
    """For each draw ``d``: ``period`` sweeps, then record ``C`` (int32 ``[D, N+1, A, N+1]``),
    ``G`` (uint8, same shape) and the trace values (``[D]`` each; ``out_moves`` int64, the
    positions whose state changed in the draw's sweeps)."""
    for d in range(out_counts.shape[0]):
        out_moves[d] = sweeps(period, positions, tokens, z, c, ct, ci, gr, grt, v, meta, rng, beta, interval, variant)
        out_counts[d] = c
        out_graph[d] = gr
        out_log_joint[d] = log_joint(c, ci, gr, v, meta, beta)
        s, p, e = table_rows(c, ci)
        out_states[d] = s
        out_pairs[d] = p
        out_edges[d] = e
        out_graph_edges[d] = meta[0]
