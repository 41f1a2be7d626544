"""Forward filtering-backward sampling of whole state paths, and CGS-PFA's blocked move (issue 37, item 2).

**FFBS given theta** (:func:`ffbs_paths`, generic; the infinite PFA's weak limit calls it with
its own ``theta``). The PFA of Shibata & Yoshinaka (2013), Sect. 2.1, with its parameters
``xi`` instantiated: given ``theta = xi``, the strings are independent and Eq. 1 factorises
along each string, so the state path of a string ``a_1 .. a_L 0`` has the conditional

    ``Pr(z | a, theta) ∝ theta[0, a_1, z_1] theta[z_1, a_2, z_2] ... theta[z_{L-1}, a_L, z_L]
                          theta[z_L, 0, 0]``

(``z_0 = 0`` the initial state, the end marker back to state 0), a chain whose whole path is
drawn exactly by forward filtering, ``f_k(j) ∝ sum_i f_{k-1}(i) theta[i, a_k, j]`` from
``f_0 = e_0``, then backward sampling: ``z_L`` with weights ``f_L(i) theta[i, 0, 0]``, then
``z_{k-1}`` with weights ``f_{k-1}(i) theta[i, a_k, z_k]`` for ``k = L .. 2`` (Carter & Kohn
1994; Frühwirth-Schnatter 1994). Cost O(S^2) per token, the inner loops over contiguous rows
of ``theta``. Each filter is normalised to sum 1 (scaled forward algorithm), so no string
length underflows; the log normalisers sum to ``log Pr(a | theta)``.

Array contract of :func:`ffbs_paths` (C-contiguous; ``S`` states ``0..S-1``, ``A`` symbols with
0 the end marker; ``tokens`` and ``z`` in the layout of :mod:`bayesfa.corpus` and
:mod:`bayesfa.samplers.pfa._cgs_pfa_kernel`):

- ``theta`` float64 ``[S, A, S]``: ``theta[i, a, j] = Pr(a, j | i)``, each row ``i`` (the
  initial state 0 included) a distribution over ``(a, j)``. Read only at ``a != 0, j != 0``
  and at ``(i, 0, 0)`` (Sect. 2.1's constraints: the end marker goes to state 0, and only
  it); other cells are never read. Each row must sum to 1 over those cells: a row's scale
  ``r_i`` would weigh a path by ``r_i`` to its visits of ``i``.
- ``tokens`` int ``[T]``: the strings, each closed by its end marker 0.
- ``z`` int32 ``[T + 1]``: ``z[t]`` the state before token ``t``; 0 at ``t = 0``, at ``t = T``
  and after every end marker. Overwritten at every free position (``tokens[t - 1] != 0``)
  with a draw from ``Pr(z | tokens, theta)``; fixed positions are left as they are.
- ``filt`` float64 ``[>= L_max, S]`` scratch (``L_max`` the longest string's letters).
- ``rng``: one ``rng.random()`` per free position, in order of the strings, last letter first.

Returns ``log Pr(tokens | theta)`` (float64, Eq. 1 summed over paths). A string that no path
can generate under ``theta`` keeps its path and makes the result ``-inf``.

**The blocked move of CGS-PFA** (:func:`blocked_move`). On the chain state of
:mod:`bayesfa.samplers.pfa._cgs_pfa_kernel` (``c``, ``ct``, ``ci``, ``recip`` for ``z``):

1. ``theta_i ~ Dir(C_i + prior_i)`` for every state ``i = 0..N``: the posterior of ``xi``
   given ``z`` (Eq. 2 times Eq. 3), ``prior = beta`` on ``(a != 0, j != 0)`` and ``N beta`` on
   ``(0, 0)``. Gammas are drawn in log space (``log G(s) = log G(s + 1) + log(U) / s`` for
   ``s < 1``) and each row normalised by its largest, so that rows of tiny shapes never sum
   to 0;
2. every string's path ``z ~ Pr(z | alpha, theta)`` by :func:`ffbs_paths`;
3. ``theta`` dropped, the counts rebuilt from ``z`` (``fill_counts``).

Steps 1-2 are the two Gibbs steps of the uncollapsed joint ``Pr(alpha, z, xi)``, so the move
leaves ``Pr(alpha, z, xi)`` and hence its ``z``-marginal, the collapsed posterior of Eq. 4,
invariant. It changes every ``z_t`` at once (where a collapsed sweep changes one at a time).
Cost: one FFBS pass, ``T N^2``, about ``N`` collapsed sweeps' worth of arithmetic, plus
``(N + 1) ((A - 1) N + 1)`` gammas. ``cgs-pfa --blocked-every K`` runs one after every ``K``
collapsed sweeps (:func:`sweeps`, :func:`sample_draws`).

:data:`MUTATIONS` are compile-time switches of this one source (:func:`build_ffbs`,
:func:`build_blocked`); production has none. :mod:`bayesfa.validation.pfa.blocked` checks
both exactly on toys.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bayesfa.samplers.pfa._cgs_pfa_kernel import fill_counts, record_draw, sweep_positions

#: Deliberate errors for the validation suite (``bayesfa validate cgs-pfa:mutant-blocked-...``).
MUTATIONS: dict[str, str] = {
    "blocked-prior-theta": "blocked move: theta drawn from the prior (Eq. 2) instead of its "
                           "posterior given the counts",
    "blocked-wrong-filter": "FFBS: the backward step for z_{k-1} weighted by the filter of "
                            "position k instead of k-1",
    "blocked-no-end": "FFBS: the end transition theta[i, 0, 0] left out of the likelihood "
                      "(z_L drawn from the last filter alone)",
}


@njit(cache=True, inline="always")
def _draw(weights, first, n, total, u):
    """Inverse CDF over ``weights[first..n-1]`` at ``u * total``; rounding past the top gives
    the last entry with positive weight (``first`` when none has). The dense draws index states
    (``first = 1``), the slice draws a row's list of live states (``first = 0``)."""
    target = u * total
    acc = 0.0
    last = first
    for k in range(first, n):
        w = weights[k]
        if w > 0.0:
            last = k
            acc += w
            if target < acc:
                return k
    return last


