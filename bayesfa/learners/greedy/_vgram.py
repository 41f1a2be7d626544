"""Variable-length gram (VGram) tries grown at the leaves: the shared kernel of EVGram and
CVGram (Shibata & Yoshinaka 2013, Sect. 4.5.2-4.5.3; Niesler & Woodland 1999).

A VGram predicts the symbol at position ``t`` (a letter or the end of string) from its
*context*: the longest suffix of ``^ x_1 .. x_{t-1}`` that is a node of the trie (``^`` marks
the start of the string). The trie is read backwards: the root is the empty context, and
the child of node ``w`` on letter ``b`` is ``bw`` (on ``^``: ``^w``, which has no children).

Growth: every node is examined once, when it is a leaf, level by level: leaf ``w`` is
expanded into all its children ``bw`` (every ``b`` seen before ``w`` in the training set,
``^`` included) when that raises the criterion, summed over the leaves' positions:

- EVGram: ``log Pr(a | Q)`` of Sect. 4.5.2, one Eq. 21 factor per context;
- CVGram: the K-fold cross-validated log-likelihood: the positions of fold ``k`` are
  predicted from the counts of the other folds, ``sum_{k,a} C_wka log((C_wa - C_wka + beta) /
  (C_w - C_wk + A beta))`` (Niesler & Woodland 1999 used leave-one-out; the paper's CVGram
  uses 10 folds).

Both criteria are sums over contexts, so an expansion changes only the factors of ``w``
and its children. Each level is one pass over its positions (a counting sort by ``(node, letter)``).
Expanding the whole leaf, rather than adding one child at a time, is what reproduces the
paper's Table 3 (beta = 0.5: problem 43, EVGram 0.1828 with 43 contexts, CVGram 0.1648 with
79); child by child, growth stops at contexts that only help together with longer ones
(problem 5: 4.15 above the minimum instead of 0.0135).

Arrays: ``child`` int32 ``[n, A+1]`` (column 0 is ``^``, columns ``1..A`` the letters;
``-1`` none); ``counts`` int64 ``[n, A+1]``: the training symbols (column 0 the end) at the
positions whose context ends in that node's string (for a leaf: whose context it is);
``caret`` bool ``[n]``: the context starts with ``^``.

Smoothing: prediction uses ``(C_wa + beta) / (C_w + (A+1) beta)`` at the context node, the
deepest node matching the history. A history that leaves the trie at an inner node (a
letter never seen before that context) is predicted by that inner node's counts, i.e. it
backs off to the shorter context; every string has a positive probability.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bayesfa.corpus import Corpus

EVIDENCE = 0
CROSS_VALIDATION = 1

# Validation mutants of the criterion (``variant`` of :func:`grow_trie`; 0 is the method), each
# one term changed; the fronts name them in their ``MUTATIONS``.
END_OUTSIDE_ALPHABET = 1  # both: the Dirichlet over the A letters only, A beta for (A+1) beta
NO_PRIOR_FACTOR = 2  # EVGram: Eq. 21 without the 1 / Gamma(beta) of each symbol seen
NO_NORMALISER_PRIOR = 3  # EVGram: Eq. 21 without the Gamma((A+1) beta) of each context
FOLD_NOT_HELD_OUT = 4  # CVGram: fold k's own counts left in the numerator, C_wa for C_wa - C_wka
DENOMINATOR_NOT_HELD_OUT = 5  # CVGram: C_w for C_w - C_wk in the denominator
#: the method (0) and its criterion's mutants: :func:`vgram` refuses any other ``variant``, which
#: the criterion would otherwise run as the method while a caller took it for a mutant
VARIANTS = (0, END_OUTSIDE_ALPHABET, NO_PRIOR_FACTOR, NO_NORMALISER_PRIOR, FOLD_NOT_HELD_OUT,
            DENOMINATOR_NOT_HELD_OUT)


@njit(cache=True)
def _criterion(c, kind, beta, variant=0):
    """Criterion of one context with per-fold counts ``c [K, A+1]``. ``variant`` != 0 is a
    validation mutant (``END_OUTSIDE_ALPHABET`` ... above) that changes one term; 0 is
    the method."""
    n_folds, n_sym = c.shape
    # the Dirichlet's dimension: the A letters and the end (the mutant forgets the end)
    norm = n_sym - 1 if variant == END_OUTSIDE_ALPHABET else n_sym
    if kind == EVIDENCE:
        total = 0
        s = 0.0
        for a in range(n_sym):
            x = 0
            for k in range(n_folds):
                x += c[k, a]
            if x > 0:
                if variant == NO_PRIOR_FACTOR:
                    s += math.lgamma(x + beta)
                else:
                    s += math.lgamma(x + beta) - math.lgamma(beta)
            total += x
        if total == 0:
            return 0.0
        if variant == NO_NORMALISER_PRIOR:
            return s - math.lgamma(total + norm * beta)
        return s + math.lgamma(norm * beta) - math.lgamma(total + norm * beta)
    col = np.zeros(n_sym, dtype=np.int64)
    row = np.zeros(n_folds, dtype=np.int64)
    total = 0
    for k in range(n_folds):
        for a in range(n_sym):
            col[a] += c[k, a]
            row[k] += c[k, a]
        total += row[k]
    s = 0.0
    for k in range(n_folds):
        if row[k] == 0:
            continue
        held = 0 if variant == DENOMINATOR_NOT_HELD_OUT else row[k]
        denom = math.log(total - held + norm * beta)
        for a in range(n_sym):
            x = c[k, a]
            if x > 0:
                own = 0 if variant == FOLD_NOT_HELD_OUT else x
                s += x * (math.log(col[a] - own + beta) - denom)
    return s


@njit(cache=True)
def _grow_arrays(child, counts, caret, depth, n_new):
    cap = child.shape[0]
    while cap < n_new:
        cap *= 2
    if cap == child.shape[0]:
        return child, counts, caret, depth
    c2 = np.full((cap, child.shape[1]), -1, dtype=np.int32)
    c2[:child.shape[0]] = child
    n2 = np.zeros((cap, counts.shape[1]), dtype=np.int64)
    n2[:counts.shape[0]] = counts
    k2 = np.zeros(cap, dtype=np.bool_)
    k2[:caret.shape[0]] = caret
    d2 = np.zeros(cap, dtype=np.int32)
    d2[:depth.shape[0]] = depth
    return c2, n2, k2, d2


#: The rows :func:`grow_trie`'s tables start with (doubled by :func:`_grow_arrays` as the trie
#: outgrows them); :func:`vgram` passes it, so a test can make a small trie grow them.
FIRST_ROWS = 1024


@njit(cache=True)
def grow_trie(tokens, starts, fold, n_folds, alphabet_size, beta, kind, variant, first_rows):
    """Grow the trie (module docstring). ``tokens [T]``, ``starts [T]`` the index of the
    first token of each position's string, ``fold [T]`` each position's fold (0 for
    EVGram); ``variant`` a validation mutant of the criterion (0: the method);
    ``first_rows`` the tables' first capacity (:data:`FIRST_ROWS`). Returns
    ``(child, counts, caret, steps)`` trimmed to the nodes made; ``steps [L, 4]`` float64,
    one row per leaf examined, in order: the node, its number of positions, the criterion
    of the leaf and the gain of expanding it (the children's criteria minus the leaf's)."""
    n_sym = alphabet_size + 1
    n_tok = tokens.shape[0]
    cap = first_rows
    child = np.full((cap, n_sym), -1, dtype=np.int32)
    counts = np.zeros((cap, n_sym), dtype=np.int64)
    caret = np.zeros(cap, dtype=np.bool_)
    depth = np.zeros(cap, dtype=np.int32)
    n_nodes = 1
    node_of = np.zeros(n_tok, dtype=np.int64)
    for t in range(n_tok):
        counts[0, tokens[t]] += 1
    active = np.arange(n_tok)
    d = 0
    lo, hi = 0, 1  # the nodes of depth d are lo..hi-1 (made together, one level earlier)
    rest = np.zeros((n_folds, n_sym), dtype=np.int64)
    part = np.zeros((n_folds, n_sym), dtype=np.int64)
    steps = np.zeros((cap, 4))
    n_steps = 0
    while active.shape[0] > 0:
        # key of each active position: its node and the letter before its context
        keys = np.empty(active.shape[0], dtype=np.int64)
        for i in range(active.shape[0]):
            t = active[i]
            j = t - d - 1
            if j >= starts[t]:
                b = tokens[j]
            else:
                b = 0  # the context reaches the start: its extension is ^w
            keys[i] = (node_of[t] - lo) * n_sym + b
        # counting sort by (node, letter): linear in the positions and the level's nodes
        n_keys = (hi - lo) * n_sym
        starts_k = np.zeros(n_keys + 1, dtype=np.int64)
        for i in range(keys.shape[0]):
            starts_k[keys[i] + 1] += 1
        for i in range(n_keys):
            starts_k[i + 1] += starts_k[i]
        perm = np.empty(keys.shape[0], dtype=np.int64)
        for i in range(keys.shape[0]):
            perm[starts_k[keys[i]]] = i
            starts_k[keys[i]] += 1
        nxt = np.empty(active.shape[0], dtype=np.int64)
        n_next = 0
        i = 0
        while i < perm.shape[0]:
            w = keys[perm[i]] // n_sym + lo
            end = i
            while end < perm.shape[0] and keys[perm[end]] // n_sym + lo == w:
                end += 1
            if caret[w]:
                i = end
                continue
            # the node's own counts per fold
            rest[:] = 0
            for m in range(i, end):
                t = active[perm[m]]
                rest[fold[t], tokens[t]] += 1
            # one decision for all children of w together (Sect. 4.5.2: the leaf is expanded)
            own = _criterion(rest, kind, beta, variant)
            gain = -own
            g = i
            while g < end:
                b = keys[perm[g]] % n_sym
                part[:] = 0
                while g < end and keys[perm[g]] % n_sym == b:
                    t = active[perm[g]]
                    part[fold[t], tokens[t]] += 1
                    g += 1
                gain += _criterion(part, kind, beta, variant)
            if n_steps >= steps.shape[0]:
                bigger = np.zeros((2 * steps.shape[0], 4))
                bigger[:n_steps] = steps[:n_steps]
                steps = bigger
            steps[n_steps, 0] = w
            steps[n_steps, 1] = end - i
            steps[n_steps, 2] = own
            steps[n_steps, 3] = gain
            n_steps += 1
            if gain <= 0:
                i = end
                continue
            g = i
            while g < end:
                b = keys[perm[g]] % n_sym
                h = g
                part[:] = 0
                while h < end and keys[perm[h]] % n_sym == b:
                    t = active[perm[h]]
                    part[fold[t], tokens[t]] += 1
                    h += 1
                if n_nodes >= child.shape[0]:
                    child, counts, caret, depth = _grow_arrays(child, counts, caret, depth,
                                                              n_nodes + 1)
                v = n_nodes
                n_nodes += 1
                child[w, b] = v
                caret[v] = b == 0
                depth[v] = d + 1
                for a in range(n_sym):
                    s = 0
                    for k in range(n_folds):
                        s += part[k, a]
                    counts[v, a] = s
                    # w keeps the counts of all its positions: the back-off of an unseen child
                for m in range(g, h):
                    t = active[perm[m]]
                    node_of[t] = v
                    nxt[n_next] = t
                    n_next += 1
                g = h
            i = end
        active = nxt[:n_next].copy()
        lo, hi = hi, n_nodes
        d += 1
    return (child[:n_nodes].copy(), counts[:n_nodes].copy(), caret[:n_nodes].copy(),
            steps[:n_steps].copy())


def position_starts(corpus: Corpus) -> np.ndarray:
    """``[T]``: the index of the first token of each position's string."""
    return np.repeat(corpus.offsets[:-1], np.diff(corpus.offsets))


