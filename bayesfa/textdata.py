"""Loaders for natural sequences: plain text (one string per line or raw prose) and FASTA.

Every loader returns ``(Corpus, Alphabet)``: the :class:`~bayesfa.corpus.Corpus` holds the
strings as 0-based letters, the :class:`Alphabet` maps letter ``i`` back to its symbol (a
character, or a word when a line is split at a ``separator``). As in the PDIA paper (Pfau,
Bartlett & Wood 2010) the model restarts at ``q0`` at the start of each string, so one line
(or one sentence, or one FASTA record, or one chunk of it) is one string.

No loader drops a string: the empty string is a string of every language here. An empty line
of a lines file is the empty string; a FASTA record without sequence is the empty string; a
sentence that ``keep`` filters down to nothing is the empty string. A final newline ends the
last line and does not add a string (``"a\n\nb\n"`` is three strings, ``"a\n\n"`` two:
``"a"`` and ``""``). :func:`format_lines` writes what :func:`load_lines` reads back.

Bad input raises :class:`~bayesfa.errors.InputError` whose one-line message names the
file, the line (1-based) and the problem, e.g.
``data/x.fa:12: column 7: character 'N' is not in the alphabet 'ACGT'``.

Overview
--------
``load_lines``      one string per line (the PDIA authors' ``aiw.train`` / ``aiw.test``),
                    each character a symbol, or words split at a ``separator``.
``format_lines``    strings -> the text of a lines file that ``load_lines`` reads back.
``split_sentences`` raw prose -> sentences (whitespace collapsed, nothing else changed).
``load_text``       raw prose -> sentences, lower-cased and optionally filtered to a
                    character set such as :data:`LOWERCASE_AND_SPACE` (the paper's a-z + space).
``read_fasta``      FASTA records as text; ``load_fasta`` encodes them (one string per
                    record, or per chunk of ``chunk`` bases).
``split_corpus``    train / test split by letters (e.g. first 150,000 bases) or by strings.
"""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass, field
from typing import Iterable, Literal, Sequence

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError

__all__ = [
    "Alphabet", "FastaRecord", "LOWERCASE_AND_SPACE", "load_lines", "format_lines",
    "split_lines", "split_symbols", "split_sentences",
    "load_text", "read_fasta", "load_fasta", "split_corpus",
]

#: The character set of the PDIA paper's Alice in Wonderland data: ``a``-``z`` and space.
LOWERCASE_AND_SPACE = "abcdefghijklmnopqrstuvwxyz "

Unknown = Literal["error", "skip"]
PathLike = str | os.PathLike