_FFBS: dict = {}


def build_ffbs(mutation: str | None = None):
    """:func:`ffbs_paths` (module docstring), compiled with ``mutation`` (``blocked-wrong-filter``
    or ``blocked-no-end``) or, for ``None`` and the other mutations, without any."""
    if mutation is not None and mutation not in MUTATIONS:
        raise ValueError(f"unknown mutation {mutation!r}; choose from {', '.join(MUTATIONS)}")
    key = mutation if mutation in ("blocked-wrong-filter", "blocked-no-end") else None
    if key in _FFBS:
        return _FFBS[key]
    wrong_filter = key == "blocked-wrong-filter"
    with_end = key != "blocked-no-end"

    @njit(cache=True)
    def ffbs_paths(theta, tokens, z, filt, rng):
        n_st = theta.shape[0]
        n_tok = tokens.shape[0]
        w = np.empty(n_st)
        log_lik = 0.0
        start = 0
        while start < n_tok:
            end = start  # tokens[end] is the string's end marker
            while tokens[end] != 0:
                end += 1
            n_let = end - start
            ok = True
            s_log = 0.0
            # forward: filt[k - 1] = f_k, k = 1..L (f_0 = e_0)
            for k in range(1, n_let + 1):
                a = tokens[start + k - 1]
                row = filt[k - 1]
                row[0] = 0.0
                if k == 1:
                    for j in range(1, n_st):
                        row[j] = theta[0, a, j]
                else:
                    for j in range(1, n_st):
                        row[j] = 0.0
                    prev = filt[k - 2]
                    for i in range(1, n_st):
                        p = prev[i]
                        if p != 0.0:
                            for j in range(1, n_st):
                                row[j] += p * theta[i, a, j]
                total = 0.0
                for j in range(1, n_st):
                    total += row[j]
                if not (total > 0.0) or not math.isfinite(total):
                    ok = False
                    break
                scale = 1.0 / total
                for j in range(1, n_st):
                    row[j] *= scale
                s_log += math.log(total)
            if ok:
                if n_let == 0:
                    total = theta[0, 0, 0]
                else:
                    last = filt[n_let - 1]
                    w[0] = 0.0
                    for i in range(1, n_st):
                        w[i] = last[i] * theta[i, 0, 0] if with_end else last[i]
                    total = 0.0
                    for i in range(1, n_st):
                        total += last[i] * theta[i, 0, 0]
                ok = total > 0.0 and math.isfinite(total)
                s_log += math.log(total) if ok else 0.0
            if not ok:
                log_lik = -math.inf
                start = end + 1
                continue
            log_lik += s_log
            if n_let > 0:
                # backward: z_L, then z_{k-1} given z_k for k = L..2 (z_k is z[start + k])
                tot = 0.0
                for i in range(1, n_st):
                    tot += w[i]
                nxt = _draw(w, 1, n_st, tot, rng.random())
                z[start + n_let] = nxt
                for k in range(n_let, 1, -1):
                    a = tokens[start + k - 1]
                    f = filt[k - 1] if wrong_filter else filt[k - 2]
                    tot = 0.0
                    for i in range(1, n_st):
                        w[i] = f[i] * theta[i, a, nxt]
                        tot += w[i]
                    nxt = _draw(w, 1, n_st, tot, rng.random())
                    z[start + k - 1] = nxt
            start = end + 1
        return log_lik

    _FFBS[key] = ffbs_paths
    return ffbs_paths


