"""Loaders for plain text and FASTA (bayesfa.textdata)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayesfa.corpus import Corpus
from conftest import shared_data_path
from bayesfa.errors import InputError
from bayesfa.textdata import (LOWERCASE_AND_SPACE, Alphabet, load_fasta, load_lines,
                              load_text, read_fasta, split_corpus, split_sentences)

HYPO = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def raises_at(path: Path, line: int | None, *fragments: str):
    """Context manager: an InputError naming ``path`` (and ``line``) and each fragment."""
    class _Check:
        def __enter__(self):
            self.ctx = pytest.raises(InputError)
            self.info = self.ctx.__enter__()
            return self.info

        def __exit__(self, *exc):
            swallowed = self.ctx.__exit__(*exc)
            err = self.info.value
            msg = str(err)
            assert "\n" not in msg
            assert path.name in msg and err.path == os.fspath(path)
            assert err.line == line, msg
            if line is not None:
                assert msg.startswith(f"{os.fspath(path)}:{line}: "), msg
            for f in fragments:
                assert f in msg, msg
            return swallowed
    return _Check()


def decoded(corpus: Corpus, alphabet: Alphabet) -> list[str]:
    return [alphabet.decode(s) for s in corpus.strings()]


# ---------------------------------------------------------------------------------------
# Alphabet
# ---------------------------------------------------------------------------------------
def test_alphabet_from_text_is_sorted_distinct():
    a = Alphabet.from_text(["the cat", "sat"])
    assert a.symbols == (" ", "a", "c", "e", "h", "s", "t")
    assert Alphabet.from_text("ba") == Alphabet("ab") == Alphabet(("a", "b"))
    assert len(a) == a.size == 7 and "c" in a and "z" not in a
    assert a.index("c") == 2
    with pytest.raises(KeyError):
        a.index("z")


def test_alphabet_rejects_bad_symbols():
    with pytest.raises(ValueError, match="twice"):
        Alphabet("ACGA")
    with pytest.raises(ValueError, match="non-empty strings"):
        Alphabet(("A", ""))
    with pytest.raises(ValueError, match="non-empty strings"):
        Alphabet(("A", 1))


def test_alphabet_of_words():
    a = Alphabet(("the", "cat", "a"))
    assert not a.of_characters and Alphabet("ab").of_characters
    assert a.encode_symbols(["a", "the", "cat"]).tolist() == [2, 0, 1]
    with pytest.raises(InputError, match=r"symbol 1: symbol 'dog' is not in the alphabet"):
        a.encode_symbols(["a", "dog"])
    assert a.encode_symbols(["a", "dog"], unknown="skip").tolist() == [2]


def test_alphabet_unknown_characters():
    a = Alphabet("ACGT")
    with pytest.raises(InputError, match=r"position 2: character 'N'"):
        a.encode("ACNT")
    assert a.encode("ACNT", unknown="skip").tolist() == [0, 1, 3]
    with pytest.raises(ValueError):
        a.encode("A", unknown="ignore")
    with pytest.raises(InputError, match="letter 4"):
        a.decode([0, 4])
    assert Alphabet(()).encode("").size == 0


@HYPO
@given(st.text(min_size=0, max_size=60))
def test_alphabet_round_trip(text):
    a = Alphabet.from_text(text)
    letters = a.encode(text)
    assert letters.dtype == np.int64 and letters.size == len(text)
    assert a.decode(letters) == text
    assert list(a.symbols) == sorted(set(text))


@HYPO
@given(st.lists(st.integers(0, 5), max_size=40))
def test_alphabet_decode_encode(letters):
    a = Alphabet("xyz é\u2019")
    assert a.encode(a.decode(letters)).tolist() == letters


# ---------------------------------------------------------------------------------------
# load_lines
# ---------------------------------------------------------------------------------------
LINE_CHARS = st.sampled_from(list("ab c\té\u2019Z"))


@HYPO
@given(lines=st.lists(st.text(LINE_CHARS, max_size=12), min_size=1, max_size=8),
       crlf=st.booleans(), final_newline=st.booleans())
def test_load_lines_round_trip(tmp_path, lines, crlf, final_newline):
    eol = "\r\n" if crlf else "\n"
    # a final empty line needs the final newline to exist at all
    content = eol.join(lines) + (eol if final_newline or lines[-1] == "" else "")
    path = write(tmp_path, "lines.txt", content)
    alphabet = Alphabet("ab c\té\u2019Z")
    corpus, a = load_lines(path, alphabet=alphabet)
    assert a == alphabet and corpus.alphabet_size == alphabet.size
    assert decoded(corpus, a) == lines  # every line, the empty ones too
    if not any(lines):
        with raises_at(path, None, "every string is empty"):
            load_lines(path)
        return
    corpus, a = load_lines(path)
    assert decoded(corpus, a) == lines
    assert a == Alphabet.from_text(lines)


def test_load_lines_crlf_and_empty_lines(tmp_path):
    path = write(tmp_path, "crlf.txt", b"ab a\r\n\r\nba\r\n")
    corpus, a = load_lines(path)
    assert a.symbols == (" ", "a", "b")
    assert decoded(corpus, a) == ["ab a", "", "ba"]
    assert corpus.lengths.tolist() == [4, 0, 2]


@pytest.mark.parametrize("content, strings", [
    ("a\n\nb\n", ["a", "", "b"]), ("a\n\nb", ["a", "", "b"]), ("a\n\n", ["a", ""]),
    ("\na\n", ["", "a"]), ("a\n", ["a"]), ("a", ["a"]), ("a\n\n\n", ["a", "", ""]),
])
def test_load_lines_final_newline_ends_the_last_line(tmp_path, content, strings):
    # a final newline ends the last line and adds no string; every other newline does
    corpus, a = load_lines(write(tmp_path, "x.txt", content))
    assert decoded(corpus, a) == strings


def test_load_lines_separator(tmp_path):
    path = write(tmp_path, "words.txt", "the cat\n\n  a   cat \n\t\nthe\n")
    corpus, a = load_lines(path, separator=" ")
    assert a.symbols == ("a", "cat", "the")
    assert [[a.symbols[i] for i in s] for s in corpus.strings()] == [
        ["the", "cat"], [], ["a", "cat"], [], ["the"]]
    path = write(tmp_path, "ints.txt", "10,2\n\n2\n")
    corpus, a = load_lines(path, separator=",")
    assert a.symbols == ("10", "2") and corpus.lengths.tolist() == [2, 0, 1]
    path = write(tmp_path, "gap.txt", "1,2\n1,,2\n")
    with raises_at(path, 2, "column 3", "empty symbol"):
        load_lines(path, separator=",")
    path = write(tmp_path, "unk.txt", "a b\na  xy\n")
    with raises_at(path, 2, "column 4", "'xy'", "not in the alphabet"):
        load_lines(path, separator=" ", alphabet=("a", "b"))
    with pytest.raises(InputError, match="separator"):
        load_lines(path, separator="")


def test_load_lines_lowercase(tmp_path):
    path = write(tmp_path, "case.txt", "Alice\nQUEEN")
    corpus, a = load_lines(path, lowercase=True, alphabet=LOWERCASE_AND_SPACE)
    assert decoded(corpus, a) == ["alice", "queen"] and a.size == 27


def test_load_lines_unknown_character(tmp_path):
    path = write(tmp_path, "bad.txt", "abc\n\nab!c\n")
    with raises_at(path, 3, "column 3", "'!'", "not in the alphabet"):
        load_lines(path, alphabet="abc")
    corpus, a = load_lines(path, alphabet="abc", unknown="skip")
    assert decoded(corpus, a) == ["abc", "", "abc"]
    path = write(tmp_path, "bad_crlf.txt", "abc\r\nABC\r\n")
    with raises_at(path, 2, "column 1", "'A'"):
        load_lines(path, alphabet="abc")


def test_load_lines_malformed(tmp_path):
    path = write(tmp_path, "empty.txt", "")
    with raises_at(path, None, "empty file"):
        load_lines(path)
    path = write(tmp_path, "blank.txt", "\n\r\n\n")
    with raises_at(path, None, "every string is empty"):
        load_lines(path)
    corpus, _ = load_lines(path, alphabet="ab")  # three empty strings over a given alphabet
    assert corpus.lengths.tolist() == [0, 0, 0]
    path = write(tmp_path, "cr.txt", "ab\nc\rd\n")
    with raises_at(path, 2, "carriage return", "column 2"):
        load_lines(path)
    path = write(tmp_path, "latin1.txt", "ab\nab\n".encode() + "caf\u00e9\n".encode("latin-1"))
    with raises_at(path, 3, "not UTF-8", "column 4"):
        load_lines(path)
    path = tmp_path / "missing.txt"
    with raises_at(path, None, "cannot read"):
        load_lines(path)


def test_load_lines_bom_is_dropped(tmp_path):
    path = write(tmp_path, "bom.txt", b"\xef\xbb\xbfab\nba")
    corpus, a = load_lines(path)
    assert decoded(corpus, a) == ["ab", "ba"] and a.symbols == ("a", "b")


# ---------------------------------------------------------------------------------------
# split_sentences / load_text
# ---------------------------------------------------------------------------------------
def test_split_sentences_examples():
    text = ("Alice was tired.  She sat\nby her sister!   'What is the use\n"
            "of a book?' thought Alice. e.g. no\n\nCHAPTER II\nThe Pool of Tears\n\n"
            "Curiouser and curiouser... said Alice. 3.5 kg")
    assert split_sentences(text) == [
        "Alice was tired.", "She sat by her sister!", "'What is the use of a book?'",
        "thought Alice.", "e.g.", "no", "CHAPTER II The Pool of Tears",
        "Curiouser and curiouser...", "said Alice.", "3.5 kg"]
    assert split_sentences("") == [] and split_sentences(" \n\n ") == []
    assert split_sentences("No end") == ["No end"]
    assert split_sentences("Why?\u2019 said \u201cOh!\u201d") == ["Why?\u2019", "said \u201cOh!\u201d"]


@HYPO
@given(st.text(st.sampled_from(list("ab .!?'\n\t\r\u2019")), max_size=80))
def test_split_sentences_loses_only_whitespace(text):
    sentences = split_sentences(text)
    assert " ".join(sentences) == " ".join(text.split())
    assert all(s and s == " ".join(s.split()) for s in sentences)


def test_load_text_filter_and_lines(tmp_path):
    content = ("The Duchess's knee--a baby!\r\nIt sneezed.\r\n\r\n"
               "\u2018Off with\r\nher head!\u2019 said 2 Queens.")
    path = write(tmp_path, "prose.txt", content)
    corpus, a = load_text(path, keep=LOWERCASE_AND_SPACE)
    assert decoded(corpus, a) == ["the duchess s knee a baby", "it sneezed",
                                  "off with her head", "said queens"]
    corpus, a = load_text(path, keep=LOWERCASE_AND_SPACE, alphabet=LOWERCASE_AND_SPACE)
    assert a.size == 27 and corpus.alphabet_size == 27
    corpus, a = load_text(path)
    assert decoded(corpus, a)[0] == "the duchess's knee--a baby!"
    corpus, a = load_text(path, lowercase=False, keep=LOWERCASE_AND_SPACE)
    assert decoded(corpus, a)[0] == "he uchess s knee a baby"


def test_load_text_unknown_character_line(tmp_path):
    # the offending character is on line 3, in a sentence that starts on line 1
    path = write(tmp_path, "prose.txt", "one sentence\nthat goes on\nand Zon.\nnext One.")
    with raises_at(path, 3, "column 5", "'z'"):
        load_text(path, alphabet=LOWERCASE_AND_SPACE.replace("z", ""))
    with raises_at(path, 3, "column 5", "'Z'"):
        load_text(path, lowercase=False, alphabet=LOWERCASE_AND_SPACE)
    with raises_at(path, 4, "column 6", "'O'"):
        load_text(path, lowercase=False, alphabet=LOWERCASE_AND_SPACE + "Z.")
    corpus, a = load_text(path, keep=LOWERCASE_AND_SPACE, unknown="skip",
                          alphabet=LOWERCASE_AND_SPACE.replace("z", ""))
    assert decoded(corpus, a) == ["one sentence that goes on and on", "next one"]


def test_load_text_malformed(tmp_path):
    path = write(tmp_path, "empty.txt", "  \n\n")
    with raises_at(path, None, "empty file"):
        load_text(path)
    path = write(tmp_path, "digits.txt", "123. 456!")
    with raises_at(path, None, "every string is empty"):
        load_text(path, keep=LOWERCASE_AND_SPACE)


def test_load_text_keeps_sentences_filtered_to_nothing(tmp_path):
    # a sentence that the filter empties is the empty string, not dropped
    path = write(tmp_path, "digits.txt", "An end. 123.\n\nAnd more!  ")
    corpus, a = load_text(path, keep=LOWERCASE_AND_SPACE)
    assert decoded(corpus, a) == ["an end", "", "and more"]


# ---------------------------------------------------------------------------------------
# FASTA
# ---------------------------------------------------------------------------------------
FASTA = """>seq1 first record
ACGTacgt
NNacGT
>seq2
; a comment
tttt

