"""Formats lose nothing (issue 36, item 1): every reader keeps every string, the empty one
included, and every writer writes what its reader reads back; fit -> predict gives one row per
test string, in order, for every registered method.

Property tests (hypothesis) draw corpora with empty strings, one-letter strings, unicode
letters, multi-character symbols and integers, and round-trip them through the PAutomaC sample
writer / reader (:func:`bayesfa.pautomac.write_sample`, :func:`~bayesfa.pautomac.read_sample`)
and the lines writer / reader (:func:`bayesfa.textdata.format_lines`,
:func:`~bayesfa.textdata.load_lines`, with and without a separator), and through the Python
API's encoding (:func:`bayesfa.api.as_corpus`). Deterministic: no statistical assertion.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bayesfa
from bayesfa.api import as_corpus, read_file
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.pautomac import read_sample, read_solution, write_sample
from bayesfa.textdata import format_lines, load_fasta, load_lines

HYPO = settings(max_examples=80, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])

# unicode letters (no byte-order mark, no line break, no space: they are letters)
LETTER = st.characters(categories=("Lu", "Ll", "Lo", "Lm"))
CHAR_STRINGS = st.lists(st.one_of(st.just(""), LETTER, st.text(LETTER, max_size=8)),
                        min_size=1, max_size=12)
WORD = st.text(st.characters(categories=("L", "N", "P", "S"), exclude_characters=","),
               min_size=1, max_size=5)
WORD_STRINGS = st.lists(st.lists(WORD, max_size=6), min_size=1, max_size=10)
INT_STRINGS = st.lists(st.lists(st.integers(0, 12), max_size=8), min_size=1, max_size=12)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def _symbols(corpus: Corpus, alphabet) -> list[list]:
    return [[alphabet[i] for i in s] for s in corpus.strings()]


@HYPO
@given(strings=CHAR_STRINGS)
def test_lines_of_characters_round_trip(tmp_path, strings):
    path = _write(tmp_path, "x.lines", format_lines(strings))
    corpus, alphabet = load_lines(path) if any(strings) else load_lines(path, alphabet="a")
    assert corpus.n_strings == len(strings)
    assert ["".join(s) for s in _symbols(corpus, alphabet.symbols)] == strings


@HYPO
@given(strings=WORD_STRINGS, separator=st.sampled_from([" ", "\t", ","]))
def test_lines_of_words_round_trip(tmp_path, strings, separator):
    if separator.isspace():  # whitespace separates the words: a word holds none
        strings = [[w for w in s if not any(c.isspace() for c in w)] for s in strings]
    path = _write(tmp_path, "x.lines", format_lines(strings, separator))
    words = sorted({w for s in strings for w in s}) or ["w"]
    corpus, alphabet = load_lines(path, alphabet=words, separator=separator)
    assert corpus.n_strings == len(strings)
    assert _symbols(corpus, alphabet.symbols) == strings


@HYPO
@given(strings=INT_STRINGS)
def test_integers_round_trip_through_lines_and_pautomac(tmp_path, strings):
    path = _write(tmp_path, "x.lines", format_lines(strings, " "))
    corpus, alphabet = load_lines(path, alphabet=[str(i) for i in range(13)], separator=" ")
    assert [[int(x) for x in s] for s in _symbols(corpus, alphabet.symbols)] == strings
    # PAutomaC: the integers are the letter numbers themselves
    letters = Corpus.from_strings(strings, 13)
    write_sample(tmp_path / "x.pautomac", letters)
    back = read_sample(tmp_path / "x.pautomac")
    assert back == letters and [s.tolist() for s in back.strings()] == strings
    via_api, _ = read_file(tmp_path / "x.pautomac", "pautomac")
    assert via_api == letters


@HYPO
@given(strings=st.one_of(CHAR_STRINGS, WORD_STRINGS, INT_STRINGS))
def test_python_strings_keep_every_string(strings):
    if not any(len(s) for s in strings):
        with pytest.raises(InputError, match="every string is empty"):
            as_corpus(strings)
        return
    corpus, alphabet, record = as_corpus(strings)
    assert corpus.n_strings == len(strings) and record["format"] == "symbols"
    assert _symbols(corpus, alphabet) == [list(s) for s in strings]
    # test data read back through the run's alphabet: the same letters, every string
    train = {"format": "symbols", "alphabet": alphabet, "alphabet_size": len(alphabet)}
    again, _, _ = as_corpus(strings, train=train)
    assert again == corpus


def test_pautomac_header_count_must_match_the_lines(tmp_path):
    path = _write(tmp_path, "x.pautomac", "3 2\n1 0\n0\n")
    with pytest.raises(InputError, match=r"x\.pautomac:1: header says 3 strings but the file has 2"):
        read_sample(path)
    path = _write(tmp_path, "y.pautomac", "3 2\n1 0\n\n1 1\n")
    with pytest.raises(InputError, match=r"y\.pautomac:3: blank line \(the empty string is written '0'\)"):
        read_sample(path)


def test_fasta_keeps_records_without_sequence(tmp_path):
    path = _write(tmp_path, "x.fa", ">a\nAC\n>b\n>c\nG\nT\n>d\n")
    corpus, alphabet = load_fasta(path)
    assert ["".join(s) for s in _symbols(corpus, alphabet.symbols)] == ["AC", "", "GT", ""]


# -- fit -> predict: one row per string, for every method ------------------------------------

#: the smallest settings each method takes (only the options it has are given)
TINY = {"states": 2, "iterations": 4, "burn_in": 2, "period": 1, "chains": 1, "restarts": 1,
        "n_iter": 5, "folds": 2, "order": 2}
#: a fixed small corpus over a b with empty strings, and test strings with empty ones too
TRAIN = ["ab", "", "a", "ba", "", "abb", "b", "aab", "", "ba"] * 2
TEST = ["", "ab", "b", "", "bba", ""]


def _tiny(method: str) -> dict:
    names = {o.name for o in bayesfa.options(method)}
    return {k: v for k, v in TINY.items() if k in names}


@pytest.mark.parametrize("method", bayesfa.methods())
def test_fit_predict_writes_one_row_per_string(tmp_path, method):
    lines = _write(tmp_path, "train.lines", format_lines(TRAIN))
    test = _write(tmp_path, "test.lines", format_lines(TEST))
    run = bayesfa.fit(lines, method=method, format="lines", seed=3, out=tmp_path / "run",
                      **_tiny(method))
    assert run.manifest["train"]["n_strings"] == len(TRAIN)  # empty lines are strings
    logp = run.predict(test)
    assert logp.shape == (len(TEST),) and np.all(logp <= 0) and not np.isnan(logp).any()
    # the same strings from Python give the same rows (not a reversed order: hpyp and the
    # memoizer draw their predictive's seatings with the test set as it is read)
    assert np.array_equal(run.predict(TEST), logp)
    from bayesfa.cli import main

    out = tmp_path / "pred.txt"
    assert main(["predict", str(tmp_path / "run"), str(test), "--out", str(out)]) == 0
    written = read_solution(out, log=True)  # one row per line of the test file
    assert written.shape == (len(TEST),)
    assert np.allclose(written, logp, rtol=1e-12, atol=0)