# ---------------------------------------------------------------------------------------
# Alphabet
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Alphabet:
    """An ordered set of symbols; letter ``i`` of a corpus is ``symbols[i]``.

    ``Alphabet("ACGT")`` and ``Alphabet(("A", "C", "G", "T"))`` are the same alphabet.
    A symbol is a non-empty string (one character, or a word such as ``"the"``) and no
    symbol repeats. :meth:`encode` and :meth:`decode` read and write text, so they need an
    alphabet of single characters (:attr:`of_characters`); :meth:`encode_symbols` maps a
    sequence of symbols of any length.
    """

    symbols: tuple[str, ...]
    _codes: np.ndarray = field(init=False, repr=False, compare=False)   # sorted code points
    _letters: np.ndarray = field(init=False, repr=False, compare=False)  # letter of each code

    def __post_init__(self):
        symbols = tuple(self.symbols)
        for s in symbols:
            if not isinstance(s, str) or not s:
                raise ValueError(f"alphabet symbols must be non-empty strings, got {s!r}")
        if len(set(symbols)) != len(symbols):
            dup = next(s for i, s in enumerate(symbols) if s in symbols[:i])
            raise ValueError(f"symbol {dup!r} occurs twice in the alphabet")
        # code points of the one-character symbols (only they can occur in text)
        codes = np.fromiter((ord(s) if len(s) == 1 else -1 for s in symbols), dtype=np.int64,
                            count=len(symbols))
        order = np.argsort(codes, kind="stable")
        object.__setattr__(self, "symbols", symbols)
        object.__setattr__(self, "_codes", codes[order])
        object.__setattr__(self, "_letters", order.astype(np.int64))

    @classmethod
    def from_text(cls, texts: str | Iterable[str]) -> "Alphabet":
        """The sorted (by code point) distinct characters of ``texts`` (a string or strings)."""
        if isinstance(texts, str):
            texts = (texts,)
        seen: set[str] = set()
        for t in texts:
            seen.update(t)
        return cls(tuple(sorted(seen)))

    # -- views -------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return len(self.symbols)

    def __len__(self) -> int:
        return len(self.symbols)

    @property
    def of_characters(self) -> bool:
        """Whether every symbol is one character (text can then be read and written)."""
        return all(len(s) == 1 for s in self.symbols)

    def __contains__(self, char: object) -> bool:
        return char in self.symbols

    def __str__(self) -> str:
        return "".join(self.symbols)

    def index(self, char: str) -> int:
        """The letter of ``char``; a ``KeyError`` if it is not in the alphabet."""
        try:
            return self.symbols.index(char)
        except ValueError:
            raise KeyError(char) from None

    # -- coding ------------------------------------------------------------------------
    def _lookup(self, text: str | Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(letters, known)``: the letter of each character of ``text`` (or of each symbol
        of a list of symbols), -1 if unknown, and a mask."""
        if not isinstance(text, str):
            index = self._index()
            letters = np.fromiter((index.get(x, -1) for x in text), dtype=np.int64,
                                  count=len(text))
            return letters, letters >= 0
        points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
        if not self._codes.size:
            return np.full(points.size, -1, dtype=np.int64), np.zeros(points.size, dtype=bool)
        pos = np.minimum(np.searchsorted(self._codes, points), self._codes.size - 1)
        known = self._codes[pos] == points
        letters = np.where(known, self._letters[pos], -1)
        return letters, known

    def _index(self) -> dict[str, int]:
        return {x: i for i, x in enumerate(self.symbols)}

    def encode_symbols(self, symbols: Sequence[str], unknown: Unknown = "error") -> np.ndarray:
        """A sequence of symbols (e.g. words) as 0-based letters (int64 array); an unknown
        symbol as in :meth:`encode`."""
        _check_unknown(unknown)
        letters, known = self._lookup(list(symbols))
        if known.all():
            return letters
        if unknown == "skip":
            return letters[known]
        i = int(np.argmin(known))
        raise InputError(f"symbol {i}: {_unknown_problem(symbols[i], self)}")

    def encode(self, text: str, unknown: Unknown = "error") -> np.ndarray:
        """``text`` as 0-based letters (int64 array).

        A character outside the alphabet raises :class:`InputError` (naming the character and
        its 0-based position) when ``unknown="error"``; it is dropped when ``unknown="skip"``.
        """
        _check_unknown(unknown)
        letters, known = self._lookup(text)
        if known.all():
            return letters
        if unknown == "skip":
            return letters[known]
        i = int(np.argmin(known))
        raise InputError(f"position {i}: {_unknown_problem(text[i], self)}")

    def decode(self, letters: Sequence[int] | np.ndarray) -> str:
        """The characters of 0-based ``letters`` (the symbols joined with nothing between)."""
        arr = np.asarray(letters, dtype=np.int64).reshape(-1)
        if arr.size and (arr.min() < 0 or arr.max() >= len(self.symbols)):
            bad = int(arr[(arr < 0) | (arr >= len(self.symbols))][0])
            raise InputError(f"letter {bad} is outside the alphabet 0..{len(self.symbols) - 1}")
        return "".join(self.symbols[i] for i in arr.tolist())


def _check_unknown(unknown: str) -> None:
    if unknown not in ("error", "skip"):
        raise ValueError(f"unknown must be 'error' or 'skip', got {unknown!r}")


def _describe(alphabet: Alphabet) -> str:
    if not alphabet.of_characters:
        shown = ", ".join(map(repr, alphabet.symbols[:12]))
        return f"({shown}{', ...' if alphabet.size > 12 else ''}; {alphabet.size} symbols)"
    s = "".join(alphabet.symbols)
    return repr(s) if len(s) <= 40 else f"of {len(s)} symbols"


def _unknown_problem(char: str, alphabet: Alphabet) -> str:
    if len(char) != 1:
        return f"symbol {char!r} is not in the alphabet {_describe(alphabet)}"
    return f"character {char!r} (U+{ord(char):04X}) is not in the alphabet {_describe(alphabet)}"


def _as_alphabet(alphabet: Alphabet | str | Iterable[str] | None) -> Alphabet | None:
    if alphabet is None or isinstance(alphabet, Alphabet):
        return alphabet
    return Alphabet(tuple(alphabet))


# ---------------------------------------------------------------------------------------
# Reading files
# ---------------------------------------------------------------------------------------
def _read_raw(path: PathLike) -> bytes:
    """The file's bytes; an InputError if unreadable."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as err:
        raise InputError(f"cannot read file: {err.strerror or err}", path) from None


def _decode(raw: bytes, path: PathLike) -> str:
    """``raw`` as UTF-8 text (a leading BOM is dropped); an InputError naming line and column
    of the first byte that is not UTF-8."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        col = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        raise InputError(f"column {col}: not UTF-8 text (byte 0x{raw[err.start]:02X})",
                         path, line) from None


def _read_text(path: PathLike) -> str:
    """The file as text: UTF-8 (a leading BOM is dropped); an InputError if unreadable."""
    return _decode(_read_raw(path), path)


def split_lines(text: str, path: PathLike | None = None) -> list[str]:
    """The lines of ``text`` without their ``\\n`` / ``\\r\\n``. A final newline ends the last
    line and does not start a new one, so every other newline does: ``"a\\n\\nb\\n"`` is
    ``["a", "", "b"]``, ``"a\\n\\n"`` is ``["a", ""]``, ``"\\n"`` is ``[""]`` (one empty
    string) and ``""`` is ``[]``.

    A carriage return anywhere but right before ``\\n`` is an error (old Mac line endings or
    a damaged file), rather than silently becoming a symbol.
    """
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    for i, line in enumerate(lines):
        if line.endswith("\r"):
            line = lines[i] = line[:-1]
        if "\r" in line:
            raise InputError(f"column {line.index(chr(13)) + 1}: stray carriage return "
                             "(only LF and CRLF line endings are supported)", path, i + 1)
    return lines


def _check_separator(separator: str | None) -> None:
    if separator is not None and (not isinstance(separator, str) or not separator
                                  or "\n" in separator or "\r" in separator):
        raise InputError(f"separator must be a non-empty string without line breaks, got "
                         f"{separator!r}")


def split_symbols(line: str, separator: str | None) -> tuple[list[str], list[int]]:
    """``(symbols, columns)`` of one line: its words and the 0-based column of each.

    ``separator=None``: none (the caller reads each character as a symbol; here every
    character is returned). A separator of whitespace only (``" "``, ``"\\t"``): words
    between runs of any whitespace, leading and trailing whitespace ignored, so a blank
    line has no symbol. Any other separator (``","``): the fields between each occurrence
    of it; an empty field (``"a,,b"``, a trailing ``","``) is an :class:`InputError` naming
    its column, and an empty line has no symbol.
    """
    if separator is None:
        return list(line), list(range(len(line)))
    if separator.isspace():
        found = [(m.group(), m.start()) for m in re.finditer(r"\S+", line)]
    elif not line:
        return [], []
    else:
        found, col = [], 0
        for field_ in line.split(separator):
            if not field_:
                raise InputError(f"column {col + 1}: empty symbol between separators "
                                 f"{separator!r}")
            found.append((field_, col))
            col += len(field_) + len(separator)
    return [w for w, _ in found], [c for _, c in found]


def _encode_all(strings: Sequence[str | list[str]], alphabet: Alphabet | None,
                unknown: Unknown, locate, path: PathLike) -> tuple[Corpus, Alphabet]:
    """Encode ``strings`` (text, or lists of symbols); ``locate(s, i)`` gives ``(line,
    column)`` of character (symbol) ``i`` of string ``s`` for the error message. Every
    string is kept, the empty ones included."""
    _check_unknown(unknown)
    if alphabet is None:
        alphabet = Alphabet(tuple(sorted({x for s in strings for x in s})))
        if not alphabet.size:
            raise InputError("no symbols: every string is empty", path)
    encoded = []
    for s, text in enumerate(strings):
        letters, known = alphabet._lookup(text)
        if not known.all():
            if unknown == "skip":
                letters = letters[known]
            else:
                i = int(np.argmin(known))
                line, col = locate(s, i)
                raise InputError(f"column {col}: {_unknown_problem(text[i], alphabet)}", path, line)
        encoded.append(letters)
    return Corpus.from_strings(encoded, alphabet.size), alphabet


# ---------------------------------------------------------------------------------------
# One string per line
# ---------------------------------------------------------------------------------------
def load_lines(path: PathLike, alphabet: Alphabet | str | Iterable[str] | None = None,
               lowercase: bool = False, separator: str | None = None,
               unknown: Unknown = "error") -> tuple[Corpus, Alphabet]:
    """One string per line: every line is a string, an empty line the empty string.

    ``separator=None``: every character is a symbol (spaces included; nothing is
    stripped). ``separator=" "`` (any whitespace): the whitespace-separated words are the
    symbols; another separator, e.g. ``","``: the fields between its occurrences
    (:func:`split_symbols`). Lines end in LF or CRLF; a final newline ends the last line and
    adds no string (:func:`split_lines`), and a missing one is fine (the ``aiw`` files have
    none). ``alphabet`` (an :class:`Alphabet`, a string of its characters, or a sequence of
    its symbols) defaults to the sorted distinct symbols of the file (after ``lowercase``).
    A symbol outside a given alphabet is an :class:`InputError` naming line and column
    (``unknown="error"``), or is dropped (``unknown="skip"``; its string stays, shorter).
    A file with no line, or whose lines have no symbol at all when no alphabet is given,
    is an :class:`InputError`.
    """
    _check_separator(separator)
    alphabet = _as_alphabet(alphabet)
    raw = _read_raw(path)
    fast = _load_lines_fast(raw, alphabet, lowercase, separator, unknown)
    if fast is not None:
        return fast
    return _load_lines_by_line(_decode(raw, path), path, alphabet, lowercase, separator, unknown)


def _load_lines_by_line(text: str, path: PathLike, alphabet: Alphabet | None, lowercase: bool,
                        separator: str | None, unknown: Unknown) -> tuple[Corpus, Alphabet]:
    """:func:`load_lines` on the file's ``text``, line by line: the reference semantics, and
    the reader of any file the vectorised one (:func:`_load_lines_fast`) hands back, which
    names the line and the problem."""
    lines = split_lines(text, path)
    if not lines:
        raise InputError("empty file: no line, so no string (an empty string is an empty "
                         "line, ended by a newline)", path)
    if lowercase:
        lines = [line.lower() for line in lines]
    if separator is None:
        return _encode_all(lines, alphabet, unknown, lambda s, i: (s + 1, i + 1), path)
    strings, columns = [], []
    for n, line in enumerate(lines, 1):
        try:
            words, cols = split_symbols(line, separator)
        except InputError as err:
            raise InputError(err.problem, path, n) from None
        strings.append(words)
        columns.append(cols)
    return _encode_all(strings, alphabet, unknown, lambda s, i: (s + 1, columns[s][i] + 1), path)


# -- the vectorised reader of lines files (issue 41 item 2) --------------------------------------
#: bytes of a lines file parsed at once by :func:`_load_lines_fast` (bounds its scratch memory;
#: a separator's words are Python strings, about 60 bytes each, hence a smaller chunk)
_CHUNK_BYTES = 1 << 22
_WORDS_CHUNK_BYTES = 1 << 20
_BOM = b"\xef\xbb\xbf"
_NEWLINE, _CR = 10, 13


def _chunk_lines(codes: np.ndarray, last: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The lines of one chunk's code points (every line ended by ``\\n``, but the last of the
    file may not be, ``last``), as :func:`split_lines` cuts them: ``(starts, stops, strip)``,
    each line ``codes[starts:stops]`` without its ``\\n``, ``strip`` where a ``\\r`` ends it
    (dropped). None when a ``\\r`` stands anywhere else (the line-by-line reader reports it)."""
    nl = np.flatnonzero(codes == _NEWLINE)
    stops = nl if not last or (codes.size and codes[-1] == _NEWLINE) else np.append(nl, codes.size)
    starts = np.empty_like(stops)
    starts[:1] = 0
    starts[1:] = stops[:-1] + 1
    strip = np.zeros(stops.size, dtype=bool)
    n_cr = int(np.count_nonzero(codes == _CR))
    if n_cr:
        ends = stops > starts
        strip[ends] = codes[stops[ends] - 1] == _CR
        if int(strip.sum()) != n_cr:  # a \r that does not end its line
            return None
    return starts, stops, strip


def _chunk_codes(piece: bytes, lowercase: bool) -> np.ndarray | None:
    """The code points of a chunk of whole lines: its bytes when ASCII (uint8), else UTF-32
    (uint32); None when it is not UTF-8, or is to be lower-cased beyond ASCII (str.lower of
    each line, left to the line-by-line reader)."""
    if piece.isascii():
        return np.frombuffer(piece.lower() if lowercase else piece, dtype=np.uint8)
    if lowercase:
        return None
    try:
        text = piece.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)


