"""The synthetic grammars of the PDIA paper (bayesfa.datasets): language, mass, state count.

Each grammar is checked against an acceptor written independently of its PDFA (a regular
expression derived by hand from the grammar's definition), by exact enumeration of every
string up to a length (the mass beyond it, the "tail", is computed separately and stated),
and by a brute-force minimisation that confirms the number of states.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from bayesfa.corpus import Corpus
from bayesfa.datasets import GRAMMARS, grammar, grammar_samples

# Reber: L4 = strings from state 4 to the end, L5 from state 5 (solved by hand from the edges
# 1-T->2, 1-P->3, 2-S->2, 2-X->4, 3-T->3, 3-V->5, 4-X->3, 4-S->6, 5-P->4, 5-V->6, 6-E->end).
_L4 = "(?:XT*VP)*(?:XT*VV|S)"
_L5 = f"(?:P{_L4}|V)"
ACCEPTORS = {
    "even": re.compile(r"(?:0|11)*"),                      # blocks of 1s of even length
    "reber": re.compile(f"B(?:TS*X{_L4}|PT*V{_L5})"),
    "feldman": re.compile(r"(?:000|011|101|110)*"),         # x y (x XOR y) blocks
}
#: The paper (Sect. 5, Fig. 3): even process 2 states, Reber 7 states and 7 symbols (end
#: included), "up to 7 states and 7 symbols". Feldman (RRXOR reconstruction): 5.
PAPER_STATES = {"even": 2, "reber": 7, "feldman": 5}


def accepts(name: str, word: str) -> bool:
    return ACCEPTORS[name].fullmatch(word) is not None


def enumerate_strings(g, max_len: int) -> list[list[int]]:
    """Every string of positive probability up to ``max_len`` letters, by expanding prefixes
    along the PDFA (a prefix is kept if its letter has positive probability)."""
    out, frontier = [], [((), g.pdfa.start)]
    for _ in range(max_len + 1):
        nxt = []
        for word, q in frontier:
            if g.pdfa.stop[q] > 0:
                out.append(list(word))
            for a in np.flatnonzero(g.pdfa.pi[q] > 0):
                nxt.append((word + (int(a),), int(g.pdfa.delta[q, a])))
        frontier = nxt
    return out


def tail_mass(g, max_len: int) -> float:
    """Pr(|w| > max_len): mass still running after ``max_len`` letters, by powers of the
    substochastic state-to-state matrix (not by enumeration)."""
    n = g.n_states
    move = np.zeros((n, n))
    for q in range(n):
        for a in np.flatnonzero(g.pdfa.delta[q] >= 0):
            move[q, g.pdfa.delta[q, a]] += g.pdfa.pi[q, a]
    v = np.zeros(n)
    v[g.pdfa.start] = 1.0
    for _ in range(max_len + 1):
        v = v @ move
    return float(v.sum())


def n_distinguishable_states(g) -> int:
    """Number of classes of Moore's partition refinement over the reachable states."""
    pdfa = g.pdfa
    reach, todo = {pdfa.start}, [pdfa.start]
    while todo:
        q = todo.pop()
        for r in pdfa.delta[q][pdfa.delta[q] >= 0]:
            if int(r) not in reach:
                reach.add(int(r))
                todo.append(int(r))
    states = sorted(reach)
    block = {q: (pdfa.stop[q], tuple(pdfa.pi[q])) for q in states}
    while True:
        ids = {k: i for i, k in enumerate(sorted(set(block.values())))}
        new = {q: (ids[block[q]],) + tuple(ids[block[int(r)]] if r >= 0 else -1
                                           for r in pdfa.delta[q]) for q in states}
        if len(set(new.values())) == len(set(block.values())):
            return len(set(new.values()))
        block = new


# -- language --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(GRAMMARS))
def test_samples_are_accepted(name):
    g = grammar(name)
    corpus = g.sample(2000, np.random.default_rng(7))
    words = g.decode(corpus)
    assert all(accepts(name, w) for w in words)
    # and they are not trivial: several lengths and many distinct strings
    assert len(set(words)) > 100 and len({len(w) for w in words}) > 5


@pytest.mark.parametrize("name, max_len", [("even", 12), ("feldman", 12), ("reber", 5)])
def test_support_is_the_language(name, max_len):
    """Brute force over every word up to ``max_len``: positive probability iff accepted."""
    g = grammar(name)
    words = [w for n in range(max_len + 1) for w in itertools.product(range(g.alphabet_size), repeat=n)]
    prob = g.pdfa.to_pfa().prob(Corpus.from_strings(words, g.alphabet_size))
    text = ["".join(g.symbols[a] for a in w) for w in words]
    accepted = np.array([accepts(name, t) for t in text])
    np.testing.assert_array_equal(prob > 0, accepted)
    assert accepted.sum() >= 5


# -- probability mass ------------------------------------------------------------------------------

#: (grammar, enumeration length, stated bound on the tail mass beyond it)
MASS_CASES = [("even", 16, 0.3), ("feldman", 18, 0.21), ("reber", 18, 0.012)]


@pytest.mark.parametrize("name, max_len, tail_bound", MASS_CASES)
def test_string_probabilities_sum_to_one(name, max_len, tail_bound):
    g = grammar(name)
    strings = enumerate_strings(g, max_len)
    mass = float(np.exp(g.pdfa.log_prob(Corpus.from_strings(strings, g.alphabet_size))).sum())
    tail = tail_mass(g, max_len)
    assert 0 < tail < tail_bound
    assert mass + tail == pytest.approx(1.0, abs=1e-12)
    # every enumerated string is in the language
    assert all(accepts(name, "".join(g.symbols[a] for a in s)) for s in strings)


# -- states ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(GRAMMARS))
def test_number_of_states_is_the_papers_and_minimal(name):
    g = grammar(name)
    assert g.n_states == PAPER_STATES[name]
    assert n_distinguishable_states(g) == g.n_states      # no state is redundant or unreachable


def test_paper_bounds_up_to_seven_states_and_symbols():
    gs = [grammar(n) for n in GRAMMARS]
    assert max(g.n_states for g in gs) == 7
    assert max(g.alphabet_size + 1 for g in gs) == 7       # letters + the end symbol
    reber = grammar("reber")
    assert (reber.n_states, reber.alphabet_size + 1) == (7, 7)


# -- sample sets -----------------------------------------------------------------------------------

def test_grammar_samples_nested_and_reproducible():
    sets = grammar_samples("reber", [10, 30, 100], seed=3)
    assert [c.n_strings for c in sets] == [10, 30, 100]
    assert sets[1].subset(np.arange(10)) == sets[0] and sets[2].subset(np.arange(30)) == sets[1]
    again = grammar_samples("reber", [10, 30, 100], seed=3)
    assert all(a == b for a, b in zip(sets, again))
    other = grammar_samples("reber", [100], seed=4)[0]
    assert not other == sets[2]
    with pytest.raises(ValueError):
        grammar_samples("reber", [30, 10], seed=3)
    with pytest.raises(ValueError):
        grammar("nope")


def test_pautomac_path_unknown_kind_is_one_line():
    from bayesfa.datasets import pautomac_path
    from bayesfa.errors import InputError

    with pytest.raises(InputError, match="kind 'tests' is unknown; choose from train, test"):
        pautomac_path(24, "tests")