@njit(cache=True)
def _context(child, tokens, t, start):
    """The deepest trie node that is a suffix of ``^ tokens[start:t]``."""
    node = 0
    j = t - 1
    while True:
        if j >= start:
            b = tokens[j]
        elif j == start - 1:
            b = 0
        else:
            break
        c = child[node, b]
        if c < 0:
            break
        node = c
        j -= 1
    return node


@njit(cache=True)
def _vgram_log_prob(child, counts, beta, tokens, offsets):
    n_sym = counts.shape[1]
    totals = np.zeros(counts.shape[0])
    for q in range(counts.shape[0]):
        totals[q] = counts[q].sum()
    out = np.zeros(offsets.shape[0] - 1)
    for s in range(offsets.shape[0] - 1):
        lp = 0.0
        for t in range(offsets[s], offsets[s + 1]):
            q = _context(child, tokens, t, offsets[s])
            lp += math.log((counts[q, tokens[t]] + beta) / (totals[q] + n_sym * beta))
        out[s] = lp
    return out


def vgram_log_prob(arrays: dict[str, np.ndarray], beta: float, corpus: Corpus) -> np.ndarray:
    """Natural-log probability of every string of ``corpus`` under a grown trie."""
    counts = arrays["counts"]
    if corpus.alphabet_size + 1 != counts.shape[1]:
        raise ValueError(f"corpus has {corpus.alphabet_size} letters, the trie {counts.shape[1] - 1}")
    return _vgram_log_prob(np.ascontiguousarray(arrays["child"], dtype=np.int32),
                           np.ascontiguousarray(counts, dtype=np.int64), float(beta),
                           corpus.tokens, corpus.offsets)


