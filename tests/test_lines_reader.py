"""The vectorised lines reader (bayesfa.textdata._load_lines_fast, issue 41 item 2) against the
line-by-line one it replaced (``_load_lines_by_line``, the reference semantics): the same
strings and alphabet on random files (empty lines, CRLF, a final newline or none, a BOM,
unicode, whitespace and other separators, lower-casing, unknown symbols dropped), the same
one-line error when the file is malformed, and chunk boundaries anywhere."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayesfa import textdata
from bayesfa.errors import InputError
from bayesfa.textdata import Alphabet, load_lines

HYPO = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])

#: ASCII and not, whitespace of several kinds (\x1c is whitespace to str.split and to re's \s),
#: a separator's characters, upper case (for lowercase=True), a stray \r now and then.
CHARS = list("ab AZ\t,;xé\u2019\u00a0\x1c") + ["\u0130", "\U0001F600", "\r"]
SEPARATORS = [None, " ", "\t", ",", ";;"]


def reference(raw: bytes, path, **kw):
    """The line-by-line reader, as load_lines ran before it was vectorised."""
    alphabet = textdata._as_alphabet(kw.get("alphabet"))
    text = textdata._decode(raw, path)
    return textdata._load_lines_by_line(text, path, alphabet, kw.get("lowercase", False),
                                        kw.get("separator"), kw.get("unknown", "error"))


def outcome(fn):
    """``(tokens, offsets, symbols)`` or the error's one line."""
    try:
        corpus, alphabet = fn()
    except InputError as err:
        return str(err)
    return corpus.tokens.tolist(), corpus.offsets.tolist(), alphabet.symbols


@st.composite
def files(draw):
    lines = draw(st.lists(st.text(st.sampled_from(CHARS), max_size=10), min_size=0, max_size=12))
    eols = draw(st.lists(st.sampled_from(["\n", "\r\n"]), min_size=len(lines), max_size=len(lines)))
    text = "".join(line + eol for line, eol in zip(lines, eols))
    if lines and draw(st.booleans()):
        text = text[:-len(eols[-1])]  # no final newline
    raw = text.encode("utf-8")
    if draw(st.booleans()):
        raw = b"\xef\xbb\xbf" + raw
    if draw(st.integers(0, 9)) == 0:  # a byte that is not UTF-8
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + b"\xff" + raw[at:]
    return raw


@HYPO
@given(raw=files(), separator=st.sampled_from(SEPARATORS), lowercase=st.booleans(),
       given_alphabet=st.sampled_from([None, "abAxé ", ("a", "b", "x", "AZ")]),
       unknown=st.sampled_from(["error", "skip"]), chunk=st.sampled_from([1, 3, 7, 1 << 22]))
def test_vectorised_reader_equals_the_line_reader(tmp_path, monkeypatch, raw, separator, lowercase,
                                                  given_alphabet, unknown, chunk):
    monkeypatch.setattr(textdata, "_CHUNK_BYTES", chunk)
    monkeypatch.setattr(textdata, "_WORDS_CHUNK_BYTES", chunk)
    path = tmp_path / "x.lines"
    path.write_bytes(raw)
    kw = dict(separator=separator, lowercase=lowercase, alphabet=given_alphabet, unknown=unknown)
    want = outcome(lambda: reference(raw, path, **kw))
    assert outcome(lambda: load_lines(path, **kw)) == want
    fast = textdata._load_lines_fast(raw, textdata._as_alphabet(given_alphabet), lowercase,
                                     separator, unknown)
    if not isinstance(want, str) and not (lowercase and not raw.isascii()):
        assert fast is not None  # a well-formed file is read vectorised
    if fast is not None:
        assert outcome(lambda: fast) == want


@pytest.mark.parametrize("content, kw, line, fragment", [
    (b"ab\nc\rd\n", {}, 2, "stray carriage return"),
    (b"ab\nab\ncaf\xe9\n", {}, 3, "not UTF-8"),
    (b"abc\n\nab!c\n", {"alphabet": "abc"}, 3, "'!'"),
    (b"1,2\n1,,2\n", {"separator": ","}, 2, "empty symbol"),
    (b"a b\na  xy\n", {"separator": " ", "alphabet": ("a", "b")}, 2, "'xy'"),
])
def test_malformed_files_keep_their_one_line_errors(tmp_path, content, kw, line, fragment):
    path = tmp_path / "bad.lines"
    path.write_bytes(content)
    with pytest.raises(InputError) as info:
        load_lines(path, **kw)
    assert info.value.line == line and fragment in str(info.value) and "\n" not in str(info.value)
    assert str(info.value) == outcome(lambda: reference(content, path, **kw))


def test_a_large_file_is_read_in_chunks_as_a_whole(tmp_path, monkeypatch):
    """Many chunks (lines cut nowhere but at newlines), every empty line a string."""
    rng = np.random.default_rng(4)
    lines = ["".join(rng.choice(list("abcé\u2019 "), size=k)) for k in rng.geometric(0.1, 3000) - 1]
    raw = "\r\n".join(lines).encode()
    path = tmp_path / "big.lines"
    path.write_bytes(raw)
    want = outcome(lambda: reference(raw, path))
    monkeypatch.setattr(textdata, "_CHUNK_BYTES", 1000)
    got = outcome(lambda: load_lines(path))
    assert got == want and len(got[1]) == len(lines) + 1
    assert sum(1 for x in lines if not x) > 100


def test_alphabet_of_words_from_the_file(tmp_path):
    path = tmp_path / "w.lines"
    path.write_bytes(b"the cat\n\n  a   cat \n\t\nthe\n")
    corpus, alphabet = load_lines(path, separator=" ")
    assert alphabet == Alphabet(("a", "cat", "the"))
    assert corpus.lengths.tolist() == [2, 0, 2, 0, 1]
