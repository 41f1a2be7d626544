"""Named toy data sets for validation against exact enumeration.

Every toy is small enough that the exact posterior of the collapsed PFA model
(:mod:`bayesfa.exact`, :mod:`bayesfa.validation.pfa.reference`) is enumerable:
``N ** n_letters`` state paths, at most 65,536 here. All contain the empty string; all but
``abc`` (3 letters, ``N`` = 3, strings up to length 5) are over 2 letters. They are built in code (literally, or sampled from a small PFA with a fixed
seed), so they are the same on every machine.

The test set is fixed: :func:`all_strings` -- all strings over the 2 letters of length 0
to 3 (15 strings).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from bayesfa.automata import PFA
from bayesfa.corpus import Corpus

ALPHABET_SIZE = 2
TEST_MAX_LENGTH = 3


@dataclass(frozen=True)
class Toy:
    """A training corpus with the model size to fit it with.

    train : the strings; n_states : ``N`` (states besides 0); beta : the Dirichlet
    hyperparameter of Eq. 2; source : the automaton the strings were sampled from (if any).
    """

    name: str
    train: Corpus
    n_states: int
    beta: float
    description: str
    source: PFA | None = field(default=None, compare=False)

    @property
    def n_paths(self) -> int:
        """Number of state paths ``z`` (``N ** n_letters``)."""
        return self.n_states ** self.train.n_letters


def all_strings(max_length: int = TEST_MAX_LENGTH, alphabet_size: int = ALPHABET_SIZE) -> Corpus:
    """All strings of length ``0 .. max_length``, shortest first then lexicographic."""
    strings = [s for n in range(max_length + 1)
               for s in itertools.product(range(alphabet_size), repeat=n)]
    return Corpus.from_strings(strings, alphabet_size)


def format_string(letters) -> str:
    """A string as text: ``"ε"`` for the empty one, else its letters ``"a"``, ``"b"``..."""
    letters = list(np.asarray(letters).reshape(-1))
    return "".join(chr(ord("a") + int(a)) for a in letters) if letters else "ε"


def _two_state_source() -> PFA:
    # State 0 tends to emit 'a' and stay, state 1 emits 'b' and stops often.
    trans = np.zeros((2, 2, 2))
    trans[0] = [[0.45, 0.10], [0.05, 0.05]]  # letter a
    trans[1] = [[0.05, 0.15], [0.10, 0.30]]  # letter b
    stop = np.array([0.25, 0.50])
    return PFA(np.array([0.7, 0.3]), trans, stop)


def _three_state_source() -> PFA:
    # A cycle a -> b -> a with a third, stopping state.
    trans = np.zeros((2, 3, 3))
    trans[0] = [[0.05, 0.50, 0.05], [0.05, 0.05, 0.05], [0.30, 0.05, 0.05]]
    trans[1] = [[0.05, 0.05, 0.05], [0.05, 0.05, 0.45], [0.05, 0.10, 0.05]]
    stop = np.array([0.25, 0.30, 0.40])
    return PFA(np.array([1.0, 0.0, 0.0]), trans, stop)


def _sampled(source: PFA, seed: int, n_letters: int) -> Corpus:
    """Strings from ``source`` (seeded) until exactly ``n_letters`` letters; an empty string
    is put first if the sample has none. Strings that would overshoot are skipped."""
    rng = np.random.default_rng(seed)
    strings: list[list[int]] = []
    total = 0
    while total < n_letters:
        s = list(source.sample(1, rng).string(0))
        if total + len(s) <= n_letters:
            strings.append(s)
            total += len(s)
    if not any(len(s) == 0 for s in strings):
        strings.insert(0, [])
    return Corpus.from_strings(strings, ALPHABET_SIZE)


def _build() -> dict[str, Toy]:
    tiny = Corpus.from_strings([[], [0], [0, 0], [0, 0, 0], [1], [1, 1], [0, 1]], ALPHABET_SIZE)
    small_src = _two_state_source()
    three_src = _three_state_source()
    return {
        "tiny": Toy("tiny", tiny, n_states=2, beta=0.5,
                    description="7 literal strings, 11 letters (ε a aa aaa b bb ab); N=2"),
        "small": Toy("small", _sampled(small_src, seed=11, n_letters=16), n_states=2, beta=0.5,
                     description="16 letters sampled from a 2-state PFA (seed 11); N=2",
                     source=small_src),
        "three": Toy("three", _sampled(three_src, seed=5, n_letters=10), n_states=3, beta=0.5,
                     description="10 letters sampled from a 3-state PFA (seed 5); N=3",
                     source=three_src),
        "abc": Toy("abc", Corpus.from_strings([[], [0], [1, 2], [2, 1], [0, 1, 2, 0, 2]], 3),
                   n_states=3, beta=0.5,
                   description="5 literal strings over 3 letters, 10 letters (ε a bc cb abcac); "
                               "N=3 (59,049 paths)"),
    }


TOYS: dict[str, Toy] = _build()


def get_toy(name: str) -> Toy:
    try:
        return TOYS[name]
    except KeyError:
        raise ValueError(f"unknown toy {name!r}; choose from {', '.join(TOYS)}") from None