#: The production FFBS (no mutation); see :func:`build_ffbs` and the module docstring.
ffbs_paths = build_ffbs(None)


#: Deliberate errors of :func:`build_slice` (validated through the iPFA's blocked sampler,
#: ``bayesfa validate ipfa:mutant-NAME``, which runs it with ``--paths slice``).
SLICE_MUTATIONS: dict[str, str] = {
    "slice-half-interval": "slice FFBS: each slice u_k drawn from U(0, cell / 2) instead of "
                           "U(0, cell), the cell theta[z_{k-1}, a_k, z_k] of the current path",
    "slice-theta-in-filter": "slice FFBS: the forward filter weighted by the cells theta (as the "
                             "dense filter) as well as by the slices' indicators",
    "slice-no-end": "slice FFBS: no slice on the end transition theta[z_L, 0, 0] (z_L drawn "
                    "from the last filter alone)",
}


@njit(cache=True)
def sort_cells(theta, order, count):
    """For each state ``i`` and letter ``a >= 1``: ``order[i, a, :count[i, a]]`` the states
    ``j >= 1`` with ``theta[i, a, j] > 0``, largest cell first (:func:`build_slice`'s forward
    step stops at the first cell under its slice). ``order`` int32 ``[S, A, S - 1]``, ``count``
    int64 ``[S, A]``."""
    n_st = theta.shape[0]
    for i in range(n_st):
        for a in range(1, theta.shape[1]):
            idx = np.argsort(-theta[i, a, 1:])
            n = 0
            for r in range(idx.shape[0]):
                j = idx[r] + 1
                if theta[i, a, j] > 0.0:
                    order[i, a, n] = j
                    n += 1
            count[i, a] = n


_SLICE: dict = {}


