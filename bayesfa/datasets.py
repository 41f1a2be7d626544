"""Data sets: paths to PAutomaC problems (the bundled problem 24, or any problem of a folder you
name) and the synthetic grammars of the PDIA paper (even process, Reber, Feldman) as PDFAs."""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from bayesfa.automata import PDFA
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError

BUNDLED_PROBLEMS = (24,)
_SUFFIX = {"train": "pautomac.train", "test": "pautomac.test",
           "solution": "pautomac_solution.txt", "model": "pautomac_model.txt"}


def pautomac_path(problem: int, kind: str, folder: str | os.PathLike | None = None) -> Path:
    """Path of a file of PAutomaC problem ``problem``.

    ``kind``: ``"train"`` or ``"test"`` (samples, :func:`bayesfa.pautomac.read_sample`),
    ``"solution"`` (the true probability of each test string,
    :func:`bayesfa.pautomac.read_solution`) or ``"model"`` (the generating automaton); another
    ``kind`` is an :class:`~bayesfa.errors.InputError`. Without ``folder``, the files bundled with bayesfa (problem
    24 only; another problem is an :class:`~bayesfa.errors.InputError`); with it,
    ``<folder>/<problem>.pautomac.train``, ``.pautomac.test``, ``.pautomac_solution.txt`` or
    ``.pautomac_model.txt``, the competition archive's names (a missing file is an
    ``InputError`` naming it).
    """
    if kind not in _SUFFIX:
        raise InputError(f"kind {kind!r} is unknown; choose from {', '.join(_SUFFIX)}")
    name = f"{problem}.{_SUFFIX[kind]}"
    if folder is None:
        if problem not in BUNDLED_PROBLEMS:
            raise InputError(f"problem {problem} is not bundled (only {BUNDLED_PROBLEMS}); name a folder")
        return Path(str(resources.files("bayesfa") / "data" / "pautomac" / name))
    path = Path(folder) / name
    if not path.is_file():
        raise InputError("no such file", path)
    return path


# ---------------------------------------------------------------------------------------
# Synthetic grammars of the PDIA paper (Pfau, Bartlett & Wood 2010, Sect. 5 and Fig. 3)
# ---------------------------------------------------------------------------------------
#
# The paper trains the PDIA on data from "the even process [13], the Reber grammar [11] and
# the Feldman grammar [4], which have up to 7 states and 7 symbols in the alphabet" and draws
# the three machines in Fig. 3(a-c). The figure did not survive in the text we have
# (../shared/papers/pfau-bartlett-wood-2010-pdia.txt), so each machine below is rebuilt from
# its cited source and the docstring says what was chosen.
#
# bayesfa scores whole strings: a string starts in the start state q0 and ends with the end
# symbol (symbol 0 of a Corpus), which leads back to q0 (issue 9, item 3). Where the source
# defines an endless sequence, the sentence form stops with a stated probability at the
# state where the endless sequence passes through q0, so that every string is a whole
# number of the process's blocks and the machine's states and transitions are unchanged.

@dataclass(frozen=True)
class Grammar:
    """A synthetic PDFA with letter names: letter ``i`` of its corpora is ``symbols[i]``.

    ``pdfa.delta`` ``[Q, L]`` (``-1`` where undefined), ``pdfa.pi`` ``[Q, L]``,
    ``pdfa.stop`` ``[Q]``, start state ``pdfa.start = 0``.
    """

    name: str
    pdfa: PDFA
    symbols: tuple[str, ...]
    source: str

    @property
    def n_states(self) -> int:
        return self.pdfa.delta.shape[0]

    @property
    def alphabet_size(self) -> int:
        """Letters, end symbol excluded (``L``)."""
        return self.pdfa.delta.shape[1]

    def decode(self, corpus: Corpus) -> list[str]:
        """The strings of ``corpus`` written with the grammar's letter names."""
        return ["".join(self.symbols[a] for a in s) for s in corpus.strings()]

    def sample(self, n_strings: int, rng: np.random.Generator) -> Corpus:
        return self.pdfa.to_pfa().sample(n_strings, rng)


def _pdfa(n_states: int, symbols: str, edges: list[tuple[int, str, float, int]],
          stop: dict[int, float]) -> PDFA:
    """A PDFA from ``(state, letter, probability, next state)`` edges and stop probabilities."""
    delta = np.full((n_states, len(symbols)), -1, dtype=np.int64)
    pi = np.zeros((n_states, len(symbols)))
    for q, a, p, r in edges:
        j = symbols.index(a)
        delta[q, j], pi[q, j] = r, p
    stops = np.zeros(n_states)
    for q, p in stop.items():
        stops[q] = p
    return PDFA(delta, pi, stops, 0)


