"""EVGram: the variable-length gram trie grown at the leaves while the evidence increases
(Shibata & Yoshinaka 2013, Sect. 4.5.2).

The criterion is ``Pr(a | Q) = prod_{w in Q'} prod_a Gamma(C_wa + beta) / Gamma(C_w + A beta)
/ R(beta)``, the marginal probability of Eq. 21 with the contexts ``w`` of the trie as states;
a leaf ``w`` is expanded into all its children ``bw`` (every letter ``b`` seen before
``w``, and ``^``) when that raises it. The kernel is
:mod:`bayesfa.learners.greedy._vgram`.

Smoothing: a symbol is predicted at its context ``w`` (the longest suffix of the history
in the trie) by ``(C_wa + beta) / (C_w + A beta)``, so letters and ends never seen after
``w`` keep a positive probability, and every string has a positive probability.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.methods import FitResult
from bayesfa.learners.greedy import _vgram
from bayesfa.learners.greedy.alergia import add_beta_argument


def evgram(corpus: Corpus, beta: float) -> dict[str, np.ndarray]:
    """Grow the EVGram trie: ``child [n, A+1]``, ``counts [n, A+1]``, ``caret [n]``."""
    return _vgram.vgram(corpus, beta, _vgram.EVIDENCE)


class _VGramMethod:
    """Shared registry behaviour of the VGram methods."""

    def predict_log_prob(self, arrays: dict[str, np.ndarray], options: dict[str, Any],
                         corpus: Corpus) -> np.ndarray:
        return _vgram.vgram_log_prob(arrays, options["beta"], corpus)

    def automaton(self, arrays: dict[str, np.ndarray], options: dict[str, Any]):
        """The trie as an equivalent PDFA (:func:`bayesfa.learners.greedy._vgram.to_pdfa`)."""
        return _vgram.to_pdfa(arrays, options["beta"])

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        return _vgram.vgram_bytes(corpus, options.get("folds", 1))


class _EVGram(_VGramMethod):
    """The ``evgram`` entry of :data:`bayesfa.methods.REGISTRY`."""

    name = "evgram"
    validation = "bayesfa.validation.learners.greedy:EVGRAM"
    summary = "evidence-based variable-length grams (Shibata & Yoshinaka 2013, Sect. 4.5.2)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_beta_argument(parser, "the evidence criterion and the smoothing")

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool) -> FitResult:
        arrays = evgram(corpus, options["beta"])
        return FitResult(arrays, {}, {"n_states": int(arrays["counts"].shape[0])})


METHOD = _EVGram()
