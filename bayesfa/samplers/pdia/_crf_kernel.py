"""Seating of the transition entries ``delta_ij`` (numba): the Polya urn of the finite PDFA and
the Pitman-Yor Chinese restaurant franchise of the PDIA (Pfau, Bartlett & Wood 2010).

Every instantiated ``delta_ij`` (a *customer* of restaurant ``j``, the column of letter ``j``)
has a *seat*. Both models share the arrays below; ``model`` selects the rules.

``model = 0`` -- finite PDFA, ``mu`` given (Eq. delta:pred with ``D+_j``): the seat *is* the
target state ``k``. A new customer of column ``j`` goes to ``k`` with probability
``(alpha mu_k + v_kj) / (alpha + D+_j)``.

``model = 1`` -- PDIA, hierarchical Pitman-Yor (poster; Eq. crf:low/crf:high with discounts):
the seat is a *table* ``t`` of restaurant ``j`` whose dish ``tab_dish[t]`` is the target
state. A customer joins table ``t`` with probability ``(n_t - d) / (alpha + n_j)`` and opens a
new table with ``(alpha + d T_j) / (alpha + n_j)``; a new table takes the existing dish ``k``
with ``(m_k - d0) / (alpha0 + M)`` or a new state with ``(alpha0 + d0 K) / (alpha0 + M)``
(``m_k`` tables serve ``k``, ``M`` tables in all, ``K`` dishes). The base measure is
non-atomic (every new dish is a new state), so ``q0`` (state 0) is never a dish.

Arrays (``Kc`` state capacity, ``S`` symbols, ``TC = Kc * S`` table capacity):

- ``nj`` int32 ``[S]``: customers of column ``j`` (``D+_j``).
- ``v`` int32 ``[Kc, S]`` (model 0): ``v[k, j]`` customers of column ``j`` seated at state ``k``.
- ``mu`` float64 ``[Kc]`` (model 0).
- ``tabs`` int32 ``[7, TC]`` (model 1): rows ``N`` customers, ``DISH``, ``COL``, ``POS``
  (index in ``col_tabs[COL]``), ``FREE`` (stack of free ids), ``PEND`` (stack of ids closed
  during the current move), ``FLAG`` (``IN_USE``, ``FREE``, ``PENDING``, ``REOPENED``).
- ``col_tabs`` int32 ``[S, Kc]``, ``col_T`` int32 ``[S]``: the open tables of each column.
- ``sts`` int32 ``[4, Kc]`` (model 1): rows ``M`` (tables serving state ``k``), ``FREE``,
  ``PEND``, ``FLAG`` as for tables.
- ``meta`` int64 ``[8]``: ``n_free_tab, n_free_st, M, K, n_pend_tab, n_pend_st, hi, stamp``
  (``hi``: one more than the highest state label ever used, so rows ``>= hi`` are empty;
  ``stamp``: the path evaluation counter of :mod:`bayesfa.samplers.pdia._pdfa_kernel`).
- ``hyp`` float64 ``[5]``: ``alpha, beta, gamma | alpha0, d, d0`` (``hyp[2]`` is ``gamma``
  for model 0 and ``alpha0`` for model 1).

Invariants: a table with ``N == 0`` is closed; a closed table or dead state freed during a
move goes on the pending stack, not the free stack, so that the move can reopen it *with the
same id and dish* (its reverse proposal), and :func:`end_move` frees what is still closed.
``variant`` (validation mutants) is 2 to drop the discounts from the seating rules; 7 (8)
draws a new customer's seat (a new table's dish) without the discount ``d`` (``d0``) while
:func:`add` still scores the seating with it (the proposal and its probability in the MH ratio
disagree); 10 draws a finite-model seat from ``alpha / |Q| + v_kj`` instead of ``alpha mu_k +
v_kj`` (likewise); 14 scores the top-level seating (:func:`_top_add`, :func:`_top_rem`) with the
lower level's ``d`` where ``d0`` belongs (the audit's slip of issue 39).

Every seating function returns the log probability of the seating event given the
configuration without that customer, so that the log EPPF of a configuration changes by
exactly that amount (``add``) or minus it (``rem``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# rows of tabs
T_N, T_DISH, T_COL, T_POS, T_FREE, T_PEND, T_FLAG = 0, 1, 2, 3, 4, 5, 6
# rows of sts
S_M, S_FREE, S_PEND, S_FLAG = 0, 1, 2, 3
# meta
M_FREE_TAB, M_FREE_ST, M_TABLES, M_DISHES, M_PEND_TAB, M_PEND_ST, M_HI, M_STAMP = range(8)
# FLAG values: in use; on the free stack; closed during this move (on the pending stack);
# closed then reopened during this move (still on the pending stack)
IN_USE, FREE, PENDING, REOPENED = 0, 1, 2, 3
# hyp
H_ALPHA, H_BETA, H_GAMMA, H_D, H_D0 = 0, 1, 2, 3, 4
H_ALPHA0 = 2


def new_crf(n_cap: int, n_symbols: int, n_tables: int | None = None):
    """Empty seating arrays ``(nj, v, mu, tabs, col_tabs, col_T, sts, meta)`` for ``n_cap``
    states (state 0 = q0 is never free) and ``n_symbols`` columns; ``n_tables`` table ids
    (default ``n_cap * n_symbols``, one per entry, which no seating can exceed; a smaller pool
    is the caller's bound: the prediction states of ``bayesfa.samplers.pdia.pdfa`` open at
    most one table per test symbol read)."""
    tc = n_cap * n_symbols if n_tables is None else int(n_tables)
    tabs = np.zeros((7, tc), dtype=np.int32)
    tabs[T_FREE, :] = np.arange(tc - 1, -1, -1, dtype=np.int32)  # pop gives 0, 1, 2, ...
    tabs[T_FLAG, :] = 1
    sts = np.zeros((4, n_cap), dtype=np.int32)
    sts[S_FREE, : n_cap - 1] = np.arange(n_cap - 1, 0, -1, dtype=np.int32)
    sts[S_FLAG, 1:] = 1
    meta = np.zeros(8, dtype=np.int64)
    meta[M_FREE_TAB] = tc
    meta[M_FREE_ST] = n_cap - 1
    meta[M_HI] = 1
    return (np.zeros(n_symbols, dtype=np.int32), np.zeros((n_cap, n_symbols), dtype=np.int32),
            np.zeros(n_cap), tabs, np.zeros((n_symbols, n_cap), dtype=np.int32),
            np.zeros(n_symbols, dtype=np.int32), sts, meta)


@njit(cache=True)
def _disc(hyp, which, variant):
    return 0.0 if variant == 2 else hyp[which]


@njit(cache=True)
def _top_disc(hyp, variant):
    """``d0``, the top level's discount (14: mutant, ``d`` in its place)."""
    return _disc(hyp, H_D if variant == 14 else H_D0, variant)


