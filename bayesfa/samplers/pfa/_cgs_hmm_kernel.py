"""Numba kernels of CGS-HMM, the collapsed Gibbs sampler for HMMs of Shibata & Yoshinaka (2013),
Sect. 4.4 (the conditional ``g_k^HMM`` before Eq. 20).

Model (as :mod:`bayesfa.models.hmm`): ``xi_iaj = eta_ia theta_ij`` with ``eta_i ~ Dir(alpha)``
over the ``A`` letters (end marker 0 included) and ``theta_i ~ Dir(beta)`` over the next
states ``1..N``, used only after a non-end letter (the end marker leads to state 0).

Chain state (C-contiguous arrays, mutated in place; states ``0..N``, letters ``0..A-1``, ``T``
tokens in the layout of :mod:`bayesfa.corpus`):

- ``z`` int32 ``[T + 1]``: ``z[t]`` the state before token ``t``; 0 at ``t = 0``, ``t = T`` and
  after every end marker (as in CGS-PFA).
- ``et`` float64 ``[A, N+1]``: ``et[a, i] = C_ia``, letters ``a`` emitted in state ``i``.
- ``mv`` float64 ``[N+1, N+1]``: ``mv[i, j] = C_ij``, moves ``i -> j`` after a non-end letter
  (column 0 stays 0); ``mvt`` the transpose, ``mvt[j, i] = C_ij``, so that both move factors
  of ``g_k`` are read contiguously over ``k``.
- ``ci`` float64 ``[N+1]``: ``C_i``, visits of ``i`` (= emissions from ``i``).
- ``cm`` float64 ``[N+1]``: ``C_i - C_i0``, moves out of ``i``.

Invariants: every array equals the counts of ``(tokens, z)`` (:func:`fill_counts`) between
position updates; counts are whole numbers, exact in float64.

The exact conditional (``C^{-t}`` removes the visit at ``t``: its emission, the move into it
and the move out of it; the move total of ``z_{t-1}`` is unchanged):

``g_k = (C_{k a_t} + alpha) / (C_k + A alpha) * (C_{z_{t-1} k} + beta)
        * [a_t != 0] (C_{k z_{t+1}} + delta(z_{t-1} = k = z_{t+1}) + beta) / (C_k - C_k0 + N beta)``,

which is the paper's formula (the delta is placed on the other move factor there).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: ``variant`` codes of :func:`sweep_positions`: 0 is the sampler; the others are the
#: deliberately wrong kernels of :mod:`bayesfa.validation.pfa.variants`.
CORRECT = 0
NO_CORRECTION = 1  # drop delta(z_{t-1} = k = z_{t+1})
ALL_VISITS = 2  # C_k + N beta instead of C_k - C_k0 + N beta as the move denominator
STALE_EMISSION = 3  # C_{k a_t} instead of C^{-t}_{k a_t} (the emission at t counted for k = z_t)
END_MOVE_FACTOR = 4  # a_t = 0: also divided by C_k - C_k0 + N beta (no move out of k exists)


@njit(cache=True)
def fill_counts(tokens, z, et, mv, mvt, ci, cm):
    """Recompute ``et, mv, mvt, ci, cm`` in place from ``tokens [T]`` and ``z [T + 1]``."""
    et[:] = 0
    mv[:] = 0
    mvt[:] = 0
    ci[:] = 0
    cm[:] = 0
    for t in range(tokens.shape[0]):
        i = z[t]
        a = tokens[t]
        et[a, i] += 1
        ci[i] += 1
        if a != 0:
            j = z[t + 1]
            mv[i, j] += 1
            mvt[j, i] += 1
            cm[i] += 1


@njit(cache=True, boundscheck=False)
def sweep_positions(positions, uniforms, tokens, z, et, mv, mvt, ci, cm, g, alpha, beta, variant):
    """Resample ``z[t]`` for each ``t`` of ``positions`` in order with ``g_k`` (module
    docstring), ``z[t] = k`` by inversion of ``uniforms[m]`` over ``k = 1..N``.

    positions int64 ``[M]`` (``tokens[t-1] != 0``), uniforms float64 ``[M]``, g float64
    ``[N+1]`` scratch; ``variant`` 0 (the others are mutants for validation only). Returns
    the positions whose state changed (int64; the sampler statistic ``moved``).
    """
    moved = 0
    n_states = ci.shape[0] - 1
    n_symbols = et.shape[0]
    a_alpha = n_symbols * alpha
    n_beta = n_states * beta
    for m in range(positions.shape[0]):
        t = positions[m]
        a = tokens[t]
        p = z[t - 1]
        n = z[t + 1]
        old = z[t]
        # C^{-t}
        et[a, old] -= 1
        ci[old] -= 1
        mv[p, old] -= 1
        mvt[old, p] -= 1
        if a != 0:
            mv[old, n] -= 1
            mvt[n, old] -= 1
            cm[old] -= 1
        total = 0.0
        if a == 0:
            for k in range(1, n_states + 1):
                w = (et[0, k] + alpha) * (mv[p, k] + beta) / (ci[k] + a_alpha)
                if variant == END_MOVE_FACTOR:
                    w /= cm[k] + n_beta
                g[k] = w
                total += w
        else:
            for k in range(1, n_states + 1):
                moves = ci[k] if variant == ALL_VISITS else cm[k]
                emit = et[a, k]
                if variant == STALE_EMISSION and k == old:
                    emit += 1.0
                w = ((emit + alpha) * (mv[p, k] + beta) * (mvt[n, k] + beta)
                     / ((ci[k] + a_alpha) * (moves + n_beta)))
                g[k] = w
                total += w
            if p == n and variant != NO_CORRECTION:
                k = n
                moves = ci[k] if variant == ALL_VISITS else cm[k]
                emit = et[a, k]
                if variant == STALE_EMISSION and k == old:
                    emit += 1.0
                extra = (emit + alpha) * (mv[p, k] + beta) / ((ci[k] + a_alpha) * (moves + n_beta))
                g[k] += extra
                total += extra
        target = uniforms[m] * total
        k = n_states
        acc = 0.0
        for kk in range(1, n_states + 1):
            acc += g[kk]
            if target < acc:
                k = kk
                break
        et[a, k] += 1
        ci[k] += 1
        mv[p, k] += 1
        mvt[k, p] += 1
        if a != 0:
            mv[k, n] += 1
            mvt[n, k] += 1
            cm[k] += 1
        moved += k != old
        z[t] = k
    return moved


@njit(cache=True)
def sweeps(n_sweeps, positions, tokens, z, et, mv, mvt, ci, cm, rng, alpha, beta, variant):
    """``n_sweeps`` single iterations over ``positions``; one ``rng.random(M)`` per sweep.
    Returns the positions moved, summed over the sweeps."""
    g = np.zeros(ci.shape[0])
    moved = 0
    for _ in range(n_sweeps):
        uniforms = rng.random(positions.shape[0])
        moved += sweep_positions(positions, uniforms, tokens, z, et, mv, mvt, ci, cm, g, alpha, beta,
                                 variant)
    return moved


@njit(cache=True)
def log_joint(et, mv, alpha, beta):
    """``log Pr(alpha, z)`` of the collapsed HMM: ``prod_i DirMult(C_i.; alpha)
    DirMult(C_ij, j >= 1; beta)`` (the ``eta`` and ``theta`` of Sect. 4.4 integrated out).
    A state with ``N = 1`` has the single next state 1 (``theta`` constant), still a
    Dirichlet-multinomial with one category, whose factor is 1."""
    n_symbols = et.shape[0]
    n_states = mv.shape[0] - 1
    out = 0.0
    lg_a = math.lgamma(alpha)
    lg_b = math.lgamma(beta)
    for i in range(n_states + 1):
        tot = 0.0
        for a in range(n_symbols):
            cnt = et[a, i]
            if cnt > 0:
                out += math.lgamma(cnt + alpha) - lg_a
                tot += cnt
        out += math.lgamma(n_symbols * alpha) - math.lgamma(tot + n_symbols * alpha)
        tot = 0.0
        for j in range(1, n_states + 1):
            cnt = mv[i, j]
            if cnt > 0:
                out += math.lgamma(cnt + beta) - lg_b
                tot += cnt
        out += math.lgamma(n_states * beta) - math.lgamma(tot + n_states * beta)
    return out


@njit(cache=True)
def record(tokens, z, out):
    """``out[i, a, j] = C_iaj`` (Definition 2) from ``tokens`` and ``z``; out int32
    ``[N+1, A, N+1]``; returns ``(states i >= 1 with C_i > 0, edges with C_iaj > 0)``."""
    out[:] = 0
    for t in range(tokens.shape[0]):
        out[z[t], tokens[t], z[t + 1]] += 1
    used = 0
    edges = 0
    for i in range(out.shape[0]):
        visited = False
        for a in range(out.shape[1]):
            for j in range(out.shape[2]):
                if out[i, a, j] > 0:
                    edges += 1
                    visited = True
        if visited and i > 0:
            used += 1
    return used, edges


@njit(cache=True)
def sample_draws(period, positions, tokens, z, et, mv, mvt, ci, cm, rng, alpha, beta, variant,
                 out_counts, out_log_joint, out_n_states, out_n_edges, out_moves):
    """For each draw ``d``: ``period`` sweeps, then record ``C_iaj`` and the trace values.

    out_counts int32 ``[D, N+1, A, N+1]``; out_log_joint float64 ``[D]``; out_n_states,
    out_n_edges int32 ``[D]``; out_moves int64 ``[D]``, the positions whose state changed in
    the draw's sweeps.
    """
    for d in range(out_counts.shape[0]):
        out_moves[d] = sweeps(period, positions, tokens, z, et, mv, mvt, ci, cm, rng, alpha, beta, variant)
        used, edges = record(tokens, z, out_counts[d])
        out_log_joint[d] = log_joint(et, mv, alpha, beta)
        out_n_states[d] = used
        out_n_edges[d] = edges
