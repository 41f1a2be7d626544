"""ALERGIA (Carrasco & Oncina 1994): red-blue state merging with the Hoeffding-bound test.

From the frequency prefix tree of the training strings, take the blue states in
``(len(prefix), prefix)`` order; merge each into the first red state it is compatible with
(and fold the subtrees so the machine stays deterministic), else make it red. Two states are
compatible when, for every symbol ``a`` (the end of string included),

    | f1(a)/n1 - f2(a)/n2 | <= sqrt(0.5 ln(2/alpha)) (1/sqrt(n1) + 1/sqrt(n2)),

and the same holds recursively for the successors on every letter both have. As in AALpy's
``run_Alergia`` (and IOAlergia, Mao et al. 2016), the test reads the prefix-tree counts of
the two nodes (their own subtrees, before any merge), while the merged counts give the
learned machine. With this reading ALERGIA learns the same machine, state for state and
count for count, as AALpy (``tests/test_greedy.py`` checks it on PAutomaC problems 24, 43
and 31).

Smoothing (for prediction and export): each state's counts get the Dirichlet(beta)
posterior mean ``(C_qa + beta) / (C_q + (A+1) beta)``, and a letter a state never read leads
to a sink state that emits by the smoothed unigram distribution of the training set (see
:mod:`bayesfa.learners.greedy._prefix_tree`), so every string has a positive probability.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np
from numba import njit

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import FitResult
from bayesfa.learners.greedy import _prefix_tree as pt


@njit(cache=True)
def _different(x, y, count, log_term):
    """AALpy's ``hoeffding_bound``: True when the symbol distributions of ``x`` and ``y``
    differ by more than the Hoeffding bound (same floating-point operations, in order)."""
    n1 = 0
    n2 = 0
    for a in range(count.shape[1]):
        n1 += count[x, a]
        n2 += count[y, a]
    if n1 * n2 == 0:
        return False
    bound = (math.sqrt(1.0 / n1) + math.sqrt(1.0 / n2)) * log_term
    for a in range(count.shape[1]):
        if abs(count[x, a] / n1 - count[y, a] / n2) > bound:
            return True
    return False


@njit(cache=True)
def _compatible(r, b, child, count, log_term, stack):
    """Compatibility of prefix-tree nodes ``r`` and ``b``, recursively over common letters."""
    stack[0] = r
    stack[1] = b
    top = 2
    while top > 0:
        top -= 2
        x = stack[top]
        y = stack[top + 1]
        if _different(x, y, count, log_term):
            return False, stack
        for a in range(1, child.shape[1]):
            xc = child[x, a]
            yc = child[y, a]
            if xc >= 0 and yc >= 0:
                if top + 2 > stack.shape[0]:
                    stack = pt.grow(stack)
                stack[top] = xc
                stack[top + 1] = yc
                top += 2
    return True, stack


@njit(cache=True)
def alergia_kernel(child0, count0, order, n_keys, sym, parent, log_term, variant=0):
    """Red-blue merging on the prefix tree ``child0, count0`` (kept unchanged for the
    tests); returns ``(delta, counts)`` of the red states in prefix order. ``variant`` 1 (a
    validation mutant, :data:`MUTATIONS`) tests the merged counts instead."""
    child = child0.copy()
    count = count0.copy()
    is_red, dead, red_list, n_red, heap, heap_size, stack = pt.red_blue_start(child, order, n_keys)
    cstack = np.empty(64, dtype=np.int64)
    while True:
        b, heap_size = pt.pop_blue(heap, heap_size, child, sym, parent, is_red, dead)
        if b < 0:
            break
        merge = -1
        for i in range(n_red):
            if variant == 1:
                ok, cstack = _compatible(red_list[i], b, child, count, log_term, cstack)
            else:
                ok, cstack = _compatible(red_list[i], b, child0, count0, log_term, cstack)
            if ok:
                merge = red_list[i]
                break
        n_red, heap, heap_size, stack = pt.merge_or_promote(
            b, merge, red_list, n_red, is_red, dead, child, count, order, n_keys, sym, parent,
            heap, heap_size, stack)
    return pt.red_machine(red_list, n_red, child, count)


#: deliberately wrong compatibility tests for :mod:`bayesfa.validation.learners.greedy`
MUTATIONS = {"merged-counts-test": 1}


def alergia(corpus: Corpus, alpha: float, variant: int = 0) -> dict[str, np.ndarray]:
    """Learn with ALERGIA at significance ``alpha`` (0 < alpha <= 2, AALpy's ``eps``).

    Returns ``delta`` int32 ``[Q, A+1]``, ``counts`` int64 ``[Q, A+1]`` (merged counts) and
    ``unigram`` int64 ``[A+1]``; see :mod:`bayesfa.learners.greedy._prefix_tree`.
    """
    if not 0 < alpha <= 2:
        raise InputError(f"--alpha must be in (0, 2], got {alpha}")
    log_term = math.sqrt(0.5 * math.log(2 / alpha))
    child, count, order, n_keys, sym, parent = pt.prefix_tree(corpus)
    extra = (variant,) if variant else ()
    delta, counts = alergia_kernel(child, count, order, n_keys, sym, parent, log_term, *extra)
    return {"delta": delta, "counts": counts, "unigram": pt.unigram_counts(corpus)}


class _PDFAMethod:
    """Shared registry behaviour of the methods that learn one smoothed PDFA."""

    def predict_log_prob(self, arrays: dict[str, np.ndarray], options: dict[str, Any],
                         corpus: Corpus) -> np.ndarray:
        return pt.pdfa_log_prob(arrays, options["beta"], corpus)

    def automaton(self, arrays: dict[str, np.ndarray], options: dict[str, Any]):
        """The learned machine, smoothed as prediction smooths it (a PDFA)."""
        return pt.smoothed_pdfa(arrays, options["beta"])

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        """:func:`~bayesfa.learners.greedy._prefix_tree.prefix_tree_bytes`: the build's and
        the merge's arrays at the tree's node bound. Prediction holds the learned machine and
        one float a string, far less. (A further 64 bytes a token, in the estimate since issue
        8 with no account of what they held, were dropped in issue 39: the fit's and a
        prediction's measured peaks are below the bound without them,
        ``tests/test_greedy.py::test_prefix_tree_methods_estimate_covers_the_measured_peak``.)"""
        return pt.prefix_tree_bytes(corpus)


def add_beta_argument(parser: argparse.ArgumentParser, what: str) -> None:
    from bayesfa.methods import positive_float

    parser.add_argument("--beta", type=positive_float, default=0.5,
                        help=f"Dirichlet hyperparameter beta ({what}); default 0.5")


class _Alergia(_PDFAMethod):
    """The ``alergia`` entry of :data:`bayesfa.methods.REGISTRY`."""

    name = "alergia"
    validation = "bayesfa.validation.learners.greedy:ALERGIA"
    variant = 0  # != 0: a validation mutant (MUTATIONS)
    summary = "ALERGIA state merging with the Hoeffding test (Carrasco & Oncina 1994)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from bayesfa.methods import positive_float

        parser.add_argument("--alpha", type=positive_float, default=0.05,
                            help="significance of the Hoeffding test, in (0, 2] as AALpy's eps; default 0.05")
        add_beta_argument(parser, "smoothing of the learned counts for prediction")

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool) -> FitResult:
        arrays = alergia(corpus, options["alpha"],
                         **({"variant": self.variant} if self.variant else {}))
        return FitResult(arrays, {}, {"n_states": int(arrays["counts"].shape[0])})


METHOD = _Alergia()