@njit(cache=True)
def _top_add(k, sts, meta, hyp, variant):
    """Seat one more table at dish ``k`` (reviving ``k`` if dead); its log probability."""
    a0 = hyp[H_ALPHA0]
    d0 = _top_disc(hyp, variant)
    big_m = meta[M_TABLES]
    _claim_state(k, sts)
    if sts[S_M, k] > 0:
        lp = math.log(sts[S_M, k] - d0) - math.log(a0 + big_m)
    else:
        lp = math.log(a0 + d0 * meta[M_DISHES]) - math.log(a0 + big_m) if big_m > 0 else 0.0
        meta[M_DISHES] += 1
    sts[S_M, k] += 1
    meta[M_TABLES] += 1
    return lp


@njit(cache=True)
def _top_rem(k, sts, meta, hyp, variant):
    """Remove one table from dish ``k``; the log probability of seating it back there."""
    a0 = hyp[H_ALPHA0]
    d0 = _top_disc(hyp, variant)
    sts[S_M, k] -= 1
    meta[M_TABLES] -= 1
    big_m = meta[M_TABLES]
    if sts[S_M, k] > 0:
        return math.log(sts[S_M, k] - d0) - math.log(a0 + big_m)
    meta[M_DISHES] -= 1
    _close(sts, k, S_PEND, S_FLAG, meta, M_PEND_ST)
    return math.log(a0 + d0 * meta[M_DISHES]) - math.log(a0 + big_m) if big_m > 0 else 0.0


