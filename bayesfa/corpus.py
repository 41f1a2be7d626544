"""The corpus every learner reads: all strings in one flat int32 array.

Layout of Shibata & Yoshinaka (2013), Sect. 2.1: the strings ``alpha_1 ... alpha_m`` are
concatenated as ``alpha_1 0 alpha_2 0 ... alpha_m 0``, with letters shifted by one so that
``0`` is the end marker. An empty string is a lone ``0`` (one end transition from the
initial state).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from bayesfa.errors import InputError

#: Formats of a data file (``bayesfa fit --format``): readers in :mod:`bayesfa.pautomac`
#: (``pautomac``) and :mod:`bayesfa.textdata` (``lines``, ``text``, ``fasta``).
FILE_FORMATS = ("pautomac", "lines", "text", "fasta")
#: ``train.format`` of a run fitted on Python sequences of symbols, or on a Corpus given directly.
SYMBOLS, CORPUS = "symbols", "corpus"
#: Every ``train.format`` a run's manifest may record.
TRAIN_FORMATS = FILE_FORMATS + (SYMBOLS, CORPUS)


@dataclass(frozen=True, eq=False)
class Corpus:
    """Strings over the letters ``0 .. alphabet_size-1``.

    Attributes
    ----------
    tokens : int32 array, shape ``[n_tokens]``
        Letters shifted by one, each string followed by the end marker 0.
    offsets : int64 array, shape ``[n_strings + 1]``
        String ``s`` occupies ``tokens[offsets[s]:offsets[s+1]]`` (its trailing 0 included).
    alphabet_size : int
        Number of letters, end marker excluded (the paper's ``A - 1``).
    """

    tokens: np.ndarray
    offsets: np.ndarray
    alphabet_size: int

    def __post_init__(self):
        tokens = np.ascontiguousarray(self.tokens, dtype=np.int32)
        offsets = np.ascontiguousarray(self.offsets, dtype=np.int64)
        object.__setattr__(self, "tokens", tokens)
        object.__setattr__(self, "offsets", offsets)
        if tokens.ndim != 1:
            raise ValueError("tokens must be a flat (1-D) array")
        if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0 or offsets[-1] != tokens.size:
            raise ValueError("offsets must start at 0 and end at len(tokens)")
        if np.any(np.diff(offsets) < 1):
            raise ValueError("every string needs at least its end marker")
        if tokens.size and (tokens[offsets[1:] - 1] != 0).any():
            raise ValueError("every string must end with the end marker 0")
        if int(np.count_nonzero(tokens == 0)) != offsets.size - 1:
            raise ValueError("the end marker 0 may only close a string")
        if self.alphabet_size < 1:
            raise ValueError("alphabet_size must be at least 1")
        if tokens.size and (tokens.max() > self.alphabet_size or tokens.min() < 0):
            raise ValueError("a letter is outside the alphabet")

    # -- construction -------------------------------------------------------------------
    @classmethod
    def from_strings(cls, strings: Iterable[Sequence[int]], alphabet_size: int | None = None) -> "Corpus":
        """Build from strings of 0-based letters; ``alphabet_size`` defaults to max letter + 1."""
        arrays = [np.asarray(s, dtype=np.int64).reshape(-1) for s in strings]
        seen = max((int(a.max()) for a in arrays if a.size), default=-1) + 1
        if alphabet_size is None:
            alphabet_size = max(seen, 1)
        for a in arrays:
            if a.size and (a.min() < 0 or a.max() >= alphabet_size):
                raise InputError(f"letter outside the alphabet 0..{alphabet_size - 1}")
        lengths = np.fromiter((a.size + 1 for a in arrays), dtype=np.int64, count=len(arrays))
        offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        tokens = np.zeros(int(offsets[-1]), dtype=np.int32)
        for a, start in zip(arrays, offsets[:-1]):
            tokens[start:start + a.size] = a + 1
        return cls(tokens, offsets, int(alphabet_size))

    # -- views ---------------------------------------------------------------------------
    @property
    def n_strings(self) -> int:
        return self.offsets.size - 1

    @property
    def n_tokens(self) -> int:
        """Letters plus one end marker per string (the paper's T)."""
        return int(self.tokens.size)

    @property
    def n_letters(self) -> int:
        return self.n_tokens - self.n_strings

    @property
    def lengths(self) -> np.ndarray:
        """Letters per string, end marker excluded, shape ``[n_strings]``."""
        return np.diff(self.offsets) - 1

    def string(self, s: int) -> np.ndarray:
        """String ``s`` as 0-based letters."""
        return self.tokens[self.offsets[s]:self.offsets[s + 1] - 1].astype(np.int64) - 1

    def strings(self) -> list[np.ndarray]:
        return [self.string(s) for s in range(self.n_strings)]

    def padded(self) -> tuple[np.ndarray, np.ndarray]:
        """``(letters, lengths)``: letters ``[n_strings, max_len]`` 0-based, padded with -1."""
        lengths = self.lengths
        width = int(lengths.max()) if lengths.size else 0
        out = np.full((self.n_strings, width), -1, dtype=np.int32)
        if width:
            mask = np.arange(width)[None, :] < lengths[:, None]
            letters = self.tokens[self.tokens != 0] - 1
            out[mask] = letters
        return out, lengths

    def subset(self, indices: Sequence[int] | np.ndarray) -> "Corpus":
        """The strings at ``indices``, in that order."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        starts, stops = self.offsets[idx], self.offsets[idx + 1]
        lengths = stops - starts
        offsets = np.zeros(idx.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if idx.size:
            pos = np.repeat(starts - offsets[:-1], lengths) + np.arange(int(offsets[-1]))
            tokens = self.tokens[pos]
        else:
            tokens = np.zeros(0, dtype=np.int32)
        return Corpus(tokens, offsets, self.alphabet_size)

    def with_alphabet(self, alphabet_size: int) -> "Corpus":
        """The same strings read over a larger alphabet (e.g. the training one)."""
        if alphabet_size < self.alphabet_size:
            raise InputError(f"alphabet of {self.alphabet_size} letters does not fit in {alphabet_size}")
        return Corpus(self.tokens, self.offsets, alphabet_size)

    def __len__(self) -> int:
        return self.n_strings

    def __eq__(self, other) -> bool:
        return (isinstance(other, Corpus) and self.alphabet_size == other.alphabet_size
                and np.array_equal(self.tokens, other.tokens)
                and np.array_equal(self.offsets, other.offsets))

    def __repr__(self) -> str:
        return (f"Corpus(n_strings={self.n_strings}, n_letters={self.n_letters}, "
                f"alphabet_size={self.alphabet_size})")
