"""Corpus: the flat token layout of Shibata & Yoshinaka (2013), Sect. 2.1."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError


# -- strategies -----------------------------------------------------------------------------
@st.composite
def corpora(draw, max_strings: int = 12, max_length: int = 7):
    """``(strings, alphabet_size)``; empty strings are frequent (lengths start at 0)."""
    alphabet_size = draw(st.integers(1, 5))
    strings = draw(st.lists(st.lists(st.integers(0, alphabet_size - 1), max_size=max_length),
                            max_size=max_strings))
    return strings, alphabet_size


def as_lists(corpus: Corpus) -> list[list[int]]:
    return [s.tolist() for s in corpus.strings()]


# -- layout ---------------------------------------------------------------------------------
def test_layout_of_section_2_1():
    c = Corpus.from_strings([[0, 1], [], [2]])
    assert c.tokens.tolist() == [1, 2, 0, 0, 3, 0]
    assert c.offsets.tolist() == [0, 3, 4, 6]
    assert c.tokens.dtype == np.int32 and c.offsets.dtype == np.int64
    assert c.alphabet_size == 3  # max letter + 1
    assert (c.n_strings, c.n_tokens, c.n_letters, len(c)) == (3, 6, 3, 3)
    assert c.lengths.tolist() == [2, 0, 1]
    assert as_lists(c) == [[0, 1], [], [2]]
    assert c.string(1).size == 0


def test_explicit_alphabet_is_kept():
    c = Corpus.from_strings([[0], [1]], alphabet_size=7)
    assert c.alphabet_size == 7
    assert c.tokens.tolist() == [1, 0, 2, 0]


def test_padded_layout():
    letters, lengths = Corpus.from_strings([[0, 1], [], [2]]).padded()
    assert letters.tolist() == [[0, 1], [-1, -1], [2, -1]]
    assert lengths.tolist() == [2, 0, 1]


# -- empty strings and empty corpora --------------------------------------------------------
def test_only_empty_strings():
    c = Corpus.from_strings([[], [], []])
    assert c.tokens.tolist() == [0, 0, 0]
    assert c.offsets.tolist() == [0, 1, 2, 3]
    assert c.alphabet_size == 1  # nothing seen: the smallest alphabet
    assert (c.n_letters, c.n_tokens) == (0, 3)
    letters, lengths = c.padded()
    assert letters.shape == (3, 0) and lengths.tolist() == [0, 0, 0]
    assert as_lists(c) == [[], [], []]
    assert as_lists(c.subset([2, 0])) == [[], []]
    assert c.with_alphabet(4).alphabet_size == 4


def test_no_strings_at_all():
    c = Corpus.from_strings([], alphabet_size=3)
    assert c.tokens.size == 0 and c.offsets.tolist() == [0]
    assert (c.n_strings, c.n_tokens, c.n_letters) == (0, 0, 0)
    letters, lengths = c.padded()
    assert letters.shape == (0, 0) and lengths.size == 0
    assert c.strings() == []
    assert c.subset([]) == c
    assert c.subset(np.array([], dtype=np.int64)).n_strings == 0
    assert Corpus.from_strings([]).alphabet_size == 1


def test_empty_string_first_and_last():
    c = Corpus.from_strings([[], [1, 1], []], alphabet_size=2)
    assert c.tokens.tolist() == [0, 2, 2, 0, 0]
    assert as_lists(c.subset([2, 1, 0])) == [[], [1, 1], []]


# -- round trips (property-based) ----------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(corpora())
def test_strings_round_trip(data):
    strings, alphabet_size = data
    c = Corpus.from_strings(strings, alphabet_size)
    assert as_lists(c) == strings
    assert c.n_strings == len(strings)
    assert c.n_letters == sum(map(len, strings))
    assert c.n_tokens == c.n_letters + c.n_strings
    assert np.count_nonzero(c.tokens == 0) == len(strings)
    # Rebuilding from the arrays gives an equal corpus.
    assert Corpus(c.tokens.copy(), c.offsets.copy(), c.alphabet_size) == c


@settings(max_examples=100, deadline=None)
@given(corpora())
def test_padded_round_trip(data):
    strings, alphabet_size = data
    letters, lengths = Corpus.from_strings(strings, alphabet_size).padded()
    assert lengths.tolist() == [len(s) for s in strings]
    assert letters.shape == (len(strings), max(map(len, strings), default=0))
    for row, n, s in zip(letters, lengths, strings):
        assert row[:n].tolist() == s
        assert (row[n:] == -1).all()


@settings(max_examples=100, deadline=None)
@given(corpora(), st.data())
def test_subset_round_trip(data, draw):
    strings, alphabet_size = data
    c = Corpus.from_strings(strings, alphabet_size)
    idx = draw.draw(st.lists(st.integers(0, max(len(strings) - 1, 0)), max_size=15)
                    if strings else st.just([]))
    sub = c.subset(idx)
    assert sub == Corpus.from_strings([strings[i] for i in idx], alphabet_size)
    assert c.subset(np.arange(c.n_strings)) == c
    # subset of a subset composes
    if idx:
        inner = draw.draw(st.lists(st.integers(0, len(idx) - 1), max_size=8))
        assert sub.subset(inner) == c.subset([idx[i] for i in inner])


@settings(max_examples=80, deadline=None)
@given(corpora(), st.integers(0, 4))
def test_with_alphabet(data, extra):
    strings, alphabet_size = data
    c = Corpus.from_strings(strings, alphabet_size)
    wider = c.with_alphabet(alphabet_size + extra)
    assert wider.alphabet_size == alphabet_size + extra
    assert as_lists(wider) == strings
    assert (wider == c) == (extra == 0)
    if alphabet_size > 1:
        with pytest.raises(InputError):
            c.with_alphabet(alphabet_size - 1)


# -- rejected input -------------------------------------------------------------------------
@pytest.mark.parametrize("tokens, offsets, alphabet_size", [
    pytest.param([1, 0], [1, 2], 2, id="offsets-not-from-0"),
    pytest.param([1, 0], [0, 1], 2, id="offsets-stop-short"),
    pytest.param([1, 0], [0, 3], 2, id="offsets-past-the-end"),
    pytest.param([1, 0], [], 2, id="no-offsets"),
    pytest.param([0, 0], [0, 0, 2], 2, id="string-without-end-marker"),
    pytest.param([0, 1, 0], [0, 2, 1, 3], 2, id="decreasing-offsets"),
    pytest.param([1, 2], [0, 2], 2, id="not-ending-with-0"),
    pytest.param([1, 0, 2, 0], [0, 4], 2, id="end-marker-inside-a-string"),
    pytest.param([3, 0], [0, 2], 2, id="letter-outside-alphabet"),
    pytest.param([-1, 0], [0, 2], 2, id="negative-token"),
    pytest.param([0], [0, 1], 0, id="empty-alphabet"),
    pytest.param([[1, 0]], [0, 2], 2, id="2d-tokens"),
    pytest.param([1, 0], [[0, 2]], 2, id="2d-offsets"),
])
def test_constructor_rejects_inconsistent_arrays(tokens, offsets, alphabet_size):
    with pytest.raises(ValueError):
        Corpus(np.asarray(tokens), np.asarray(offsets), alphabet_size)


@pytest.mark.parametrize("strings, alphabet_size", [
    ([[0, 3]], 3),
    ([[-1]], 3),
    ([[], [0, 1, 2]], 2),
])
def test_from_strings_rejects_letters_outside_alphabet(strings, alphabet_size):
    with pytest.raises(InputError, match="outside the alphabet"):
        Corpus.from_strings(strings, alphabet_size)


def test_equality_needs_same_alphabet():
    a = Corpus.from_strings([[0]], 1)
    assert a == Corpus.from_strings([[0]], 1)
    assert a != Corpus.from_strings([[0]], 2)
    assert a != "not a corpus"
    assert "n_strings=1" in repr(a)