def _load_lines_fast(raw: bytes, alphabet: Alphabet | None, lowercase: bool,
                     separator: str | None, unknown: Unknown) -> tuple[Corpus, Alphabet] | None:
    """:func:`load_lines` of a well-formed file ``raw``, vectorised over chunks of whole lines
    (:data:`_CHUNK_BYTES`): the lines cut as :func:`split_lines` cuts them, each character a
    symbol (``separator=None``, one numpy pass over the chunk's code points), or each line
    split as :func:`split_symbols` splits it (``str.split`` in C, a dict for the words). None
    whenever the line-by-line reader would raise or anything is unusual (not UTF-8, a stray
    ``\\r``, an unknown symbol with ``unknown="error"``, an empty field, no symbol, non-ASCII
    text to lower-case), for :func:`_load_lines_by_line` to read and report with file, line
    and column. Memory: the file's bytes, the final arrays, a chunk's code points per chunk
    kept until the alphabet is known (1 byte a character for ASCII), a chunk's scratch."""
    if unknown not in ("error", "skip") or (alphabet is not None and not alphabet.size):
        return None
    start = len(_BOM) if raw.startswith(_BOM) else 0
    if start == len(raw):
        return None  # an empty file
    step = _CHUNK_BYTES if separator is None else _WORDS_CHUNK_BYTES
    view, parts = memoryview(raw), []  # per chunk: (code points or words, lengths)
    while start < len(raw):
        stop = raw.rfind(b"\n", start, min(start + step, len(raw))) + 1
        if stop <= start:  # the last line, or a line longer than a chunk
            stop = raw.find(b"\n", start) + 1 or len(raw)
        codes = _chunk_codes(bytes(view[start:stop]), lowercase)
        if codes is None:
            return None
        cut = _chunk_lines(codes, stop == len(raw))
        if cut is None:
            return None
        part = (_chunk_characters(codes, *cut) if separator is None else
                _chunk_words(codes, *cut, separator))
        if part is None:
            return None
        parts.append(part)
        start = stop
    if alphabet is None:
        if separator is None:
            seen = np.unique(np.concatenate([np.unique(c) for c, _ in parts]))
            symbols = tuple(chr(c) for c in seen.tolist())
        else:
            symbols = tuple(sorted(set().union(*(w for w, _ in parts))))
        if not symbols:
            return None  # "no symbols: every string is empty"
        alphabet = Alphabet(symbols)
    letters = _lettering(alphabet, separator)
    n_lines = sum(n.size for _, n in parts)
    offsets = np.zeros(n_lines + 1, dtype=np.int64)
    row = 0
    for k, (symbols, lengths) in enumerate(parts):
        codes = letters(symbols)
        known = codes >= 0
        if not known.all():
            if unknown == "error":
                return None
            first = np.zeros(lengths.size + 1, dtype=np.int64)
            np.cumsum(lengths, out=first[1:])
            kept = np.zeros(known.size + 1, dtype=np.int64)
            np.cumsum(known, out=kept[1:])
            lengths = kept[first[1:]] - kept[first[:-1]]
            codes = codes[known]
        ends = offsets[row + 1:row + 1 + lengths.size]
        np.cumsum(lengths + 1, out=ends)
        ends += offsets[row]
        parts[k] = (codes, lengths, row)  # the chunk's symbols are dropped as it is encoded
        row += lengths.size
    tokens = np.zeros(int(offsets[-1]), dtype=np.int32)
    for codes, lengths, row in parts:  # letter + 1 everywhere but at the strings' end markers
        block = tokens[offsets[row]:offsets[row + lengths.size]]
        letter = np.ones(block.size, dtype=bool)
        letter[offsets[row + 1:row + 1 + lengths.size] - offsets[row] - 1] = False
        block[letter] = codes
        block[letter] += 1
    return Corpus(tokens, offsets, alphabet.size), alphabet


