"""The greedy learners (EStateMerge, EVGram, CVGram, ALERGIA) against brute-force references.

- the prefix tree against a dict-of-prefixes count;
- EStateMerge against a plain-Python red-blue merger that recomputes Eq. 21 over the whole
  machine for every trial merge (no local updates);
- the VGram tries against a brute-force context search and criterion computed with scipy;
- every smoothed machine sums to 1 over all strings (exact linear algebra) and gives each
  string the probability of its PDFA form;
- ALERGIA against AALpy's ``run_Alergia`` on PAutomaC problems (skipped without aalpy).
"""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
from conftest import RSS_PRELUDE
from scipy.special import gammaln

from bayesfa.corpus import Corpus
from bayesfa.datasets import pautomac_path
from bayesfa.methods import get_method
from bayesfa.pautomac import read_sample
from bayesfa.learners.greedy import _prefix_tree as pt
from bayesfa.learners.greedy import _vgram
from bayesfa.learners.greedy.alergia import alergia
from bayesfa.learners.greedy.cvgram import cvgram
from bayesfa.learners.greedy.estatemerge import estatemerge, log_evidence
from bayesfa.learners.greedy.evgram import evgram

GREEDY = ["estatemerge", "evgram", "cvgram", "alergia"]


def random_corpus(seed: int, n_strings: int, alphabet: int, stop: float = 0.3) -> Corpus:
    rng = np.random.default_rng(seed)
    strings = []
    for _ in range(n_strings):
        s = []
        while rng.random() > stop and len(s) < 12:
            # a little structure: letter depends on the previous one
            prev = s[-1] if s else 0
            s.append(int((prev + rng.choice([0, 1, 1, 2])) % alphabet))
        strings.append(s)
    return Corpus.from_strings(strings, alphabet)


def second_order_corpus(seed: int, n_strings: int, alphabet: int) -> Corpus:
    """Strings whose next letter depends on the two before it (so tries grow past depth 1)."""
    rng = np.random.default_rng(seed)
    strings = []
    for _ in range(n_strings):
        s = [int(rng.integers(alphabet))]
        while rng.random() > 0.15 and len(s) < 15:
            prev2 = s[-2] if len(s) > 1 else 0
            s.append(int((s[-1] + 2 * prev2 + (rng.random() < 0.2)) % alphabet))
        strings.append(s)
    return Corpus.from_strings(strings, alphabet)


def tries_differ(a: dict, b: dict) -> bool:
    """Whether two grown tries (dicts of arrays with the same keys) differ in any array."""
    return any(a[k].shape != b[k].shape or (a[k] != b[k]).any() for k in a)


# -- the prefix tree ----------------------------------------------------------------------------
@pytest.mark.parametrize("alphabet", [1, 2, 3, 5])
def test_memory_estimate_covers_the_tree_and_its_merged_copy(alphabet):
    """``prefix_tree_bytes`` (the memory estimate of the prefix-tree mergers) is at least the
    two copies of the tables its docstring names: twice the bytes of ``prefix_tree``'s
    arrays, on a corpus where every letter opens a node (its node bound ``n_letters + 1``
    reached)."""
    strings = [[a] * (a + 1) for a in range(alphabet)]  # no two share a first letter
    corpus = Corpus.from_strings(strings, alphabet)
    tree = pt.prefix_tree(corpus)
    assert tree[0].shape[0] == corpus.n_letters + 1
    assert pt.prefix_tree_bytes(corpus) >= 2 * sum(a.nbytes for a in tree)