GGGA
"""


def test_read_fasta_records(tmp_path):
    path = write(tmp_path, "two.fa", FASTA)
    records = read_fasta(path)
    assert [r.header for r in records] == ["seq1 first record", "seq2"]
    assert [r.name for r in records] == ["seq1", "seq2"]
    assert [r.line for r in records] == [1, 4]
    assert [r.sequence for r in records] == ["ACGTACGTNNACGT", "TTTTGGGA"]
    assert records[0].locate(9) == (3, 2) and records[1].locate(4) == (8, 1)
    assert read_fasta(path, uppercase=False)[1].sequence == "ttttGGGA"


def test_load_fasta_multi_record_and_chunks(tmp_path):
    path = write(tmp_path, "two.fa", FASTA.replace("NN", ""))
    corpus, a = load_fasta(path)
    assert a.symbols == tuple("ACGT")
    assert decoded(corpus, a) == ["ACGTACGTACGT", "TTTTGGGA"]
    corpus, a = load_fasta(path, chunk=5)
    assert decoded(corpus, a) == ["ACGTA", "CGTAC", "GT", "TTTTG", "GGA"]
    corpus, a = load_fasta(path, chunk=4)
    assert corpus.lengths.tolist() == [4, 4, 4, 4, 4]
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="chunk"):
            load_fasta(path, chunk=bad)
    corpus, a = load_fasta(path, alphabet="ACGTacgt", uppercase=False)
    assert decoded(corpus, a) == ["ACGTacgtacGT", "ttttGGGA"]
    corpus, a = load_fasta(path, alphabet=None)
    assert a.symbols == tuple("ACGT")


def test_load_fasta_crlf(tmp_path):
    path = write(tmp_path, "crlf.fa", b">r1\r\nACG\r\nT\r\n>r2\r\nGG")
    corpus, a = load_fasta(path)
    assert decoded(corpus, a) == ["ACGT", "GG"]


def test_load_fasta_unknown_base(tmp_path):
    path = write(tmp_path, "n.fa", FASTA)
    with raises_at(path, 3, "column 1", "'N'", "'ACGT'"):
        load_fasta(path)
    corpus, a = load_fasta(path, unknown="skip")
    assert decoded(corpus, a) == ["ACGTACGTACGT", "TTTTGGGA"]
    corpus, a = load_fasta(path, alphabet="ACGNT")
    assert decoded(corpus, a)[0] == "ACGTACGTNNACGT"
    # a lower-case base is outside an upper-case alphabet when not upper-cased
    with raises_at(path, 2, "column 5", "'a'"):
        load_fasta(path, alphabet="ACGTN", uppercase=False)
    # columns count leading whitespace of the sequence line
    path = write(tmp_path, "indent.fa", ">r\nACGT\n  ACxT\n")
    with raises_at(path, 3, "column 5", "'X'"):
        load_fasta(path)


@pytest.mark.parametrize("content, line, fragment", [
    ("", None, "empty file"),
    ("\n  \n", None, "empty file"),
    ("ACGT\n>r1\nACGT\n", 1, "before the first '>' header"),
    ("; only a comment\n\nACGT\n>r1\nACGT\n", 3, "before the first '>' header"),
    ("; only a comment\n", None, "no '>' header"),
])
def test_load_fasta_malformed(tmp_path, content, line, fragment):
    path = write(tmp_path, "bad.fa", content)
    with raises_at(path, line, fragment):
        load_fasta(path)


def test_load_fasta_record_without_sequence_is_the_empty_string(tmp_path):
    path = write(tmp_path, "e.fa", ">r1\nACGT\n>r2 empty\n>r3\nAC\n>r4\n")
    corpus, a = load_fasta(path)
    assert decoded(corpus, a) == ["ACGT", "", "AC", ""]
    corpus, a = load_fasta(path, chunk=3)
    assert decoded(corpus, a) == ["ACG", "T", "", "AC", ""]
    path = write(tmp_path, "only.fa", ">r1\n")
    assert load_fasta(path)[0].lengths.tolist() == [0]


@HYPO
@given(records=st.lists(st.text(st.sampled_from(list("ACGTacgt")), min_size=1, max_size=50),
                        min_size=1, max_size=4),
       width=st.integers(1, 13), chunk=st.none() | st.integers(1, 9), crlf=st.booleans())
def test_load_fasta_round_trip(tmp_path, records, width, chunk, crlf):
    eol = "\r\n" if crlf else "\n"
    parts = []
    for k, seq in enumerate(records):
        parts.append(f">rec{k} description")
        parts.extend(seq[i:i + width] for i in range(0, len(seq), width))
    path = write(tmp_path, "round.fa", eol.join(parts) + eol)
    corpus, a = load_fasta(path, chunk=chunk)
    got = decoded(corpus, a)
    if chunk is None:
        assert got == [s.upper() for s in records]
    else:
        expected = [s.upper()[i:i + chunk] for s in records for i in range(0, len(s), chunk)]
        assert got == expected
    corpus, a = load_fasta(path, alphabet="ACGTacgt", uppercase=False)
    assert decoded(corpus, a) == records


# ---------------------------------------------------------------------------------------
# split_corpus
# ---------------------------------------------------------------------------------------
def letters_of(corpus: Corpus) -> list[int]:
    return [int(x) for s in corpus.strings() for x in s]


@HYPO
@given(data=st.data(),
       strings=st.lists(st.lists(st.integers(0, 3), max_size=10), min_size=0, max_size=8))
def test_split_corpus_by_letters(data, strings):
    corpus = Corpus.from_strings(strings, 4)
    total = corpus.n_letters
    cut = data.draw(st.integers(0, total))
    head, tail = split_corpus(corpus, cut)
    assert head.alphabet_size == tail.alphabet_size == 4
    assert head.n_letters == cut and tail.n_letters == total - cut
    assert letters_of(head) + letters_of(tail) == letters_of(corpus)
    straddles = int(head.n_strings + tail.n_strings - corpus.n_strings)
    assert straddles in (0, 1)
    if cut == total:
        assert head == corpus and tail.n_strings == 0
    # strings not cut are kept whole, in order; a cut string is split into head and tail
    original = [s.tolist() for s in corpus.strings()]
    first = [s.tolist() for s in head.strings()]
    rest = [s.tolist() for s in tail.strings()]
    k = head.n_strings - straddles
    assert first[:k] == original[:k] and rest[straddles:] == original[k + straddles:]
    if straddles:
        assert first[-1] and rest[0] and first[-1] + rest[0] == original[k]


@HYPO
@given(data=st.data(),
       strings=st.lists(st.lists(st.integers(0, 2), max_size=6), min_size=0, max_size=8))
def test_split_corpus_by_strings(data, strings):
    corpus = Corpus.from_strings(strings, 3)
    n = data.draw(st.integers(0, corpus.n_strings))
    head, tail = split_corpus(corpus, n, by="strings")
    assert head == corpus.subset(range(n))
    assert tail == corpus.subset(range(n, corpus.n_strings))


def test_split_corpus_examples_and_errors():
    corpus = Corpus.from_strings([[0, 1, 2], [], [1, 1]], 3)
    head, tail = split_corpus(corpus, 2)
    assert [s.tolist() for s in head.strings()] == [[0, 1]]
    assert [s.tolist() for s in tail.strings()] == [[2], [], [1, 1]]
    head, tail = split_corpus(corpus, 3)      # the empty string at the cut goes to the rest
    assert [s.tolist() for s in head.strings()] == [[0, 1, 2]]
    assert [s.tolist() for s in tail.strings()] == [[], [1, 1]]
    head, tail = split_corpus(corpus, 0.6)    # round(0.6 * 5) = 3 letters
    assert head.n_letters == 3
    head, tail = split_corpus(corpus, 1.0)
    assert head == corpus and tail.n_strings == 0
    head, tail = split_corpus(corpus, 0)
    assert head.n_strings == 0 and tail == corpus
    head, tail = split_corpus(corpus, 0.5, by="strings")
    assert head.n_strings == 2 and tail.n_strings == 1
    for bad in (6, -1, 1.5, -0.1):
        with pytest.raises(ValueError):
            split_corpus(corpus, bad)
    with pytest.raises(TypeError):
        split_corpus(corpus, True)
    with pytest.raises(ValueError, match="by must be"):
        split_corpus(corpus, 1, by="words")


# ---------------------------------------------------------------------------------------
# The real files in ../shared/data (CI puts them there; $BAYESFA_SHARED_DATA overrides)
# ---------------------------------------------------------------------------------------
SHARED = shared_data_path()


def shared_file(relative: str) -> Path:
    path = SHARED / relative
    if not path.is_file():
        pytest.skip(f"{path} not present")
    return path


@pytest.mark.shared_data
@pytest.mark.parametrize("name, n_strings, n_letters", [
    ("aiw.train", 100, 9_986), ("aiw.test", 50, 3_891),
    ("aiw_full.train", 1_404, 113_838), ("aiw_full.test", 234, 18_955),
])
def test_shared_aiw(name, n_strings, n_letters):
    corpus, a = load_lines(shared_file(f"text/{name}"), alphabet=LOWERCASE_AND_SPACE)
    assert corpus.n_strings == n_strings and corpus.n_letters == n_letters
    assert a.size == corpus.alphabet_size == 27


@pytest.mark.shared_data
def test_shared_aiw_train_derived_alphabet():
    corpus, a = load_lines(shared_file("text/aiw.train"))
    assert (corpus.n_strings, corpus.n_letters, a.size) == (100, 9_986, 27)
    assert str(a) == " " + "abcdefghijklmnopqrstuvwxyz"


@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["carroll-alice.txt", "11-0.txt"])
def test_shared_raw_alice(name):
    corpus, a = load_text(shared_file(f"text/{name}"), keep=LOWERCASE_AND_SPACE)
    assert str(a) == LOWERCASE_AND_SPACE[-1] + LOWERCASE_AND_SPACE[:-1]
    assert 1_500 < corpus.n_strings < 2_000 and 130_000 < corpus.n_letters < 140_000
    # our sentence rule reproduces most of the PDIA authors' own sentences exactly
    sentences = set(decoded(corpus, a))
    aiw, _ = load_lines(shared_file("text/aiw.train"), alphabet=LOWERCASE_AND_SPACE)
    hits = sum(s in sentences for s in decoded(aiw, Alphabet(tuple(LOWERCASE_AND_SPACE))))
    assert hits >= 85


@pytest.mark.shared_data
def test_shared_mm10():
    path = shared_file("dna/mm10.fa")
    (record,) = read_fasta(path)
    assert record.header == "chr17 26104939 26283331 +"
    corpus, a = load_fasta(path)
    assert corpus.n_strings == 1 and corpus.n_letters == 178_393
    assert np.bincount(corpus.string(0), minlength=4).tolist() == [45_128, 41_549, 41_968, 49_748]
    train, test = split_corpus(corpus, 150_000)
    assert (train.n_letters, test.n_letters) == (150_000, 28_393)
    assert train.n_strings == test.n_strings == 1
    soft, b = load_fasta(path, alphabet="ACGTacgt", uppercase=False)
    assert int(np.count_nonzero(soft.string(0) >= 4)) == 64_801
    chunks, _ = load_fasta(path, chunk=1_000)
    assert chunks.n_strings == 179 and chunks.n_letters == 178_393
    with pytest.raises(InputError, match=r"mm10\.fa:2: column 1: character 'a'"):
        load_fasta(path, uppercase=False)


@pytest.mark.shared_data
def test_shared_hg38():
    corpus, _ = load_fasta(shared_file("dna/hg38.fa"))
    assert corpus.n_strings == 1 and corpus.n_letters == 210_155