def _chunk_characters(codes, starts, stops, strip):
    """``(code points of the lines' characters, characters per line)``: every character but
    the ``\\n`` and the stripped ``\\r``."""
    keep = np.ones(codes.size, dtype=bool)
    keep[stops[stops < codes.size]] = False  # the newlines
    keep[stops[strip] - 1] = False
    return codes[keep], stops - starts - strip


def _chunk_words(codes, starts, stops, strip, separator: str):
    """``(the lines' words in order, words per line)`` split as :func:`split_symbols` splits
    them; None at an empty field between separators (an error the line-by-line reader
    names). A whitespace separator: the chunk's ``str.split()`` (its newlines and the stripped
    ``\\r`` are whitespace, so no word spans two lines; ``str.split`` and ``re``'s ``\\S`` both
    take whitespace as ``str.isspace`` does), counted per line by where words begin."""
    text = codes.tobytes().decode("latin-1" if codes.dtype == np.uint8 else "utf-32-le")
    if separator.isspace():
        space = _SPACE[np.minimum(codes, 255)]
        wide = np.unique(codes[codes > 255])
        if wide.size:
            space[np.isin(codes, [c for c in wide.tolist() if chr(c).isspace()])] = True
        begins = np.flatnonzero(~space & np.concatenate(([True], space[:-1])))
        counts = np.searchsorted(begins, stops) - np.searchsorted(begins, starts)
        return text.split(), counts
    if len(separator) == 1:  # the lines joined by it: each empty line one empty field
        text = text.replace("\r", "")  # every \r of the chunk ends its line (_chunk_lines)
        if codes[-1] == _NEWLINE:
            text = text[:-1]
        fields = text.replace("\n", separator).split(separator)
        lengths = stops - starts - strip
        if fields.count("") != int(np.count_nonzero(lengths == 0)):
            return None  # an empty field in a line
        at = np.flatnonzero(codes == ord(separator))
        per_line = np.searchsorted(at, stops) - np.searchsorted(at, starts) + 1
        return list(filter(None, fields)), np.where(lengths > 0, per_line, 0)
    lines = text.split("\n")
    if stops.size < len(lines):  # the chunk ends in a newline: no line after it
        lines.pop()
    for i in np.flatnonzero(strip).tolist():
        lines[i] = lines[i][:-1]
    per_line = [line.split(separator) if line else [] for line in lines]
    words = list(itertools.chain.from_iterable(per_line))
    if words.count(""):
        return None
    return words, np.fromiter(map(len, per_line), dtype=np.int64, count=len(per_line))


