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
from bayesfa.methods import positive_int
from bayesfa.learners.greedy import _vgram
from bayesfa.learners.greedy.alergia import add_beta_argument
from bayesfa.learners.greedy.evgram import _VGramMethod


FOLDS_BY_POSITION = 6  # a mutant of the front, not of the kernel's criterion

#: validation mutants (``bayesfa validate cvgram:mutant-NAME``), each one term of the
#: cross-validated criterion changed (:func:`bayesfa.learners.greedy._vgram._criterion`), or
#: the folds drawn by position instead of by string
MUTATIONS = {"end-outside-alphabet": _vgram.END_OUTSIDE_ALPHABET,  # A beta for (A+1) beta
             "fold-not-held-out": _vgram.FOLD_NOT_HELD_OUT,  # C_wa for C_wa - C_wka
             "denominator-not-held-out": _vgram.DENOMINATOR_NOT_HELD_OUT,  # C_w for C_w - C_wk
             "folds-by-position": FOLDS_BY_POSITION}  # position t to fold t mod K


def cvgram(corpus: Corpus, beta: float, folds: int = 10, variant: int = 0,
           steps: bool = False):
    """Grow the CVGram trie: ``child [n, A+1]``, ``counts [n, A+1]``, ``caret [n]``; with
    ``steps`` also the leaves examined (:func:`bayesfa.learners.greedy._vgram.grow_trie`).
    ``variant`` != 0: a validation mutant (:data:`MUTATIONS`); any other code is refused (the
    kernel would run it as the method)."""
    if variant != 0 and variant not in MUTATIONS.values():
        raise ValueError(f"cvgram: unknown variant {variant!r} (0 or one of {MUTATIONS})")
    if folds < 2:
        raise InputError(f"--folds must be at least 2, got {folds}")
    if corpus.n_strings < folds:
        raise InputError(f"{corpus.n_strings} strings cannot fill {folds} folds")
    fold_of = np.arange(corpus.n_strings, dtype=np.int64) % folds
    if variant == FOLDS_BY_POSITION:
        return _vgram.vgram(corpus, beta, _vgram.CROSS_VALIDATION, None, folds, steps=steps,
                            position_folds=np.arange(corpus.n_tokens, dtype=np.int64) % folds)
    return _vgram.vgram(corpus, beta, _vgram.CROSS_VALIDATION, fold_of, folds, variant, steps)


class _CVGram(_VGramMethod):
    """The ``cvgram`` entry of :data:`bayesfa.methods.REGISTRY`."""

    name = "cvgram"
    validation = "bayesfa.validation.learners.greedy:CVGRAM"
    summary = "variable-length grams grown by 10-fold cross-validation (Niesler & Woodland 1999)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_beta_argument(parser, "smoothing inside the criterion and for prediction")
        parser.add_argument("--folds", type=positive_int, default=10,
                            help="folds of the cross-validation criterion; default 10")

    def _grow(self, corpus: Corpus, options: dict[str, Any], steps: bool):
        return cvgram(corpus, options["beta"], options["folds"], self.variant, steps)


METHOD = _CVGram()