@njit(cache=True, inline="always")
def _close(ids, x, pend, flag, meta, m_pend):
    """Table or state ``x`` closed during a move: onto the pending stack (row ``pend`` of
    ``ids``, length ``meta[m_pend]``) unless it is already there (reopened and closed again)."""
    if ids[flag, x] == IN_USE:
        ids[flag, x] = PENDING
        ids[pend, meta[m_pend]] = x
        meta[m_pend] += 1
    elif ids[flag, x] == REOPENED:
        ids[flag, x] = PENDING


@njit(cache=True)
def _claim_state(k, sts):
    """State ``k`` is in use again (it may sit on the pending stack)."""
    sts[S_FLAG, k] = REOPENED if sts[S_FLAG, k] == PENDING else (
        IN_USE if sts[S_FLAG, k] != REOPENED else REOPENED)


@njit(cache=True)
def add(model, j, s, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant):
    """Seat a customer of column ``j`` at seat ``s`` (state for model 0; table for model 1, a
    closed table being reopened with its recorded dish). Returns the log probability."""
    alpha = hyp[H_ALPHA]
    n = nj[j]
    if model == 0:
        lp = math.log(alpha * mu[s] + v[s, j]) - math.log(alpha + n)
        v[s, j] += 1
        nj[j] += 1
        return lp
    d = _disc(hyp, H_D, variant)
    if tabs[T_N, s] > 0:
        lp = math.log(tabs[T_N, s] - d) - math.log(alpha + n)
    else:
        lp = (math.log(alpha + d * col_T[j]) - math.log(alpha + n)) if n > 0 else 0.0
        lp += _top_add(tabs[T_DISH, s], sts, meta, hyp, variant)
        tabs[T_COL, s] = j
        tabs[T_POS, s] = col_T[j]
        col_tabs[j, col_T[j]] = s
        col_T[j] += 1
        tabs[T_FLAG, s] = REOPENED if tabs[T_FLAG, s] == PENDING else (
            IN_USE if tabs[T_FLAG, s] != REOPENED else REOPENED)
    tabs[T_N, s] += 1
    nj[j] += 1
    return lp


@njit(cache=True)
def rem(model, j, s, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant):
    """Unseat a customer of column ``j`` from seat ``s``; the log probability of seating it
    back at ``s`` (given the configuration without it)."""
    alpha = hyp[H_ALPHA]
    nj[j] -= 1
    n = nj[j]
    if model == 0:
        v[s, j] -= 1
        return math.log(alpha * mu[s] + v[s, j]) - math.log(alpha + n)
    d = _disc(hyp, H_D, variant)
    tabs[T_N, s] -= 1
    if tabs[T_N, s] > 0:
        return math.log(tabs[T_N, s] - d) - math.log(alpha + n)
    # close the table: swap-remove from its column, pending-free its id, unseat it at the top
    pos = tabs[T_POS, s]
    last = col_tabs[j, col_T[j] - 1]
    col_tabs[j, pos] = last
    tabs[T_POS, last] = pos
    col_T[j] -= 1
    _close(tabs, s, T_PEND, T_FLAG, meta, M_PEND_TAB)
    lp = (math.log(alpha + d * col_T[j]) - math.log(alpha + n)) if n > 0 else 0.0
    return lp + _top_rem(tabs[T_DISH, s], sts, meta, hyp, variant)


@njit(cache=True, inline="always")
def _total(n, disc, groups):
    """An upper bound of the running sum ``sum_g (n_g - disc)`` over ``groups`` groups of
    ``n`` customers in all (``n - disc groups`` plus a margin far above its rounding): a
    uniform at or above it falls past every group."""
    return n - disc * groups + 1e-9 * (n + 1.0)