#: Which code points below 256 are whitespace (``str.isspace``), for :func:`_chunk_words`.
_SPACE = np.array([chr(c).isspace() for c in range(256)])


def _lettering(alphabet: Alphabet, separator: str | None):
    """The function from a chunk's symbols (code points, or words) to 0-based letters (int32,
    -1 where unknown), as :meth:`Alphabet._lookup` maps them: a table over code points, or a
    dict of the words."""
    if separator is not None:
        index = alphabet._index()
        return lambda words: np.fromiter(map(index.get, words, itertools.repeat(-1)),
                                         dtype=np.int32, count=len(words))
    single = alphabet._codes >= 0  # the one-character symbols (only they occur in text)
    codes, letters = alphabet._codes[single], alphabet._letters[single]
    table = np.full(max(256, int(codes.max(initial=0)) + 1), -1, dtype=np.int32)
    table[codes] = letters

    def of_codes(points):
        if points.dtype == np.uint8:
            return table[points]
        out = np.full(points.size, -1, dtype=np.int32)
        inside = points < table.size
        out[inside] = table[points[inside]]
        return out

    return of_codes


def format_lines(strings: Iterable[str | Sequence], separator: str | None = None) -> str:
    """The text of a lines file holding ``strings``, one a line, each line ended by ``\\n``
    (so an empty string is an empty line and :func:`load_lines` with the same
    ``separator`` reads back the same strings).

    ``separator=None``: a string is a ``str`` (or a sequence of one-character symbols)
    written as it is; otherwise its symbols (``str`` or ``int``, written as ``str(x)``) are
    joined by ``separator``. A ``ValueError`` when that could not be read back: a line break
    in a symbol, a symbol that is empty or holds the separator (any whitespace, for a
    whitespace separator).
    """
    _check_separator(separator)
    out = []
    for k, s in enumerate(strings):
        symbols = [str(x) for x in s]
        for x in symbols:
            bad = (not x or "\n" in x or "\r" in x
                   or (separator is None and len(x) != 1)
                   or (separator is not None and separator.isspace() and
                       (x != x.strip() or any(c.isspace() for c in x)))
                   or (separator is not None and separator in x))
            if bad:
                raise ValueError(f"string {k}: symbol {x!r} cannot be written as a line "
                                 f"with separator {separator!r} and read back")
        line = ("" if separator is None else separator).join(symbols)
        if not out and line.startswith("\ufeff"):
            raise ValueError("string 0 starts with U+FEFF, which a reader takes for a "
                             "byte-order mark")
        out.append(line + "\n")
    return "".join(out)


