"""Split-merge moves for CGS-PFA: Metropolis-Hastings on whole states (issue 22, item 2).

The Gibbs sweep of Algorithm 1 (Shibata & Yoshinaka 2013, Sect. 2.3) changes one ``z_t`` at a
time, so a chain whose states are arranged on a poor plateau of the collapsed joint (Eq. 4)
leaves it only through a long chain of single-site moves that each cost probability. This
move relabels many positions at once, in the manner of Jain & Neal (2004, "A split-merge
Markov chain Monte Carlo procedure for the Dirichlet process mixture model", J. Comput.
Graph. Stat. 13: restricted Gibbs sampling from a random launch), adapted to the finite
collapsed PFA of Eq. 4 at fixed ``N``:

1. Two distinct free positions ``t1, t2`` are drawn uniformly (an ordered pair of the ``M``
   positions whose ``z_t`` the sweep resamples). Let ``i = z_{t1}``.
2. *Split* if ``z_{t2} = i``: a state ``j`` is drawn uniformly among the ``E`` empty states
   (``C_j = 0``; with none, nothing happens). *Merge* if ``z_{t2} = j != i``.
3. ``S`` is every free position in ``i`` or ``j`` but ``t1, t2``. Launch: ``t1`` in ``i``,
   ``t2`` in ``j``, each position of ``S`` in ``i`` or ``j`` with probability 1/2; then
   ``scans`` restricted Gibbs scans over ``S`` (increasing ``t``), each ``z_t`` drawn between
   ``i`` and ``j`` with probability proportional to ``g_i, g_j`` of Eq. 9 (the exact
   conditional with its same-state corrections, here restricted to two states).
4. Final scan, the one whose probability ``q`` counts: for a split it draws ``z_t`` as in the
   scans and ``q`` is the product of the chosen probabilities; for a merge it is forced to the
   current ``z_t`` and ``q`` is the probability that a split would have produced the current
   configuration from this launch.
5. Accept a split with probability ``min(1, Pr(alpha, z') E / (Pr(alpha, z) q))`` and a merge
   (all of ``S`` and ``t2`` to ``i``) with ``min(1, Pr(alpha, z') q / (Pr(alpha, z) E'))``,
   ``E'`` the empty states after the merge. The pair and the launch are drawn the same way in
   both directions and do not depend on the current configuration beyond ``S``, so each
   (pair, launch) pair of moves is in detailed balance with ``Pr(z | alpha)`` (Eq. 4).

``Pr(alpha, z') / Pr(alpha, z)`` is computed from the terms of Eq. 4 that the move can change:
rows ``i`` and ``j`` of ``C_iaj`` (with their normalisers) and columns ``i`` and ``j`` of the
other rows. Cost: one pass over the ``M`` positions to find ``S``, then ``(scans + 2) |S|``
two-state updates and ``O(N A)`` log-gammas, so a move costs about ``1 / N`` of a sweep.

The move is checked exactly on toys by :mod:`bayesfa.validation.pfa.split_merge` (invariance
from exact posterior draws, and single moves from fixed paths against an independent
enumeration of the move's transition probabilities), and :data:`MUTATIONS` are its mutants.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bayesfa.samplers.pfa._cgs_pfa_kernel import (_exact_weight, fill_counts, move_state, n_states_used,
                                                  record_draw, sweep_positions)

#: ``--split-merge-scans`` default: intermediate restricted Gibbs scans of the launch.
SCANS = 3

#: Deliberate errors :func:`build_move` can compile into the move, one at a time, for the
#: validation suite (``bayesfa validate cgs-pfa:mutant-sm-NAME``); the production move has none.
MUTATIONS: dict[str, str] = {
    "sm-no-hastings": "split-merge acceptance without the proposal probability q of the final scan",
    "sm-no-empty-choice": "split-merge acceptance without the 1/E choice of the empty state",
    "sm-current-launch": "merge launched from the current split instead of a random launch",
}

# the fields of :func:`build_move`'s ``stats`` (float64 [STATS]): counters, then the last move
SPLITS_TRIED, SPLITS_ACCEPTED, MERGES_TRIED, MERGES_ACCEPTED, NO_EMPTY_STATE = range(5)
LAST_KIND, LAST_DELTA, LAST_LOG_Q = 5, 6, 7  # 1 split / 2 merge / 0 none; its terms
STATS = 8


@njit(cache=True)
def partial_log_joint(c, beta, i, j):
    """The terms of ``log Pr(alpha, z)`` (Eq. 4, with ``R(beta)`` of Eq. 2) that relabelling
    positions between states ``i`` and ``j`` can change: rows ``i`` and ``j`` (every cell and
    the row's normaliser) and, in every other row, the cells of columns ``i`` and ``j``."""
    n_states = c.shape[0] - 1
    n_symbols = c.shape[1]
    nbeta = n_states * beta
    nab = n_states * n_symbols * beta
    lg_beta = math.lgamma(beta)
    lg_nbeta = math.lgamma(nbeta)
    lg_nab = math.lgamma(nab)
    out = 0.0
    for r in range(n_states + 1):
        if r == i or r == j:
            total = 0.0
            for a in range(n_symbols):
                for col in range(n_states + 1):
                    cnt = float(c[r, a, col])
                    if cnt == 0.0:
                        continue
                    total += cnt
                    if a == 0:
                        out += math.lgamma(cnt + nbeta) - lg_nbeta
                    else:
                        out += math.lgamma(cnt + beta) - lg_beta
            out += lg_nab - math.lgamma(total + nab)
        else:
            for a in range(1, n_symbols):
                cnt = float(c[r, a, i])
                if cnt != 0.0:
                    out += math.lgamma(cnt + beta) - lg_beta
                cnt = float(c[r, a, j])
                if cnt != 0.0:
                    out += math.lgamma(cnt + beta) - lg_beta
    return out


@njit(cache=True, inline="always")
def _pair_weights(t, i, j, tokens, z, c, ct, ci, nab, beta32, nbeta32):
    """``(g_i, g_j)`` of Eq. 9 at position ``t`` (float64), exact (``C^{-t}``, delta term)."""
    ap = tokens[t - 1]
    a = tokens[t]
    p = z[t - 1]
    n = z[t + 1]
    old = z[t]
    b_out = nbeta32 if a == 0 else beta32
    gi = _exact_weight(i, p, ap, a, n, old, c, ct, ci, nab, b_out, beta32,
                       True, True, True, True, True)
    gj = _exact_weight(j, p, ap, a, n, old, c, ct, ci, nab, b_out, beta32,
                       True, True, True, True, True)
    return np.float64(gi), np.float64(gj)


@njit(cache=True, inline="always")
def _set(t, k, tokens, z, c, ct, ci, recip, nab):
    old = z[t]
    if k != old:
        move_state(t, k, old, z[t - 1], tokens[t - 1], tokens[t], z[t + 1], z, c, ct, ci, recip, nab)


@njit(cache=True, inline="always")
def _n_empty(ci):
    """States ``k >= 1`` with ``C_k = 0`` (the complement of ``n_states_used``)."""
    return ci.shape[0] - 1 - n_states_used(ci)


_BUILT: dict = {}


def build_move(mutation: str | None = None):
    """The split-merge move (module docstring), compiled with ``mutation`` (a key of
    :data:`MUTATIONS`) or, for ``None``, without any: that one is :func:`split_merge`.

    ``split_merge(positions, tokens, z, c, ct, ci, recip, rng, beta, scans, members, saved,
    stats)`` makes one move in place on the chain state of
    :mod:`bayesfa.samplers.pfa._cgs_pfa_kernel`; ``members`` int64 ``[M]`` and ``saved`` int32
    ``[M]`` are scratch; ``stats`` float64 ``[STATS]`` counts splits and merges tried and
    accepted and pairs that found no empty state (``SPLITS_TRIED`` ...), and holds the last
    move's kind (``LAST_KIND``: 1 split, 2 merge, 0 none), ``log Pr(alpha, z') - log Pr(alpha,
    z)`` of its proposal ``z'`` (``LAST_DELTA``) and the log probability ``log q`` of its final
    scan (``LAST_LOG_Q``), the terms of the acceptance ratio besides ``E``, for diagnostics
    (``benchmarks/split_merge_proposals.py``).
    """
    if mutation is not None and mutation not in MUTATIONS:
        raise ValueError(f"unknown mutation {mutation!r}; choose from {', '.join(MUTATIONS)}")
    if mutation in _BUILT:
        return _BUILT[mutation]
    hastings = mutation != "sm-no-hastings"
    empty_choice = mutation != "sm-no-empty-choice"
    random_launch_merge = mutation != "sm-current-launch"

    @njit(cache=True)
    def split_merge(positions, tokens, z, c, ct, ci, recip, rng, beta, scans, members, saved, stats):
        n_pos = positions.shape[0]
        if n_pos < 2:
            return
        n_states = c.shape[0] - 1
        nab = n_states * c.shape[1] * beta
        beta32 = np.float32(beta)
        nbeta32 = np.float32(n_states * beta)
        m1 = min(int(rng.random() * n_pos), n_pos - 1)
        m2 = min(int(rng.random() * (n_pos - 1)), n_pos - 2)
        if m2 >= m1:
            m2 += 1
        t1 = positions[m1]
        t2 = positions[m2]
        i = z[t1]
        j = z[t2]
        split = i == j
        stats[LAST_KIND] = 0.0
        n_empty = 0
        if split:
            n_empty = _n_empty(ci)
            if n_empty == 0:
                stats[NO_EMPTY_STATE] += 1
                return
            r = min(int(rng.random() * n_empty), n_empty - 1)
            for k in range(1, n_states + 1):
                if ci[k] == 0:
                    if r == 0:
                        j = k
                        break
                    r -= 1
        n_s = 0
        for m in range(n_pos):
            t = positions[m]
            if t != t1 and t != t2 and (z[t] == i or z[t] == j):
                members[n_s] = t
                saved[n_s] = z[t]
                n_s += 1
        before = partial_log_joint(c, beta, i, j)
        if split:
            _set(t2, j, tokens, z, c, ct, ci, recip, nab)
        # launch: uniform over {i, j} for each member, then `scans` restricted Gibbs scans
        for s in range(n_s):
            u = rng.random()
            if split or random_launch_merge:
                _set(members[s], i if u < 0.5 else j, tokens, z, c, ct, ci, recip, nab)
        for _ in range(scans):
            for s in range(n_s):
                t = members[s]
                gi, gj = _pair_weights(t, i, j, tokens, z, c, ct, ci, nab, beta32, nbeta32)
                k = i if rng.random() * (gi + gj) < gi else j
                _set(t, k, tokens, z, c, ct, ci, recip, nab)
        # the final scan: drawn (split) or forced to the current configuration (merge)
        log_q = 0.0
        for s in range(n_s):
            t = members[s]
            gi, gj = _pair_weights(t, i, j, tokens, z, c, ct, ci, nab, beta32, nbeta32)
            if split:
                k = i if rng.random() * (gi + gj) < gi else j
            else:
                k = saved[s]
            log_q += math.log((gi if k == i else gj) / (gi + gj))
            _set(t, k, tokens, z, c, ct, ci, recip, nab)
        if not hastings:
            log_q = 0.0
        u = rng.random()
        if split:
            stats[SPLITS_TRIED] += 1
            delta = partial_log_joint(c, beta, i, j) - before
            stats[LAST_KIND], stats[LAST_DELTA], stats[LAST_LOG_Q] = 1.0, delta, log_q
            log_ratio = delta - log_q
            if empty_choice:
                log_ratio += math.log(n_empty)
            if u > 0.0 and math.log(u) < log_ratio:
                stats[SPLITS_ACCEPTED] += 1
                return
            for s in range(n_s):
                _set(members[s], i, tokens, z, c, ct, ci, recip, nab)
            _set(t2, i, tokens, z, c, ct, ci, recip, nab)
            return
        stats[MERGES_TRIED] += 1
        for s in range(n_s):
            _set(members[s], i, tokens, z, c, ct, ci, recip, nab)
        _set(t2, i, tokens, z, c, ct, ci, recip, nab)
        delta = partial_log_joint(c, beta, i, j) - before
        stats[LAST_KIND], stats[LAST_DELTA], stats[LAST_LOG_Q] = 2.0, delta, log_q
        log_ratio = delta + log_q
        if empty_choice:
            log_ratio -= math.log(_n_empty(ci))
        if u > 0.0 and math.log(u) < log_ratio:
            stats[MERGES_ACCEPTED] += 1
            return
        for s in range(n_s):
            _set(members[s], saved[s], tokens, z, c, ct, ci, recip, nab)
        _set(t2, j, tokens, z, c, ct, ci, recip, nab)

    _BUILT[mutation] = split_merge
    return split_merge


#: The production move (no mutation); see :func:`build_move`.
split_merge = build_move(None)


@njit(cache=True)
def moves(n_moves, positions, tokens, z, c, ct, ci, recip, rng, beta, scans, members, saved, stats):
    """``n_moves`` split-merge moves (:func:`split_merge`) in place."""
    for _ in range(n_moves):
        split_merge(positions, tokens, z, c, ct, ci, recip, rng, beta, scans, members, saved, stats)


@njit(cache=True)
def n_moves_now(rate, rng):
    """Moves after one sweep at ``rate`` moves per sweep: ``floor(rate)``, plus one with
    probability ``rate - floor(rate)`` (one ``rng.random()`` drawn only when that is > 0), so a
    fractional rate such as 0.1 makes a move after one sweep in ten on average. The number
    is drawn independently of the chain, so the mixture of kernels keeps the posterior."""
    n = int(math.floor(rate))
    frac = rate - n
    if frac > 0.0 and rng.random() < frac:
        n += 1
    return n


@njit(cache=False)  # a caller of the sweep: compiled per process (_cgs_pfa_kernel docstring)
def sweeps(n_sweeps, positions, tokens, z, c, ct, ci, recip, rng, beta, rate, scans,
           members, saved, stats):
    """``n_sweeps`` times: one Gibbs sweep of Algorithm 1 (on ``rng.random(M)``, as
    :func:`bayesfa.samplers.pfa._cgs_pfa_kernel.sweeps`), then :func:`n_moves_now` ``(rate)``
    split-merge moves. Returns the positions the Gibbs sweeps moved (int64, summed; the
    split-merge moves' relabellings are counted in ``stats``)."""
    g = np.zeros(c.shape[2], dtype=np.float32)
    moved = 0
    for _ in range(n_sweeps):
        uniforms = rng.random(positions.shape[0])
        moved += sweep_positions(positions, uniforms, tokens, z, c, ct, ci, recip, g, beta)
        moves(n_moves_now(rate, rng), positions, tokens, z, c, ct, ci, recip, rng, beta, scans,
              members, saved, stats)
    return moved


@njit(cache=False)  # a caller of the sweep: compiled per process (_cgs_pfa_kernel docstring)
def sample_draws(period, positions, tokens, z, c, ct, ci, recip, rng, beta, rate, scans,
                 members, saved, stats, out_counts, out_log_joint, out_n_states, out_n_edges,
                 out_stats):
    """:func:`bayesfa.samplers.pfa._cgs_pfa_kernel.sample_draws` with :func:`sweeps` (each
    sweep followed by split-merge moves at ``rate`` per sweep). ``out_stats`` int64 ``[D,
    3]`` (``_cgs_pfa_kernel.STATS``): per draw, the positions the Gibbs sweeps moved, the
    split-merge moves tried (splits and merges; a pair that found no empty state proposes
    nothing) and those accepted."""
    for d in range(out_counts.shape[0]):
        tried = stats[SPLITS_TRIED] + stats[MERGES_TRIED]
        accepted = stats[SPLITS_ACCEPTED] + stats[MERGES_ACCEPTED]
        out_stats[d, 0] = sweeps(period, positions, tokens, z, c, ct, ci, recip, rng, beta, rate,
                                 scans, members, saved, stats)
        out_stats[d, 1] = np.int64(stats[SPLITS_TRIED] + stats[MERGES_TRIED] - tried)
        out_stats[d, 2] = np.int64(stats[SPLITS_ACCEPTED] + stats[MERGES_ACCEPTED] - accepted)
        record_draw(d, c, ci, beta, out_counts, out_log_joint, out_n_states, out_n_edges)


__all__ = ["MUTATIONS", "SCANS", "build_move", "fill_counts", "moves", "partial_log_joint",
           "sample_draws", "split_merge", "sweeps"]