def build_slice(mutation: str | None = None):
    """``slice_paths(theta, tokens, z, filt, rng)``: every string's path redrawn given
    ``theta`` by forward filtering-backward sampling on the trellis that auxiliary slices
    leave (the beam sampler's step, Van Gael, Saatci, Teh & Ghahramani 2008, Sect. 3, on the
    finite ``theta`` of :func:`ffbs_paths`' contract), compiled with ``mutation`` (a key of
    :data:`SLICE_MUTATIONS`) or, for None, without.

    For each string ``a_1 .. a_L 0`` with current path ``z``: a slice ``u_k ~ U(0,
    theta[z_{k-1}, a_k, z_k])`` for ``k = 1 .. L`` and ``u_end ~ U(0, theta[z_L, 0, 0])``. The
    joint ``Pr(z, u | theta) ∝ prod_k theta_k(z) (1 / theta_k(z)) [u_k < theta_k(z)]`` leaves
    the new path uniform over the paths whose every cell is above its slice: drawn exactly by
    the forward counts ``f_k(j) = sum_i f_{k-1}(i) [theta[i, a_k, j] > u_k]`` (``f_0 = e_0``) and
    the backward draws ``z_L ∝ f_L(i) [theta[i, 0, 0] > u_end]``, ``z_{k-1} ∝ f_{k-1}(i)
    [theta[i, a_k, z_k] > u_k]``. Drawing ``u`` given ``z`` then ``z`` given ``u`` is a Gibbs
    step of ``Pr(z, u | theta)``, so ``Pr(z | alpha, theta)`` is kept invariant, as by
    :func:`ffbs_paths`' exact draw, which the current path does not influence. Cost: the
    cells above their slice a token (:func:`sort_cells` orders each row once a call), where
    the dense filter's is every cell of every state with mass, ``O(S^2)``. The current path
    is always one of the trellis' paths (its cells are above their slices), so no filter is
    empty unless a cell of the current path is 0 (never so for ``theta`` drawn given the
    path's own counts); a string whose trellis has no path keeps its path.

    ``filt`` as :func:`ffbs_paths`' (overwritten: zeroed first). Returns the number of
    (state, next state) cells the forward filters looked at (int64), the work measure of
    ``benchmarks/ipfa_slice.py``. ``rng``: for each string of ``L >= 1`` letters, ``L + 1``
    uniforms for its slices in order, then ``L`` for the backward draws, last letter first
    (the empty string draws none: its path is fixed)."""
    if mutation is not None and mutation not in SLICE_MUTATIONS:
        raise ValueError(f"unknown mutation {mutation!r}; choose from {', '.join(SLICE_MUTATIONS)}")
    if mutation in _SLICE:
        return _SLICE[mutation]
    half = 0.5 if mutation == "slice-half-interval" else 1.0
    theta_in_filter = mutation == "slice-theta-in-filter"
    with_end = mutation != "slice-no-end"

    @njit(cache=True)
    def slice_paths(theta, tokens, z, filt, rng):
        n_st = theta.shape[0]
        n_sym = theta.shape[1]
        n_tok = tokens.shape[0]
        rows = filt.shape[0]
        order = np.empty((n_st, n_sym, max(1, n_st - 1)), dtype=np.int32)
        count = np.zeros((n_st, n_sym), dtype=np.int64)
        sort_cells(theta, order, count)
        act = np.empty((rows, n_st), dtype=np.int32)  # act[k - 1, :nact[k - 1]]: f_k's support
        nact = np.zeros(rows, dtype=np.int64)
        u = np.empty(rows + 1)
        w = np.empty(n_st)
        filt[:] = 0.0
        looked = 0
        start = 0
        while start < n_tok:
            end = start
            while tokens[end] != 0:
                end += 1
            n_let = end - start
            if n_let == 0:
                start = end + 1
                continue
            for k in range(1, n_let + 1):
                u[k - 1] = rng.random() * half * theta[z[start + k - 1], tokens[start + k - 1],
                                                       z[start + k]]
            u[n_let] = rng.random() * half * theta[z[start + n_let], 0, 0]
            ok = True
            for k in range(1, n_let + 1):
                a = tokens[start + k - 1]
                row = filt[k - 1]
                for q in range(nact[k - 1]):  # what an earlier string left in this row
                    row[act[k - 1, q]] = 0.0
                na = 0
                cut = u[k - 1]
                if k == 1:
                    for r in range(count[0, a]):
                        j = order[0, a, r]
                        cell = theta[0, a, j]
                        looked += 1
                        if not cell > cut:
                            break
                        act[0, na] = j
                        na += 1
                        row[j] = cell if theta_in_filter else 1.0
                else:
                    prev = filt[k - 2]
                    for q in range(nact[k - 2]):
                        i = act[k - 2, q]
                        p = prev[i]
                        for r in range(count[i, a]):
                            j = order[i, a, r]
                            cell = theta[i, a, j]
                            looked += 1
                            if not cell > cut:
                                break
                            if row[j] == 0.0:
                                act[k - 1, na] = j
                                na += 1
                            row[j] += p * cell if theta_in_filter else p
                nact[k - 1] = na
                total = 0.0
                for q in range(na):
                    total += row[act[k - 1, q]]
                if not (total > 0.0) or not math.isfinite(total):
                    ok = False  # the rows after k keep an earlier string's act and nact
                    break
                scale = 1.0 / total
                for q in range(na):
                    row[act[k - 1, q]] *= scale
            if ok:
                last = filt[n_let - 1]
                tot = 0.0
                for q in range(nact[n_let - 1]):
                    i = act[n_let - 1, q]
                    w[q] = last[i] if (theta[i, 0, 0] > u[n_let] or not with_end) else 0.0
                    tot += w[q]
                ok = tot > 0.0
            if ok:
                nxt = act[n_let - 1, _draw(w, 0, nact[n_let - 1], tot, rng.random())]
                z[start + n_let] = nxt
                for k in range(n_let, 1, -1):
                    a = tokens[start + k - 1]
                    f = filt[k - 2]
                    cut = u[k - 1]
                    tot = 0.0
                    for q in range(nact[k - 2]):
                        i = act[k - 2, q]
                        w[q] = f[i] if theta[i, a, nxt] > cut else 0.0
                        tot += w[q]
                    nxt = act[k - 2, _draw(w, 0, nact[k - 2], tot, rng.random())]
                    z[start + k - 1] = nxt
            start = end + 1
        return looked

    _SLICE[mutation] = slice_paths
    return slice_paths