# ---------------------------------------------------------------------------------------
# Raw prose
# ---------------------------------------------------------------------------------------
# A sentence ends at a run of . ! ? (optionally followed by closing quotes or brackets)
# followed by whitespace or the end of the text, or at a blank line (paragraph break).
_BOUNDARY = re.compile(r"""[.!?]+["'\u2019\u201d)\]]*(?=\s|\Z)|\n[^\S\n]*\n""")


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for m in _BOUNDARY.finditer(text):
        spans.append((start, m.end()))
        start = m.end()
    spans.append((start, len(text)))
    return spans


def split_sentences(text: str) -> list[str]:
    """Raw text -> sentences, with runs of whitespace (newlines included) collapsed to one space.

    A sentence ends after ``.``, ``!`` or ``?`` (a run of them, plus any closing quotes or
    brackets right after, such as ``?'`` or ``."``) when whitespace or the end of the text
    follows, and at every blank line, so headings and paragraphs never run together.
    The punctuation stays with its sentence; empty sentences are dropped. This is a simple
    rule: abbreviations such as ``Mr.`` end a sentence too.
    """
    out = []
    for a, b in _sentence_spans(text):
        s = " ".join(text[a:b].split())
        if s:
            out.append(s)
    return out


def _normalise(s: str, lowercase: bool, keep: frozenset[str] | None) -> str:
    if lowercase:
        s = s.lower()
    if keep is not None:
        s = "".join(c if c in keep else " " for c in s)
    return " ".join(s.split())