def vgram(corpus: Corpus, beta: float, kind: int, folds: np.ndarray | None = None,
          n_folds: int = 1, variant: int = 0, steps: bool = False,
          position_folds: np.ndarray | None = None):
    """Grow a trie on ``corpus``; ``folds [n_strings]`` gives each string's fold (CVGram)
    (``position_folds [n_tokens]``, each position's: only a validation mutant's). ``variant``:
    a validation mutant of the criterion (:func:`_criterion`; 0 is the method). Returns
    ``{"child", "counts", "caret"}``, and with ``steps`` ``(arrays, steps)``, the leaves
    examined (:func:`grow_trie`). A ``variant`` outside :data:`VARIANTS` is a ValueError."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown VGram variant {variant!r}; the method is 0, its mutants {VARIANTS[1:]}")
    starts = position_starts(corpus)
    if position_folds is not None:
        fold = np.asarray(position_folds, dtype=np.int64)
    elif folds is None:
        fold = np.zeros(corpus.n_tokens, dtype=np.int64)
    else:
        fold = np.repeat(np.asarray(folds, dtype=np.int64), np.diff(corpus.offsets))
    # numba does not check bounds: a fold outside 0..n_folds-1 would count outside its table
    if fold.shape != (corpus.n_tokens,):
        raise ValueError(f"{fold.shape[0]} folds for {corpus.n_tokens} positions")
    if fold.size and (fold.min() < 0 or fold.max() >= max(int(n_folds), 1)):
        raise ValueError(f"a fold index outside 0..{int(n_folds) - 1}: "
                         f"{int(fold.min())}..{int(fold.max())}")
    child, counts, caret, trace = grow_trie(corpus.tokens, starts, fold, int(n_folds),
                                            corpus.alphabet_size, float(beta), int(kind),
                                            int(variant), int(FIRST_ROWS))
    arrays = {"child": child, "counts": counts, "caret": caret}
    return (arrays, trace) if steps else arrays


def vgram_bytes(corpus: Corpus, n_folds: int) -> int:
    """Peak bytes of growing a trie: per-position arrays and, at most, one node per position
    and level (bounded here by 4 nodes per position).

    The per-position arrays :func:`grow_trie` holds at once (when a level's ``active`` is
    copied out of ``nxt``): its inputs ``tokens`` (int32), ``starts`` and ``fold`` (int64), and
    its ``node_of``, ``active``, ``keys``, ``perm``, ``nxt`` and the new ``active`` (int64):
    68 bytes a position (52 until the mutation run of issue 39, which counted six int64)."""
    t = corpus.n_tokens
    row = (corpus.alphabet_size + 1) * (4 + 8) + 8
    return int(t * (8 * 8 + 4) + 4 * t * row + n_folds * row * 8)


# -- the trie as a PDFA -----------------------------------------------------------------------
def to_pdfa(arrays: dict[str, np.ndarray], beta: float):
    """The trie as an equivalent :class:`bayesfa.automata.PDFA` (same probability for every
    string).

    States are the set ``S`` of all factors (substrings) of the trie's contexts, itself a
    backward trie; the state after a history is its longest suffix in ``S``. Since ``S`` is
    closed under factors, the next state after letter ``a`` is the longest suffix of
    ``s a`` in ``S``, a function of ``s`` and ``a`` alone, and the context the VGram uses is
    the longest suffix of ``s`` in the trie, a function of ``s`` alone.
    """
    from bayesfa.automata import PDFA

    child = np.asarray(arrays["child"], dtype=np.int32)
    counts = np.asarray(arrays["counts"], dtype=np.int64)
    s_child, s_ctx = _factor_closure(child)
    delta, start = _factor_transitions(s_child)
    probs = counts + beta  # (C_wa + beta) / (C_w + (A+1) beta) once each row is normalised
    probs /= probs.sum(axis=1, keepdims=True)  # one normalisation: rows sum to 1 in float
    p = probs[s_ctx]
    return PDFA(delta, p[:, 1:], p[:, 0], int(start))


@njit(cache=True)
def _tree_parents(child):
    """``(par, let, depth)``, int64 ``[n]`` each, of the trie ``child [n, A+1]`` whose
    nodes are made after their parents: each node's parent (-1 for the root), the letter
    on the edge into it and its depth."""
    n, n_sym = child.shape
    par = np.full(n, -1, dtype=np.int64)
    let = np.zeros(n, dtype=np.int64)
    for w in range(n):
        for b in range(n_sym):
            c = child[w, b]
            if c >= 0:
                par[c] = w
                let[c] = b
    depth = np.zeros(n, dtype=np.int64)
    for w in range(1, n):
        depth[w] = depth[par[w]] + 1
    return par, let, depth


@njit(cache=True)
def _factor_closure(child):
    """The factor-closed set ``S`` as a backward trie ``s_child [m, A+1]``, and
    ``s_ctx [m]``: the trie node (VGram context) of each state."""
    n, n_sym = child.shape
    # strings of the trie's nodes, read backwards from the root: parent and letter
    par, let, dep = _tree_parents(child)  # children are made after their parents
    maxd = dep.max()
    cap = 2 * n + 16
    s_child = np.full((cap, n_sym), -1, dtype=np.int32)
    m = 1
    buf = np.empty(maxd + 1, dtype=np.int64)
    for w in range(1, n):
        # w's string in reading order: buf[0] the oldest letter (^ = 0 if any), buf[L-1] the
        # newest; walking up from w meets the letters oldest first.
        L = dep[w]
        x = w
        for i in range(L):
            buf[i] = let[x]
            x = par[x]
        # every prefix buf[0..j], inserted as a backward path (newest letter first); the
        # nodes of the path are its suffixes, so S gets every factor
        for j in range(L):
            node = 0
            for i in range(j, -1, -1):
                b = buf[i]
                c = s_child[node, b]
                if c < 0:
                    if m >= s_child.shape[0]:
                        bigger = np.full((2 * s_child.shape[0], n_sym), -1, dtype=np.int32)
                        bigger[:m] = s_child[:m]
                        s_child = bigger
                    c = m
                    m += 1
                    s_child[node, b] = c
                node = c
    s_child = s_child[:m].copy()
    # context of each state: deepest trie node on its path
    s_ctx = np.zeros(m, dtype=np.int64)
    stack = np.empty(2 * m + 2, dtype=np.int64)
    stack[0] = 0
    stack[1] = 0
    top = 2
    while top > 0:
        top -= 2
        s = stack[top]
        w = stack[top + 1]
        s_ctx[s] = w
        for b in range(n_sym):
            c = s_child[s, b]
            if c >= 0:
                wc = child[w, b] if w >= 0 else -1
                # the trie is suffix-closed: once off it, deeper nodes are off it too
                stack[top] = c
                stack[top + 1] = wc if wc >= 0 else -(w + 1) if w >= 0 else w
                top += 2
    for s in range(m):
        if s_ctx[s] < 0:
            s_ctx[s] = -s_ctx[s] - 1
    return s_child, s_ctx


@njit(cache=True)
def _factor_transitions(s_child):
    """``delta [m, A]`` over letters ``0..A-1`` and the start state (the longest suffix of
    ``^`` in ``S``)."""
    m, n_sym = s_child.shape
    # forward strings of the states, to walk s a backwards
    par, let, depth = _tree_parents(s_child)  # states are made after their parents
    buf = np.empty(depth.max() + 1, dtype=np.int64)
    delta = np.empty((m, n_sym - 1), dtype=np.int64)
    for s in range(m):
        # s's letters newest first = the edge letters from the root down to s
        L = depth[s]
        x = s
        for i in range(L - 1, -1, -1):
            buf[i] = let[x]
            x = par[x]
        for a in range(1, n_sym):
            node = s_child[0, a]
            if node < 0:
                node = 0
            else:
                for i in range(L):
                    c = s_child[node, buf[i]]
                    if c < 0:
                        break
                    node = c
            delta[s, a - 1] = node
    start = s_child[0, 0]
    if start < 0:
        start = 0
    return delta, start