def even_process(stop: float = 0.1) -> Grammar:
    """The even process (Shalizi & Klinkner 2004, CSSR, ref. [13] of the PDIA paper): 2 states.

    Binary sequences whose blocks of 1s have even length between 0s. State A (= q0) emits
    0 (back to A) or 1 (to B) with probability 1/2 each; B emits 1 back to A. The paper's
    process is endless; the sentence form stops in A with probability ``stop`` (default 0.1:
    mean length 13.5) and emits each letter with ``(1 - stop)/2``, so every string is a
    word of ``(0 | 11)*``.
    """
    if not 0 < stop < 1:
        raise ValueError("stop must be in (0, 1)")
    go = (1 - stop) / 2
    pdfa = _pdfa(2, "01", [(0, "0", go, 0), (0, "1", go, 1), (1, "1", 1.0, 0)], {0: stop})
    return Grammar("even", pdfa, ("0", "1"), "even process (Shalizi & Klinkner 2004)")


def reber_grammar() -> Grammar:
    """The Reber grammar (Reber 1967, ref. [11] of the PDIA paper): 7 states, 7 symbols.

    Letters ``B T P S X V``; the end of a string is Reber's ``E`` (the end symbol, back to
    q0, as in the PDIA's endless form where ``E`` leads back to the start), so there are
    7 symbols with the end symbol, as the paper says. Every branch has probability 1/2::

        0 -B-> 1;  1 -T-> 2 | -P-> 3;  2 -S-> 2 | -X-> 4;  3 -T-> 3 | -V-> 5;
        4 -X-> 3 | -S-> 6;  5 -P-> 4 | -V-> 6;  6 -E-> (end, back to 0).

    No stopping probability is needed: every string ends at ``E``.
    """
    h = 0.5
    edges = [(0, "B", 1.0, 1), (1, "T", h, 2), (1, "P", h, 3), (2, "S", h, 2), (2, "X", h, 4),
             (3, "T", h, 3), (3, "V", h, 5), (4, "X", h, 3), (4, "S", h, 6), (5, "P", h, 4),
             (5, "V", h, 6)]
    pdfa = _pdfa(7, "BTPSXV", edges, {6: 1.0})
    return Grammar("reber", pdfa, tuple("BTPSXV"), "Reber grammar (Reber 1967)")


def feldman_grammar(stop: float = 0.2) -> Grammar:
    """The "Feldman grammar" (ref. [4] of the PDIA paper: D. P. Feldman, *A Brief
    Introduction to Information Theory, Excess Entropy and Computational Mechanics*, 1998):
    here the random-random-XOR (RRXOR) process of that tutorial, 5 states.

    **Reconstruction.** The paper's Fig. 3(c), which draws the machine, is lost in our copy
    of the paper, and no paper in ``../shared/papers`` defines the grammar (searched
    2026-11-23: the paper's text cites "[4]" without its reference list, the poster's [4] is
    Teh et al.'s HDP, the draft and the inference section do not mention it). The RRXOR
    process is the example of that reference with a finite deterministic generator, and its
    5 states agree with the paper's "up to 7 states". Compare with the published figure
    before relying on its state count.

    Blocks of three bits ``x y (x XOR y)`` with ``x, y`` fair coins: q0 emits ``x``
    (to states 1 or 2), those emit ``y`` (to state 3 "next is 0" or 4 "next is 1"),
    which emit the parity bit back to q0. The process is endless; the sentence form stops
    in q0 with probability ``stop`` (default 0.2: mean 4 blocks, 12 letters), so every
    string is a word of ``(000 | 011 | 101 | 110)*``.
    """
    if not 0 < stop < 1:
        raise ValueError("stop must be in (0, 1)")
    go = (1 - stop) / 2
    edges = [(0, "0", go, 1), (0, "1", go, 2),
             (1, "0", 0.5, 3), (1, "1", 0.5, 4),
             (2, "0", 0.5, 4), (2, "1", 0.5, 3),
             (3, "0", 1.0, 0), (4, "1", 1.0, 0)]
    pdfa = _pdfa(5, "01", edges, {0: stop})
    return Grammar("feldman", pdfa, ("0", "1"), "RRXOR process (Feldman 1998), reconstruction")


#: name -> constructor of the three synthetic grammars of the PDIA paper's Fig. 3.
GRAMMARS = {"even": even_process, "reber": reber_grammar, "feldman": feldman_grammar}


def grammar(name: str, **kwargs) -> Grammar:
    """The grammar ``name`` (``even``, ``reber`` or ``feldman``)."""
    try:
        return GRAMMARS[name](**kwargs)
    except KeyError:
        raise ValueError(f"unknown grammar {name!r}; choose from {', '.join(GRAMMARS)}") from None


def grammar_samples(which: str | Grammar, sizes, seed: int) -> list[Corpus]:
    """Training sets of increasing size (in strings) drawn from a grammar, for Fig. 3.

    The sets are nested: one sample of ``max(sizes)`` strings is drawn with
    ``np.random.default_rng(seed)`` and set ``k`` is its first ``sizes[k]`` strings, so a
    larger set only adds data. Same seed, same sets.
    """
    g = grammar(which) if isinstance(which, str) else which
    sizes = [int(n) for n in sizes]
    if not sizes or min(sizes) < 1 or any(b <= a for a, b in zip(sizes, sizes[1:])):
        raise ValueError("sizes must be positive and strictly increasing")
    full = g.sample(sizes[-1], np.random.default_rng(seed))
    return [full.subset(np.arange(n)) for n in sizes]