#: The production slice FFBS (no mutation); see :func:`build_slice`.
slice_paths = build_slice(None)


@njit(cache=True)
def max_letters(tokens):
    """The most letters of any string of ``tokens`` (the rows :func:`ffbs_paths`' ``filt`` needs)."""
    best = 0
    run = 0
    for t in range(tokens.shape[0]):
        if tokens[t] == 0:
            best = max(best, run)
            run = 0
        else:
            run += 1
    return best


@njit(cache=True, inline="always")
def _log_gamma(rng, shape):
    """``log G``, ``G ~ Gamma(shape, 1)``; for ``shape < 1`` as ``log G(shape + 1) + log(U) / shape``
    (Marsaglia & Tsang 2000), which stays finite where ``G`` itself underflows to 0."""
    if shape >= 1.0:
        return math.log(rng.standard_gamma(shape))
    u = rng.random()
    if u == 0.0:
        return -math.inf
    return math.log(rng.standard_gamma(shape + 1.0)) + math.log(u) / shape


_THETA: dict = {}


def build_theta(mutation: str | None = None):
    """:func:`draw_theta`, compiled with ``mutation`` (``blocked-prior-theta``) or without."""
    key = mutation if mutation == "blocked-prior-theta" else None
    if key in _THETA:
        return _THETA[key]
    use_counts = key is None

    @njit(cache=True)
    def draw_theta(c, beta, rng, theta):
        """``theta[i] ~ Dir(C_i + prior_i)`` for each state ``i`` (the blocked move's step 1);
        c float32 ``[N+1, A, W]`` (columns past N ignored), theta float64 ``[N+1, A, N+1]``
        (cells outside Sect. 2.1's constraints set to 0). Rows drawn in order ``i``, each
        ``(a, j)`` in row-major order with ``(0, 0)`` first."""
        n_st = theta.shape[0]
        n_sym = theta.shape[1]
        nbeta = (n_st - 1) * beta
        theta[:] = 0.0
        for i in range(n_st):
            shape = nbeta + (c[i, 0, 0] if use_counts else 0.0)
            theta[i, 0, 0] = _log_gamma(rng, shape)
            top = theta[i, 0, 0]
            for a in range(1, n_sym):
                for j in range(1, n_st):
                    shape = beta + (c[i, a, j] if use_counts else 0.0)
                    v = _log_gamma(rng, shape)
                    theta[i, a, j] = v
                    top = max(top, v)
            total = 0.0
            theta[i, 0, 0] = math.exp(theta[i, 0, 0] - top)
            total += theta[i, 0, 0]
            for a in range(1, n_sym):
                for j in range(1, n_st):
                    v = math.exp(theta[i, a, j] - top)
                    theta[i, a, j] = v
                    total += v
            theta[i, 0, 0] /= total
            for a in range(1, n_sym):
                for j in range(1, n_st):
                    theta[i, a, j] /= total

    _THETA[key] = draw_theta
    return draw_theta


#: The production posterior draw of ``theta`` (no mutation).
draw_theta = build_theta(None)

_BLOCKED: dict = {}