def load_text(path: PathLike, alphabet: Alphabet | str | Iterable[str] | None = None,
              lowercase: bool = True, keep: str | Iterable[str] | None = None,
              unknown: Unknown = "error") -> tuple[Corpus, Alphabet]:
    """Raw prose -> one string per sentence (see :func:`split_sentences` for the rule).

    Each sentence is lower-cased (``lowercase=True``); then, if ``keep`` is given (e.g.
    :data:`LOWERCASE_AND_SPACE`, the PDIA paper's a-z and space), every character not in
    ``keep`` becomes a space, so ``"Duchess's knee"`` reads ``"duchess s knee"`` as in the
    paper's ``aiw`` files. Whitespace is then collapsed to single spaces and trimmed (a space
    is the word separator even if ``keep`` lacks it). Prose holds no empty sentence: only
    stretches of whitespace between sentence ends are not strings; a sentence that ``keep``
    filters down to nothing (``"123."`` with the a-z filter) is kept as the empty string,
    never dropped, so the strings stay the file's sentences, one for one.
    ``alphabet`` defaults to the sorted distinct characters of the sentences; a character
    outside a given alphabet is an :class:`InputError` naming the line and column where it
    occurs in the file (``unknown="error"``), or is dropped (``unknown="skip"``).
    """
    alphabet = _as_alphabet(alphabet)
    keepset = None if keep is None else frozenset(keep)
    text = _read_text(path)
    if not text.strip():
        raise InputError("empty file", path)
    sentences, spans = [], []
    for a, b in _sentence_spans(text):
        if not text[a:b].strip():  # whitespace between sentences (or after the last)
            continue
        sentences.append(_normalise(text[a:b], lowercase, keepset))
        spans.append((a, b))

    def locate(s: int, i: int) -> tuple[int, int]:
        # Find the first raw character of the sentence that yields the offending one.
        char = sentences[s][i]
        a, b = spans[s]
        pos = a
        for pos in range(a, b):
            c = text[pos].lower() if lowercase else text[pos]
            if char in c:
                break
        line = text.count("\n", 0, pos) + 1
        return line, pos - (text.rfind("\n", 0, pos) + 1) + 1

    return _encode_all(sentences, alphabet, unknown, locate, path)


# ---------------------------------------------------------------------------------------
# FASTA
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FastaRecord:
    """One FASTA record: ``header`` is the text after ``>``, ``line`` its line number."""

    header: str
    line: int
    sequence: str
    # per sequence line: its line number, where it starts in ``sequence``, its indentation
    _line_numbers: tuple[int, ...] = field(default=(), repr=False, compare=False)
    _line_starts: tuple[int, ...] = field(default=(), repr=False, compare=False)
    _line_indents: tuple[int, ...] = field(default=(), repr=False, compare=False)

    @property
    def name(self) -> str:
        """The identifier: the header up to the first whitespace."""
        parts = self.header.split(maxsplit=1)
        return parts[0] if parts else ""

    def locate(self, i: int) -> tuple[int, int]:
        """``(line, column)`` in the file of base ``i`` of ``sequence``."""
        k = int(np.searchsorted(np.asarray(self._line_starts), i, side="right")) - 1
        return self._line_numbers[k], i - self._line_starts[k] + self._line_indents[k] + 1


def read_fasta(path: PathLike, uppercase: bool = True) -> list[FastaRecord]:
    """The records of a FASTA file, sequence lines joined (soft-masking upper-cased by default).

    Headers start with ``>``; lines starting with ``;`` are comments; blank lines are ignored;
    surrounding whitespace of a sequence line (``\\r`` included) is stripped. A record without
    sequence lines is the empty sequence (kept: the empty string). Errors: an empty file, a
    sequence line before the first header.
    """
    text = _read_text(path)
    if not text.strip():
        raise InputError("empty file", path)
    records: list[FastaRecord] = []
    header: str | None = None
    header_line = 0
    chunks: list[str] = []
    numbers: list[int] = []
    starts: list[int] = []
    indents: list[int] = []
    length = 0

    def close():
        if header is None:
            return
        records.append(FastaRecord(header, header_line, "".join(chunks), tuple(numbers), tuple(starts), tuple(indents)))

    for n, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        if not line or line.startswith(";"):
            continue
        if line.startswith(">"):
            close()
            header, header_line = line[1:].strip(), n
            chunks, numbers, starts, indents, length = [], [], [], [], 0
            continue
        if header is None:
            raise InputError("sequence line before the first '>' header", path, n)
        if uppercase:
            line = line.upper()
        chunks.append(line)
        numbers.append(n)
        starts.append(length)
        indents.append(len(raw) - len(raw.lstrip()))
        length += len(line)
    if header is None:
        raise InputError("no '>' header: not a FASTA file", path)
    close()
    return records