@njit(cache=True)
def sample_dish(rng, sts, meta, hyp, variant, n_cap):
    """A dish for a new table from the top restaurant: an existing state ``k`` with weight
    ``m_k - d0``, a fresh state with ``alpha0 + d0 K``. -1 when no state is free."""
    a0 = hyp[H_ALPHA0]
    d0 = 0.0 if variant == 8 else _disc(hyp, H_D0, variant)  # 8: mutant, proposal without d0
    u = rng.random() * (a0 + meta[M_TABLES])
    # the existing dishes weigh M - d0 K in all: a u clearly above that (margin far beyond the
    # rounding of the running sum) is a new dish, found without the scan
    if meta[M_TABLES] > 0 and u < _total(meta[M_TABLES], d0, meta[M_DISHES]):
        acc = 0.0
        for k in range(1, min(n_cap, meta[M_HI])):  # no state at or above hi serves a table
            if sts[S_M, k] > 0:
                acc += sts[S_M, k] - d0
                if u < acc:
                    return k
    if meta[M_FREE_ST] == 0:
        return -1
    meta[M_FREE_ST] -= 1
    k = sts[S_FREE, meta[M_FREE_ST]]
    sts[S_FLAG, k] = IN_USE
    if k + 1 > meta[M_HI]:
        meta[M_HI] = k + 1
    return k


@njit(cache=True)
def _new_table(dish, tabs, meta):
    meta[M_FREE_TAB] -= 1
    t = tabs[T_FREE, meta[M_FREE_TAB]]
    tabs[T_FLAG, t] = FREE  # closed until add() opens it
    tabs[T_DISH, t] = dish
    tabs[T_N, t] = 0
    return t


@njit(cache=True)
def sample_seat(model, rng, j, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant):
    """A seat for a new customer of column ``j`` from its predictive (not yet seated: call
    :func:`add`). -1 when the state capacity is exhausted."""
    alpha = hyp[H_ALPHA]
    n_cap = v.shape[0]
    if model == 0:
        u = rng.random() * (alpha + nj[j])
        acc = 0.0
        for k in range(n_cap):
            if variant == 10:  # mutant: the proposal's base uniform instead of mu
                acc += alpha / n_cap + v[k, j]
            else:
                acc += alpha * mu[k] + v[k, j]
            if u < acc:
                return k
        return n_cap - 1
    d = 0.0 if variant == 7 else _disc(hyp, H_D, variant)  # 7: mutant, proposal without d
    u = rng.random() * (alpha + nj[j])
    if u < _total(nj[j], d, col_T[j]):  # else a new table (see sample_dish)
        acc = 0.0
        for p in range(col_T[j]):
            t = col_tabs[j, p]
            acc += tabs[T_N, t] - d
            if u < acc:
                return t
    k = sample_dish(rng, sts, meta, hyp, variant, n_cap)
    if k < 0:
        return -1
    return _new_table(k, tabs, meta)


@njit(cache=True)
def seat_dish(model, s, tabs):
    """The state a seat points to."""
    return s if model == 0 else tabs[T_DISH, s]


@njit(cache=True)
def end_move(tabs, sts, meta):
    """Free the tables and states closed during the move that are still closed."""
    _free_pending(tabs, T_PEND, T_FREE, T_FLAG, meta, M_PEND_TAB, M_FREE_TAB)
    _free_pending(sts, S_PEND, S_FREE, S_FLAG, meta, M_PEND_ST, M_FREE_ST)


@njit(cache=True, inline="always")
def _free_pending(ids, pend, free, flag, meta, m_pend, m_free):
    """Empty the pending stack (row ``pend`` of ``ids``, length ``meta[m_pend]``): an id still
    closed goes on the free stack, a reopened one is in use again."""
    for p in range(meta[m_pend]):
        x = ids[pend, p]
        if ids[flag, x] == PENDING:
            ids[free, meta[m_free]] = x
            meta[m_free] += 1
            ids[flag, x] = FREE
        else:
            ids[flag, x] = IN_USE
    meta[m_pend] = 0


