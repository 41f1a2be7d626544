"""Restricted-Gibbs split-merge move for the iPFA's weak limit (issue 38): ``--split-merge``
of the blocked sampler (:func:`bayesfa.samplers.pfa._ipfa_blocked_kernel.build_hybrid`).

Jain & Neal (2004, J. Comput. Graph. Stat. 13) as :mod:`bayesfa.samplers.pfa._split_merge_kernel`
adapts it to CGS-PFA, here on the truncated HDP-PFA with ``L`` states given ``(beta, alpha)``
and ``theta`` integrated out: the target is ``Pr(data, z | beta, alpha)``
(:func:`bayesfa.samplers.pfa._ipfa_kernel.log_joint`: each row a Dirichlet-multinomial with
prior ``alpha H``, ``H(a, j) = beta_j / A`` for ``a != 0``, ``j >= 1``, ``H(0, 0) = 1 / A``),
and each restricted Gibbs step draws ``z_t`` between ``i`` and ``j`` with the weights ``g_i,
g_j`` of the iPFA's Eq. 9 (:func:`bayesfa.samplers.pfa._ipfa_kernel._exact_weight`). A split
moves tokens of ``i`` into an EMPTY state ``j`` of the truncation; a merge empties ``j``.

The empty state ``j`` of a split is drawn by ``choice``:

- ``CHOICE_UNIFORM``: uniformly among the ``E`` empty states (Jain & Neal; the proposal
  probability ``1 / E``);
- ``CHOICE_BETA``: with probability ``beta_j / B``, ``B`` the weight of the empty states (the
  merge's reverse uses ``B'``, the empty states' weight after the merge, ``j`` included);
- ``CHOICE_RESPLIT``: uniformly, and ``(beta_i, beta_j)`` redrawn as ``(u s, (1 - u) s)``,
  ``s = beta_i + beta_j``, ``u ~ U(0, 1)`` (both directions; the target is then ``Pr(data, z,
  beta | alpha, gamma)``, whose weights' prior ``Dir(gamma/L, ..)`` enters as
  ``(gamma/L - 1) log(beta_i' beta_j' / (beta_i beta_j))``; the uniform proposal on the
  segment has the same density both ways).

One move (:func:`propose`), as Jain & Neal's Sect. 3 with their notation: a pair of anchors
``t1, t2`` (``pairs``); ``i = z_{t1}``; a split if ``z_{t2} = i`` (``j`` an empty state by
``choice``), else a merge of ``j = z_{t2}`` into ``i``; ``S`` the other free positions in ``i``
or ``j``; the launch (``launch``: each member by a fair coin, or by the anchors' next letters)
then ``scans`` restricted Gibbs scans; the final scan drawn (split, its probability ``q``) or
forced to the current ``z`` (merge, ``q`` of reaching it). Accepted with probability
``min(1, r)``, ``log r = delta - log q + log(1 / Pr(j))`` for a split and ``delta + log q +
log Pr'(j)`` for a merge (``delta`` the change of ``log Pr(data, z | beta, alpha)``, from the
terms of rows and columns ``i, j`` only: :func:`partial_log_joint`; ``Pr(j)`` the choice's
probability, ``1 / E`` or ``beta_j / B``). The pair and the launch depend on the tokens and the
pair only, so each (pair, launch) couple of split and merge is in detailed balance with
``Pr(z | beta, alpha, data)``. Checked exactly by :mod:`bayesfa.validation.pfa.ipfa_split`
(``tests/test_ipfa_split.py``), whose mutants are :data:`MUTATIONS`. With ``dry`` the proposal
is evaluated and undone (``benchmarks/ipfa_split_feasibility.py``); the blocked sampler's
moves use ``CHOICE_BETA``, ``LAUNCH_LETTER``, ``PAIRS_LETTERS`` (measured:
``benchmarks/results/ipfa_blocked/split_move.md``).

Written beside CGS-PFA's :mod:`~bayesfa.samplers.pfa._split_merge_kernel` rather than as a
generalisation of it: that kernel's weights and joint take CGS-PFA's scalar ``beta`` in the
inlined float32 code it shares with the Gibbs sweep; this one reuses the iPFA's Eq. 9 weight
(``_exact_weight``) and CGS-PFA's ``move_state``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bayesfa.samplers.pfa._cgs_pfa_kernel import move_state
from bayesfa.samplers.pfa._ipfa_kernel import _exact_weight, floored, row_log_joint

#: launch scans of the blocked sampler's move (``--split-merge-scans``): at 100, 3 % of the
#: splits had log ratio > 0 on the generated 40-state PFA's chain from 10 states, at 3 and 10
#: none (benchmarks/results/ipfa_blocked/split_feasibility*.md)
SCANS = 100

CHOICE_UNIFORM, CHOICE_BETA, CHOICE_RESPLIT = 0, 1, 2
#: launch of the restricted scans: each member to i or j by a fair coin (Jain & Neal), or a
#: member followed by the letter that follows one anchor and not the other to that anchor's
#: state (the coin for the rest); both depend on the tokens and the pair only, so the merge's
#: launch is drawn the same way as the split's
LAUNCH_RANDOM, LAUNCH_LETTER = 0, 1
#: the pair of anchors: two distinct free positions drawn uniformly (Jain & Neal), or ``t1``
#: uniformly and ``t2`` uniformly among the free positions followed by another letter than
#: ``t1`` (a rule of the tokens only: the same ordered pair is as probable for the split as
#: for its reverse merge)
PAIRS_UNIFORM, PAIRS_LETTERS = 0, 1

# fields of propose's `out` (float64 [OUT])
KIND, LOG_RATIO, DELTA, LOG_Q, LOG_CHOICE, N_S, STATE_I, STATE_J, CI_I, ACCEPTED = range(10)
OUT = 10


@njit(cache=True)
def partial_log_joint(c, ci, beta, alpha, i, j):
    """The terms of ``log Pr(data, z | beta, alpha)`` (``_ipfa_kernel.log_joint``) that a
    relabelling between ``i`` and ``j`` or a change of ``beta_i, beta_j`` can change: rows
    ``i`` and ``j`` whole, and the cells of columns ``i`` and ``j`` in every other row."""
    n_st = c.shape[0] - 1
    n_sym = c.shape[1]
    lg_alpha = math.lgamma(alpha)
    out = 0.0
    for r in range(n_st + 1):
        if r == i or r == j:
            if ci[r] != 0:
                out += row_log_joint(c, ci, r, beta, alpha, lg_alpha, n_st, False)
        else:
            for a in range(1, n_sym):
                for side in range(2):
                    col = i if side == 0 else j
                    cnt = float(c[r, a, col])
                    if cnt != 0.0:
                        x = alpha * beta[col] / n_sym
                        out += math.lgamma(cnt + x) - math.lgamma(x)
    return out


@njit(cache=True, inline="always")
def _pair(t, i, j, tokens, z, c, ct, ci, bk, beta, alpha):
    """``(g_i, g_j)`` of Eq. 9 (prior ``alpha H``) at ``t``, exact (``C^{-t}``, delta term)."""
    n_sym = c.shape[1]
    ft = c.dtype.type
    ap = tokens[t - 1]
    a = tokens[t]
    p = z[t - 1]
    n = z[t + 1]
    old = z[t]
    h_out = ft(alpha / n_sym) if a == 0 else ft(alpha * beta[n] / n_sym)
    aw = ft(alpha)
    gi = _exact_weight(i, p, ap, a, n, old, c, ct, ci, bk, aw, h_out, True)
    gj = _exact_weight(j, p, ap, a, n, old, c, ct, ci, bk, aw, h_out, True)
    if gi + gj <= 0.0:  # both underflowed (a weight of ~1e-40 in float32): a fair coin, the
        return 1.0, 1.0  # same rule in both directions, so q stays the proposal's probability
    return np.float64(gi), np.float64(gj)


@njit(cache=True, inline="always")
def _set(t, k, tokens, z, c, ct, ci, recip, alpha):
    old = z[t]
    if k != old:
        move_state(t, k, old, z[t - 1], tokens[t - 1], tokens[t], z[t + 1], z, c, ct, ci, recip,
                   alpha)


@njit(cache=True)
def _resplit(i, j, beta, bk, alpha, gamma, n_st, n_sym, rng):
    """``(beta_i, beta_j) <- (u s, (1 - u) s)``, ``u ~ U(0, 1)``; returns the log ratio of
    their ``Dir(gamma/L, ..)`` prior densities (new over old)."""
    bi0 = beta[i]
    bj0 = beta[j]
    s = bi0 + bj0
    u = rng.random()
    beta[i] = u * s
    beta[j] = (1.0 - u) * s
    bk[i] = bk.dtype.type(floored(alpha * beta[i] / n_sym))
    bk[j] = bk.dtype.type(floored(alpha * beta[j] / n_sym))
    return (gamma / n_st - 1.0) * (math.log(beta[i]) + math.log(beta[j]) - math.log(bi0)
                                   - math.log(bj0))


#: Deliberate errors :func:`build_propose` can compile in (one at a time) for the exact check
#: (:mod:`bayesfa.validation.pfa.ipfa_split`); production has none.
MUTATIONS: dict[str, str] = {
    "split-no-hastings": "acceptance without the final scan's proposal probability q",
    "split-no-empty-choice": "acceptance without the choice of the empty state (1/E or beta_j/B)",
}

_BUILT: dict = {}


def build_propose(mutation: str | None = None):
    """:func:`propose` compiled with ``mutation`` (a key of :data:`MUTATIONS`) or without."""
    if mutation is not None and mutation not in MUTATIONS:
        raise ValueError(f"unknown mutation {mutation!r}; choose from {', '.join(MUTATIONS)}")
    if mutation in _BUILT:
        return _BUILT[mutation]
    hastings = mutation != "split-no-hastings"
    empty_choice = mutation != "split-no-empty-choice"
    _BUILT[mutation] = njit(cache=False)(_make(hastings, empty_choice))
    return _BUILT[mutation]


def _make(hastings, empty_choice):
    def propose(positions, tokens, z, c, ct, ci, recip, bk, beta, alpha, gamma, rng, scans, choice,
                dry, members, saved, out, pair_m1=-1, pair_m2=-1, launch=LAUNCH_RANDOM,
                pairs=PAIRS_UNIFORM):
        """One split-merge proposal (module docstring) on the truncated chain state (``recip`` and
        ``bk`` current for ``alpha`` and ``beta``). ``out`` float64 ``[OUT]``: its kind (1 split, 2
        merge, 0 none: a split with no empty state), log acceptance ratio and its terms. With
        ``dry`` the state is restored whatever the ratio; otherwise accepted with probability
        ``min(1, exp(ratio))``. Returns the kind."""
        n_pos = positions.shape[0]
        n_st = c.shape[0] - 1
        n_sym = c.shape[1]
        out[:] = 0.0
        if pair_m1 >= 0:  # the pair given (the caller draws it by a rule of the tokens only)
            m1 = pair_m1
            m2 = pair_m2
        else:
            m1 = min(int(rng.random() * n_pos), n_pos - 1)
            m2 = min(int(rng.random() * (n_pos - 1)), n_pos - 2)
            if m2 >= m1:
                m2 += 1
            if pairs == PAIRS_LETTERS:  # t2 uniform among those followed by another letter
                tries = 0
                while tokens[positions[m2]] == tokens[positions[m1]]:
                    tries += 1
                    if tries > 10_000:
                        return 0  # (every free position followed by one letter)
                    m2 = min(int(rng.random() * n_pos), n_pos - 1)
        t1 = positions[m1]
        t2 = positions[m2]
        i = z[t1]
        j = z[t2]
        split = i == j
        log_choice = 0.0  # log of the reverse's over the forward's proposal probability of j
        if split:
            n_empty = 0
            mass = 0.0
            for k in range(1, n_st + 1):
                if ci[k] == 0:
                    n_empty += 1
                    mass += beta[k]
            if n_empty == 0:
                return 0
            if choice == CHOICE_BETA:
                target = rng.random() * mass
                acc = 0.0
                for k in range(1, n_st + 1):
                    if ci[k] == 0:
                        acc += beta[k]
                        j = k
                        if target < acc:
                            break
                log_choice = -math.log(beta[j] / mass)
            else:
                r = min(int(rng.random() * n_empty), n_empty - 1)
                for k in range(1, n_st + 1):
                    if ci[k] == 0:
                        if r == 0:
                            j = k
                            break
                        r -= 1
                log_choice = math.log(n_empty)
        out[STATE_I] = i
        out[STATE_J] = j
        out[CI_I] = ci[i] + (0 if split else ci[j])
        n_s = 0
        for m in range(n_pos):
            t = positions[m]
            if t != t1 and t != t2 and (z[t] == i or z[t] == j):
                members[n_s] = t
                saved[n_s] = z[t]
                n_s += 1
        out[N_S] = n_s
        bi0 = beta[i]
        bj0 = beta[j]
        if choice == CHOICE_RESPLIT and (bi0 <= 0.0 or bj0 <= 0.0):
            return 0  # a weight underflowed to 0: its prior density is not finite there
        before = partial_log_joint(c, ci, beta, alpha, i, j)
        log_prior_beta = 0.0
        if choice == CHOICE_RESPLIT and split:  # a split's scans run under the new weights
            log_prior_beta = _resplit(i, j, beta, bk, alpha, gamma, n_st, n_sym, rng)
        if split:
            _set(t2, j, tokens, z, c, ct, ci, recip, alpha)
        for s_ in range(n_s):
            u = rng.random()
            k = i if u < 0.5 else j
            if launch == LAUNCH_LETTER:  # the anchors' next letters decide where they differ
                a = tokens[members[s_]]
                if a == tokens[t2] and a != tokens[t1]:
                    k = j
                elif a == tokens[t1] and a != tokens[t2]:
                    k = i
            _set(members[s_], k, tokens, z, c, ct, ci, recip, alpha)
        for _ in range(scans):
            for s_ in range(n_s):
                t = members[s_]
                gi, gj = _pair(t, i, j, tokens, z, c, ct, ci, bk, beta, alpha)
                k = i if rng.random() * (gi + gj) < gi else j
                _set(t, k, tokens, z, c, ct, ci, recip, alpha)
        log_q = 0.0
        for s_ in range(n_s):
            t = members[s_]
            gi, gj = _pair(t, i, j, tokens, z, c, ct, ci, bk, beta, alpha)
            if split:
                k = i if rng.random() * (gi + gj) < gi else j
            else:
                k = saved[s_]
            log_q += math.log((gi if k == i else gj) / (gi + gj))
            _set(t, k, tokens, z, c, ct, ci, recip, alpha)
        if split:
            delta = partial_log_joint(c, ci, beta, alpha, i, j) - before + log_prior_beta
            if not hastings:
                log_q = 0.0
            if not empty_choice:
                log_choice = 0.0
            log_ratio = delta - log_q + log_choice
        else:
            for s_ in range(n_s):
                _set(members[s_], i, tokens, z, c, ct, ci, recip, alpha)
            _set(t2, i, tokens, z, c, ct, ci, recip, alpha)
            if choice == CHOICE_RESPLIT:  # a merge's (its reverse split's scans ran under these)
                log_prior_beta = _resplit(i, j, beta, bk, alpha, gamma, n_st, n_sym, rng)
            delta = partial_log_joint(c, ci, beta, alpha, i, j) - before + log_prior_beta
            # reverse: a split of i choosing j among the empty states now
            if choice == CHOICE_BETA:
                mass = 0.0
                for k in range(1, n_st + 1):
                    if ci[k] == 0:
                        mass += beta[k]
                log_choice = math.log(beta[j] / mass)
            else:
                n_empty = 0
                for k in range(1, n_st + 1):
                    if ci[k] == 0:
                        n_empty += 1
                log_choice = -math.log(n_empty)
            if not hastings:
                log_q = 0.0
            if not empty_choice:
                log_choice = 0.0
            log_ratio = delta + log_q + log_choice
        out[KIND] = 1.0 if split else 2.0
        out[LOG_RATIO] = log_ratio
        out[DELTA] = delta
        out[LOG_Q] = log_q
        out[LOG_CHOICE] = log_choice
        accept = False
        if not dry:
            u = rng.random()
            accept = u > 0.0 and math.log(u) < log_ratio
        if accept:
            out[ACCEPTED] = 1.0
            return int(out[KIND])
        # restore: every member to its saved state, t2 to its own, the weights
        for s_ in range(n_s):
            _set(members[s_], saved[s_], tokens, z, c, ct, ci, recip, alpha)
        _set(t2, i if split else j, tokens, z, c, ct, ci, recip, alpha)
        beta[i] = bi0
        beta[j] = bj0
        bk[i] = bk.dtype.type(floored(alpha * bi0 / n_sym))
        bk[j] = bk.dtype.type(floored(alpha * bj0 / n_sym))
        return int(out[KIND])

    return propose


#: The production proposal (no mutation).
propose = build_propose(None)
