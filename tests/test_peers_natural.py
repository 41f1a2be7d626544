"""benchmarks/peers_natural.py: the perplexity conventions on a toy whose answer is known by
hand (one state, p(a) = 1/2, p(b) = 1/4, p(end) = 1/4), the prefix WFA of the spectral method,
ALERGIA's prefix probabilities, the DNA windows, and one row per (dataset, method)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from bayesfa.automata import PFA
from bayesfa.corpus import Corpus

import benchmodules


@pytest.fixture(scope="module")
def nat():
    return benchmodules.load("peers_natural.py")


@pytest.fixture
def toy():
    """One state: a with 1/2, b with 1/4, the end with 1/4; the strings "ab" and "a"."""
    pfa = PFA(np.array([1.0]), np.array([[[0.5]], [[0.25]]]), np.array([0.25]))
    return pfa, Corpus.from_strings([[0, 1], [0]], 2)


def test_perplexity_by_hand_all_symbols_and_letters_only(nat, toy):
    pfa, corpus = toy
    # p("ab") = 1/2 * 1/4 * 1/4 = 2^-5, p("a") = 1/2 * 1/4 = 2^-3: 2^-8 over 3 letters + 2 ends
    perp, bad = nat.natural_perplexity(pfa.log_prob(corpus), corpus.n_tokens)
    assert bad == 0 and perp == pytest.approx(2 ** (8 / 5))
    # prefixes: p("ab" ...) = 1/8, p("a" ...) = 1/2: 2^-4 over the 3 letters
    pref = nat.pfa_prefix_log_prob(pfa, corpus)
    np.testing.assert_allclose(pref, np.log([1 / 8, 1 / 2]))
    perp, bad = nat.natural_perplexity(pref, corpus.n_letters)
    assert bad == 0 and perp == pytest.approx(2 ** (4 / 3))


def test_zero_probability_counted_not_averaged(nat):
    assert nat.natural_perplexity([np.log(0.5), -np.inf, np.nan], 5) == (None, 2)


def test_prefix_wfa_of_the_substring_wfa(nat, toy):
    pfa, corpus = toy
    # the toy's substring WFA: alpha0_s = init (I - A_Sigma)^-1, alpha_inf_s = (I - A_Sigma)^-1 stop
    inv = np.linalg.inv(np.eye(1) - pfa.trans.sum(axis=0))
    ws = (pfa.init @ inv, pfa.trans, inv @ pfa.stop)
    xs = [s.tolist() for s in corpus.strings()]
    peers = nat.peers
    np.testing.assert_allclose(peers.wfa_values(peers.substring_to_string(ws), xs), [1 / 32, 1 / 8])
    np.testing.assert_allclose(peers.wfa_values(nat.prefix_wfa(ws), xs), [1 / 8, 1 / 2])


def test_alergia_prefix_and_end(nat, toy):
    _, corpus = toy
    # AALpy's chain: an initial state "^" and one state per output; from every state, "0" (a)
    # with 1/2, "1" (b) with 1/4, "$" with 1/4
    states = {o: SimpleNamespace(output=o, transitions=[]) for o in ("^", "0", "1", "$")}
    for o in ("^", "0", "1"):
        states[o].transitions = [(states["0"], 0.5), (states["1"], 0.25), (states["$"], 0.25)]
    mc = SimpleNamespace(states=list(states.values()), initial_state=states["^"])
    np.testing.assert_allclose(nat.peers.alergia_log_probs(mc, corpus), np.log([1 / 32, 1 / 8]))
    np.testing.assert_allclose(nat.peers.alergia_log_probs(mc, corpus, end=False),
                               np.log([1 / 8, 1 / 2]))
    states["0"].transitions = [(states["0"], 0.5), (states["$"], 0.5)]  # b never after a
    assert nat.peers.alergia_log_probs(mc, corpus, end=False)[0] == -np.inf


def test_windows_cut_the_sequence_in_reading_order(nat):
    seq = Corpus.from_strings([[0, 1, 2, 3, 0, 1, 2]], 4)
    w = nat.windows(seq, 3)
    assert [s.tolist() for s in w.strings()] == [[0, 1, 2], [3, 0, 1], [2]]
    assert w.alphabet_size == 4 and w.n_letters == seq.n_letters


def test_rows_one_per_dataset_and_method(nat):
    rows = [nat.nat_row("dna", "spectral", status="zero probability (3 of 284 test windows)"),
            nat.nat_row("aiw-paper", "pdia", perplexity=5.37),
            nat.nat_row("aiw-paper", "alergia", perplexity=9.0),
            nat.nat_row("dna", "spectral", perplexity=4.1)]  # a rerun wins
    merged = nat.merge(rows)
    assert [(r["dataset"], r["method"]) for r in merged] == [
        ("aiw-paper", "alergia"), ("aiw-paper", "pdia"), ("dna", "spectral")]
    assert merged[-1]["perplexity"] == 4.1
    assert nat.rows_csv(merged).splitlines()[0] == ",".join(nat.COLUMNS)