@njit(cache=True)
def log_eppf_py(sizes, n_groups, conc, disc):
    """log EPPF of a Pitman-Yor partition with group sizes ``sizes[:n_groups]``."""
    if n_groups == 0:
        return 0.0
    total = 0
    lp = 0.0
    for g in range(n_groups):
        n = sizes[g]
        total += n
        for l in range(1, n):
            lp += math.log(l - disc)
    for i in range(1, n_groups):
        lp += math.log(conc + i * disc)
    for i in range(1, total):
        lp -= math.log(conc + i)
    return lp


@njit(cache=True)
def log_prior_crf(tabs, col_tabs, col_T, sts, hyp, variant):
    """log EPPF of the whole franchise (model 1): every restaurant plus the top level."""
    d = _disc(hyp, H_D, variant)
    d0 = _disc(hyp, H_D0, variant)
    n_sym = col_T.shape[0]
    buf = np.empty(col_tabs.shape[1], dtype=np.int64)
    lp = 0.0
    for j in range(n_sym):
        for p in range(col_T[j]):
            buf[p] = tabs[T_N, col_tabs[j, p]]
        lp += log_eppf_py(buf, col_T[j], hyp[H_ALPHA], d)
    n_cap = sts.shape[1]
    buf2 = np.empty(n_cap, dtype=np.int64)
    g = 0
    for k in range(n_cap):
        if sts[S_M, k] > 0:
            buf2[g] = sts[S_M, k]
            g += 1
    return lp + log_eppf_py(buf2, g, hyp[H_ALPHA0], d0)


@njit(cache=True)
def log_prior_finite(v, nj, mu, alpha, n_fixed):
    """``log p(delta_V | mu, alpha)``: the Polya urn of each column (Eq. delta:end with ``D+_j``)."""
    lp = 0.0
    for j in range(n_fixed, v.shape[1]):
        if nj[j] == 0:
            continue
        for k in range(v.shape[0]):
            if v[k, j] > 0:
                lp += math.lgamma(alpha * mu[k] + v[k, j]) - math.lgamma(alpha * mu[k])
        lp += math.lgamma(alpha) - math.lgamma(alpha + nj[j])
    return lp


@njit(cache=True)
def rebuild(model, nf, delta, seat, tdish, n_tab, nj, v, tabs, col_tabs, col_T, sts, meta):
    """Fill fresh arrays of :func:`new_crf` from a recorded sample: ``delta``/``seat``
    ``[K, S]`` (seats of model 1 are table ids ``0..n_tab-1`` with dishes ``tdish``). Free
    stacks hold every unused id; ``hi`` is ``K``."""
    n_rows, n_sym = delta.shape
    n_cap = v.shape[0]
    for q in range(n_rows):
        for j in range(nf, n_sym):
            k = delta[q, j]
            if k < 0:
                continue
            nj[j] += 1
            if model == 0:
                v[k, j] += 1
                continue
            t = seat[q, j]
            if tabs[T_N, t] == 0:
                tabs[T_DISH, t] = tdish[t]
                tabs[T_COL, t] = j
                tabs[T_POS, t] = col_T[j]
                col_tabs[j, col_T[j]] = t
                col_T[j] += 1
                sts[S_M, tdish[t]] += 1
                meta[M_TABLES] += 1
            tabs[T_N, t] += 1
    if model == 1:
        n_free = 0
        for t in range(tabs.shape[1] - 1, -1, -1):
            if tabs[T_N, t] == 0:
                tabs[T_FREE, n_free] = t
                tabs[T_FLAG, t] = FREE
                n_free += 1
            else:
                tabs[T_FLAG, t] = IN_USE
        meta[M_FREE_TAB] = n_free
        n_free = 0
        n_dish = 0
        for k in range(n_cap - 1, 0, -1):
            if sts[S_M, k] == 0:  # (a label below hi that serves no table is free as well)
                sts[S_FREE, n_free] = k
                sts[S_FLAG, k] = FREE
                n_free += 1
            else:
                sts[S_FLAG, k] = IN_USE
                n_dish += 1
        meta[M_FREE_ST] = n_free
        meta[M_DISHES] = n_dish
    meta[M_HI] = n_rows