@pytest.mark.parametrize("alphabet", [2, 3, 4, 5, 8, 13])
@pytest.mark.parametrize("empty", [0, 300])
def test_memory_estimate_is_the_arrays_the_build_and_the_merge_hold(alphabet, empty):
    """``prefix_tree_bytes`` against the byte counts of the arrays the build and the merge
    actually hold, read from the arrays themselves on a corpus where every letter opens a
    node (the node bound ``n_letters + 1`` reached), with ``empty`` empty strings besides
    (rows of the build's first tables that never become nodes). The build holds
    ``_build_raw``'s four tables, whose allocations (the buffers under the returned slices,
    ``n_tokens + 1`` rows) are counted, while the tree is made; the merge, the tree, ALERGIA's
    copy of its ``child`` and ``count``, and the learned machine. The estimate must be at
    least the larger and at most 1.6 times it: it adds the build's ``new_id`` and ``queue``
    (8 bytes a node, not seen from Python) and, merging, keeps three copies of a tree row
    where the build holds about two (so the ratio nears 1.5 for large alphabets; measured
    1.002-1.007 with the empty strings, where the build is the peak and the estimate exact
    but for those 8 bytes, 1.39-1.45 without). Issue 39's surviving cosmic-ray mutant of the
    row, ``A * 4`` -> ``A | 4`` (read ``((A + 1) * 12 + A) | (4 + 4)``), lowers the build's
    estimate below the bytes held for every alphabet here."""
    strings = [[a] * (a + 1) for a in range(alphabet)] + [[]] * empty
    corpus = Corpus.from_strings(strings, alphabet)
    raw = pt._build_raw(corpus.tokens, alphabet)
    raw_bytes = sum(memoryview(a.base).nbytes for a in raw)  # the allocations, not the slices
    assert raw[0].base is not None and raw_bytes > sum(a.nbytes for a in raw)
    tree = pt.prefix_tree(corpus)
    assert tree[0].shape[0] == corpus.n_letters + 1
    tree_bytes = sum(a.nbytes for a in tree)
    machine = alergia(corpus, 0.05)
    merge = tree_bytes + tree[0].nbytes + tree[1].nbytes \
        + machine["delta"].nbytes + machine["counts"].nbytes
    held = max(raw_bytes + tree_bytes, merge)
    estimate = pt.prefix_tree_bytes(corpus)
    assert held <= estimate <= 1.6 * held, (held, estimate, estimate / held)
    # the merge's worst case: a learned machine that keeps every node of the tree (no merge
    # passes its test), its rows as wide as this run's machine's; the third copy of the
    # estimate is for it (a merge estimated at two copies falls below it at 13 letters)
    row = sum(machine[k].nbytes // machine[k].shape[0] for k in ("delta", "counts"))
    worst = tree_bytes + tree[0].nbytes + tree[1].nbytes + tree[0].shape[0] * row
    assert worst <= estimate, (worst, estimate)


def test_red_machine_keeps_undefined_transitions_undefined():
    """``red_machine`` renumbers the red states and maps each defined transition to its
    target's new number; a letter with no child (``-1``) stays undefined (-1), also when the
    last node of the tables is red (``index[-1]`` would then be a state's number)."""
    # node 0 --letter 1--> node 2, node 0 --letter 2--> node 1; node 1 and node 2 have none
    child = np.array([[-1, 2, 1], [-1, -1, -1], [-1, -1, -1]], dtype=np.int32)
    count = np.array([[1, 2, 3], [4, 0, 0], [5, 0, 0]], dtype=np.int64)
    red_list = np.array([0, 2, 1], dtype=np.int64)
    delta, counts = pt.red_machine(red_list, 2, child, count)  # the red states 0 and 2
    np.testing.assert_array_equal(delta, [[-1, 1, -1], [-1, -1, -1]])
    np.testing.assert_array_equal(counts, [[1, 2, 3], [5, 0, 0]])


def test_prefix_tree_counts_and_order():
    corpus = random_corpus(1, 60, 3)
    child, count, order, n_keys, sym, parent = pt.prefix_tree(corpus)
    prefixes = {(): None}
    for s in corpus.strings():
        for k in range(1, s.size + 1):
            prefixes[tuple(s[:k].tolist())] = None
    # breadth-first letter order = sorted by (length, prefix)
    expected = sorted(prefixes, key=lambda p: (len(p), p))
    assert child.shape[0] == len(expected)
    names = {0: ()}
    for q in range(child.shape[0]):
        for a in range(1, child.shape[1]):
            if child[q, a] >= 0:
                names[child[q, a]] = names[q] + (a - 1,)
                assert sym[child[q, a]] == a and parent[child[q, a]] == q
    assert [names[q] for q in range(len(expected))] == expected
    for q, p in names.items():
        through = [s for s in corpus.strings() if tuple(s[:len(p)].tolist()) == p and s.size >= len(p)]
        assert count[q].sum() == len(through)
        assert count[q, 0] == sum(1 for s in through if s.size == len(p))
        # children are ordered by first occurrence in the file
        firsts = []
        for s in through:
            if s.size > len(p) and s[len(p)] + 1 not in firsts:
                firsts.append(int(s[len(p)]) + 1)
        assert order[q, :n_keys[q]].tolist() == firsts


# -- EStateMerge against a brute-force reference ------------------------------------------------
class _Node:
    def __init__(self, prefix):
        self.prefix = prefix
        self.children = {}  # letter (token value) -> node, insertion-ordered
        self.freq = {}      # symbol (0 = end) -> count


def _pta(corpus):
    root = _Node(())
    for s in corpus.strings():
        node = root
        for a in s.tolist() + [-1]:
            key = a + 1
            node.freq[key] = node.freq.get(key, 0) + 1
            if key == 0:
                break
            if key not in node.children:
                node.children[key] = _Node(node.prefix + (key,))
            node = node.children[key]
    return root


def _fold(red, blue):
    for key, f in blue.freq.items():
        if key == 0:
            red.freq[0] = red.freq.get(0, 0) + f
    for key, b in blue.children.items():
        if key in red.children:
            red.freq[key] += blue.freq[key]
            _fold(red.children[key], b)
        else:
            red.children[key] = b
            red.freq[key] = blue.freq[key]


def _reachable(root):
    seen, todo = {}, [root]
    while todo:
        n = todo.pop()
        if id(n) in seen:
            continue
        seen[id(n)] = n
        todo.extend(n.children.values())
    return list(seen.values())


def _evidence(root, beta, n_sym):
    nodes = _reachable(root)
    rows = np.array([[n.freq.get(a, 0) for a in range(n_sym)] for n in nodes], dtype=float)
    return log_evidence(rows, beta)


def reference_estatemerge(corpus, beta):
    """Red-blue EStateMerge, best merge by the whole machine's Eq. 21 (no local updates).
    Returns ``(delta, counts, near_tie)``, states in red (prefix) order."""
    n_sym = corpus.alphabet_size + 1
    root = _pta(corpus)
    red = [root]
    near_tie = False
    while True:
        blue = [c for r in red for c in r.children.values() if all(c is not x for x in red)]
        if not blue:
            break
        b = min(blue, key=lambda n: (len(n.prefix), n.prefix))
        base = _evidence(root, beta, n_sym)
        gains = []
        for i in range(len(red)):
            t_root, t_red, t_b = copy.deepcopy((root, red, b))
            _parent_of(t_red, t_b).children[t_b.prefix[-1]] = t_red[i]
            _fold(t_red[i], t_b)
            gains.append(_evidence(t_root, beta, n_sym) - base)
        gains = np.array(gains)
        order = np.sort(gains)[::-1]
        if abs(order[0]) < 1e-7 or (len(order) > 1 and order[0] > 0 and order[0] - order[1] < 1e-7):
            near_tie = True
        best = int(np.argmax(gains))
        if gains[best] > 0:
            _parent_of(red, b).children[b.prefix[-1]] = red[best]
            _fold(red[best], b)
        else:
            red.append(b)
            red.sort(key=lambda n: (len(n.prefix), n.prefix))
    n = len(red)
    delta = np.full((n, n_sym), -1, dtype=np.int64)
    counts = np.zeros((n, n_sym), dtype=np.int64)
    for i, r in enumerate(red):
        counts[i] = [r.freq.get(a, 0) for a in range(n_sym)]
        for key, c in r.children.items():
            delta[i, key] = next(j for j, x in enumerate(red) if x is c)
    return delta, counts, near_tie


def _parent_of(red, b):
    for r in red:
        for c in r.children.values():
            if c is b:
                return r
    raise AssertionError("blue state without a red parent")


@pytest.mark.parametrize("seed", range(6))
def test_estatemerge_matches_brute_force_evidence(seed):
    corpus = random_corpus(seed, 25 + 5 * seed, 2 + seed % 2)
    beta = [0.5, 2.0, 1.0][seed % 3]
    ours = estatemerge(corpus, beta)
    delta, counts, near_tie = reference_estatemerge(corpus, beta)
    if near_tie:
        pytest.skip("the reference met two merges within 1e-7 of each other (order of sums decides)")
    assert counts.shape[0] > 1
    np.testing.assert_array_equal(ours["counts"], counts)
    np.testing.assert_array_equal(ours["delta"], delta)
    assert log_evidence(ours["counts"], beta) >= _evidence(_pta(corpus), beta, corpus.alphabet_size + 1)


@pytest.mark.parametrize("room", [3, 4, 7])
def test_estatemerge_trial_gain_from_a_stack_of_a_few_slots(room):
    """``_trial_gain`` (the evidence change of folding a blue state into a red one) walks the
    fold on a stack of pairs grown when full. On strings of one letter repeated (and "ab",
    "baa"), folding the root's child "a" into the root walks as deep as the longest string
    before it comes back to the first pair for its second letter; from a stack of 3-7 slots
    (64 in the method) the gain is the same, bit for bit, and the tables come back unchanged.
    (Issue 39's surviving cosmic-ray mutant ``push_pair(stack, 0, ...)`` -> ``-1`` stored the
    first pair across the array's end, where growing the stack lost it: it now crashes.)"""
    from bayesfa.learners.greedy.estatemerge import _trial_gain

    strings = [[0] * n for n in (0, 1, 2, 3, 5, 8, 8, 9)] + [[0, 1], [1, 0, 0]]
    corpus = Corpus.from_strings(strings, 2)
    child, count, order, n_keys, _, _ = pt.prefix_tree(corpus)
    blue = int(child[0, 1])  # the node of "a" (letter 0 is column 1)

    def gain(slots):
        c, n = child.copy(), count.copy()
        out = _trial_gain(0, blue, c, n, order, n_keys, 0.5, np.empty(slots, dtype=np.int64),
                          np.empty(256, dtype=np.int64), np.empty(256, dtype=np.int64),
                          np.empty(256, dtype=np.int64), np.zeros(child.shape[0], dtype=np.bool_),
                          np.empty(64, dtype=np.int64), 0)
        np.testing.assert_array_equal(c, child)
        np.testing.assert_array_equal(n, count)
        return out[0], out[1].shape[0]

    want, _ = gain(64)
    got, grown = gain(room)
    assert got == want and grown > room


# -- VGram ---------------------------------------------------------------------------------------
def _contexts(arrays):
    """Each trie node's context string, oldest symbol first (0 = ^)."""
    child = arrays["child"]
    name = {0: ()}
    for w in range(child.shape[0]):
        for b in range(child.shape[1]):
            if child[w, b] >= 0:
                name[child[w, b]] = (b,) + name[w]
    return name


def _history(s, t):
    return (0,) + tuple((s[:t] + 1).tolist())


def _brute_context(names, hist):
    best = ()
    for ctx in names.values():
        if len(ctx) <= len(hist) and hist[len(hist) - len(ctx):] == ctx and len(ctx) > len(best):
            best = ctx
    return best


def _crit(c, kind, beta):
    c = np.asarray(c, dtype=float)
    if kind == _vgram.EVIDENCE:
        x = c.sum(axis=0)
        if x.sum() == 0:
            return 0.0
        return float(np.sum(gammaln(x + beta) - gammaln(beta)) + gammaln(x.size * beta)
                     - gammaln(x.sum() + x.size * beta))
    col = c.sum(axis=0)
    row = c.sum(axis=1)
    total = c.sum()
    out = 0.0
    for k in range(c.shape[0]):
        for a in range(c.shape[1]):
            if c[k, a] > 0:
                out += c[k, a] * (np.log(col[a] - c[k, a] + beta) - np.log(total - row[k] + c.shape[1] * beta))
    return out


def test_vgram_trie_arrays_grow_past_their_capacity():
    """``_vgram._grow_arrays`` (the trie's tables outgrowing their 1,024 first rows; no fast
    corpus makes that many nodes): the capacity doubles until it holds ``n_new`` nodes, the
    rows made are kept and the new ones are empty (child -1, counts 0, no caret, depth 0);
    with room enough the same arrays come back."""
    child = np.arange(6, dtype=np.int32).reshape(3, 2)
    counts = np.arange(10, 16, dtype=np.int64).reshape(3, 2)
    caret = np.array([True, False, True])
    depth = np.array([0, 1, 1], dtype=np.int32)
    c2, n2, k2, d2 = _vgram._grow_arrays(child, counts, caret, depth, 5)
    assert c2.shape == (6, 2) and n2.shape == (6, 2) and k2.shape == (6,) and d2.shape == (6,)
    np.testing.assert_array_equal(c2, np.vstack([child, np.full((3, 2), -1)]))
    np.testing.assert_array_equal(n2, np.vstack([counts, np.zeros((3, 2))]))
    np.testing.assert_array_equal(k2, [True, False, True, False, False, False])
    np.testing.assert_array_equal(d2, [0, 1, 1, 0, 0, 0])
    assert _vgram._grow_arrays(child, counts, caret, depth, 13)[0].shape == (24, 2)
    same = _vgram._grow_arrays(child, counts, caret, depth, 3)[0]
    assert same.shape == child.shape and np.shares_memory(same, child)


@pytest.mark.parametrize("first_rows", [1, 2, 3, 5])
def test_vgram_grows_the_same_trie_from_tables_of_a_few_rows(first_rows, monkeypatch):
    """EVGram's and CVGram's tries (~20 nodes) grown from tables of 1-5 first rows (``FIRST_ROWS``, else
    1,024, which no fast corpus outgrows) are those grown without outgrowing them, bit for bit:
    the call in ``grow_trie`` that grows the tables as nodes are made is exercised (issue 39's
    surviving cosmic-ray mutant ``n_nodes + 1`` -> ``n_nodes & 1`` asked for no room and wrote
    past the tables)."""
    rng = np.random.default_rng(0)  # a second-order Markov source: its trie has ~20 nodes
    table = rng.dirichlet(np.full(4, 0.3), size=(4, 4))

    def string():
        out, a, b = [], 0, 0
        while len(out) <= 30:
            x = rng.choice(4, p=table[a, b])
            if x == 0:
                break
            out.append(int(x) - 1)
            a, b = b, x
        return out

    corpus = Corpus.from_strings([string() for _ in range(400)], 3)
    folds = np.arange(corpus.n_strings) % 4
    want = [_vgram.vgram(corpus, 0.5, _vgram.EVIDENCE),
            _vgram.vgram(corpus, 0.5, _vgram.CROSS_VALIDATION, folds=folds, n_folds=4)]
    assert all(w["child"].shape[0] > 15 for w in want)
    monkeypatch.setattr(_vgram, "FIRST_ROWS", first_rows)
    got = [_vgram.vgram(corpus, 0.5, _vgram.EVIDENCE),
           _vgram.vgram(corpus, 0.5, _vgram.CROSS_VALIDATION, folds=folds, n_folds=4)]
    for w, g in zip(want, got):
        assert not tries_differ(w, g)


def test_pdfa_prediction_refuses_another_alphabet():
    """A machine learned on 3 letters (ALERGIA's, scored by ``_prefix_tree.pdfa_log_prob``)
    refuses a corpus of 2, saying both sizes."""
    machine = alergia(random_corpus(0, 40, 3), 0.05)
    with pytest.raises(ValueError, match="corpus has 2 letters, the machine 3$"):
        pt.pdfa_log_prob(machine, 0.5, random_corpus(0, 5, 2))


def _path_trie(letters, n_sym):
    """A VGram trie ``child [n, n_sym]`` that is one path from the root, its edges labelled
    ``letters`` in order (node ``i + 1`` the child of node ``i``)."""
    child = np.full((len(letters) + 1, n_sym), -1, dtype=np.int32)
    for i, b in enumerate(letters):
        child[i, b] = i + 1
    return child


def _spelled(s_child):
    """Every string a backward trie ``s_child`` spells from its root, one per node."""
    out, stack = [], [(0, ())]
    while stack:
        node, word = stack.pop()
        out.append(word)
        for b in range(s_child.shape[1]):
            if s_child[node, b] >= 0:
                stack.append((int(s_child[node, b]), word + (b,)))
    return out


def test_vgram_factor_closure_is_every_factor_past_its_first_table():
    """``_factor_closure`` of a deep path trie (24 random letters, so its factors, about 280,
    outgrow the ``2 n + 16`` rows the closure first allocates and the table is regrown) is a
    backward trie with one node per distinct factor of the path's string: every factor,
    each once (brute force over all substrings)."""
    rng = np.random.default_rng(5)
    letters = [int(b) for b in rng.integers(1, 4, size=24)]
    child = _path_trie(letters, 4)
    s_child, s_ctx = _vgram._factor_closure(child)
    factors = {tuple(letters[i:j]) for i in range(len(letters)) for j in range(i, len(letters) + 1)}
    assert len(factors) > 2 * child.shape[0] + 16  # the growth branch runs
    words = _spelled(s_child)
    assert len(words) == s_child.shape[0] == len(set(words))
    assert set(words) == factors
    assert s_ctx.shape == (s_child.shape[0],) and s_ctx.min() >= 0 and s_ctx.max() < child.shape[0]


def test_vgram_start_state_is_the_root_without_a_start_context():
    """With no context that holds the start marker ``^`` (letter 0), the start state is the
    longest suffix of ``^`` in the factor set, the root (state 0), never -1 (which as an index
    would be the last state)."""
    child = _path_trie([1, 2, 1], 3)
    s_child, _ = _vgram._factor_closure(child)
    assert s_child[0, 0] < 0 and s_child.shape[0] > 2
    delta, start = _vgram._factor_transitions(s_child)
    assert start == 0
    with_start = _vgram._factor_transitions(_vgram._factor_closure(_path_trie([1, 0], 3))[0])[1]
    assert with_start > 0


def test_vgram_prediction_refuses_another_alphabet():
    """A trie grown on 3 letters refuses a corpus of 2, saying both sizes."""
    arrays = evgram(random_corpus(0, 40, 3), 0.5)
    with pytest.raises(ValueError, match="corpus has 2 letters, the trie 3$"):
        _vgram.vgram_log_prob(arrays, 0.5, random_corpus(0, 5, 2))


@pytest.mark.parametrize("kind", [_vgram.EVIDENCE, _vgram.CROSS_VALIDATION])
def test_vgram_trie_against_brute_force(kind):
    corpus = second_order_corpus(3, 300, 3)
    beta = 0.5
    n_folds = 1 if kind == _vgram.EVIDENCE else 5
    folds = np.arange(corpus.n_strings) % n_folds
    arrays = (evgram(corpus, beta) if kind == _vgram.EVIDENCE else cvgram(corpus, beta, n_folds))
    names = _contexts(arrays)
    by_name = {v: k for k, v in names.items()}
    n_sym = corpus.alphabet_size + 1
    # per-fold counts of each leaf's positions, by brute-force context search
    leaf_counts = {ctx: np.zeros((n_folds, n_sym)) for ctx in names.values()}
    through = {ctx: np.zeros(n_sym) for ctx in names.values()}
    for i, s in enumerate(corpus.strings()):
        symbols = (s + 1).tolist() + [0]
        for t, a in enumerate(symbols):
            hist = _history(s, t)
            ctx = _brute_context(names, hist)
            leaf_counts[ctx][folds[i], a] += 1
            for other in names.values():
                if len(other) <= len(hist) and hist[len(hist) - len(other):] == other:
                    through[other][a] += 1
    for ctx, w in by_name.items():
        assert arrays["counts"][w].tolist() == through[ctx].tolist()
    leaves = [ctx for ctx, w in by_name.items() if (arrays["child"][w] < 0).all()]
    inner = [ctx for ctx in names.values() if ctx not in leaves]
    assert len(inner) >= 2  # the test exercises growth
    for ctx in leaves:
        if ctx[:1] == (0,):
            continue  # ^w has no children
        # expanding the leaf would not raise the criterion
        parts = {}
        for i, s in enumerate(corpus.strings()):
            symbols = (s + 1).tolist() + [0]
            for t, a in enumerate(symbols):
                hist = _history(s, t)
                if _brute_context(names, hist) == ctx:
                    b = hist[len(hist) - len(ctx) - 1]
                    parts.setdefault(b, np.zeros((n_folds, n_sym)))[folds[i], a] += 1
        gain = sum(_crit(p, kind, beta) for p in parts.values()) - _crit(leaf_counts[ctx], kind, beta)
        assert gain <= 1e-9, (ctx, gain)
    # predictions: brute-force smoothed product over positions
    lp = _vgram.vgram_log_prob(arrays, beta, corpus)
    for i, s in enumerate(corpus.strings()[:40]):
        symbols = (s + 1).tolist() + [0]
        total = 0.0
        for t, a in enumerate(symbols):
            c = through[_brute_context(names, _history(s, t))]
            total += np.log((c[a] + beta) / (c.sum() + n_sym * beta))
        assert lp[i] == pytest.approx(total, rel=1e-12)


def _total_mass(machine) -> float:
    """Sum of the probabilities of all strings: init (I - M)^-1 stop, M = sum_a trans[a]."""
    pfa = machine.to_pfa()
    m = pfa.trans.sum(axis=0)
    return float(pfa.init @ np.linalg.solve(np.eye(pfa.n_states) - m, pfa.stop))


@pytest.mark.parametrize("name", GREEDY)
def test_smoothed_machine_is_a_distribution_equal_to_prediction(name):
    corpus = random_corpus(7, 400, 3)
    method = get_method(name)
    options = {"beta": 0.5, "alpha": 0.05, "folds": 10}
    result = method.fit(corpus, options, 0, False)
    machine = method.automaton(result.arrays, options)
    assert _total_mass(machine) == pytest.approx(1.0, abs=1e-9)
    # the reported size is the machine's (not, e.g., its row length A + 1: a mutant of issue 39)
    assert result.info["n_states"] == machine.to_pfa().n_states != corpus.alphabet_size + 1
    # every string up to length 4 over the letters: the run's prediction equals the machine's
    strings = [list(p) for n in range(5) for p in itertools.product(range(3), repeat=n)]
    every = Corpus.from_strings(strings, 3)
    lp = method.predict_log_prob(result.arrays, options, every)
    assert np.all(np.isfinite(lp))
    np.testing.assert_allclose(machine.log_prob(every), lp, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["evgram", "cvgram"])
def test_registered_vgram_methods_grow_the_method_not_a_mutant(name):
    """A fresh instance of each registered VGram method (its class defaults, as ``bayesfa
    fit`` gets it) grows the trie of the plain function (the criterion checked against brute
    force above), not that of a validation mutant: on this corpus the first mutant's
    (``end-outside-alphabet``) trie differs, so a class default ``variant`` of 1 is seen."""
    corpus = random_corpus(2, 200, 5)
    method = type(get_method(name))()
    options = {"beta": 0.5, "folds": 5}
    arrays = method.fit(corpus, options, 0, False).arrays
    grow = {"evgram": lambda v: evgram(corpus, 0.5, v),
            "cvgram": lambda v: cvgram(corpus, 0.5, 5, v)}[name]
    for key, value in grow(0).items():
        np.testing.assert_array_equal(arrays[key], value, err_msg=key)
    mutant = grow(1)
    assert tries_differ(mutant, arrays)


@pytest.mark.parametrize("alphabet", [2, 3, 4, 8])
def test_vgram_memory_estimate_holds_its_node_bound(alphabet):
    """``vgram_bytes`` holds what its docstring bounds: 4 trie nodes per position, each a row
    of the grown trie's arrays (``child``, ``counts``, ``caret``, at their real dtypes), and
    at least the trie actually grown."""
    corpus = random_corpus(4, 200, alphabet)
    arrays = evgram(corpus, 0.5)
    n_nodes = arrays["child"].shape[0]
    node = sum(arrays[k].nbytes // n_nodes for k in ("child", "counts", "caret"))
    estimate = _vgram.vgram_bytes(corpus, 1)
    assert estimate >= 4 * corpus.n_tokens * node
    assert estimate >= sum(a.nbytes for a in arrays.values())


@pytest.mark.parametrize("alphabet", [2, 8])
def test_vgram_memory_estimate_adds_the_per_position_arrays_to_the_node_bound(alphabet):
    """Beyond the node bound, ``vgram_bytes`` counts the arrays of one entry a position that
    ``grow_trie`` holds at once: the inputs (``tokens``, ``starts``, ``fold``, at their real
    dtypes) and six int64 work arrays (``node_of``, ``active``, ``keys``, ``perm``, ``nxt``,
    and ``active``'s new copy)."""
    corpus = random_corpus(4, 200, alphabet)
    t = corpus.n_tokens
    row = (alphabet + 1) * (np.dtype(np.int32).itemsize + np.dtype(np.int64).itemsize) + 8
    inputs = corpus.tokens.itemsize + _vgram.position_starts(corpus).itemsize + np.dtype(np.int64).itemsize
    for folds in (1, 5):
        nodes = 4 * t * row + folds * row * 8
        assert _vgram.vgram_bytes(corpus, folds) >= nodes + t * (inputs + 6 * 8)


@pytest.mark.parametrize("name", ["alergia", "estatemerge"])
def test_prefix_tree_methods_estimate_at_least_the_tree_and_its_merges(name):
    """The prefix-tree mergers' memory estimate (what ``fit`` checks against the free memory)
    is at least ``prefix_tree_bytes``, the tree's build and merge bound tested above, and grows
    with the corpus."""
    method = get_method(name)
    options = {"alpha": 0.05, "beta": 0.5}
    small, large = random_corpus(6, 100, 3), random_corpus(6, 400, 3)
    assert method.estimate_memory(small, options) == pt.prefix_tree_bytes(small) > 0
    assert method.estimate_memory(large, options) > method.estimate_memory(small, options)


_PEAK_SCRIPT = RSS_PRELUDE + r"""
from bayesfa.corpus import Corpus
from bayesfa.methods import get_method

def corpus(n_strings, seed, alphabet):
    rng = np.random.default_rng(seed)
    return Corpus.from_strings([rng.integers(0, alphabet, size=rng.integers(0, 30)).tolist()
                                for _ in range(n_strings)], alphabet)

method = get_method(sys.argv[1])
parser = argparse.ArgumentParser()
method.add_arguments(parser)
options = vars(parser.parse_args([]))
warm = corpus(50, 0, 8)  # compile (or load) every kernel first: that is not the fit's memory
method.predict_log_prob(method.fit(warm, options, 0, False).arrays, options, warm)
train, test = corpus(20000, 1, 8), corpus(20000, 2, 8)
reset()
base = rss()
fit = method.fit(train, options, 0, False)
fit_peak = maxrss() - base
reset()
base = rss()
method.predict_log_prob(fit.arrays, options, test)
print(json.dumps({"fit": fit_peak, "predict": maxrss() - base,
                  "estimate": method.estimate_memory(train, options)}))
"""


@pytest.mark.parametrize("name", ["alergia", "estatemerge"])
def test_prefix_tree_methods_estimate_covers_the_measured_peak(name):
    """The estimate (``prefix_tree_bytes``) is at least the resident memory a ``fit`` and then
    a ``predict_log_prob`` on a corpus of the same size add at their peaks, measured as the
    operating system sees them (numba's arrays are not Python's: the high-water mark
    ``VmHWM``, reset before each, in a fresh process with every kernel compiled first), on
    ~300,000 tokens of eight letters, where the build's tables make the fit's peak ~70 MB,
    far above the noise of a few MB."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    run = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, name], capture_output=True,
                         text=True, cwd=root, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(root)})
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.splitlines()[-1])
    assert got["fit"] > 30e6, got  # the build's tables dominate the noise
    assert max(got["fit"], got["predict"]) <= got["estimate"], got


@pytest.mark.parametrize("name,folds", [("evgram", 1), ("cvgram", 5), ("cvgram", 10)])
def test_vgram_memory_estimate_counts_the_methods_folds(name, folds):
    """Each VGram method's memory estimate is ``vgram_bytes`` with its folds: CVGram's
    ``--folds``, EVGram's single one (the evidence counts the whole data as one fold)."""
    corpus = random_corpus(1, 50, 3)
    options = {"beta": 0.5} | ({"folds": folds} if name == "cvgram" else {})
    assert get_method(name).estimate_memory(corpus, options) == _vgram.vgram_bytes(corpus, folds)


def test_cvgram_folds_bounds():
    """``--folds``: 2 is the least number of folds that cross-validates (a fit), 1 is
    refused, and so are more folds than strings; as many folds as strings (one string a
    fold) is a fit."""
    from bayesfa.errors import InputError

    corpus = random_corpus(2, 30, 2)
    two = cvgram(corpus, 0.5, 2)
    assert two["child"].shape[0] >= 1 and two["counts"].sum() > 0
    each = cvgram(corpus, 0.5, 30)
    assert each["counts"].sum() == two["counts"].sum() > 0
    for folds in (1, 31):
        with pytest.raises(InputError):
            cvgram(corpus, 0.5, folds)


def test_cvgram_defaults_are_the_papers_ten_folds_and_the_method():
    """CVGram's defaults are the paper's 10 folds (Sect. 4.5.3), in the command line's
    ``--folds`` and in :func:`cvgram`, and the function's default variant is the method (0),
    not a validation mutant: on this corpus 9, 10 and 11 folds grow different tries, and so
    does the first mutant, so a changed default is seen."""
    import argparse

    parser = argparse.ArgumentParser()
    get_method("cvgram").add_arguments(parser)
    assert parser.parse_args([]).folds == 10
    corpus = second_order_corpus(0, 60, 3)
    tries = {folds: cvgram(corpus, 0.5, folds, 0) for folds in (9, 10, 11)}
    default = cvgram(corpus, 0.5)
    for key, value in tries[10].items():
        np.testing.assert_array_equal(default[key], value, err_msg=key)

    assert tries_differ(tries[9], tries[10]) and tries_differ(tries[11], tries[10])
    assert tries_differ(cvgram(corpus, 0.5, 10, 1), tries[10])


def test_evgram_default_variant_is_the_method():
    """:func:`evgram` called without ``variant`` grows the method's trie, not a validation
    mutant's: on this corpus the first mutant's (``end-outside-alphabet``) trie differs."""
    corpus = second_order_corpus(2, 60, 3)
    method = evgram(corpus, 0.5, 0)
    default = evgram(corpus, 0.5)
    for key, value in method.items():
        np.testing.assert_array_equal(default[key], value, err_msg=key)
    mutant = evgram(corpus, 0.5, 1)
    assert tries_differ(mutant, method)


@pytest.mark.parametrize("variant", [-1, 2, 7])
def test_estatemerge_refuses_a_variant_that_is_neither_the_method_nor_a_mutant(variant):
    """An unknown ``variant`` code is refused rather than run as the method (the kernel
    reads only code 1, so -1 or 7 would silently learn the method's machine)."""
    from bayesfa.learners.greedy.estatemerge import MUTATIONS

    assert variant not in MUTATIONS.values()
    with pytest.raises(ValueError, match="unknown variant"):
        estatemerge(random_corpus(0, 10, 2), 1.0, variant=variant)


@pytest.mark.parametrize("variant", [-1, 2, 7])
def test_cvgram_refuses_a_variant_that_is_neither_the_method_nor_a_mutant(variant):
    """An unknown ``variant`` code is refused rather than run as the method (2, an EVGram
    term, changes nothing under cross-validation; the kernel reads no -1 or 7)."""
    from bayesfa.learners.greedy.cvgram import MUTATIONS

    assert variant not in MUTATIONS.values()
    with pytest.raises(ValueError, match="unknown variant"):
        cvgram(second_order_corpus(1, 60, 3), 0.5, 10, variant)


@pytest.mark.parametrize("variant", [-1, 4, 7])
def test_evgram_refuses_a_variant_that_is_neither_the_method_nor_a_mutant(variant):
    """An unknown ``variant`` code is refused rather than run as the method (4, a CVGram
    term, changes nothing under the evidence; the kernel reads no -1 or 7)."""
    from bayesfa.learners.greedy.evgram import MUTATIONS

    assert variant not in MUTATIONS.values()
    with pytest.raises(ValueError, match="unknown variant"):
        evgram(second_order_corpus(1, 60, 3), 0.5, variant)


@pytest.mark.parametrize("mutant", ["end-outside-alphabet", "fold-not-held-out",
                                    "denominator-not-held-out", "folds-by-position"])
def test_each_cvgram_mutant_grows_another_trie(mutant):
    """Each named CVGram mutant is another method, not the method under another name: on this
    corpus its trie differs from the method's (a branch test that no longer reaches a mutant's
    code, e.g. ``variant > FOLDS_BY_POSITION``, would make the kill matrix test the method)."""
    from bayesfa.learners.greedy.cvgram import MUTATIONS

    corpus = second_order_corpus(1, 60, 3)
    method = cvgram(corpus, 0.5, 10, 0)
    other = cvgram(corpus, 0.5, 10, MUTATIONS[mutant])
    assert tries_differ(other, method)


def test_cvgram_folds_by_position_mutant_puts_position_t_in_fold_t_mod_k():
    """The named mutant ``folds-by-position`` is what its name and docstring say: its trie is
    the one grown with position ``t`` (over the corpus's tokens, ends included) in fold
    ``t mod K``, folds written here with numpy. (A mutant of the mutant, ``t >> K``, still
    differed from the method and failed ``validate`` while no longer the documented slip; its
    folds out of range wrote outside the kernel's arrays, now refused, below.)"""
    from bayesfa.learners.greedy.cvgram import FOLDS_BY_POSITION

    corpus = second_order_corpus(1, 150, 3)
    folds = 4
    t = np.arange(corpus.n_tokens, dtype=np.int64)
    got = cvgram(corpus, 0.5, folds, FOLDS_BY_POSITION)
    want = _vgram.vgram(corpus, 0.5, _vgram.CROSS_VALIDATION, None, folds,
                        position_folds=t % folds)
    assert not tries_differ(got, want)
    # the code compared by value: a numpy integer (a code read from an array) is the mutant too
    assert not tries_differ(cvgram(corpus, 0.5, folds, np.int64(FOLDS_BY_POSITION)), want)


@pytest.mark.parametrize("bad", ["negative", "k", "short"])
def test_vgram_refuses_folds_outside_its_range(bad):
    """A fold index outside ``0 .. n_folds - 1``, or fewer folds than positions, is a
    ValueError before the kernel runs (numba does not check bounds: such folds wrote outside
    the per-fold count table)."""
    corpus = second_order_corpus(1, 20, 3)
    fold = np.arange(corpus.n_tokens, dtype=np.int64) % 3
    if bad == "negative":
        fold[5] = -1
    elif bad == "k":
        fold[-1] = 3
    else:
        fold = fold[:-1]
    with pytest.raises(ValueError, match="fold"):
        _vgram.vgram(corpus, 0.5, _vgram.CROSS_VALIDATION, None, 3, position_folds=fold)
    if bad != "short":
        strings = np.arange(corpus.n_strings, dtype=np.int64) % 3
        strings[0] = -1 if bad == "negative" else 3
        with pytest.raises(ValueError, match="fold"):
            _vgram.vgram(corpus, 0.5, _vgram.CROSS_VALIDATION, strings, 3)


@pytest.mark.parametrize("name", GREEDY)
def test_greedy_validation_mutants_have_distinct_codes(name):
    """Each greedy front's named validation mutants (``MUTATIONS``, name -> the ``variant``
    code its kernel tests) have distinct codes, none of them 0 (the method): two names on
    one code would make one mutant run another's code and the kill matrix test it twice."""
    import importlib

    mutations = importlib.import_module(f"bayesfa.learners.greedy.{name}").MUTATIONS
    codes = list(mutations.values())
    assert len(set(codes)) == len(codes) and 0 not in codes, mutations


@pytest.mark.parametrize("name", ["estatemerge", "alergia"])
def test_prediction_through_the_sink_equals_the_machine(name):
    """Letter 1 never occurs in training ("a", "aa"), so every string with a 1 leaves the
    learned states for the sink (unigram-smoothed, ``smoothed_pdfa``'s state ``Q``): the
    kernel's prediction (``_prefix_tree._pdfa_log_prob``) equals the smoothed machine's
    (numpy, written apart) there too, and by hand for "b": beta / (N_0 + 2 beta) for the
    letter from the start state, then (2 + beta) / (5 + 3 beta) for the end in the sink
    (unigram: 2 ends, 3 a's, 0 b's; the random corpora of the test above never reach it)."""
    train = Corpus.from_strings([[0], [0, 0]], 2)
    method = get_method(name)
    options = {"beta": 0.5, "alpha": 0.05}
    result = method.fit(train, options, 0, False)
    assert (result.arrays["delta"][:, 2] < 0).all()  # letter 1 (symbol 2): the sink
    machine = method.automaton(result.arrays, options)
    test = Corpus.from_strings([[1], [1, 1], [0, 1], [1, 0], [0, 1, 0, 0]], 2)
    lp = method.predict_log_prob(result.arrays, options, test)
    np.testing.assert_allclose(lp, machine.log_prob(test), rtol=1e-12, atol=1e-12)
    n0 = result.arrays["counts"][0].sum()
    assert lp[0] == pytest.approx(np.log(0.5 / (n0 + 1.5)) + np.log(2.5 / 6.5), rel=1e-12)


@pytest.mark.shared_data
def test_vgrams_reproduce_table3_problem43(shared_data):
    """Table 3 of the paper, problem 43: EVGram 0.1828 with 43 contexts, CVGram 0.1648 with
    79 (score minus minimal score, beta = 0.5, 10 folds)."""
    from bayesfa.pautomac import read_solution
    from bayesfa.scoring import score_all

    folder = shared_data / "pautomac"
    train = read_sample(pautomac_path(43, "train", folder))
    test = read_sample(pautomac_path(43, "test", folder)).with_alphabet(train.alphabet_size)
    solution = read_solution(pautomac_path(43, "solution", folder))
    for arrays, score, states in ((evgram(train, 0.5), 0.1828, 43), (cvgram(train, 0.5, 10), 0.1648, 79)):
        s = score_all(np.exp(_vgram.vgram_log_prob(arrays, 0.5, test)), solution)
        assert round(s.score - s.min_score, 4) == score
        assert arrays["counts"].shape[0] == states


# -- ALERGIA ---------------------------------------------------------------------------------------
def test_alergia_hoeffding_extremes():
    corpus = random_corpus(11, 300, 3)
    # alpha = 2: the bound is 0, every pair with different frequencies differs: few merges
    tight = alergia(corpus, 2.0)
    loose = alergia(corpus, 1e-12)
    assert loose["counts"].shape[0] < tight["counts"].shape[0]
    assert loose["counts"].sum() == tight["counts"].sum() == corpus.n_tokens
    with pytest.raises(ValueError):
        alergia(corpus, 0.0)


def test_alergia_compatibility_stack_grows_past_its_capacity():
    """``_compatible`` walks the common letters of two subtrees on a stack of pairs that it
    grows when full (numba writes past an array's end unchecked). Two nodes with three common
    children, from a stack of two slots, need six: the stack comes back with at least six,
    and the answer is that of the walk done by hand (every pair has the same counts:
    compatible; one pair's counts far apart: not). Issue 39's surviving cosmic-ray mutants of
    the growth test (``top + 2 > size`` -> ``top / 2 > size``, ``top - 2 > size``, ``top % 2 >
    size``) never grow it and write past it (the process crashes: a kill); those that grow it earlier
    (``top * 2 > size``, ``top + 2 >= size``) change only its capacity, which is not asked."""
    from bayesfa.learners.greedy.alergia import _compatible

    child = np.full((8, 4), -1, dtype=np.int32)  # letters 1..3; node 0 and node 4 alike
    child[0, 1:] = [1, 2, 3]
    child[4, 1:] = [5, 6, 7]
    count = np.tile(np.array([5, 3, 3, 3], dtype=np.int64), (8, 1))
    ok, stack = _compatible(0, 4, child, count, 1.0, np.empty(2, dtype=np.int64))
    assert ok and stack.shape[0] >= 6
    count[7] = [100, 0, 0, 0]  # node 7 (letter 3 under node 4) ends every string
    ok, stack = _compatible(0, 4, child, count, 0.1, np.empty(2, dtype=np.int64))
    assert not ok and stack.shape[0] >= 6


def aalpy_machine(corpus: Corpus, alpha: float):
    """AALpy's ALERGIA on ``corpus`` (one input 'x', outputs the letters and END = A), as
    ``(delta, counts)`` in our layout, states in AALpy's red order."""
    alergia_mod = pytest.importorskip("aalpy.learning_algs.stochastic_passive.Alergia")

    class Recorder(alergia_mod.Alergia):
        def normalize(self, red):
            self.red = list(red)
            super().normalize(red)

    end = corpus.alphabet_size
    data = [[("x", int(a)) for a in s] + [("x", end)] for s in corpus.strings()]
    learner = Recorder(data, automaton_type="smm", eps=alpha)
    learner.run()
    index = {r.prefix: i for i, r in enumerate(learner.red)}
    n_sym = corpus.alphabet_size + 1
    delta = np.full((len(learner.red), n_sym), -1, dtype=np.int64)
    counts = np.zeros((len(learner.red), n_sym), dtype=np.int64)
    for i, r in enumerate(learner.red):
        for (_, a), f in r.input_frequency.items():
            col = 0 if a == end else a + 1
            counts[i, col] = f
            if a != end:
                delta[i, col] = index[r.children[("x", a)].prefix]
    return delta, counts


def test_alergia_matches_aalpy_on_pautomac_24():
    corpus = read_sample(pautomac_path(24, "train"))
    delta, counts = aalpy_machine(corpus, 0.05)
    ours = alergia(corpus, 0.05)
    np.testing.assert_array_equal(ours["counts"], counts)
    np.testing.assert_array_equal(ours["delta"], delta)


def test_alergia_matches_aalpy_when_the_deepest_node_is_heavy():
    """The same with 60 copies of a string longer than the others, so that the prefix tree's
    last node (a leaf, the deepest) carries 60 strings: a compatibility test that also
    compared nodes where only one side has a child (reading the missing child, -1, as that
    last node) blocks merges AALpy makes, which a tree whose last node holds one string (always
    compatible) cannot show."""
    base = random_corpus(3, 300, 3)
    longest = [0, 1, 2] * 4 + [0, 1]
    corpus = Corpus.from_strings([s.tolist() for s in base.strings()] + [longest] * 60, 3)
    delta, counts = aalpy_machine(corpus, 0.05)
    ours = alergia(corpus, 0.05)
    assert counts.shape[0] > 3
    np.testing.assert_array_equal(ours["counts"], counts)
    np.testing.assert_array_equal(ours["delta"], delta)


@pytest.mark.parametrize("alpha", [0.0, -0.5, 2.5])
def test_alergia_refuses_alpha_outside_its_interval(alpha):
    """``--alpha`` (AALpy's ``eps``) outside (0, 2] is a one-line error, negative ones too
    (``log(2 / alpha)`` would otherwise fail with a math domain error)."""
    from bayesfa.errors import InputError

    with pytest.raises(InputError, match=r"--alpha must be in \(0, 2\]"):
        alergia(random_corpus(0, 20, 2), alpha)


@pytest.mark.shared_data
@pytest.mark.parametrize("problem, alpha", [(43, 0.05), (31, 0.3)])
def test_alergia_matches_aalpy_on_shared_problems(shared_data, problem, alpha):
    corpus = read_sample(pautomac_path(problem, "train", shared_data / "pautomac"))
    delta, counts = aalpy_machine(corpus, alpha)
    ours = alergia(corpus, alpha)
    assert ours["counts"].shape[0] > 3
    np.testing.assert_array_equal(ours["counts"], counts)
    np.testing.assert_array_equal(ours["delta"], delta)


def _pautomac_problems():
    from conftest import shared_data_path

    folder = shared_data_path() / "pautomac"
    return [k for k in range(1, 49) if (folder / f"{k}.pautomac.train").is_file()] or [1]


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.parametrize("problem", _pautomac_problems())
def test_every_greedy_method_on_every_pautomac_problem(shared_data, problem):
    """All four fit every PAutomaC problem here and give every test string a positive
    probability (speed is measured by benchmarks/greedy_speed.py, not asserted here)."""
    folder = shared_data / "pautomac"
    train = read_sample(pautomac_path(problem, "train", folder))
    test = read_sample(pautomac_path(problem, "test", folder)).with_alphabet(train.alphabet_size)
    options = {"beta": 0.5, "alpha": 0.05, "folds": 10}
    for name in GREEDY:
        method = get_method(name)
        result = method.fit(train, options, 0, False)
        logp = method.predict_log_prob(result.arrays, options, test)
        assert np.all(np.isfinite(logp)), name


def test_tree_parents_of_a_small_trie():
    """``_tree_parents`` of a trie whose nodes are made after their parents: each node's
    parent (-1 for the root, as its docstring says), the letter into it and its depth."""
    #        0 -a1-> 1 -a2-> 3
    #        0 -a2-> 2 -a1-> 4 -a1-> 5
    child = np.full((6, 3), -1, dtype=np.int32)
    child[0, 1], child[0, 2], child[1, 2], child[2, 1], child[4, 1] = 1, 2, 3, 4, 5
    par, let, depth = _vgram._tree_parents(child)
    np.testing.assert_array_equal(par, [-1, 0, 0, 1, 2, 4])
    np.testing.assert_array_equal(let, [0, 1, 2, 2, 1, 1])
    np.testing.assert_array_equal(depth, [0, 1, 1, 2, 2, 3])


def _trie(edges, n_sym):
    """A trie ``child [n, n_sym]`` from ``(parent, letter, node)`` edges, nodes made after
    their parents."""
    child = np.full((1 + len(edges), n_sym), -1, dtype=np.int32)
    for parent, letter, node in edges:
        child[parent, letter] = node
    return child


@pytest.mark.parametrize("edges, n_sym", [
    # root -1-> 1 -2-> 3 -1-> 4, root -2-> 2: node 4's path 1,2,1 has the factor 2,1, which
    # leaves the trie below node 2
    ([(0, 1, 1), (0, 2, 2), (1, 2, 3), (3, 1, 4)], 3),
    # a deeper one, with the start letter 0 and factors leaving below nodes of depth 1 and 2
    ([(0, 1, 1), (0, 2, 2), (0, 3, 3), (1, 2, 4), (2, 3, 5), (4, 3, 6), (6, 0, 7), (5, 1, 8),
      (8, 2, 9)], 4),
])
def test_factor_closure_context_is_the_deepest_trie_node_on_each_states_path(edges, n_sym):
    """``_factor_closure``'s ``s_ctx``: for each state of the backward trie ``S``, the deepest
    node of the VGram trie on the state's path from the root (both read newest letter first),
    recomputed here by walking the trie along the path; on these tries some states leave the
    trie below a node other than the root (the case whose encoding the function decodes at
    its end)."""
    child = _trie(edges, n_sym)
    s_child, s_ctx = _vgram._factor_closure(child)
    parent = {int(c): (s, b) for s in range(s_child.shape[0]) for b in range(s_child.shape[1])
              if (c := s_child[s, b]) >= 0}
    off_below_root = 0
    for s in range(s_child.shape[0]):
        path, x = [], s
        while x != 0:
            x, b = parent[x]
            path.append(b)
        node, on = 0, True
        for b in reversed(path):  # from the root down
            if child[node, b] < 0:
                on = False
                break
            node = int(child[node, b])
        off_below_root += (not on) and node != 0
        assert s_ctx[s] == node, s
    assert off_below_root > 0


@pytest.mark.parametrize("variant", [-1, 6, 7])
def test_vgram_refuses_a_variant_that_is_neither_the_method_nor_a_mutant(variant):
    """The criterion runs any unknown ``variant`` as the method, so ``vgram`` refuses one rather
    than let a caller that meant a mutant (or a wrong default) run the method unseen."""
    with pytest.raises(ValueError, match="unknown VGram variant"):
        _vgram.vgram(random_corpus(0, 20, 2), 0.5, _vgram.EVIDENCE, variant=variant)