def load_fasta(path: PathLike, alphabet: Alphabet | str | Iterable[str] | None = "ACGT",
               uppercase: bool = True, chunk: int | None = None,
               unknown: Unknown = "error") -> tuple[Corpus, Alphabet]:
    """FASTA records -> one string per record, or per piece of ``chunk`` bases.

    Records are read by :func:`read_fasta` (lower-case soft-masked repeats are upper-cased
    when ``uppercase=True``). With ``chunk``, each record is cut into consecutive pieces of
    ``chunk`` bases, its last piece possibly shorter; pieces never span two records. A record
    without sequence is one empty string (with or without ``chunk``).
    ``alphabet="ACGT"`` by default (``None``: the sorted distinct characters of the file).
    A base outside it (``N``, say) is an :class:`InputError` naming line and column
    (``unknown="error"``), or is dropped (``unknown="skip"``: the bases on either side
    then become neighbours).
    """
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer))
                              or chunk < 1):
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    alphabet = _as_alphabet(alphabet)
    records = read_fasta(path, uppercase=uppercase)
    corpus, alphabet = _encode_all([r.sequence for r in records], alphabet, unknown,
                                   lambda s, i: records[s].locate(i), path)
    if chunk is None:
        return corpus, alphabet
    pieces = []
    for seq in corpus.strings():
        pieces.extend(seq[i:i + chunk] for i in range(0, max(seq.size, 1), chunk))
    return Corpus.from_strings(pieces, alphabet.size), alphabet


# ---------------------------------------------------------------------------------------
# Train / test split
# ---------------------------------------------------------------------------------------
def _cut(amount: float | int, total: int, what: str) -> int:
    if isinstance(amount, bool):
        raise TypeError("give a fraction (float) or a count (int), not a bool")
    if isinstance(amount, (int, np.integer)):
        if not 0 <= amount <= total:
            raise ValueError(f"count {amount} is outside 0..{total} {what}")
        return int(amount)
    amount = float(amount)
    if not 0.0 <= amount <= 1.0:
        raise ValueError(f"fraction {amount} is outside [0, 1] (give an int for a count)")
    return int(round(amount * total))


def split_corpus(corpus: Corpus, first: float | int,
                 by: Literal["letters", "strings"] = "letters") -> tuple[Corpus, Corpus]:
    """Split ``corpus`` in two: ``(first part, rest)``, both over its alphabet.

    ``first`` is a count (int) or a fraction of the total (float in [0, 1], rounded).
    ``by="letters"`` (default): the first part holds the first ``first`` letters in reading
    order, e.g. ``split_corpus(dna, 150_000)`` for the PDIA paper's first 150,000 bases;
    a string straddling the cut is cut in two (its head ends the first part, its tail starts
    the rest). A string goes to the first part when it starts before the cut, so an empty
    string at the cut goes to the rest, unless the cut is at the very end.
    ``by="strings"``: the first ``first`` strings, the rest after them.
    """
    if by == "strings":
        n = _cut(first, corpus.n_strings, "strings")
        return corpus.subset(np.arange(n)), corpus.subset(np.arange(n, corpus.n_strings))
    if by != "letters":
        raise ValueError(f"by must be 'letters' or 'strings', got {by!r}")
    total = corpus.n_letters
    cut = _cut(first, total, "letters")
    if cut == total:
        return corpus.subset(np.arange(corpus.n_strings)), corpus.subset(np.arange(0))
    lengths = corpus.lengths
    ends = np.cumsum(lengths)
    starts = ends - lengths
    k = int(np.searchsorted(starts, cut, side="left"))   # strings 0..k-1 start before the cut
    head, tail = [], []
    strings = corpus.strings()
    for s in range(corpus.n_strings):
        if s < k:
            if ends[s] <= cut:
                head.append(strings[s])
            else:
                m = cut - int(starts[s])
                head.append(strings[s][:m])
                tail.append(strings[s][m:])
        else:
            tail.append(strings[s])
    return (Corpus.from_strings(head, corpus.alphabet_size),
            Corpus.from_strings(tail, corpus.alphabet_size))