# -- prediction ---------------------------------------------------------------------------------

@njit(cache=True)
def sample_seat_adapted(model, rng, j, e, e_new, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp,
                        variant):
    """A seat for a new customer of column ``j`` drawn from its predictive *times* a weight of
    its destination state: ``e[k]`` for state ``k``, ``e_new`` for a fresh state (the fully
    adapted proposal of the prediction's particle filters, ``_pdfa_kernel.predict_weights``:
    ``e`` is the predictive of the next test symbol at each state). Returns ``(seat, log Z)``
    with ``Z = sum_seat p(seat) e[dish(seat)]``, the predictive of :func:`sample_seat` (the
    rules of :func:`add`, i.e. Eq. crf:low/crf:high, or Eq. delta:pred for model 0) averaged
    against ``e``. The seat is not yet seated (call :func:`add`); a fresh state is taken off
    the free stack (as :func:`sample_dish` does) and its new table handed out. Seat -1 (and
    nothing changed) when no state is free (model 1; checked before drawing, so the capacity
    test does not depend on the draw)."""
    alpha = hyp[H_ALPHA]
    n = nj[j]
    n_cap = v.shape[0]
    if model == 0:
        tot = 0.0
        for k in range(n_cap):
            tot += (alpha * mu[k] + v[k, j]) * e[k]
        u = rng.random() * tot
        acc = 0.0
        for k in range(n_cap):
            acc += (alpha * mu[k] + v[k, j]) * e[k]
            if u < acc:
                return k, math.log(tot) - math.log(alpha + n)
        return n_cap - 1, math.log(tot) - math.log(alpha + n)
    if meta[M_FREE_ST] == 0:
        return -1, 0.0
    d = _disc(hyp, H_D, variant)
    d0 = _disc(hyp, H_D0, variant)
    a0 = hyp[H_ALPHA0]
    big_m = meta[M_TABLES]
    top = min(n_cap, meta[M_HI])
    # the weights, all over (alpha + n): existing tables (n_t - d) e[dish]; a new table
    # (alpha + d T_j) [or 1 if n = 0], shared as (m_k - d0) e[k] / (alpha0 + M) over the
    # dishes and (alpha0 + d0 K) e_new / (alpha0 + M) [or e_new if M = 0] for a fresh state
    w_tab = 0.0
    for p in range(col_T[j]):
        t = col_tabs[j, p]
        w_tab += (tabs[T_N, t] - d) * e[tabs[T_DISH, t]]
    f_new = (alpha + d * col_T[j]) if n > 0 else 1.0
    w_dish = 0.0
    if big_m > 0:
        for k in range(1, top):
            if sts[S_M, k] > 0:
                w_dish += (sts[S_M, k] - d0) * e[k]
        w_fresh = (a0 + d0 * meta[M_DISHES]) * e_new
        top_norm = a0 + big_m
    else:
        w_fresh = e_new
        top_norm = 1.0
    tot = w_tab + f_new * (w_dish + w_fresh) / top_norm
    low_norm = (alpha + n) if n > 0 else 1.0
    log_z = math.log(tot) - math.log(low_norm)
    u = rng.random() * tot
    acc = 0.0
    if u < w_tab:
        for p in range(col_T[j]):
            t = col_tabs[j, p]
            acc += (tabs[T_N, t] - d) * e[tabs[T_DISH, t]]
            if u < acc:
                return t, log_z
    acc = w_tab
    if u < w_tab + f_new * w_dish / top_norm:
        for k in range(1, top):
            if sts[S_M, k] > 0:
                acc += f_new * (sts[S_M, k] - d0) * e[k] / top_norm
                if u < acc:
                    return _new_table(k, tabs, meta), log_z
    # a fresh state (also where the running sums fell short of u by rounding)
    meta[M_FREE_ST] -= 1
    k = sts[S_FREE, meta[M_FREE_ST]]
    sts[S_FLAG, k] = IN_USE
    if k + 1 > meta[M_HI]:
        meta[M_HI] = k + 1
    return _new_table(k, tabs, meta), log_z
