"""Numba kernels shared by the finite PDFA sampler and the PDIA (Pfau, Bartlett & Wood 2010,
Sect. "Posterior Inference in the Finite Model" and "The Probabilistic Deterministic Infinite
Automaton"): running a transition table over the data, the emission counts and their
collapsed Dirichlet-multinomial likelihood (Eq. x:end), the Metropolis-Hastings moves on
``delta_ij`` and on table dishes, a Gibbs step on ``mu`` and MH on the hyperparameters, and
the predictive.

Data: ``sym`` int32 ``[T]``, symbols ``0..S-1``. Symbols ``j < nf`` have a fixed transition to
``q0 = 0`` (``nf = 1``: sentences, symbol 0 ends a string and the next one starts in ``q0``;
``nf = 0``: one long sequence). The state before token 0 is ``q0``.

Chain state (``Kc`` state capacity; seating arrays in :mod:`bayesfa.samplers.pdia._crf_kernel`):

- ``delta`` int32 ``[Kc, S]``: the target state of each *instantiated* entry, -1 for entries
  the data do not visit (marginalised out, the paper's "zero-count transitions deleted").
  Invariant after every move: ``delta[q, j] >= 0`` iff ``(q, j)``, ``j >= nf``, is visited.
- ``seat`` int32 ``[Kc, S]``: the seat of each instantiated entry (state or table).
- ``cnt`` int32 ``[Kc, S]``, ``ctot`` int32 ``[Kc]``: emission counts ``c_ij`` and their row
  sums along the path; ``cnt2``/``ctot2`` the same for a proposal (scratch).
- ``vis`` int64 ``[Kc, S]``: the stamp of the last :func:`eval_path` that visited the entry
  (the full walk of the start and of the validation's data generator; the sweep does not
  use it).
- ``lmu`` float64 ``[Kc]`` (finite model): ``log mu``, the authoritative copy (``mu``, in
  the seating arrays, is ``exp(lmu)`` and may underflow to 0 where ``v[k, :] == 0``).
- ``lg`` float64 ``[2, T + 2]``: ``lgamma(beta/S + n) - lgamma(beta/S)`` and
  ``lgamma(beta) - lgamma(beta + n)``, the Dirichlet-multinomial of Eq. x:end by table lookup.
  A *3-D* ``lg`` ``[1, S + 1, T + 3]`` selects, at compile time (numba specialises every
  function on it; the 2-D machine code is unchanged), emissions ``pi_q ~ Dir(beta pi0)`` with a
  non-uniform base ``pi0`` (``--method pdia-smoothed``,
  :mod:`bayesfa.samplers.pdia._smoothed_emission_kernel`): row ``s < S`` holds ``lgamma(a_s + n) -
  lgamma(a_s)``, ``a_s = beta pi0_s``, row ``S`` holds ``lgamma(beta) - lgamma(beta + n)``,
  and the last column the pseudo-counts ``a_s`` (row ``S``: ``beta``). Only
  :func:`row_loglik`, :func:`predict_strings` and :func:`predict_weights` read it, through
  :func:`_lg_symbol`, :func:`_lg_total` and :func:`_log_emission_pred`.

Workspace (:func:`new_workspace`, a tuple ``ws`` allocated once per chain; ``T`` tokens,
``TC = Kc * S``): the *path index*, rebuilt from ``sym`` and ``delta`` at the start of every
sweep (:func:`build_index`, one walk) and kept up to date by every accepted move, and the
scratch of a proposal, never cleared but invalidated by a stamp:

- ``ws[0]`` int32 ``[7, T]``: ``QPATH`` the state before each token on the current path;
  ``NXT``/``PRV`` doubly linked lists of the positions ``t`` (``sym[t] >= nf``) that use each
  entry ``(QPATH[t], sym[t])``; scratch ``UPOS`` (the positions that use the moved entries,
  sorted), ``DPOS``/``DQ`` (the positions whose state the proposal changes, and the new
  state), ``ELIST`` (the entries whose use count fell, as ``q * S + s``, once per position).
- ``ws[1]`` int32 ``[2, Kc, S]``: ``HEAD`` of each entry's list (-1: none); ``NVIS`` its
  length, the number of times the current path uses the entry. Invariant between moves:
  ``delta[q, s] >= 0`` iff ``NVIS[q, s] > 0`` (``s >= nf``), and ``cnt2 == cnt``.
- ``ws[2]`` int32 ``[4, Kc]``: the rows a proposal touched, and the dishes, dish flags and
  counts of :func:`_ambiguous`; ``ws[3]`` int64 ``[2, Kc]``: their stamps. ``ws[4]`` int32
  ``[3, TC]``: the per-table counts and touched-table list of :func:`_ambiguous`; ``ws[5]``
  int64 ``[TC]``: their stamps. ``ws[6]`` int64 ``[4]``: the stamp and the lengths of the
  touched lists. ``ws[7]`` float64 ``[2, Kc]``: each row's term of Eq. x:end (``row_loglik``
  of ``cnt``, kept up to date) and its proposed value.

A proposal changes the path only from the first position where it uses a changed entry
(the moved ``delta_ij``, or every entry of the moved table) until the proposed path rejoins
the current one (the same state at the same position; for sentences at the latest at the
string's end), and again from the next such use: :func:`walk_changes` re-walks only those
stretches, in data order (so the just-in-time draws come in the order a full walk makes
them), moving counts between rows; :func:`delta_loglik` sums over the touched rows in
increasing order, :func:`_collect_unvisited` lists ``O`` in row-major order, so a chain is
the same, bit for bit, as with a full re-walk per proposal (:func:`eval_path`).

The MH move on an entry ``(i, j)`` (or on a table's dish) is exact: with ``C`` the entries
both paths visit, ``O`` those only the current path visits, ``N`` those the proposed path
instantiates just in time, ``E`` the log EPPF (the prior of a configuration), the forward
proposal is ``E(C+O+ij*+N) - E(C+O)`` (the CRF predictive, then the CRF for the new entries)
and the reverse one ``E(C+N+ij+O) - E(C+N)``, so the acceptance ratio is

    log A = dL + [E(C+N+ij+O) - E(C+N)] - [E(C+ij+O) - E(C+O)] - [E(C+ij*+N+O) - E(C+ij*+N)]

(``dL`` the change of Eq. x:end). With ``O = N = {}`` it is the paper's Eq. delta:mh; the
paper's scheme drops the bracketed corrections, which is exact only then. This per-event
ratio needs each event to have a unique reverse; in the PDIA it does not when a table (a
state) keeps only new customers (tables) after its old ones are deleted, so those proposals
are rejected (:func:`_ambiguous`; tests/test_pdia.py checks detailed balance by brute force).

Scan. The finite model's state labels are fixed, so a sweep scans the instantiated entries
in label order. The PDIA's labels come and go (a new state takes a free label), so a scan in
label order would make the order depend on the history, which is not invariant: a PDIA sweep
is a fixed number of moves on an entry (a table) picked uniformly, with ``|V| / |V'|``
(``M / M'``) in the acceptance ratio because the number of entries (tables) changes.

``variant`` (validation mutants): 1 omits the proposal ratio (accepts by likelihood ratio
times prior ratio), 2 drops the discounts (see ``_crf_kernel``), 3 drops the Gamma(1, 1)
prior term from the MH ratio of ``alpha``, 4 drops the Jacobian from the logit-scale walk of
``d`` (an asymmetric proposal in ``d`` left uncorrected); 3 and 4 act in
:func:`move_hyper` only. 5 skips the ambiguity rule (:func:`_ambiguous`: the historical
detailed-balance bug), 6 leaves ``|V| / |V'|`` (``M / M'``) out of the random-scan ratio, 9
leaves out the term of unseating ``O``; 7, 8 and 10 change a proposal but not its probability
(``_crf_kernel``); 12 and 13 change the ``mu`` step (:func:`move_mu`); 14 scores the top-level
seating with ``d`` where ``d0`` belongs (``_crf_kernel``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.extending import overload

from bayesfa.samplers.pdia._crf_kernel import (H_ALPHA, H_ALPHA0, H_BETA, H_D, H_D0, H_GAMMA, M_HI, M_TABLES,
                                          M_STAMP, S_M, T_COL, T_DISH, T_N, add, end_move,
                                          log_prior_crf, log_prior_finite, rem, sample_dish,
                                          sample_seat, sample_seat_adapted, seat_dish,
                                          _new_table as _new_table_id, _top_add, _top_rem)

# stats layout: accepted / proposed per move kind
ST_ENTRY, ST_TABLE, ST_MU = 0, 2, 4
ST_HYP = 6  # 5 hyperparameters x (accepted, proposed)
ST_CAPACITY = 16
ST_WALKED = 17  # positions whose state a proposal changed (walk_changes)
ST_JIT = 18  # entries drawn just in time by the proposals
ST_MOVED = 19  # positions whose state differs at the end of a sweep's moves from its start
N_STATS = 20

# the workspace (module docstring): rows of its int32 [7, T] array
W_QPATH, W_NXT, W_PRV, W_UPOS, W_DPOS, W_DQ, W_ELIST = range(7)
# rows of its int32 [2, Kc, S] array
E_HEAD, E_NVIS = 0, 1
# rows of its int32 [4, Kc] and int64 [2, Kc] arrays
K_RLIST, K_KLIST, K_FLAG, K_TOUCH = range(4)
R_MARK, K_MARK = 0, 1
# rows of its int32 [3, Kc * S] array
TB_O, TB_NEW, TB_LIST = range(3)
# its int64 [4] counters
C_STAMP, C_ROWS, C_ENTS, C_DIV = range(4)
# dish flags of _ambiguous
DISH_X, DISH_Y, DISH_PERSIST = 1, 2, 4


@njit(cache=True)
def fill_lg(lg, beta, n_symbols):
    """``lg`` for ``beta`` (module docstring)."""
    b = beta / n_symbols
    lb = math.lgamma(b)
    lbeta = math.lgamma(beta)
    for n in range(lg.shape[1]):
        lg[0, n] = math.lgamma(b + n) - lb
        lg[1, n] = lbeta - math.lgamma(beta + n)


def _lg_symbol(lg, s, n):
    """``log`` Dirichlet-multinomial factor of ``n`` emissions of symbol ``s`` (numba only)."""
    raise NotImplementedError


def _lg_total(lg, n):
    """``lgamma(beta) - lgamma(beta + n)`` for a row of ``n`` emissions (numba only)."""
    raise NotImplementedError


def _log_emission_pred(lg, hyp, n_sym, s, c, ctot):
    """``log`` predictive of symbol ``s`` of ``n_sym`` after ``c`` of the row's ``ctot``
    emissions (numba only)."""
    raise NotImplementedError


@overload(_lg_symbol)
def _ov_lg_symbol(lg, s, n):
    if lg.ndim == 2:
        return lambda lg, s, n: lg[0, n]
    return lambda lg, s, n: lg[0, s, n]


@overload(_lg_total)
def _ov_lg_total(lg, n):
    if lg.ndim == 2:
        return lambda lg, n: lg[1, n]
    return lambda lg, n: lg[0, lg.shape[1] - 1, n]


@overload(_log_emission_pred)
def _ov_log_emission_pred(lg, hyp, n_sym, s, c, ctot):
    if lg.ndim == 2:  # pi_q ~ Dir(beta / S): the pseudo-counts are in hyp
        def pred(lg, hyp, n_sym, s, c, ctot):
            beta = hyp[H_BETA]
            return math.log((c + beta / n_sym) / (ctot + beta))
        return pred

    def pred_base(lg, hyp, n_sym, s, c, ctot):  # pi_q ~ Dir(beta pi0): read off lg
        last = lg.shape[2] - 1
        return math.log((c + lg[0, s, last]) / (ctot + lg[0, n_sym, last]))
    return pred_base


@njit(cache=True)
def row_loglik(cnt, ctot, q, lg):
    """Eq. x:end for state ``q``."""
    if ctot[q] == 0:
        return 0.0
    out = _lg_total(lg, ctot[q])
    for s in range(cnt.shape[1]):
        out += _lg_symbol(lg, s, cnt[q, s])
    return out


@njit(cache=True)
def loglik(cnt, ctot, hi, lg):
    out = 0.0
    for q in range(hi):
        out += row_loglik(cnt, ctot, q, lg)
    return out


@njit(cache=True)
def loglik_beta(cnt, ctot, hi, beta):
    """Eq. x:end with lgamma calls (for the beta move)."""
    n_sym = cnt.shape[1]
    b = beta / n_sym
    out = 0.0
    for q in range(hi):
        if ctot[q] == 0:
            continue
        out += math.lgamma(beta) - math.lgamma(beta + ctot[q])
        for s in range(n_sym):
            if cnt[q, s] > 0:
                out += math.lgamma(b + cnt[q, s]) - math.lgamma(b)
    return out


@njit(cache=True)
def _instantiate(model, variant, q, s, n_new, delta, seat, newq, news, nj, v, mu, tabs, col_tabs,
                 col_T, sts, meta, hyp, rng):
    """Draw the unvisited entry ``(q, s)`` from the CRF / Polya predictive (just in time), seat
    it and list it as new entry ``n_new`` in ``newq``/``news``. Returns ``(log probability of
    the seating, ok)``; not ``ok`` (nothing changed) when the state capacity ran out."""
    st = sample_seat(model, rng, s, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant)
    if st < 0:
        return 0.0, False
    lp = add(model, s, st, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant)
    delta[q, s] = seat_dish(model, st, tabs)
    seat[q, s] = st
    newq[n_new] = q
    news[n_new] = s
    return lp, True


@njit(cache=True)
def eval_path(model, variant, sym, nf, delta, seat, cnt2, ctot2, vis, newq, news,
              nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, rng, one_state=False):
    """Run ``delta`` over ``sym`` from ``q0``, counting emissions into ``cnt2``/``ctot2`` and
    stamping visited entries; unvisited entries met on the way are drawn from the CRF (just
    in time) and seated, and listed in ``newq``/``news``. Returns ``(n_new, log prob of the
    new seatings, end state, ok)``; ``ok`` is False when the state capacity ran out (the
    caller undoes the ``n_new`` entries). ``one_state`` (the PDIA's start, model 1): every
    unvisited entry goes instead to one new state ``q1``, one table per column all serving
    it -- a configuration of positive probability whose size does not grow with the data.
    The sweep does not call this: it re-walks only what a proposal changes
    (:func:`walk_changes`)."""
    hi = meta[M_HI]
    for q in range(hi):
        ctot2[q] = 0
        for s in range(cnt2.shape[1]):
            cnt2[q, s] = 0
    meta[M_STAMP] += 1
    stamp = meta[M_STAMP]
    n_new = 0
    lpf = 0.0
    k1 = -1
    q = 0
    for t in range(sym.shape[0]):
        s = sym[t]
        cnt2[q, s] += 1
        ctot2[q] += 1
        if s < nf:
            q = 0
            continue
        vis[q, s] = stamp
        nq = delta[q, s]
        if nq < 0 and one_state:
            if col_T[s] > 0:
                st = col_tabs[s, 0]
            else:
                if k1 < 0:
                    k1 = sample_dish(rng, sts, meta, hyp, variant, sts.shape[1])  # M = 0: new
                st = _new_table_id(k1, tabs, meta)
            lpf += add(1, s, st, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant)
            delta[q, s] = k1
            seat[q, s] = st
            nq = k1
        elif nq < 0:
            lp, ok = _instantiate(model, variant, np.int64(q), s, np.int64(n_new), delta, seat,
                                  newq, news, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp,
                                  rng)
            if not ok:
                return n_new, lpf, q, False
            lpf += lp
            n_new += 1
            nq = delta[q, s]
        q = nq
    return n_new, lpf, q, True


# -- the path index: a proposal re-walks only what it changes ------------------------------------

@njit(cache=True)
def new_workspace(n_tokens, n_cap, n_sym):
    """The path index and the scratch of a chain (module docstring), allocated once."""
    tc = n_cap * n_sym
    we = np.zeros((2, n_cap, n_sym), dtype=np.int32)
    we[E_HEAD] = -1
    return (np.zeros((7, max(n_tokens, 1)), dtype=np.int32), we,
            np.zeros((4, n_cap), dtype=np.int32),
            np.zeros((2, n_cap), dtype=np.int64), np.zeros((3, tc), dtype=np.int32),
            np.zeros(tc, dtype=np.int64), np.zeros(4, dtype=np.int64), np.zeros((2, n_cap)))


@njit(cache=True, inline="always")
def _link(t, q, s, wt, we):
    """Put position ``t`` on the list of entry ``(q, s)``."""
    h = we[E_HEAD, q, s]
    wt[W_NXT, t] = h
    wt[W_PRV, t] = -1
    if h >= 0:
        wt[W_PRV, h] = t
    we[E_HEAD, q, s] = t


@njit(cache=True, inline="always")
def _unlink(t, q, s, wt, we):
    """Take position ``t`` off the list of entry ``(q, s)``."""
    p = wt[W_PRV, t]
    n = wt[W_NXT, t]
    if p >= 0:
        wt[W_NXT, p] = n
    else:
        we[E_HEAD, q, s] = n
    if n >= 0:
        wt[W_PRV, n] = p


@njit(cache=True)
def build_index(sym, nf, delta, hi, cnt, ctot, cnt2, ctot2, lg, ws):
    """Walk the current path once: ``qpath``, the position lists and ``nvis``; ``cnt2 = cnt``
    (rows ``< hi``; the rows above are empty in both) and each row's term of Eq. x:end."""
    wt, we, rll = ws[0], ws[1], ws[7]
    for q in range(hi):
        rll[0, q] = row_loglik(cnt, ctot, q, lg)
        ctot2[q] = ctot[q]
        for s in range(delta.shape[1]):
            we[E_HEAD, q, s] = -1
            we[E_NVIS, q, s] = 0
            cnt2[q, s] = cnt[q, s]
    q = 0
    for t in range(sym.shape[0]):
        s = sym[t]
        wt[W_QPATH, t] = q
        if s < nf:
            q = 0
            continue
        _link(t, q, s, wt, we)
        we[E_NVIS, q, s] += 1
        q = delta[q, s]


@njit(cache=True)
def _gather_uses(q, s, nu, ws):
    """Append the positions of the current path that use entry ``(q, s)`` to ``upos``."""
    wt, we = ws[0], ws[1]
    t = we[E_HEAD, q, s]
    while t >= 0:
        wt[W_UPOS, nu] = t
        nu += 1
        t = wt[W_NXT, t]
    return nu


@njit(cache=True, inline="always")
def _touch_row(q, stamp, n_rows, wk, wkm):
    if wkm[R_MARK, q] != stamp:
        wkm[R_MARK, q] = stamp
        wk[K_RLIST, n_rows] = q
        n_rows += 1
    return n_rows


@njit(cache=True)
def walk_changes(model, variant, sym, nf, delta, seat, cnt2, ctot2, nu, newq, news, nj, v, mu,
                 tabs, col_tabs, col_T, sts, meta, hyp, rng, ws, stats):
    """The proposed path, re-walked only where it can differ from the current one: from each
    of the ``nu`` positions ``upos`` where the current path uses a changed entry (sorted here),
    until the proposed path rejoins the current one (for sentences at the latest at the end
    of the string). Unvisited entries met on the way are drawn just in time, in the order of
    the whole path (as :func:`eval_path` draws them); the positions whose state changes are
    listed (``dpos``, ``dq``) and moved in ``cnt2``/``ctot2`` and ``nvis`` (rows and entries
    touched listed for :func:`delta_loglik`, :func:`_collect_unvisited`). Returns ``(n_new,
    log prob of the new seatings, ok)``; not ``ok``: the state capacity ran out. Settle with
    :func:`finish_walk` in every case. Counts the changed positions and the new entries in
    ``stats``."""
    wt, we, wk, wkm, wc = ws[0], ws[1], ws[2], ws[3], ws[6]
    wt[W_UPOS, :nu].sort()
    wc[C_STAMP] += 1
    stamp = wc[C_STAMP]
    n_sym = delta.shape[1]
    big_t = sym.shape[0]
    n_rows = n_ent = n_d = n_new = 0
    lpf = 0.0
    ok = True
    p = 0
    while p < nu and ok:
        t = wt[W_UPOS, p]
        q = wt[W_QPATH, t]  # the proposed path is the current one up to t
        while True:
            s = sym[t]
            qo = wt[W_QPATH, t]
            if q != qo:
                wt[W_DPOS, n_d] = t
                wt[W_DQ, n_d] = q
                n_d += 1
                cnt2[qo, s] -= 1
                ctot2[qo] -= 1
                cnt2[q, s] += 1
                ctot2[q] += 1
                n_rows = _touch_row(qo, stamp, n_rows, wk, wkm)
                n_rows = _touch_row(q, stamp, n_rows, wk, wkm)
                if s >= nf:
                    we[E_NVIS, qo, s] -= 1
                    we[E_NVIS, q, s] += 1
                    wt[W_ELIST, n_ent] = qo * n_sym + s
                    n_ent += 1
            if s < nf:
                nq = 0
            else:
                nq = delta[q, s]
                if nq < 0:  # q != qo here: the current path uses instantiated entries only
                    lp, ok = _instantiate(model, variant, np.int64(q), s, np.int64(n_new), delta,
                                          seat, newq, news, nj, v, mu, tabs, col_tabs, col_T,
                                          sts, meta, hyp, rng)
                    if not ok:
                        break
                    lpf += lp
                    n_new += 1
                    nq = delta[q, s]
            t += 1
            if t == big_t or nq == wt[W_QPATH, t]:
                break  # rejoined (or the end): identical up to the next changed entry used
            q = nq
        while p < nu and wt[W_UPOS, p] < t:
            p += 1
    wc[C_ROWS] = n_rows
    wc[C_ENTS] = n_ent
    wc[C_DIV] = n_d
    stats[ST_WALKED] += n_d
    stats[ST_JIT] += n_new
    return n_new, lpf, ok


@njit(cache=True)
def finish_walk(accept, sym, nf, cnt, ctot, cnt2, ctot2, ws):
    """After :func:`walk_changes`: accepted, the counts (and the rows' terms of Eq. x:end
    that :func:`delta_loglik` computed), ``qpath`` and the position lists take the proposed
    path; rejected, ``cnt2`` and ``nvis`` go back (``cnt2 = cnt`` again). Moves a count per
    changed position (not a row copy)."""
    wt, we, wc = ws[0], ws[1], ws[6]
    if accept:
        wk, rll = ws[2], ws[7]
        for r in range(wc[C_ROWS]):
            rll[0, wk[K_RLIST, r]] = rll[1, wk[K_RLIST, r]]
    for d in range(wc[C_DIV]):
        t = wt[W_DPOS, d]
        qn = wt[W_DQ, d]
        s = sym[t]
        qo = wt[W_QPATH, t]
        if accept:
            cnt[qo, s] -= 1
            ctot[qo] -= 1
            cnt[qn, s] += 1
            ctot[qn] += 1
        else:
            cnt2[qo, s] += 1
            ctot2[qo] += 1
            cnt2[qn, s] -= 1
            ctot2[qn] -= 1
        if accept:
            wt[W_QPATH, t] = qn
            if s >= nf:
                _unlink(t, qo, s, wt, we)
                _link(t, qn, s, wt, we)
        elif s >= nf:
            we[E_NVIS, qo, s] += 1
            we[E_NVIS, qn, s] -= 1


@njit(cache=True)
def delta_loglik(cnt, ctot, cnt2, ctot2, lg, changed, ws):
    """``L(cnt2) - L(cnt)`` over the rows that differ (among those :func:`walk_changes`
    touched), summed in increasing row order; flags them in ``changed``. A row's current
    term is read from the cache ``rll[0]`` (the same number :func:`row_loglik` returns),
    its proposed term kept in ``rll[1]`` for :func:`finish_walk`."""
    wk, wc, rll = ws[2], ws[6], ws[7]
    rows = wk[K_RLIST, :wc[C_ROWS]]
    rows.sort()
    out = 0.0
    for r in range(rows.shape[0]):
        q = rows[r]
        diff = ctot[q] != ctot2[q]
        if not diff:
            for s in range(cnt.shape[1]):
                if cnt[q, s] != cnt2[q, s]:
                    diff = True
                    break
        changed[q] = diff
        rll[1, q] = rll[0, q]
        if diff:
            rll[1, q] = row_loglik(cnt2, ctot2, q, lg)
            out += rll[1, q] - rll[0, q]
    return out


@njit(cache=True)
def _collect_old(delta, seat, vis, stamp, hi, nf, oq, os_, oseat):
    """Entries instantiated but not visited by the last :func:`eval_path` (``O``)."""
    n = 0
    for q in range(hi):
        for s in range(nf, delta.shape[1]):
            if delta[q, s] >= 0 and vis[q, s] != stamp:
                n = _list_old(q, s, n, seat, oq, os_, oseat)
    return n


@njit(cache=True, inline="always")
def _list_old(q, s, n, seat, oq, os_, oseat):
    oq[n] = q
    os_[n] = s
    oseat[n] = seat[q, s]
    return n + 1


@njit(cache=True)
def _collect_unvisited(delta, seat, oq, os_, oseat, ws):
    """``O`` after :func:`walk_changes`: the instantiated entries the proposed path no longer
    uses (``nvis = 0``; only entries it left can be), in row-major order as
    :func:`_collect_old` lists them."""
    wt, we, wc = ws[0], ws[1], ws[6]
    n_sym = delta.shape[1]
    codes = wt[W_ELIST, :wc[C_ENTS]]
    codes.sort()
    n = 0
    for e in range(codes.shape[0]):
        if e > 0 and codes[e] == codes[e - 1]:
            continue  # an entry listed once per position it lost
        q = codes[e] // n_sym
        s = codes[e] - q * n_sym
        if we[E_NVIS, q, s] == 0 and delta[q, s] >= 0:
            n = _list_old(q, s, n, seat, oq, os_, oseat)
    return n


@njit(cache=True)
def _undo_new(model, variant, n_new, newq, news, delta, seat, nj, v, mu, tabs, col_tabs, col_T,
              sts, meta, hyp):
    for n in range(n_new - 1, -1, -1):
        q, s = newq[n], news[n]
        rem(model, s, seat[q, s], nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant)
        delta[q, s] = -1
        seat[q, s] = -1


@njit(cache=True, inline="always")
def _touch_table(t, stamp, n_t, wtab, tmark):
    if tmark[t] != stamp:
        tmark[t] = stamp
        wtab[TB_O, t] = 0
        wtab[TB_NEW, t] = 0
        wtab[TB_LIST, n_t] = t
        n_t += 1
    return n_t


@njit(cache=True, inline="always")
def _flag_dish(k, bits, stamp, n_k, wk, wkm):
    if wkm[K_MARK, k] != stamp:
        wkm[K_MARK, k] = stamp
        wk[K_FLAG, k] = 0
        wk[K_TOUCH, k] = 0
        wk[K_KLIST, n_k] = k
        n_k += 1
    wk[K_FLAG, k] |= bits
    return n_k


@njit(cache=True)
def _ambiguous(i, j, t0, k_old, seat, n_new, newq, news, n_o, oseat, tabs, sts, ws):
    """PDIA (model 1): True when a proposal must be rejected because its reverse is not unique.

    Tables and states have no identity beyond their customers. If the move leaves a table
    that existed before with only new customers (its old ones deleted as ``O``), or leaves a
    state that existed before served only by tables that did not serve it before with an old
    customer, the result is also reached by *other* events (opening a new table, choosing a
    new dish) whose reverse is the same event, so the per-event ratio of the module
    docstring double-counts the reverse (found by brute-force detailed balance on
    "aa", "a"). Such proposals are rejected; the condition reads only what ``x`` and ``y``
    share (the common customers ``C``), so it holds for an event iff it holds for its
    reverse. ``(i, j)`` the moved entry (``i < 0`` for a table move), ``t0`` the moved table
    (-1 for an entry move), ``k_old`` its former dish (table move) or the entry's former
    target (entry move).

    Per table ``t``: ``o`` customers in ``O``, ``n`` new ones (just in time, and the moved
    entry), ``c = N_t - o - n`` common ones. Only the tables with an ``O`` or new customer
    and ``t0`` (the *touched* ones) can break the rule; an untouched table (every customer
    common, dish unchanged) keeps its dish alive in ``x`` and ``y`` alike, so a dish is
    checked only if it is served by touched tables alone (``M_k`` = the touched tables
    serving it). Cost: the touched tables, not the table capacity."""
    wk, wkm, wtab, tmark = ws[2], ws[3], ws[4], ws[5]
    stamp = ws[6][C_STAMP]
    n_t = 0
    for o in range(n_o):
        t = oseat[o]
        n_t = _touch_table(t, stamp, n_t, wtab, tmark)
        wtab[TB_O, t] += 1
    for n in range(n_new):
        t = seat[newq[n], news[n]]
        n_t = _touch_table(t, stamp, n_t, wtab, tmark)
        wtab[TB_NEW, t] += 1
    if t0 < 0:
        t = seat[i, j]
        n_t = _touch_table(t, stamp, n_t, wtab, tmark)
        wtab[TB_NEW, t] += 1
    else:
        n_t = _touch_table(t0, stamp, n_t, wtab, tmark)
    n_k = 0
    if t0 < 0:
        n_k = _flag_dish(k_old, DISH_X, stamp, n_k, wk, wkm)
    for p in range(n_t):
        t = wtab[TB_LIST, p]
        n_o_t = wtab[TB_O, t]
        n_new_t = wtab[TB_NEW, t]
        c = tabs[T_N, t] - n_o_t - n_new_t
        if c == 0 and n_o_t > 0 and n_new_t > 0:
            return True
        dish = tabs[T_DISH, t]
        x_dish = k_old if t == t0 else dish
        n_k = _flag_dish(dish, DISH_Y if c > 0 or n_new_t > 0 else 0, stamp, n_k, wk, wkm)
        wk[K_TOUCH, dish] += 1
        if c > 0 and x_dish == dish:
            wk[K_FLAG, dish] |= DISH_PERSIST
        if c > 0 or n_o_t > 0:
            n_k = _flag_dish(x_dish, DISH_X, stamp, n_k, wk, wkm)
    for p in range(n_k):
        k = wk[K_KLIST, p]
        if wk[K_FLAG, k] == (DISH_X | DISH_Y) and sts[S_M, k] == wk[K_TOUCH, k]:
            return True
    return False


@njit(cache=True)
def _reseat_old(sign, acc, model, variant, n_o, os_, oseat, nj, v, mu, tabs, col_tabs, col_T, sts,
                meta, hyp):
    """``sign = -1``: unseat the ``O`` entries (those the proposed path no longer visits) in
    order; ``sign = 1``: seat them back in reverse order. Adds the log probabilities of the
    ``rem`` / ``add`` events to ``acc`` (in that order) and returns it: ``E(C+ij*+N+O) -
    E(C+ij*+N)`` and ``E(C+N+ij+O) - E(C+N+ij)`` of the module docstring's ratio."""
    if sign < 0:
        for o in range(n_o):
            acc += rem(model, os_[o], oseat[o], nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp,
                       variant)
    else:
        for o in range(n_o - 1, -1, -1):
            acc += add(model, os_[o], oseat[o], nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp,
                       variant)
    return acc


@njit(cache=True)
def _mh_accept(dl, r1, f, s_sum, b, size_before, size_after, random_scan, model, variant, n_o, oq,
               os_, oseat, delta, seat, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, rng,
               sym, nf, cnt, ctot, cnt2, ctot2, ws):
    """The MH test of the entry and table moves, called with the old value seated again:
    seats the ``O`` entries back (adding their log probabilities to ``b``), then ``log A =
    dL + b - r1 - s_sum`` (module docstring; ``r1`` the log probability of the old value's
    seating, ``f`` that of the proposal's, ``b`` of the reverse's, ``s_sum`` of unseating
    ``O``), times ``size_before / size_after`` under a random scan (``variant`` 1: the mutant
    without the proposal ratio, ``dL - r1 + f - s_sum``). On acceptance the ``O`` entries are
    deleted (unseated, ``delta = seat = -1``) and True is returned; the caller then seats the
    proposed value. Settles the walk (:func:`finish_walk`) either way."""
    b = _reseat_old(np.int64(1), b, model, variant, n_o, os_, oseat, nj, v, mu, tabs, col_tabs,
                    col_T, sts, meta, hyp)
    if variant == 1:
        log_a = dl - r1 + f - s_sum
    elif variant == 9:  # mutant: the term of unseating O left out
        log_a = dl + b - r1
    else:
        log_a = dl + b - r1 - s_sum
    if random_scan and variant != 6:  # 6: mutant without |V| / |V'| (M / M')
        log_a += math.log(size_before) - math.log(size_after)
    accept = math.log(rng.random()) < log_a
    if accept:
        for o in range(n_o):
            rem(model, os_[o], oseat[o], nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp,
                variant)
            delta[oq[o], os_[o]] = -1
            seat[oq[o], os_[o]] = -1
    finish_walk(accept, sym, nf, cnt, ctot, cnt2, ctot2, ws)
    return accept


@njit(cache=True)
def _reject_entry(i, j, s_new, s_old, k_old, model, variant, n_new, newq, news, delta, seat, nj, v,
                  mu, tabs, col_tabs, col_T, sts, meta, hyp, sym, nf, cnt, ctot, cnt2, ctot2, ws):
    """Undo a proposed ``delta_ij`` (seat ``s_new``), its walk and its just-in-time entries;
    end the move."""
    finish_walk(np.bool_(False), sym, nf, cnt, ctot, cnt2, ctot2, ws)
    _undo_new(model, variant, np.int64(n_new), newq, news, delta, seat, nj, v, mu, tabs, col_tabs,
              col_T, sts, meta, hyp)
    rem(model, j, s_new, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant)
    add(model, j, s_old, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant)
    delta[i, j] = k_old
    seat[i, j] = s_old
    end_move(tabs, sts, meta)


@njit(cache=True)
def move_entry(i, j, model, variant, sym, nf, delta, seat, cnt, ctot, cnt2, ctot2, changed,
               newq, news, oq, os_, oseat, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, lg,
               random_scan, rng, stats, ws):
    """MH on ``delta_ij``: propose from the CRF / Polya predictive, re-walk the path where
    it changes with just-in-time entries, accept by the exact ratio of the module docstring
    (times ``|V| / |V'|`` when the entry was picked uniformly among the ``|V|`` instantiated
    ones)."""
    size_before = _n_customers(nj, nf)
    s_old = seat[i, j]
    k_old = delta[i, j]
    r1 = rem(model, j, s_old, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant)
    s_new = sample_seat(model, rng, j, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant)
    stats[ST_ENTRY + 1] += 1
    if s_new < 0:
        add(model, j, s_old, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant)
        end_move(tabs, sts, meta)
        stats[ST_CAPACITY] += 1
        return
    f = add(model, j, s_new, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant)
    delta[i, j] = seat_dish(model, s_new, tabs)
    seat[i, j] = s_new
    nu = _gather_uses(i, j, np.int64(0), ws)
    n_new, lpf, ok = walk_changes(model, variant, sym, nf, delta, seat, cnt2, ctot2, nu, newq,
                                  news, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, rng, ws,
                                  stats)
    f += lpf
    if not ok:
        _reject_entry(i, j, s_new, s_old, k_old, model, variant, n_new, newq, news, delta, seat,
                      nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, sym, nf, cnt, ctot, cnt2,
                      ctot2, ws)
        stats[ST_CAPACITY] += 1
        return
    n_o = _collect_unvisited(delta, seat, oq, os_, oseat, ws)
    # without deleted entries every event has a unique reverse (see _ambiguous)
    if model == 1 and n_o > 0 and variant != 5 and _ambiguous(i, j, np.int64(-1), np.int64(k_old),
                                                              seat, n_new, newq, news, n_o, oseat,
                                                              tabs, sts, ws):
        _reject_entry(i, j, s_new, s_old, k_old, model, variant, n_new, newq, news, delta, seat,
                      nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, sym, nf, cnt, ctot, cnt2,
                      ctot2, ws)
        return
    dl = delta_loglik(cnt, ctot, cnt2, ctot2, lg, changed, ws)
    s_sum = _reseat_old(np.int64(-1), 0.0, model, variant, n_o, os_, oseat, nj, v, mu, tabs,
                        col_tabs, col_T, sts, meta, hyp)
    size_after = _n_customers(nj, nf)
    rem(model, j, s_new, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant)
    b = add(model, j, s_old, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant)
    accept = _mh_accept(dl, r1, f, s_sum, b, size_before, size_after, random_scan, model, variant,
                        n_o, oq, os_, oseat, delta, seat, nj, v, mu, tabs, col_tabs, col_T, sts,
                        meta, hyp, rng, sym, nf, cnt, ctot, cnt2, ctot2, ws)
    if accept:
        rem(model, j, s_old, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant)
        add(model, j, s_new, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant)
        stats[ST_ENTRY] += 1
    else:
        _undo_new(model, variant, np.int64(n_new), newq, news, delta, seat, nj, v, mu, tabs,
                  col_tabs, col_T, sts, meta, hyp)
        delta[i, j] = k_old
        seat[i, j] = s_old
    end_move(tabs, sts, meta)


@njit(cache=True)
def _n_customers(nj, nf):
    n = 0
    for j in range(nf, nj.shape[0]):
        n += nj[j]
    return n


@njit(cache=True)
def _set_table_targets(t, j, k, delta, seat, hi, ws, nu):
    """Point every entry seated at table ``t`` (column ``j``) to ``k``; with ``nu >= 0`` also
    append the positions of the current path that use them to ``upos`` (returns ``nu``)."""
    for q in range(hi):
        if seat[q, j] == t and delta[q, j] >= 0:
            delta[q, j] = k
            if nu >= 0:
                nu = _gather_uses(q, j, nu, ws)
    return nu


@njit(cache=True)
def _reject_table(t, j, k_new, k_old, model, variant, n_new, newq, news, delta, seat, nj, v, mu,
                  tabs, col_tabs, col_T, sts, meta, hyp, sym, nf, cnt, ctot, cnt2, ctot2, ws):
    """Undo a proposed dish ``k_new`` of table ``t`` (column ``j``), its walk and the
    just-in-time entries; end the move."""
    finish_walk(np.bool_(False), sym, nf, cnt, ctot, cnt2, ctot2, ws)
    _undo_new(model, variant, np.int64(n_new), newq, news, delta, seat, nj, v, mu, tabs, col_tabs,
              col_T, sts, meta, hyp)
    _top_rem(k_new, sts, meta, hyp, variant)
    _top_add(k_old, sts, meta, hyp, variant)
    tabs[T_DISH, t] = k_old
    _set_table_targets(t, j, k_old, delta, seat, meta[M_HI], ws, np.int64(-1))
    end_move(tabs, sts, meta)


@njit(cache=True)
def move_table(t, model, variant, sym, nf, delta, seat, cnt, ctot, cnt2, ctot2, changed,
               newq, news, oq, os_, oseat, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, lg,
               random_scan, rng, stats, ws):
    """MH on the dish of table ``t`` (PDIA): propose from the top restaurant (Eq. crf:high with
    discount), every customer of ``t`` follows, accept by the same exact ratio (times
    ``M / M'`` when the table was picked uniformly among the ``M`` open ones)."""
    size_before = meta[M_TABLES]
    j = np.int64(tabs[T_COL, t])
    k_old = np.int64(tabs[T_DISH, t])
    r1 = _top_rem(k_old, sts, meta, hyp, variant)
    k_new = sample_dish(rng, sts, meta, hyp, variant, sts.shape[1])
    stats[ST_TABLE + 1] += 1
    if k_new < 0:
        _top_add(k_old, sts, meta, hyp, variant)
        end_move(tabs, sts, meta)
        stats[ST_CAPACITY] += 1
        return
    f = _top_add(k_new, sts, meta, hyp, variant)
    tabs[T_DISH, t] = k_new
    nu = _set_table_targets(t, j, k_new, delta, seat, meta[M_HI], ws, np.int64(0))
    n_new, lpf, ok = walk_changes(model, variant, sym, nf, delta, seat, cnt2, ctot2, nu, newq,
                                  news, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, rng, ws,
                                  stats)
    f += lpf
    if not ok:
        _reject_table(t, j, k_new, k_old, model, variant, n_new, newq, news, delta, seat, nj, v,
                      mu, tabs, col_tabs, col_T, sts, meta, hyp, sym, nf, cnt, ctot, cnt2, ctot2,
                      ws)
        stats[ST_CAPACITY] += 1
        return
    n_o = _collect_unvisited(delta, seat, oq, os_, oseat, ws)
    if n_o > 0 and variant != 5 and _ambiguous(np.int64(-1), np.int64(-1), t, k_old, seat, n_new,
                                               newq, news, n_o, oseat, tabs, sts, ws):
        _reject_table(t, j, k_new, k_old, model, variant, n_new, newq, news, delta, seat, nj, v,
                      mu, tabs, col_tabs, col_T, sts, meta, hyp, sym, nf, cnt, ctot, cnt2, ctot2,
                      ws)
        return
    dl = delta_loglik(cnt, ctot, cnt2, ctot2, lg, changed, ws)
    s_sum = _reseat_old(np.int64(-1), 0.0, model, variant, n_o, os_, oseat, nj, v, mu, tabs,
                        col_tabs, col_T, sts, meta, hyp)
    size_after = meta[M_TABLES]
    _top_rem(k_new, sts, meta, hyp, variant)
    tabs[T_DISH, t] = k_old
    b = _top_add(k_old, sts, meta, hyp, variant)
    accept = _mh_accept(dl, r1, f, s_sum, b, size_before, size_after, random_scan, model, variant,
                        n_o, oq, os_, oseat, delta, seat, nj, v, mu, tabs, col_tabs, col_T, sts,
                        meta, hyp, rng, sym, nf, cnt, ctot, cnt2, ctot2, ws)
    if accept:
        _top_rem(k_old, sts, meta, hyp, variant)
        _top_add(k_new, sts, meta, hyp, variant)
        tabs[T_DISH, t] = k_new
        _set_table_targets(t, j, k_new, delta, seat, meta[M_HI], ws, np.int64(-1))
        stats[ST_TABLE] += 1
    else:
        _undo_new(model, variant, np.int64(n_new), newq, news, delta, seat, nj, v, mu, tabs,
                  col_tabs, col_T, sts, meta, hyp)
        _set_table_targets(t, j, k_old, delta, seat, meta[M_HI], ws, np.int64(-1))
    end_move(tabs, sts, meta)


# -- mu and the hyperparameters ---------------------------------------------------------------

@njit(cache=True)
def log_gamma_variate(a, rng):
    """``log G`` for ``G ~ Gamma(a, 1)``, without underflow for small ``a``: for ``a < 1``,
    ``G = G' U^(1/a)`` with ``G' ~ Gamma(a + 1)``, ``U ~ Uniform(0, 1)`` (Marsaglia & Tsang
    2000, Sect. 5), so ``log G = log G' + log(U) / a``."""
    if a >= 1.0:
        return math.log(rng.standard_gamma(a))
    return math.log(rng.standard_gamma(a + 1.0)) + math.log(rng.random()) / a


@njit(cache=True)
def log_dirichlet_variate(a, rng, lout):
    """``lout = log x`` for ``x ~ Dir(a)``, in log space (components may be far below the
    smallest double)."""
    m = -np.inf
    for k in range(a.shape[0]):
        lout[k] = log_gamma_variate(a[k], rng)
        if lout[k] > m:
            m = lout[k]
    tot = 0.0
    for k in range(a.shape[0]):
        tot += math.exp(lout[k] - m)
    norm = m + math.log(tot)
    for k in range(a.shape[0]):
        lout[k] -= norm


@njit(cache=True)
def move_mu(mu, lmu, v, nj, hyp, nf, rng, stats, variant=0):
    """Gibbs step on ``mu`` with auxiliary table counts (Teh, Jordan, Beal & Blei 2006,
    Sect. 5.3, "sampling beta"): given ``mu``, the number of tables ``m_kj`` among the
    ``v_kj`` entries of column ``j`` that go to ``k`` (Polya urn with masses ``alpha mu_k``,
    Eq. delta:end) follows the Chinese restaurant table distribution (a sum of independent
    Bernoulli(``alpha mu_k / (alpha mu_k + i)``), ``i = 0..v_kj - 1``); given the tables,
    ``mu ~ Dir(gamma/|Q| + sum_j m_kj)``. The Dirichlet is drawn in log space: small ``gamma``
    puts components of ``mu`` far below 1e-300, and ``lmu`` keeps them (the prior terms of
    ``gamma`` and the log joint read ``lmu``); ``mu = exp(lmu)`` may underflow to 0 only
    where no entry goes (``v_kj = 0``). This replaces the paper's MH with a ``Dir(eta mu)``
    proposal, which cannot move near the boundary: its draw of ``log mu'_k`` is about
    ``-1 / (eta mu_k)``.

    ``variant`` (validation mutants): 12 the Dirichlet's counts are the customers ``v_kj``
    instead of the tables; 13 its prior part is ``gamma`` instead of ``gamma / |Q|``."""
    n_q = mu.shape[0]
    alpha, gamma = hyp[H_ALPHA], hyp[H_GAMMA]
    a = np.empty(n_q)
    for k in range(n_q):
        a[k] = gamma if variant == 13 else gamma / n_q
        x = alpha * mu[k]
        for j in range(nf, v.shape[1]):
            vk = v[k, j]
            if vk > 0 and variant == 12:
                a[k] += vk
            elif vk > 0:
                a[k] += 1.0  # the first customer always opens a table
                for i in range(1, vk):
                    if rng.random() * (x + i) < x:
                        a[k] += 1.0
    log_dirichlet_variate(a, rng, lmu)
    for k in range(n_q):
        mu[k] = math.exp(lmu[k])
    stats[ST_MU] += 1
    stats[ST_MU + 1] += 1


@njit(cache=True)
def _hyper_target(which, model, variant, hyp, cnt, ctot, hi, v, nj, mu, lmu, tabs, col_tabs,
                  col_T, sts, nf):
    """log prior (Gamma(1,1) or Uniform(0,1)) + the terms that depend on ``hyp[which]``."""
    x = hyp[which]
    if which == H_BETA:
        return -x + loglik_beta(cnt, ctot, hi, x)
    if model == 0:
        if which == H_ALPHA:
            return -x + log_prior_finite(v, nj, mu, x, nf)
        # gamma: mu ~ Dir(gamma / |Q|)
        n_q = mu.shape[0]
        out = -x + math.lgamma(x) - n_q * math.lgamma(x / n_q)
        for k in range(n_q):
            out += (x / n_q - 1.0) * lmu[k]
        return out
    prior = 0.0 if which in (H_D, H_D0) else -x
    if variant == 3 and which == H_ALPHA:  # mutant: alpha's Gamma(1, 1) prior term dropped
        prior = 0.0
    return prior + log_prior_crf(tabs, col_tabs, col_T, sts, hyp, variant)


@njit(cache=True)
def move_hyper(which, step, model, variant, hyp, cnt, ctot, hi, v, nj, mu, lmu, tabs, col_tabs,
               col_T, sts, nf, lg, n_symbols, rng, stats):
    """Random-walk MH on one hyperparameter: log scale for concentrations (Gamma(1, 1)
    prior), logit scale for discounts (Uniform(0, 1) prior), Jacobians included."""
    old = hyp[which]
    cur = _hyper_target(which, model, variant, hyp, cnt, ctot, hi, v, nj, mu, lmu, tabs,
                        col_tabs, col_T, sts, nf)
    eps = step * rng.standard_normal()
    if model == 1 and which in (H_D, H_D0):
        z = math.log(old) - math.log1p(-old) + eps
        new = 1.0 / (1.0 + math.exp(-z))
        if not (0.0 < new < 1.0):
            stats[ST_HYP + 2 * which + 1] += 1
            return
        jac = math.log(new) + math.log1p(-new) - math.log(old) - math.log1p(-old)
        if variant == 4 and which == H_D:  # mutant: the logit walk's Jacobian left out
            jac = 0.0
    else:
        new = old * math.exp(eps)
        jac = eps
    stats[ST_HYP + 2 * which + 1] += 1
    if not (new > 1e-300 and new < 1e300):
        return
    hyp[which] = new
    prop = _hyper_target(which, model, variant, hyp, cnt, ctot, hi, v, nj, mu, lmu, tabs,
                         col_tabs, col_T, sts, nf)
    if math.log(rng.random()) < prop - cur + jac:
        stats[ST_HYP + 2 * which] += 1
        if which == H_BETA:
            fill_lg(lg, new, n_symbols)
    else:
        hyp[which] = old


# -- sweeps -------------------------------------------------------------------------------------

@njit(cache=True)
def _random_table(rng, col_T, col_tabs, meta):
    """An open table, uniformly."""
    u = int(rng.integers(0, meta[M_TABLES]))
    for j in range(col_T.shape[0]):
        if u < col_T[j]:
            return col_tabs[j, u]
        u -= col_T[j]
    return -1


@njit(cache=True)
def sweep(model, variant, sym, nf, delta, seat, cnt, ctot, cnt2, ctot2, vis, changed, newq, news,
          oq, os_, oseat, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, lg, fixed, lmu,
          n_mu, step, table_moves, n_entry_moves, n_table_moves, rng, stats, ws=None):
    """One sweep. Finite model: MH on every instantiated ``delta_ij`` (row-major order), then
    ``n_mu`` Gibbs steps on ``mu`` (``lmu = log mu``). PDIA: ``n_entry_moves`` MH moves on a
    uniformly chosen instantiated ``delta_ij``, then (if ``table_moves``) ``n_table_moves`` on
    the dish of a uniformly chosen open table. Then each hyperparameter not ``fixed``.
    ``ws``: the chain's :func:`new_workspace` (one is allocated when not given); its path
    index is rebuilt from ``sym`` and ``delta`` first, so the data may change between sweeps.
    ``vis`` is not read (kept for the callers of :func:`eval_path`). ``stats[ST_MOVED]``
    gains the positions ``t`` whose state (before token ``t``, the path index's ``QPATH``)
    the sweep's accepted moves changed, compared label by label with a copy made after the
    index is built (one comparison a token): the sampler statistic ``moved``."""
    if ws is None:
        _sweep(model, variant, sym, nf, delta, seat, cnt, ctot, cnt2, ctot2, changed, newq, news,
               oq, os_, oseat, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, lg, fixed, lmu,
               n_mu, step, table_moves, n_entry_moves, n_table_moves, rng, stats,
               new_workspace(sym.shape[0], delta.shape[0], delta.shape[1]))
    else:
        _sweep(model, variant, sym, nf, delta, seat, cnt, ctot, cnt2, ctot2, changed, newq, news,
               oq, os_, oseat, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, lg, fixed, lmu,
               n_mu, step, table_moves, n_entry_moves, n_table_moves, rng, stats, ws)


@njit(cache=True)
def _sweep(model, variant, sym, nf, delta, seat, cnt, ctot, cnt2, ctot2, changed, newq, news,
           oq, os_, oseat, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, lg, fixed, lmu,
           n_mu, step, table_moves, n_entry_moves, n_table_moves, rng, stats, ws):
    n_sym = delta.shape[1]
    build_index(sym, nf, delta, meta[M_HI], cnt, ctot, cnt2, ctot2, lg, ws)
    start = ws[0][W_QPATH].copy()
    if model == 0:
        # fixed state labels: a systematic scan over the instantiated entries
        for q in range(meta[M_HI]):
            for j in range(nf, n_sym):
                if delta[q, j] >= 0:
                    move_entry(q, j, model, variant, sym, nf, delta, seat, cnt, ctot, cnt2,
                               ctot2, changed, newq, news, oq, os_, oseat, nj, v, mu, tabs,
                               col_tabs, col_T, sts, meta, hyp, lg, np.bool_(False), rng, stats, ws)
    else:
        # state labels of the PDIA come and go, so a scan in label order would depend on the
        # history: random scan, each move picking an entry (a table) uniformly. The number of
        # moves must not depend on the state (or the sweep is not invariant): the front fixes
        # it after burn-in (negative: the current number of entries / tables, for burn-in)
        n_moves = _n_customers(nj, nf) if n_entry_moves < 0 else n_entry_moves
        for _ in range(n_moves):
            if _n_customers(nj, nf) == 0:  # no letter in the data: nothing to move
                break
            while True:
                q = int(rng.integers(0, meta[M_HI]))
                j = int(rng.integers(nf, n_sym))
                if delta[q, j] >= 0:
                    break
            move_entry(q, j, model, variant, sym, nf, delta, seat, cnt, ctot, cnt2, ctot2,
                       changed, newq, news, oq, os_, oseat, nj, v, mu, tabs, col_tabs, col_T,
                       sts, meta, hyp, lg, np.bool_(True), rng, stats, ws)
        if table_moves:
            n_moves = meta[M_TABLES] if n_table_moves < 0 else n_table_moves
            for _ in range(n_moves):
                if meta[M_TABLES] == 0:
                    break
                t = _random_table(rng, col_T, col_tabs, meta)
                move_table(t, model, variant, sym, nf, delta, seat, cnt, ctot, cnt2, ctot2,
                           changed, newq, news, oq, os_, oseat, nj, v, mu, tabs, col_tabs, col_T,
                           sts, meta, hyp, lg, np.bool_(True), rng, stats, ws)
    qpath = ws[0][W_QPATH]
    moved = 0
    for t in range(start.shape[0]):
        moved += qpath[t] != start[t]
    stats[ST_MOVED] += moved
    if model == 0:
        for _ in range(n_mu):
            move_mu(mu, lmu, v, nj, hyp, nf, rng, stats, variant)
    hi = meta[M_HI]
    for which in range(5):
        if fixed[which] == 0:
            move_hyper(which, step, model, variant, hyp, cnt, ctot, hi, v, nj, mu, lmu, tabs,
                       col_tabs, col_T, sts, nf, lg, n_sym, rng, stats)


@njit(cache=True)
def log_joint(model, variant, cnt, ctot, meta, v, nj, mu, tabs, col_tabs, col_T, sts, hyp, lg, nf,
              lmu):
    """``log p(x | delta) + log p(configuration | hyperparameters)`` (+ ``log Dir(mu)``, read
    from ``lmu = log mu``). ``variant`` 15 (validation mutant ``log-joint-mu-prior``; the
    front passes it here only, the moves never see it): ``log Dir(mu)`` written with
    ``gamma`` where ``gamma / |Q|`` belongs in the normaliser, a slip in what is recorded."""
    hi = meta[M_HI]
    out = loglik(cnt, ctot, hi, lg)
    if model == 0:
        n_q = mu.shape[0]
        gamma = hyp[H_GAMMA]
        out += log_prior_finite(v, nj, mu, hyp[H_ALPHA], nf)
        out += math.lgamma(gamma) - n_q * math.lgamma(gamma if variant == 15 else gamma / n_q)
        for k in range(n_q):
            out += (gamma / n_q - 1.0) * lmu[k]
    else:
        out += log_prior_crf(tabs, col_tabs, col_T, sts, hyp, variant)
    return out


@njit(cache=True)
def n_states_used(ctot, hi):
    n = 0
    for q in range(hi):
        if ctot[q] > 0:
            n += 1
    return n


# -- prediction ---------------------------------------------------------------------------------

@njit(cache=True)
def predict_strings(model, variant, sym, offsets, nf, start, delta, seat, cnt, ctot, nj, v, mu,
                    tabs, col_tabs, col_T, sts, meta, hyp, lg, n_rep, rng, newq, news, out):
    """Log predictive of each string ``sym[offsets[s]:offsets[s+1]]`` under one posterior
    sample, the string's emissions folded into the counts as they are read (the
    Dirichlet-multinomial predictive) and unvisited entries drawn from the CRF / Polya
    predictive as the string needs them (a Monte Carlo average over ``n_rep`` draws; exact
    when the string needs none). Sentences (``nf = 1``): every string from ``q0`` given the
    training data only (everything is undone after it). Sequence (``nf = 0``), or sentences
    with ``n_rep = 0``: the strings continue one another from ``start`` and nothing is undone
    (one draw of the unvisited entries; a sentence's end symbol still leads back to ``q0``),
    so each string is predicted given the training data and the strings before it. ``lg``
    selects the emission prior by its rank (module docstring; a 2-D one is not read)."""
    n_sym = cnt.shape[1]
    q = start
    for s_i in range(offsets.shape[0] - 1):
        lo, hi_ = offsets[s_i], offsets[s_i + 1]
        acc = -np.inf
        keep = nf == 0 or n_rep < 1  # the strings continue one another: nothing undone
        reps = 1 if keep else n_rep
        done = 0
        for r in range(reps):
            if not keep:
                q = 0
            lp = 0.0
            n_new = 0
            for t in range(lo, hi_):
                s = sym[t]
                lp += _log_emission_pred(lg, hyp, n_sym, s, cnt[q, s], ctot[q])
                cnt[q, s] += 1
                ctot[q] += 1
                if s < nf:
                    q = 0
                    continue
                nq = delta[q, s]
                if nq < 0:
                    _, ok = _instantiate(model, variant, np.int64(q), s, np.int64(n_new), delta,
                                         seat, newq, news, nj, v, mu, tabs, col_tabs, col_T, sts,
                                         meta, hyp, rng)
                    if not ok:
                        raise ValueError("prediction ran out of state capacity")
                    n_new += 1
                    nq = delta[q, s]
                q = nq
            if not keep:
                # undo the string: its counts, then the entries it instantiated
                qq = 0
                for t in range(lo, hi_):
                    s = sym[t]
                    cnt[qq, s] -= 1
                    ctot[qq] -= 1
                    qq = 0 if s < nf else delta[qq, s]
                _undo_new(model, variant, np.int64(n_new), newq, news, delta, seat, nj, v, mu, tabs,
                          col_tabs, col_T, sts, meta, hyp)
            end_move(tabs, sts, meta)
            m = max(acc, lp)
            acc = m + math.log(math.exp(acc - m) + math.exp(lp - m))
            done += 1
            if n_new == 0:
                break
        out[s_i] = acc - math.log(done)
    return q


@njit(cache=True)
def predict_weights(model, variant, sym, lo, hi_, counted, nf, start, prepaid, adapted, delta,
                    seat, cnt, ctot, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, lg, rng,
                    newq, news, out):
    """One particle of the prediction's particle filters reads ``sym[lo:hi_]`` from state
    ``start``, folding each symbol into the counts (as :func:`predict_strings` with
    ``n_rep = 0``: nothing undone, a sentence's end symbol back to ``q0``), and writes into
    ``out[t - lo]`` the log of its incremental weight for symbol ``t``. Returns ``(state,
    prepaid)``.

    ``adapted = False``: an unvisited entry is drawn from its prior predictive (Eq.
    crf:low/crf:high, Eq. delta:pred for the finite model) and the weight of symbol ``t`` is
    its emission predictive (Eq. x:end one symbol at a time; the blind draw, the same draws as
    :func:`predict_strings`). ``adapted = True`` (the fully adapted proposal): when reading
    ``x_t`` draws the unvisited entry ``(q, x_t)`` and the next symbol ``x_{t+1}`` is counted,
    the destination ``q'`` is drawn from ``p(q' | seating) p(x_{t+1} | q')``
    (:func:`bayesfa.samplers.pdia._crf_kernel.sample_seat_adapted`; ``p(x_{t+1} | q')`` the
    emission predictive at ``q'``'s counts, a fresh state's with no counts), the weight of
    symbol ``t`` gains ``log sum_q' p(q' | seating) p(x_{t+1} | q')``, and symbol ``t + 1``'s
    emission is then *prepaid*: its weight omits it (the returned flag carries this across
    calls). The product of a particle's weights is then still unbiased for ``p(test |
    sample)``: ``E_proposal[Z f(q')] = sum_q' p(q') p(x_{t+1} | q') f(q')`` for whatever
    ``f`` the rest of the reading makes of ``q'``, so each draw's expectation is the blind
    draw's with the emission of ``x_{t+1}`` at ``q'`` in it; and a particle filter resampling
    on these weights targets the twisted sequence ``p(x_{1:t}, draws) p(x_{t+1} | q_t)^[t
    drew]``, whose last member is ``p(test, draws)``, so its estimate of the normaliser stays
    unbiased (Del Moral 2004). ``counted`` (bool ``[len(sym)]``): a symbol not counted adds
    no emission to the weights (it is still read and folded in); nothing is prepaid for it."""
    n_sym = cnt.shape[1]
    n_cap = cnt.shape[0]
    e = np.empty(n_cap)
    q = start
    for t in range(lo, hi_):
        s = sym[t]
        w = 0.0
        if counted[t] and not prepaid:
            w = _log_emission_pred(lg, hyp, n_sym, s, cnt[q, s], ctot[q])
        prepaid = False
        cnt[q, s] += 1
        ctot[q] += 1
        if s < nf:
            q = 0
            out[t - lo] = w
            continue
        nq = delta[q, s]
        if nq < 0:
            if adapted and t + 1 < sym.shape[0] and counted[t + 1]:
                y = sym[t + 1]
                top = n_cap if model == 0 else min(n_cap, meta[M_HI])
                for k in range(top):
                    e[k] = math.exp(_log_emission_pred(lg, hyp, n_sym, y, cnt[k, y], ctot[k]))
                e_new = math.exp(_log_emission_pred(lg, hyp, n_sym, y, 0, 0))
                st, log_z = sample_seat_adapted(model, rng, s, e, e_new, nj, v, mu, tabs,
                                                col_tabs, col_T, sts, meta, hyp, variant)
                if st < 0:
                    raise ValueError("prediction ran out of state capacity")
                add(model, s, st, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp, variant)
                delta[q, s] = seat_dish(model, st, tabs)
                seat[q, s] = st
                w += log_z
                prepaid = True
            else:
                _, ok = _instantiate(model, variant, np.int64(q), s, np.int64(0), delta, seat,
                                     newq, news, nj, v, mu, tabs, col_tabs, col_T, sts, meta, hyp,
                                     rng)
                if not ok:
                    raise ValueError("prediction ran out of state capacity")
            nq = delta[q, s]
        q = nq
        out[t - lo] = w
    end_move(tabs, sts, meta)
    return q, prepaid