def build_blocked(mutation: str | None = None):
    """:func:`blocked_move` (module docstring) compiled with ``mutation`` (a key of
    :data:`MUTATIONS`) or, for ``None``, without any.

    ``blocked_move(tokens, z, c, ct, ci, recip, rng, beta, theta, filt)`` moves the chain state
    of :mod:`bayesfa.samplers.pfa._cgs_pfa_kernel` in place; ``theta`` float64 ``[N+1, A, N+1]``
    and ``filt`` float64 ``[max_letters(tokens), N+1]`` are scratch. Returns ``log Pr(alpha |
    theta)`` of the ``theta`` drawn."""
    if mutation is not None and mutation not in MUTATIONS:
        raise ValueError(f"unknown mutation {mutation!r}; choose from {', '.join(MUTATIONS)}")
    if mutation in _BLOCKED:
        return _BLOCKED[mutation]
    theta_of = build_theta(mutation)
    paths = build_ffbs(mutation)

    @njit(cache=True)
    def blocked_move(tokens, z, c, ct, ci, recip, rng, beta, theta, filt):
        theta_of(c, beta, rng, theta)
        log_lik = paths(theta, tokens, z, filt, rng)
        fill_counts(tokens, z, c, ct, ci, recip, beta)
        return log_lik

    _BLOCKED[mutation] = blocked_move
    return blocked_move


#: The production blocked move (no mutation); see :func:`build_blocked`.
blocked_move = build_blocked(None)


def scratch(tokens: np.ndarray, n_states: int, n_symbols: int) -> tuple[np.ndarray, np.ndarray]:
    """``(theta, filt)``: the blocked move's scratch for ``tokens`` at ``N = n_states``."""
    return (np.zeros((n_states + 1, n_symbols, n_states + 1)),
            np.zeros((max(1, int(max_letters(tokens))), n_states + 1)))


@njit(cache=False)  # a caller of the sweep: compiled per process (_cgs_pfa_kernel docstring)
def sweeps(n_sweeps, first, every, positions, tokens, z, c, ct, ci, recip, rng, beta, theta, filt):
    """``n_sweeps`` collapsed Gibbs sweeps (each on ``rng.random(M)``, as
    :func:`bayesfa.samplers.pfa._cgs_pfa_kernel.sweeps`), the sweep of global index ``s``
    (0-based; this call's first is ``first``) followed by :func:`blocked_move` when
    ``(s + 1) % every == 0``. The schedule depends on the sweep index only, so blocks and
    resumes never move it. Returns the positions the Gibbs sweeps moved (int64, summed; the
    blocked moves' changes are not counted)."""
    g = np.zeros(c.shape[2], dtype=np.float32)
    moved = 0
    for s in range(n_sweeps):
        uniforms = rng.random(positions.shape[0])
        moved += sweep_positions(positions, uniforms, tokens, z, c, ct, ci, recip, g, beta)
        if (first + s + 1) % every == 0:
            blocked_move(tokens, z, c, ct, ci, recip, rng, beta, theta, filt)
    return moved


@njit(cache=False)  # a caller of the sweep: compiled per process (_cgs_pfa_kernel docstring)
def sample_draws(period, first, every, positions, tokens, z, c, ct, ci, recip, rng, beta, theta,
                 filt, out_counts, out_log_joint, out_n_states, out_n_edges, out_stats):
    """:func:`bayesfa.samplers.pfa._cgs_pfa_kernel.sample_draws` with :func:`sweeps` (draw
    ``d`` of this call after the sweeps ``first + d period .. first + (d + 1) period - 1``;
    ``out_stats[d, 0]``, the positions its Gibbs sweeps moved)."""
    for d in range(out_counts.shape[0]):
        out_stats[d, 0] = sweeps(period, first + d * period, every, positions, tokens, z, c, ct, ci, recip, rng,
               beta, theta, filt)
        record_draw(d, c, ci, beta, out_counts, out_log_joint, out_n_states, out_n_edges)


__all__ = ["MUTATIONS", "SLICE_MUTATIONS", "blocked_move", "build_blocked", "build_ffbs",
           "build_slice", "build_theta", "draw_theta", "ffbs_paths", "max_letters", "sample_draws",
           "scratch", "slice_paths", "sort_cells", "sweeps"]
