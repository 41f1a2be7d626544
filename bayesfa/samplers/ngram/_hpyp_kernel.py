"""Numba kernels of the hierarchical Pitman-Yor language model (Teh 2006, "A hierarchical
Bayesian language model based on Pitman-Yor processes", Sect. 3-4 and the Gibbs sampler of
Teh 2006 tech. report TRA2/06, App. C) and of the sequence memoizer (Wood et al. 2009; the
single-particle incremental variant of Gasthaus, Wood & Teh 2010).

A *context tree* (built by :mod:`bayesfa.samplers.ngram.hpyp`) has one restaurant per node ``u``
(a context, read backwards from the symbol it predicts); ``parent[u]`` is the node of the
context one or more symbols shorter (``-1`` for the root, the empty context, node 0). The
root's parent is the uniform base ``G0(w) = 1 / S``. Each node has a discount ``nd[u]`` and a
concentration ``nth[u]`` (HPYP: the per-depth ``d_|u|, theta_|u|``; memoizer: concentration 0
and the product of the per-depth discounts along the compressed edge, which is what
coagulation gives, Wood et al. 2009, Theorem 1).

Chain state (``U`` nodes, ``S`` symbols; every array C-contiguous and mutated in place):

- ``c`` int32 ``[U, S]``: ``c_uw`` customers of restaurant ``u`` eating dish ``w``;
- ``t`` int32 ``[U, S]``: ``t_uw`` tables serving ``w`` in ``u``;
- ``cs``, ``ts`` int32 ``[U]``: ``c_u.``, ``t_u.``;
- (Gibbs only) ``sizes`` int32 ``[P]``: the table sizes of slot ``(u, w)`` are
  ``sizes[off[u, w] : off[u, w] + t[u, w]]``; ``off`` int64 ``[U, S]`` is fixed by the front
  with room for every customer the slot can ever hold.
- (HPYP) ``disc``, ``conc`` float64 ``[K]``: the per-depth ``d_m``, ``theta_m``.

Between two sweeps these arrays and the Generator are the whole state of an HPYP chain (the
per-node ``nd``, ``nth`` follow from ``disc``, ``conc``): :func:`run_sweeps` continues from
them, which is what a checkpoint of :mod:`bayesfa.samplers.ngram.hpyp` saves.

Invariants: ``c[u, w] = #data tokens whose deepest context is u with symbol w + sum over the
children v of t[v, w]``; ``1 <= t[u, w] <= c[u, w]`` whenever ``c[u, w] > 0``, else both 0;
the sizes of a slot are positive and sum to ``c[u, w]``.

Seating a customer of dish ``w`` at ``u`` (Teh 2006, Eq. 9 and the text after it): it joins
an existing table ``k`` with weight ``c_uwk - d`` or opens a new table with weight
``(theta + d t_u.) p(w | parent(u))``, a new table sending one customer to the parent. The
predictive of ``w`` in ``u`` is Eq. 10:
``p(w|u) = (c_uw - d t_uw + (theta + d t_u.) p(w|parent(u))) / (theta + c_u.)``.
The choice join-vs-new only needs ``c_uw - d t_uw`` (the summed join weights), so adding
customers needs no table sizes; removing one (Gibbs) does.

Why this is not :mod:`bayesfa.samplers.pdia._crf_kernel`: that module seats the PDIA's two-level
franchise (restaurants are alphabet columns, a new dish is a new *state* from a non-atomic
base, tables have ids whose dishes MH moves relabel); here the hierarchy is a context tree of
any depth over an atomic base (the alphabet), and a new table recursively seats a customer in
the parent restaurant. The one piece both need, the log EPPF of a Pitman-Yor partition, is
:func:`bayesfa.samplers.pdia._crf_kernel.log_eppf_py`, reused by :func:`log_joint`.

``variant`` (validation mutant) 1: the join weight forgets the discount (``c_uw`` instead of
``c_uw - d t_uw``) while the predictive keeps it, so the sampler targets the wrong posterior;
2, 3 and 4: a wrong auxiliary variable in the ``d, theta`` move (:func:`sample_hyper`); 5: the
recorded log joint's base term counted once (:func:`log_joint`; the draws are untouched). Checked by
:mod:`bayesfa.validation.ngram.hpyp`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bayesfa.samplers.pdia._crf_kernel import log_eppf_py


# -- context tree ----------------------------------------------------------------------------

@njit(cache=True)
def lcp_kasai(r, sa):
    """``lcp[i]`` = longest common prefix of the suffixes ``sa[i-1]`` and ``sa[i]`` of ``r``
    (Kasai et al. 2001; ``lcp[0] = 0``)."""
    n = r.shape[0]
    rank = np.empty(n, dtype=np.int64)
    for i in range(n):
        rank[sa[i]] = i
    lcp = np.zeros(n, dtype=np.int64)
    h = 0
    for i in range(n):
        if rank[i] > 0:
            j = sa[rank[i] - 1]
            while i + h < n and j + h < n and r[i + h] == r[j + h]:
                h += 1
            lcp[rank[i]] = h
            if h > 0:
                h -= 1
        else:
            h = 0
    return lcp


@njit(cache=True)
def build_trie(lens, lcps, compress, max_nodes):
    """The trie of sorted strings: ``lens[i]`` the length of the ``i``-th string in sorted
    order, ``lcps[i]`` its common prefix with string ``i-1``. ``compress``: only branching
    nodes and string ends are nodes (path compression); else every prefix is a node.

    Returns ``(parent, depth, n_nodes, node_of)``: node 0 is the root (the empty string),
    ``node_of[i]`` the node of string ``i``."""
    parent = np.full(max_nodes, -1, dtype=np.int64)
    depth = np.zeros(max_nodes, dtype=np.int64)
    stack = np.zeros(max_nodes, dtype=np.int64)
    node_of = np.zeros(lens.shape[0], dtype=np.int64)
    top = 0  # stack[0] = root
    n_nodes = 1
    for i in range(lens.shape[0]):
        h = lcps[i]
        last = -1
        while depth[stack[top]] > h:
            last = stack[top]
            top -= 1
        if depth[stack[top]] < h:  # split the edge to ``last`` at depth h (compressed only)
            v = n_nodes
            n_nodes += 1
            parent[v] = stack[top]
            depth[v] = h
            parent[last] = v
            top += 1
            stack[top] = v
        if lens[i] == h:
            node_of[i] = stack[top]
            continue
        d0 = h + 1 if not compress else lens[i]
        for dd in range(d0, lens[i] + 1):
            v = n_nodes
            n_nodes += 1
            parent[v] = stack[top]
            depth[v] = dd
            top += 1
            stack[top] = v
        node_of[i] = stack[top]
    return parent[:n_nodes].copy(), depth[:n_nodes].copy(), n_nodes, node_of


@njit(cache=True)
def node_levels(parent):
    """Number of ancestors of every node (the root: 0); nodes need not be in tree order."""
    n = parent.shape[0]
    lev = np.full(n, -1, dtype=np.int64)
    lev[0] = 0
    stack = np.empty(n, dtype=np.int64)
    for u in range(n):
        k = 0
        v = u
        while lev[v] < 0:
            stack[k] = v
            k += 1
            v = parent[v]
        for j in range(k - 1, -1, -1):
            lev[stack[j]] = lev[parent[stack[j]]] + 1
    return lev


# -- seating ---------------------------------------------------------------------------------

@njit(cache=True)
def _path(u, parent, path):
    """Nodes from ``u`` up to the root into ``path``; returns their number."""
    n = 0
    while u >= 0:
        path[n] = u
        n += 1
        u = parent[u]
    return n


@njit(cache=True)
def _predictives(w, n, path, nd, nth, c, t, cs, ts, base, pp):
    """``pp[k]`` = ``p(w | parent of path[k])`` for ``k < n`` (the root's parent: ``base``)
    and ``pp[n]`` unused; returns ``p(w | path[0])`` (Teh 2006, Eq. 10)."""
    p = base
    for k in range(n - 1, -1, -1):
        pp[k] = p
        u = path[k]
        if cs[u] > 0:
            d = nd[u]
            p = (c[u, w] - d * t[u, w] + (nth[u] + d * ts[u]) * p) / (nth[u] + cs[u])
    return p


@njit(cache=True)
def predictive(u, w, parent, nd, nth, c, t, cs, ts, base, path, pp):
    """``p(w | u)`` under the current seating (Eq. 10)."""
    n = _path(u, parent, path)
    return _predictives(w, n, path, nd, nth, c, t, cs, ts, base, pp)


@njit(cache=True)
def add_customer(rng, u, w, parent, nd, nth, c, t, cs, ts, base, path, pp, track, sizes, off,
                 log_nodes, n_log, variant, chosen=None):
    """Seat a customer of dish ``w`` at ``u`` (a new table recursing to the parent);
    returns ``p(w | u)`` before seating. ``track``: also choose the table and update
    ``sizes``; then ``chosen`` (int64 ``[1]``, if given) receives the index of the table
    joined at ``u`` itself, or -1 for a new one. ``log_nodes`` (if ``n_log[0] >= 0``) records every node whose ``c`` grew,
    as ``-v - 1`` when its ``t`` grew too, so that :func:`score_tokens` can undo it.
    ``path``/``pp`` are scratch of length at least the node depth of ``u`` plus one."""
    n = _path(u, parent, path)
    p = _predictives(w, n, path, nd, nth, c, t, cs, ts, base, pp)
    for k in range(n):
        v = path[k]
        d = nd[v]
        join = 0.0
        if cs[v] > 0:
            join = c[v, w] - (0.0 if variant == 1 else d) * t[v, w]
            new = (nth[v] + d * ts[v]) * pp[k]
            x = rng.random() * (join + new)
        else:
            x = 1.0
        c[v, w] += 1
        cs[v] += 1
        if x < join:
            if track:
                o = off[v, w]
                y = rng.random() * join
                acc = 0.0
                last = t[v, w] - 1
                for j in range(t[v, w]):
                    acc += sizes[o + j] - d
                    if y < acc:
                        last = j
                        break
                sizes[o + last] += 1
                if chosen is not None and k == 0:
                    chosen[0] = last
            if n_log[0] >= 0:
                log_nodes[n_log[0]] = v
                n_log[0] += 1
            return p
        if track:
            sizes[off[v, w] + t[v, w]] = 1
            if chosen is not None and k == 0:
                chosen[0] = -1
        t[v, w] += 1
        ts[v] += 1
        if n_log[0] >= 0:
            log_nodes[n_log[0]] = -v - 1
            n_log[0] += 1
    return p


@njit(cache=True)
def remove_customer(rng, u, w, parent, c, t, cs, ts, sizes, off):
    """Unseat one customer of dish ``w`` from ``u``: a table chosen with probability
    proportional to its size (the customers of a dish are exchangeable); an emptied table
    removes its customer from the parent. Returns the index of the table left at ``u``
    itself, or -1 when that table was emptied (and removed)."""
    left = -1
    first = True
    while u >= 0:
        o = off[u, w]
        y = rng.random() * c[u, w]
        acc = 0.0
        k = t[u, w] - 1
        for j in range(t[u, w]):
            acc += sizes[o + j]
            if y < acc:
                k = j
                break
        sizes[o + k] -= 1
        c[u, w] -= 1
        cs[u] -= 1
        if sizes[o + k] > 0:
            return k if first else left
        first = False
        sizes[o + k] = sizes[o + t[u, w] - 1]
        t[u, w] -= 1
        ts[u] -= 1
        u = parent[u]
    return left


# -- HPYP Gibbs sampler ----------------------------------------------------------------------

@njit(cache=True)
def set_node_params(depth, disc, conc, nd, nth):
    """HPYP: ``nd[u] = disc[depth[u]]``, ``nth[u] = conc[depth[u]]``."""
    for u in range(depth.shape[0]):
        nd[u] = disc[depth[u]]
        nth[u] = conc[depth[u]]


@njit(cache=True)
def sweep(rng, tok_node, tok_sym, parent, nd, nth, c, t, cs, ts, base, path, pp, sizes, off,
          variant):
    """One Gibbs sweep over the seating arrangement: every data customer unseated and seated
    again from its conditional (Teh 2006 TR, App. C). Returns how many data customers were
    seated at another table of their own restaurant than the one they left (a new table
    after leaving one of their own is the same seating): the sampler statistic ``moved``."""
    log_nodes = np.zeros(1, dtype=np.int64)
    n_log = np.full(1, -1, dtype=np.int64)
    chosen = np.zeros(1, dtype=np.int64)
    moved = 0
    for i in range(tok_node.shape[0]):
        left = remove_customer(rng, tok_node[i], tok_sym[i], parent, c, t, cs, ts, sizes, off)
        add_customer(rng, tok_node[i], tok_sym[i], parent, nd, nth, c, t, cs, ts, base, path,
                     pp, True, sizes, off, log_nodes, n_log, variant, chosen)
        moved += (chosen[0] != left) if left >= 0 else (chosen[0] >= 0)
    return moved


@njit(cache=True)
def sample_hyper(rng, depth, c, t, cs, ts, sizes, off, disc, conc, fixed_d, fixed_th, prior,
                 variant=0):
    """Per-depth ``d_m, theta_m`` by the auxiliary variables of Teh 2006 TR, App. C:
    ``x_u ~ Beta(theta + 1, c_u. - 1)``, ``y_ui ~ Bern(theta / (theta + d i))`` for
    ``i < t_u.``, ``z_uwkj ~ Bern((j - 1) / (j - d))`` for ``j < c_uwk``; then
    ``d ~ Beta(a + sum(1 - y), b + sum(1 - z))`` and
    ``theta ~ Gamma(alpha + sum y, beta - sum log x)``. ``prior = (a, b, alpha, beta)``.
    ``variant`` (validation mutants; 0 and 1 are the method here): 2 draws
    ``x_u ~ Beta(theta, c_u. - 1)``, 3 draws ``y_ui ~ Bern(d i / (theta + d i))``, 4 leaves out
    the restaurants with exactly two customers (an off-by-one on ``c_u. >= 2``)."""
    m = disc.shape[0]
    sy = np.zeros(m)
    s1y = np.zeros(m)
    s1z = np.zeros(m)
    slx = np.zeros(m)
    n_sym = c.shape[1]
    for u in range(depth.shape[0]):
        if cs[u] < 2 or (variant == 4 and cs[u] == 2):
            continue
        k = depth[u]
        d = disc[k]
        th = conc[k]
        slx[k] += math.log(rng.beta(th if variant == 2 else th + 1.0, cs[u] - 1.0))
        for i in range(1, ts[u]):
            if rng.random() < ((d * i) if variant == 3 else th) / (th + d * i):
                sy[k] += 1.0
            else:
                s1y[k] += 1.0
        for w in range(n_sym):
            o = off[u, w]
            for j0 in range(t[u, w]):
                for j in range(1, sizes[o + j0]):
                    if not rng.random() < (j - 1.0) / (j - d):
                        s1z[k] += 1.0
    for k in range(m):
        if not fixed_d[k]:
            disc[k] = rng.beta(prior[0] + s1y[k], prior[1] + s1z[k])
        if not fixed_th[k]:
            conc[k] = rng.gamma(prior[2] + sy[k], 1.0 / (prior[3] - slx[k]))


@njit(cache=True)
def log_joint(parent, nd, nth, t, ts, sizes, off, base, variant):
    """``log p(data, seating)``: the log EPPF of every restaurant (all its tables, the dishes
    pooled: a table's dish is the parent's customer) plus ``t_root,w log G0(w)``. ``variant``
    5 (validation mutant ``log-joint-root-base``, a slip in what is recorded only): the base
    term ``log G0`` counted once instead of once per root table."""
    n_sym = t.shape[1]
    lp = 0.0
    buf = np.empty(1 + int(ts.max()), dtype=np.int64)
    for u in range(parent.shape[0]):
        g = 0
        for w in range(n_sym):
            o = off[u, w]
            for j in range(t[u, w]):
                buf[g] = sizes[o + j]
                g += 1
        lp += log_eppf_py(buf, g, nth[u], nd[u])
    return lp + (1.0 if variant == 5 else ts[0]) * math.log(base)


@njit(cache=True)
def seat_data(rng, tok_node, tok_sym, parent, depth, c, t, cs, ts, sizes, off, disc, conc, base,
              variant):
    """The chain's start: every data customer seated once, incrementally, in data order."""
    nd = np.empty(parent.shape[0])
    nth = np.empty(parent.shape[0])
    set_node_params(depth, disc, conc, nd, nth)
    path = np.empty(node_levels(parent).max() + 2, dtype=np.int64)
    pp = np.empty(path.shape[0])
    log_nodes = np.zeros(1, dtype=np.int64)
    n_log = np.full(1, -1, dtype=np.int64)
    for i in range(tok_node.shape[0]):
        add_customer(rng, tok_node[i], tok_sym[i], parent, nd, nth, c, t, cs, ts, base, path,
                     pp, True, sizes, off, log_nodes, n_log, variant)


@njit(cache=True)
def run_sweeps(rng, tok_node, tok_sym, parent, depth, c, t, cs, ts, sizes, off, disc, conc,
               fixed_d, fixed_th, prior, base, it0, it1, burn_in, period, variant,
               out_t, out_disc, out_conc, out_lj, out_moved, slot_node, slot_sym, draw):
    """Sweeps ``it0 .. it1 - 1`` of a seated chain, each followed by a hyperparameter update;
    after ``burn_in``, every ``period``-th sweep records ``t`` at the slots ``(slot_node,
    slot_sym)`` into ``out_t[draw]``, the hyperparameters and the log joint, and each sweep
    after ``burn_in`` adds the customers it moved (:func:`sweep`) to ``out_moved[draw]``
    (int64, zeros to start). Returns the next ``draw``. The whole chain state is in the arrays and ``rng``: calls over consecutive
    ranges draw exactly what one call over their union draws."""
    nd = np.empty(parent.shape[0])
    nth = np.empty(parent.shape[0])
    set_node_params(depth, disc, conc, nd, nth)
    path = np.empty(node_levels(parent).max() + 2, dtype=np.int64)
    pp = np.empty(path.shape[0])
    for it in range(it0, it1):
        moved = sweep(rng, tok_node, tok_sym, parent, nd, nth, c, t, cs, ts, base, path, pp,
                      sizes, off, variant)
        if it >= burn_in and draw < out_t.shape[0]:
            out_moved[draw] += moved
        sample_hyper(rng, depth, c, t, cs, ts, sizes, off, disc, conc, fixed_d, fixed_th, prior,
                     variant)
        set_node_params(depth, disc, conc, nd, nth)
        if it >= burn_in and (it - burn_in + 1) % period == 0 and draw < out_t.shape[0]:
            for s in range(slot_node.shape[0]):
                out_t[draw, s] = t[slot_node[s], slot_sym[s]]
            out_disc[draw, :] = disc
            out_conc[draw, :] = conc
            out_lj[draw] = log_joint(parent, nd, nth, t, ts, sizes, off, base, variant)
            draw += 1
    return draw


@njit(cache=True)
def run_chain(rng, tok_node, tok_sym, parent, depth, c, t, cs, ts, sizes, off, disc, conc,
              fixed_d, fixed_th, prior, base, iterations, burn_in, period, variant,
              out_t, out_disc, out_conc, out_lj, out_moved, slot_node, slot_sym):
    """A whole chain: :func:`seat_data`, then :func:`run_sweeps` over ``iterations`` sweeps."""
    seat_data(rng, tok_node, tok_sym, parent, depth, c, t, cs, ts, sizes, off, disc, conc, base,
              variant)
    run_sweeps(rng, tok_node, tok_sym, parent, depth, c, t, cs, ts, sizes, off, disc, conc,
               fixed_d, fixed_th, prior, base, 0, iterations, burn_in, period, variant,
               out_t, out_disc, out_conc, out_lj, out_moved, slot_node, slot_sym, 0)


# -- prediction and the incremental (single-particle) pass -----------------------------------

@njit(cache=True)
def fill_customers(parent, depth_order, tok_node, tok_sym, n_train, c, t, cs, ts):
    """``c`` and the sums from ``t`` (Invariants): the first ``n_train`` data customers at
    their deepest nodes, then every node's tables as customers of its parent, deepest nodes
    first (``depth_order``)."""
    for i in range(n_train):
        c[tok_node[i], tok_sym[i]] += 1
    for k in range(depth_order.shape[0]):
        v = depth_order[k]
        p = parent[v]
        for w in range(c.shape[1]):
            if p >= 0:
                c[p, w] += t[v, w]
            cs[v] += c[v, w]
            ts[v] += t[v, w]


@njit(cache=True)
def score_tokens(rng, tok_node, tok_sym, start, offsets, reset, parent, nd, nth, c, t, cs, ts,
                 base, path_len, out, variant=0):
    """Seat the tokens ``start ..`` one by one, each predicted first (Eq. 10) then added to
    the model ("integrating the test data in the standard Bayesian way"); ``out[s]`` is the
    log probability of the tokens ``offsets[s] .. offsets[s+1]`` (relative to ``start``).
    ``reset``: each string is scored given the data before ``start`` only (its seatings are
    undone after it); else the strings continue one another. ``variant``: as
    :func:`add_customer` (0, the model; a validation mutant of the memoizer otherwise)."""
    path = np.empty(path_len, dtype=np.int64)
    pp = np.empty(path_len)
    longest = 0
    for s in range(offsets.shape[0] - 1):
        longest = max(longest, offsets[s + 1] - offsets[s])
    log_nodes = np.empty(path.shape[0] * (longest if reset else 1) + 1, dtype=np.int64)
    n_log = np.zeros(1, dtype=np.int64)
    dummy = np.zeros(1, dtype=np.int32)
    doff = np.zeros((1, 1), dtype=np.int64)
    syms = np.empty(longest + 1, dtype=np.int64)
    ends = np.empty(longest + 1, dtype=np.int64)
    for s in range(offsets.shape[0] - 1):
        lp = 0.0
        for k in range(offsets[s + 1] - offsets[s]):
            i = start + offsets[s] + k
            n_log[0] = n_log[0] if reset else -1
            p = add_customer(rng, tok_node[i], tok_sym[i], parent, nd, nth, c, t, cs, ts, base,
                             path, pp, False, dummy, doff, log_nodes, n_log, variant)
            lp += math.log(p)
            if reset:
                syms[k] = tok_sym[i]
                ends[k] = n_log[0]
        out[s] = lp
        if reset:
            # undo token by token (each token's log entries share its dish)
            for k in range(offsets[s + 1] - offsets[s] - 1, -1, -1):
                lo = ends[k - 1] if k > 0 else 0
                for q in range(ends[k] - 1, lo - 1, -1):
                    v = log_nodes[q]
                    if v < 0:
                        v = -v - 1
                        t[v, syms[k]] -= 1
                        ts[v] -= 1
                    c[v, syms[k]] -= 1
                    cs[v] -= 1
            n_log[0] = 0


@njit(cache=True)
def score_samples(rng, tables, slot_node, slot_sym, disc, conc, parent, depth, dord, tok_node,
                  tok_sym, n_train, offsets, reset, n_sym, path_len, out):
    """:func:`score_tokens` for every recorded draw of a chain: ``tables`` ``[draw, slot]``
    (``t`` at the slots ``(slot_node, slot_sym)``), ``disc``/``conc`` ``[draw, depth]``;
    ``out`` ``[draw, n_strings]``."""
    n_nodes = parent.shape[0]
    c = np.zeros((n_nodes, n_sym), dtype=np.int32)
    t = np.zeros((n_nodes, n_sym), dtype=np.int32)
    cs = np.zeros(n_nodes, dtype=np.int32)
    ts = np.zeros(n_nodes, dtype=np.int32)
    nd = np.empty(n_nodes)
    nth = np.empty(n_nodes)
    for d in range(tables.shape[0]):
        c[:] = 0
        t[:] = 0
        cs[:] = 0
        ts[:] = 0
        for s in range(slot_node.shape[0]):
            t[slot_node[s], slot_sym[s]] = tables[d, s]
        fill_customers(parent, dord, tok_node, tok_sym, n_train, c, t, cs, ts)
        set_node_params(depth, disc[d], conc[d], nd, nth)
        score_tokens(rng, tok_node, tok_sym, n_train, offsets, reset, parent, nd, nth, c, t, cs,
                     ts, 1.0 / n_sym, path_len, out[d])
