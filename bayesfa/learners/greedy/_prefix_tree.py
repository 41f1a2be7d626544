"""Shared pieces of the greedy state mergers (EStateMerge, ALERGIA): the prefix tree, the
red-blue fold, and the smoothed PDFA they return.

Arrays (C-contiguous; symbols are token values: column 0 is the end marker, ``1..A`` the
letters, as in :mod:`bayesfa.corpus`; ``n`` nodes of the prefix tree):

- ``child`` int32 ``[n, A+1]``: next node on letter ``a`` (``-1`` if none; column 0 unused).
- ``count`` int64 ``[n, A+1]``: ``count[q, a]`` strings that reach ``q`` and then read ``a``
  (``a = 0``: end there). ``C_q = count[q].sum()`` is the number of strings through ``q``.
- ``order`` int32 ``[n, A]`` and ``n_keys`` int32 ``[n]``: the letters of ``q``'s children
  in the order they were first created (first occurrence in the training file, then every
  child attached by a fold). Folds visit children in this order, as AALpy's recursive
  ``fold`` visits a Python dict, so that merged nodes keep the same names.
- ``sym`` int32 ``[n]``: the letter on the edge into ``q`` (0 for the root).
- ``parent`` int32 ``[n]``: the node whose ``child`` points at ``q`` (``-1`` for the root).

Node ids are in breadth-first order with children in letter order, i.e. sorted by
``(len(prefix), prefix)``, the order in which red-blue state merging (ALERGIA; Carrasco &
Oncina 1994) takes its blue states. Invariant during merging: red states may point at red
states; every other live node has exactly one incoming pointer (a tree hanging off the red
part), so folding a blue subtree never reads a node it writes.

A learned machine is saved as ``delta`` int32 ``[Q, A+1]`` (``-1`` where undefined; column 0
unused) and ``counts`` int64 ``[Q, A+1]`` over states ``0..Q-1`` (0 the start), plus
``unigram`` int64 ``[A+1]``, the symbol counts of the whole training set. Prediction
smooths every state's counts with the Dirichlet(beta) posterior mean
``(C_qa + beta) / (C_q + (A+1) beta)`` (Shibata & Yoshinaka 2013, Eq. 21's predictive), so
every letter and the end have positive probability in every state; an undefined transition
leads to one extra *sink* state that emits by the smoothed unigram distribution and loops
on itself. Every string therefore gets a positive probability.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bayesfa.corpus import Corpus


# -- the prefix tree ------------------------------------------------------------------------
@njit(cache=True)
def _build_raw(tokens, alphabet_size):
    n_sym = alphabet_size + 1
    cap = tokens.shape[0] + 1
    child = np.full((cap, n_sym), -1, dtype=np.int32)
    count = np.zeros((cap, n_sym), dtype=np.int64)
    order = np.zeros((cap, alphabet_size), dtype=np.int32)
    n_keys = np.zeros(cap, dtype=np.int32)
    n = 1
    q = 0
    for t in range(tokens.shape[0]):
        a = tokens[t]
        count[q, a] += 1
        if a == 0:
            q = 0
            continue
        c = child[q, a]
        if c < 0:
            c = n
            n += 1
            child[q, a] = c
            order[q, n_keys[q]] = a
            n_keys[q] += 1
        q = c
    return child[:n], count[:n], order[:n], n_keys[:n]


@njit(cache=True)
def _bfs_relabel(child, count, order, n_keys):
    n, n_sym = child.shape
    new_id = np.full(n, -1, dtype=np.int32)
    queue = np.empty(n, dtype=np.int32)
    queue[0] = 0
    new_id[0] = 0
    head, tail = 0, 1
    while head < tail:
        q = queue[head]
        head += 1
        for a in range(1, n_sym):
            c = child[q, a]
            if c >= 0:
                new_id[c] = tail
                queue[tail] = c
                tail += 1
    child2 = np.full((n, n_sym), -1, dtype=np.int32)
    count2 = np.zeros((n, n_sym), dtype=np.int64)
    order2 = np.zeros_like(order)
    n_keys2 = np.zeros_like(n_keys)
    sym = np.zeros(n, dtype=np.int32)
    parent = np.full(n, -1, dtype=np.int32)
    for old in range(n):
        q = new_id[old]
        count2[q] = count[old]
        order2[q] = order[old]
        n_keys2[q] = n_keys[old]
        for a in range(1, n_sym):
            c = child[old, a]
            if c >= 0:
                child2[q, a] = new_id[c]
                sym[new_id[c]] = a
                parent[new_id[c]] = q
    return child2, count2, order2, n_keys2, sym, parent


def prefix_tree(corpus: Corpus):
    """The frequency prefix tree of ``corpus``: ``(child, count, order, n_keys, sym, parent)``
    (see the module docstring), node ids in breadth-first letter order."""
    raw = _build_raw(corpus.tokens, corpus.alphabet_size)
    return _bfs_relabel(*raw)


def prefix_tree_bytes(corpus: Corpus) -> int:
    """Peak bytes of :func:`prefix_tree` and of a merger working on it: the larger of

    - the build: :func:`_build_raw`'s tables (``child``, ``count``, ``order``, ``n_keys``),
      allocated for ``n_tokens + 1`` rows before the tree is known, held while
      :func:`_bfs_relabel` makes the tree of at most ``n_letters + 1`` nodes (the same tables
      plus ``sym`` and ``parent``, and its ``new_id`` and ``queue``, int32 each). Exact on a
      corpus whose every letter opens a node, up to the 8 bytes a node of ``new_id`` and
      ``queue`` (Python never sees them);
    - the merge: three copies of the tree's tables (a row each, with 12 bytes of
      ``sym``, ``parent`` and the red-blue flags): the tree, the merger's copy (ALERGIA copies
      ``child`` and ``count``), and the learned machine with the merger's scratch.

    ``tests/test_greedy.py::test_memory_estimate_is_the_arrays_the_build_and_the_merge_hold``
    compares it with those arrays' byte counts (before, the build's ``n_tokens + 1`` rows
    were not counted: a corpus of many empty strings needed more than the estimate).
    """
    nodes = corpus.n_letters + 1
    table = (corpus.alphabet_size + 1) * (4 + 8) + corpus.alphabet_size * 4 + 4
    build = (corpus.n_tokens + 1) * table + nodes * (table + 4 * 4)
    merge = 3 * nodes * (table + 3 * 4)
    return int(max(build, merge))


# -- red-blue machinery ---------------------------------------------------------------------
@njit(cache=True)
def heap_push(heap, size, value):
    """Push ``value`` on the binary min-heap ``heap[:size]``, ``heap`` grown when full;
    returns ``(heap, new size)``."""
    if size >= heap.shape[0]:
        heap = grow(heap)
    i = size
    heap[i] = value
    while i > 0:
        p = (i - 1) // 2
        if heap[p] <= heap[i]:
            break
        heap[p], heap[i] = heap[i], heap[p]
        i = p
    return heap, size + 1


@njit(cache=True)
def heap_pop(heap, size):
    """Pop the smallest value of ``heap[:size]``: ``(value, new size)``."""
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        m = left
        if left + 1 < size and heap[left + 1] < heap[left]:
            m = left + 1
        if heap[i] <= heap[m]:
            break
        heap[i], heap[m] = heap[m], heap[i]
        i = m
    return top, size


@njit(cache=True)
def grow(heap):
    out = np.empty(2 * heap.shape[0], dtype=heap.dtype)
    out[:heap.shape[0]] = heap
    return out


@njit(cache=True)
def push_pair(stack, top, x, y):
    """Push the pair ``(x, y)`` of a fold's depth-first walk on ``stack[:top]`` (three slots a
    pair: ``x``, ``y`` and the index into ``order[y]`` of the next letter, here 0). Returns
    ``(stack, top)``; ``stack`` is grown when full."""
    if top + 3 > stack.shape[0]:
        stack = grow(stack)
    stack[top] = x
    stack[top + 1] = y
    stack[top + 2] = 0
    return stack, top + 3


@njit(cache=True)
def next_letter(stack, top, order, n_keys):
    """The next step of a fold's walk: drops the pairs on ``stack[:top]`` whose letters are
    all visited and returns ``(top, x, y, a)`` with ``a`` the next letter of the top pair's
    ``y`` in ``order`` (its index advanced), or ``top == 0`` when the walk is over."""
    while top > 0:
        y = stack[top - 2]
        k = stack[top - 1]
        if k < n_keys[y]:
            stack[top - 1] = k + 1
            return top, stack[top - 3], y, order[y, k]
        top -= 3
    return 0, -1, -1, -1


@njit(cache=True)
def fold(red, blue, child, count, order, n_keys, parent, is_red, dead, heap, heap_size, stack):
    """Fold the subtree of ``blue`` into ``red`` (Carrasco & Oncina 1994; AALpy's ``fold``):
    counts of common letters are added and their children folded in turn; a child ``red``
    lacks is attached to it. Depth-first (:func:`push_pair`, :func:`next_letter`), children
    in ``order``. Blue-side nodes are marked ``dead``; a child attached to a red state is
    pushed on the blue heap.

    ``stack`` int64 is scratch. Returns ``(heap, heap_size, stack)`` (either may have been
    reallocated).
    """
    count[red, 0] += count[blue, 0]
    dead[blue] = True
    stack, top = push_pair(stack, 0, red, blue)
    while True:
        top, x, y, a = next_letter(stack, top, order, n_keys)
        if top == 0:
            break
        yc = child[y, a]
        xc = child[x, a]
        if xc >= 0:
            count[x, a] += count[y, a]
            count[xc, 0] += count[yc, 0]
            dead[yc] = True
            stack, top = push_pair(stack, top, xc, yc)
        else:
            child[x, a] = yc
            count[x, a] = count[y, a]
            order[x, n_keys[x]] = a
            n_keys[x] += 1
            parent[yc] = x
            if is_red[x]:
                heap, heap_size = heap_push(heap, heap_size, yc)
    return heap, heap_size, stack


@njit(cache=True)
def pop_blue(heap, heap_size, child, sym, parent, is_red, dead):
    """The smallest live blue node (a non-red child of a red state), or -1 when none is left."""
    while heap_size > 0:
        b, heap_size = heap_pop(heap, heap_size)
        if is_red[b] or dead[b]:
            continue
        p = parent[b]
        if p >= 0 and is_red[p] and child[p, sym[b]] == b:
            return b, heap_size
    return -1, heap_size


@njit(cache=True)
def promote(b, red_list, n_red, is_red, child, order, n_keys, heap, heap_size):
    """Make ``b`` red (appended to ``red_list``, which stays sorted) and push its children as
    blue.

    Appending keeps ``red_list`` sorted: the tree is numbered breadth first (a node's
    descendants after it), blues leave the heap smallest first (:func:`pop_blue`), and every
    blue pushed after ``b`` left the heap is a child of ``b`` (here) or a node of a subtree
    folded from a blue popped no earlier than ``b`` (:func:`fold`): each exceeds ``b``, so the
    reds are promoted in increasing order. (An insertion sort stood here until the mutation
    run of issue 39 found its shifting loop never entered.)"""
    red_list[n_red] = b
    n_red += 1
    is_red[b] = True
    for k in range(n_keys[b]):
        c = child[b, order[b, k]]
        if not is_red[c]:
            heap, heap_size = heap_push(heap, heap_size, c)
    return n_red, heap, heap_size


@njit(cache=True)
def red_blue_start(child, order, n_keys):
    """The red-blue state of a merger at its start: the root red, its children blue.
    Returns ``(is_red, dead, red_list, n_red, heap, heap_size, stack)``: ``is_red`` and
    ``dead`` bool ``[n]``, ``red_list`` int64 ``[n]`` (the red states, sorted, first
    ``n_red``), the blue heap ``heap[:heap_size]`` and the fold's scratch ``stack``."""
    n = child.shape[0]
    is_red = np.zeros(n, dtype=np.bool_)
    dead = np.zeros(n, dtype=np.bool_)
    red_list = np.empty(n, dtype=np.int64)
    heap = np.empty(64, dtype=np.int64)
    stack = np.empty(64, dtype=np.int64)
    n_red, heap, heap_size = promote(0, red_list, 0, is_red, child, order, n_keys, heap, 0)
    return is_red, dead, red_list, n_red, heap, heap_size, stack


@njit(cache=True)
def merge_or_promote(b, r, red_list, n_red, is_red, dead, child, count, order, n_keys, sym,
                     parent, heap, heap_size, stack):
    """End blue ``b``'s turn: with ``r >= 0``, point ``b``'s parent at the red state ``r``
    and :func:`fold` ``b`` into it; with ``r < 0``, make ``b`` red (:func:`promote`).
    Returns ``(n_red, heap, heap_size, stack)``."""
    if r >= 0:
        child[parent[b], sym[b]] = r
        heap, heap_size, stack = fold(r, b, child, count, order, n_keys, parent, is_red, dead,
                                      heap, heap_size, stack)
    else:
        n_red, heap, heap_size = promote(b, red_list, n_red, is_red, child, order, n_keys, heap,
                                         heap_size)
    return n_red, heap, heap_size, stack


@njit(cache=True)
def red_machine(red_list, n_red, child, count):
    """``(delta, counts)`` of the red states, renumbered ``0..Q-1`` in ``red_list`` order."""
    n_sym = child.shape[1]
    index = np.full(child.shape[0], -1, dtype=np.int32)
    for i in range(n_red):
        index[red_list[i]] = i
    delta = np.full((n_red, n_sym), -1, dtype=np.int32)
    counts = np.zeros((n_red, n_sym), dtype=np.int64)
    for i in range(n_red):
        q = red_list[i]
        counts[i] = count[q]
        for a in range(1, n_sym):
            c = child[q, a]
            if c >= 0:
                delta[i, a] = index[c]
    return delta, counts


# -- the smoothed PDFA -----------------------------------------------------------------------
def unigram_counts(corpus: Corpus) -> np.ndarray:
    """``[A+1]`` symbol counts of ``corpus`` (end marker in column 0)."""
    return np.bincount(corpus.tokens, minlength=corpus.alphabet_size + 1).astype(np.int64)


@njit(cache=True)
def _pdfa_log_prob(delta, counts, unigram, beta, tokens, offsets):
    n_states, n_sym = counts.shape
    totals = np.zeros(n_states)
    for q in range(n_states):
        totals[q] = counts[q].sum()
    u_total = unigram.sum()
    out = np.zeros(offsets.shape[0] - 1)
    for s in range(offsets.shape[0] - 1):
        q = 0
        lp = 0.0
        for t in range(offsets[s], offsets[s + 1]):
            a = tokens[t]
            if q >= 0:
                lp += math.log((counts[q, a] + beta) / (totals[q] + n_sym * beta))
                if a != 0:
                    q = delta[q, a]
            else:  # the sink
                lp += math.log((unigram[a] + beta) / (u_total + n_sym * beta))
        out[s] = lp
    return out


def pdfa_log_prob(arrays: dict[str, np.ndarray], beta: float, corpus: Corpus) -> np.ndarray:
    """Natural-log probability of every string of ``corpus`` under the smoothed PDFA of
    ``arrays`` (``delta``, ``counts``, ``unigram``; see the module docstring)."""
    delta, counts = arrays["delta"], arrays["counts"]
    if corpus.alphabet_size + 1 != counts.shape[1]:
        raise ValueError(f"corpus has {corpus.alphabet_size} letters, the machine {counts.shape[1] - 1}")
    return _pdfa_log_prob(np.ascontiguousarray(delta, dtype=np.int32),
                          np.ascontiguousarray(counts, dtype=np.int64),
                          np.ascontiguousarray(arrays["unigram"], dtype=np.int64), float(beta),
                          corpus.tokens, corpus.offsets)


def smoothed_pdfa(arrays: dict[str, np.ndarray], beta: float):
    """The smoothed machine as a :class:`bayesfa.automata.PDFA` over letters ``0..A-1``:
    states ``0..Q-1`` as learned, plus the sink ``Q`` when some transition is undefined."""
    from bayesfa.automata import PDFA

    delta = np.asarray(arrays["delta"], dtype=np.int64)[:, 1:]
    counts = np.asarray(arrays["counts"], dtype=np.float64)
    unigram = np.asarray(arrays["unigram"], dtype=np.float64)
    n_states, n_sym = counts.shape
    probs = counts + beta  # (C_qa + beta) / (C_q + (A+1) beta) once each row is normalised
    if (delta < 0).any():
        sink = n_states
        delta = np.vstack([np.where(delta < 0, sink, delta), np.full((1, n_sym - 1), sink)])
        probs = np.vstack([probs, unigram[None, :] + beta])  # the sink: the unigram's row
    # One normalisation per row, so that it sums to 1 within float rounding (PDFA checks 1e-6).
    probs /= probs.sum(axis=1, keepdims=True)
    return PDFA(delta, probs[:, 1:], probs[:, 0], 0)
