"""CVGram: Niesler & Woodland's (1999) variable-length grams with a K-fold cross-validation
criterion (Shibata & Yoshinaka 2013, Sect. 4.5.3; 10 folds by default, as in the paper).

String ``s`` of the training file goes to fold ``s mod K`` (``K = --folds``; PAutomaC
training files are in random order already). A leaf ``w`` of the trie is expanded into its
children ``bw`` when that raises the cross-validated log-likelihood ``sum_{k,a} C_wka log((C_wa - C_wka + beta) / (C_w - C_wk + A beta))`` summed
over the contexts (each fold predicted from the others, additively smoothed by ``beta``).
The kernel is :mod:`bayesfa.learners.greedy._vgram`.

Smoothing: as EVGram, ``(C_wa + beta) / (C_w + A beta)`` at the context ``w`` (all folds'
counts), so every string has a positive probability.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import FitResult, positive_int
from bayesfa.learners.greedy import _vgram
from bayesfa.learners.greedy.alergia import add_beta_argument
from bayesfa.learners.greedy.evgram import _VGramMethod


def cvgram(corpus: Corpus, beta: float, folds: int = 10) -> dict[str, np.ndarray]:
    """Grow the CVGram trie: ``child [n, A+1]``, ``counts [n, A+1]``, ``caret [n]``."""
    if folds < 2:
        raise InputError(f"--folds must be at least 2, got {folds}")
    if corpus.n_strings < folds:
        raise InputError(f"{corpus.n_strings} strings cannot fill {folds} folds")
    fold_of = np.arange(corpus.n_strings, dtype=np.int64) % folds
    return _vgram.vgram(corpus, beta, _vgram.CROSS_VALIDATION, fold_of, folds)


class _CVGram(_VGramMethod):
    """The ``cvgram`` entry of :data:`bayesfa.methods.REGISTRY`."""

    name = "cvgram"
    validation = "bayesfa.validation.learners.greedy:CVGRAM"
    summary = "variable-length grams grown by 10-fold cross-validation (Niesler & Woodland 1999)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_beta_argument(parser, "smoothing inside the criterion and for prediction")
        parser.add_argument("--folds", type=positive_int, default=10,
                            help="folds of the cross-validation criterion; default 10")

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool) -> FitResult:
        arrays = cvgram(corpus, options["beta"], options["folds"])
        return FitResult(arrays, {}, {"n_states": int(arrays["counts"].shape[0])})


METHOD = _CVGram()
