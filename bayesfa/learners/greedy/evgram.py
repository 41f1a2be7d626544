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


#: validation mutants (``bayesfa validate evgram:mutant-NAME``), each one term of the Eq. 21
#: factor changed in the kernel's criterion (:func:`bayesfa.learners.greedy._vgram._criterion`)
MUTATIONS = {"end-outside-alphabet": _vgram.END_OUTSIDE_ALPHABET,  # A beta for (A+1) beta
             "no-prior-factor": _vgram.NO_PRIOR_FACTOR,  # 1 / Gamma(beta) per symbol dropped
             "no-normaliser-prior": _vgram.NO_NORMALISER_PRIOR}  # Gamma((A+1) beta) dropped


def evgram(corpus: Corpus, beta: float, variant: int = 0, steps: bool = False):
    """Grow the EVGram trie: ``child [n, A+1]``, ``counts [n, A+1]``, ``caret [n]``; with
    ``steps`` also the leaves examined (:func:`bayesfa.learners.greedy._vgram.grow_trie`).
    ``variant`` != 0: a validation mutant (:data:`MUTATIONS`); any other code is refused (the
    kernel would run it as the method)."""
    if variant != 0 and variant not in MUTATIONS.values():
        raise ValueError(f"evgram: unknown variant {variant!r} (0 or one of {MUTATIONS})")
    return _vgram.vgram(corpus, beta, _vgram.EVIDENCE, variant=variant, steps=steps)


class _VGramMethod:
    """Shared registry behaviour of the VGram methods."""

    variant = 0  # != 0: a validation mutant (the front's MUTATIONS)

    def growth_steps(self, corpus: Corpus, options: dict[str, Any]) -> np.ndarray:
        """The leaves examined while growing the trie on ``corpus`` (``[L, 4]``: node,
        positions, criterion of the leaf, gain of expanding it), for ``bayesfa validate``."""
        return self._grow(corpus, options, True)[1]

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool) -> FitResult:
        arrays = self._grow(corpus, options, False)
        return FitResult(arrays, {}, {"n_states": int(arrays["counts"].shape[0])})

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

    def _grow(self, corpus: Corpus, options: dict[str, Any], steps: bool):
        return evgram(corpus, options["beta"], self.variant, steps)


METHOD = _EVGram()
