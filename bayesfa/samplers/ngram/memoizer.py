"""The sequence memoizer (``--method memoizer``): the unbounded-context hierarchical
Pitman-Yor model of Wood, Archambeau, Gasthaus, James & Teh (2009), "A stochastic memoizer for
sequence data", in the single-particle incremental variant the PDIA paper's Table 1 uses
(Gasthaus, Wood & Teh 2010, "Lossless compression based on the sequence memoizer").

Model: a restaurant per context of any length, ``G_u ~ PY(d_|u|, 0, G_pi(u))``, concentration
0, ``G_empty ~ PY(d_0, 0, G0)`` with ``G0`` uniform over the symbols, discounts
``d_0 .. d_10`` per depth and ``d_inf`` beyond (``--discounts``, ``--d-inf``; fixed, default
the initial values of Gasthaus et al. 2010, which that paper then adapts online -- not done
here). Path compression: only contexts that branch or that some symbol is predicted from are
restaurants; a node whose parent is ``k`` symbols shorter has the discount
``d_{|pi(u)|+1} ... d_|u|`` (coagulation, Wood et al. 2009, Theorem 1), so the tree has at
most ``2 T`` nodes (:func:`bayesfa.samplers.ngram.hpyp.context_tree` with ``compress=True``).

Inference: each symbol is predicted (Eq. 10 of Teh 2006 with ``theta = 0``) and then seated
once as it arrives, never resampled (one particle). The tree is built over all the symbols
that will be seated (training, and at prediction the training followed by the test data)
before the first is seated: a node that splits a compressed edge later would, in the
incremental algorithm, be created by fragmenting the edge's restaurant (Wood et al. 2009,
Sect. 4); instantiating it from the start is the same model with that fragmentation's
variables drawn as the customers arrive (tests/test_memoizer.py checks that the exact
marginal likelihood is the same on both trees and that the particle is unbiased for it on
both).
``bayesfa predict`` therefore seats the training data again (same seed) in the larger tree,
then the test data the way :mod:`bayesfa.samplers.ngram.hpyp` does (sentences each given the
training data, a sequence continuing).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, NamedTuple

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import FitResult, fraction
from bayesfa.samplers.ngram.hpyp import (add_sequence_argument, check_shape, context_tree,
                                         flat_size, flat_symbols, quantity, test_offsets)

#: d_0 .. d_10 and d_inf: the initial discounts of Gasthaus, Wood & Teh (2010)
DISCOUNTS = (0.05, 0.7, 0.8, 0.82, 0.84, 0.88, 0.91, 0.92, 0.93, 0.94, 0.95)
D_INF = 0.95


def node_discounts(parent: np.ndarray, depth: np.ndarray, discounts, d_inf: float) -> np.ndarray:
    """``nd[u] = prod_{k = depth[parent]+1}^{depth[u]} d_k`` (``d_k = d_inf`` past the list;
    the root: ``d_0``)."""
    per = np.asarray(discounts, dtype=np.float64)
    logs = np.log(per)
    cum = np.concatenate([[0.0], np.cumsum(logs)])  # cum[k] = sum_{j < k} log d_j

    def log_prefix(k):  # sum_{j <= k} log d_j
        k = np.asarray(k)
        inside = np.minimum(k + 1, per.size)
        return cum[inside] + np.maximum(k + 1 - per.size, 0) * np.log(d_inf)

    pd = np.where(parent >= 0, depth[np.maximum(parent, 0)], -1)
    return np.exp(log_prefix(depth) - log_prefix(pd))


class Tree(NamedTuple):
    """A context tree with the memoizer's per-node discounts (concentration 0)."""

    parent: np.ndarray
    nd: np.ndarray
    tok_node: np.ndarray
    tok_sym: np.ndarray
    path_len: int


def build(F: np.ndarray, first: int, sentences: bool, discounts, d_inf: float,
          compress: bool = True) -> Tree:
    """The tree of the symbols ``F[first:]`` (``compress=False``: every context length a
    restaurant, for tests: it must be the same model)."""
    from bayesfa.samplers.ngram._hpyp_kernel import node_levels

    parent, depth, tok_node = context_tree(F, first, sentences, None, compress)
    return Tree(parent, node_discounts(parent, depth, discounts, d_inf), tok_node,
                F[first:].astype(np.int64), int(node_levels(parent).max()) + 1)


#: With ``progress``, the training symbols are seated in calls lasting about this many
#: seconds each (the number of symbols per call adapted as it goes), the bar moving after each.
PROGRESS_SECONDS = 1.0


def seat(tree: Tree, n_sym: int, n_train: int, offsets: np.ndarray, reset: bool,
         rng: np.random.Generator, variant: int = 0, bar=None) -> tuple[float, np.ndarray]:
    """Seat the first ``n_train`` symbols (their total log probability), then score the rest
    as strings at ``offsets`` (``reset``: each given the first ``n_train`` only).
    ``variant`` != 0: a deliberately wrong seating (validation mutants,
    :mod:`bayesfa.validation.ngram.hpyp`). ``bar`` (a tqdm bar of ``n_train`` symbols): the
    training symbols are seated in calls of about :data:`PROGRESS_SECONDS`, ``bar.update``
    after each; the seatings, the draws and the total are bit-identical to one call."""
    from bayesfa.samplers.ngram._hpyp_kernel import score_tokens

    extra = (variant,) if variant else ()
    train_lp, (nth, c, t, cs, ts) = seat_training(tree, n_sym, n_train, rng, variant, bar)
    out = np.zeros(offsets.size - 1)
    score_tokens(rng, tree.tok_node, tree.tok_sym, n_train, offsets, reset, tree.parent,
                 tree.nd, nth, c, t, cs, ts, 1.0 / n_sym, tree.path_len, out, *extra)
    return train_lp, out


def seat_training(tree: Tree, n_sym: int, n_train: int, rng: np.random.Generator,
                  variant: int = 0, bar=None) -> tuple[float, tuple]:
    """Seat the first ``n_train`` symbols one by one (:func:`seat`'s first part): their total
    log probability and the seating ``(nth, c, t, cs, ts)``."""
    from bayesfa.samplers.ngram._hpyp_kernel import score_tokens

    n_nodes = tree.parent.size
    nth = np.zeros(n_nodes)
    c = np.zeros((n_nodes, n_sym), dtype=np.int32)
    t = np.zeros((n_nodes, n_sym), dtype=np.int32)
    cs = np.zeros(n_nodes, dtype=np.int32)
    ts = np.zeros(n_nodes, dtype=np.int32)
    train_lp = np.zeros(1)
    extra = (variant,) if variant else ()
    if bar is None:
        score_tokens(rng, tree.tok_node, tree.tok_sym, 0, np.array([0, n_train], dtype=np.int64),
                     False, tree.parent, tree.nd, nth, c, t, cs, ts, 1.0 / n_sym, tree.path_len,
                     train_lp, *extra)
    else:
        train_lp[0] = _seat_in_chunks(tree, n_sym, n_train, rng, (nth, c, t, cs, ts), extra, bar)
    return float(train_lp[0]), (nth, c, t, cs, ts)


def context_predictive(arrays, options, variant: int = 0):
    """The memoizer's :class:`~bayesfa.samplers.ngram.hpyp.ContextPredictive`: the training
    data seated once with the run's entropy (one particle, as :meth:`_Memoizer.predict_log_prob`
    seats them again) in the *uncompressed* tree of their contexts (every context length a
    restaurant with its own discount ``d_|u|``: the same model, :func:`build`, so that every
    suffix of a training context is a node and a new context's predictive is that of its
    longest suffix there; another tree, so another draw of the seating than ``predict``'s).
    Sentences only."""
    from bayesfa.samplers.ngram.hpyp import ContextPredictive

    if options.get("sequence", False):
        raise InputError("a run fitted with --sequence models one long sequence, not a "
                         "distribution over strings: it has no strings to sample")
    F = np.asarray(arrays["tokens"], dtype=np.int32)
    n_sym = int(arrays["n_symbols"])
    parent, depth, _ = context_tree(F, 1, True, None, compress=False)
    tree = build(F, 1, True, _Memoizer._discounts(options), float(options.get("d_inf", D_INF)),
                 compress=False)
    rng = np.random.default_rng([int(x) for x in np.asarray(arrays["entropy"])])
    _, (nth, c, t, cs, ts) = seat_training(tree, n_sym, F.size - 1, rng, variant)
    seating = (tree.nd, nth, c, t, cs, ts)
    return ContextPredictive(F, tree.parent, depth, tree.tok_node, n_sym, None,
                             lambda k: seating, 1)


def _seat_in_chunks(tree: Tree, n_sym: int, n_train: int, rng, state: tuple, extra: tuple,
                    bar) -> float:
    """The training seating of :func:`seat` in calls of about :data:`PROGRESS_SECONDS`.
    Each call scores its symbols as one-symbol strings that continue one another (``reset``
    off: the same seatings and draws as one string), so each ``out`` entry is one symbol's
    ``log p`` exactly; they are added in order from 0 as the one call adds them (a
    sequential ``cumsum``), so the total is bit-identical too."""
    from bayesfa.samplers.ngram._hpyp_kernel import score_tokens

    nth, c, t, cs, ts = state
    total = 0.0
    start, chunk = 0, 1
    while start < n_train:
        k = min(chunk, n_train - start)
        out = np.zeros(k)
        t0 = time.perf_counter()
        score_tokens(rng, tree.tok_node, tree.tok_sym, start, np.arange(k + 1, dtype=np.int64),
                     False, tree.parent, tree.nd, nth, c, t, cs, ts, 1.0 / n_sym, tree.path_len,
                     out, *extra)
        took = time.perf_counter() - t0
        total = float(np.cumsum(np.concatenate(([total], out)))[-1])
        start += k
        bar.update(k)
        chunk = max(1, min(2 * chunk, int(k * PROGRESS_SECONDS / max(took, 1e-9))))
    return total


def _discount_list(text: str) -> tuple[float, ...]:
    values = tuple(float(x) for x in text.split(","))
    if not values or not all(0.0 < v < 1.0 for v in values):
        raise argparse.ArgumentTypeError(f"discounts must be in (0, 1), got {text}")
    return values


class _Memoizer:
    """The ``memoizer`` entry of :data:`bayesfa.methods.REGISTRY`."""

    name = "memoizer"
    validation = "bayesfa.validation.ngram.hpyp:MEMOIZER"
    variant = 0  # != 0: a validation mutant (bayesfa.validation.ngram.hpyp)
    summary = ("sequence memoizer: unbounded-context Pitman-Yor model, compressed context "
               "tree, single-particle incremental seating (Wood et al. 2009; Gasthaus et al. 2010)")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--discounts", type=_discount_list,
                            default=",".join(str(d) for d in DISCOUNTS),
                            help="d_0,d_1,...: the discount of each context length; default "
                                 f"{','.join(str(d) for d in DISCOUNTS)}")
        parser.add_argument("--d-inf", type=fraction, default=D_INF,
                            help=f"the discount of longer contexts; default {D_INF}")
        add_sequence_argument(parser)

    @staticmethod
    def _discounts(options):
        d = options.get("discounts", DISCOUNTS)
        return _discount_list(d) if isinstance(d, str) else tuple(d)

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool) -> FitResult:
        sequence = bool(options.get("sequence", False))
        F, n_sym, first = flat_symbols(corpus, sequence)
        entropy = np.array(np.random.SeedSequence(seed).generate_state(4), dtype=np.uint32)
        t0 = time.perf_counter()
        tree = build(F, first, not sequence, self._discounts(options),
                     float(options.get("d_inf", D_INF)))
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=F.size - first, unit="symbol", desc="memoizer", leave=False,
                       dynamic_ncols=True, file=sys.stderr)
        try:
            lp, _ = seat(tree, n_sym, F.size - first, np.zeros(1, dtype=np.int64), False,
                         np.random.default_rng(entropy), self.variant, bar)
        finally:
            if bar is not None:
                bar.close()
        secs = time.perf_counter() - t0
        arrays = {"tokens": F, "n_symbols": np.array(n_sym), "entropy": entropy}
        info = {"n_states": int(tree.parent.size),  # restaurants of the compressed tree
                "train_log_prob": lp, "train_perplexity": float(np.exp(-lp / (F.size - first))),
                "seconds": secs, "n_symbols": int(n_sym)}
        return FitResult(arrays, {}, info)

    def predict_log_prob(self, arrays, options, corpus: Corpus, carry: bool = False,
                         per_token: bool = False) -> np.ndarray:
        """Each test string's log probability given the training data (``carry``: and the
        test strings before it; always so for a sequence); ``per_token`` (implies
        ``carry``): one value per predicted test symbol. Without ``carry`` (``bayesfa
        predict``), sentences are each given the training data only: the quantity every
        method predicts alike, not :meth:`perplexity_log_prob`'s."""
        sequence = bool(options.get("sequence", False))
        train_F = np.asarray(arrays["tokens"], dtype=np.int32)
        n_sym = int(arrays["n_symbols"])
        first = 0 if sequence else 1
        test_F, _, _ = flat_symbols(corpus, sequence, n_sym - (0 if sequence else 1))
        test_F = test_F if sequence else test_F[1:]
        if test_F.size and int(test_F.max()) >= n_sym:
            raise InputError("the test data use letters outside the training alphabet")
        F = np.concatenate([train_F, test_F]).astype(np.int32)
        rng = np.random.default_rng([int(x) for x in np.asarray(arrays["entropy"])])
        tree = build(F, first, not sequence, self._discounts(options),
                     float(options.get("d_inf", D_INF)))
        offsets = test_offsets(corpus, sequence)
        if per_token:
            offsets, carry = np.arange(offsets[-1] + 1, dtype=np.int64), True
        _, out = seat(tree, n_sym, train_F.size - first, offsets, not (sequence or carry), rng,
                      self.variant)
        return out

    def sample_strings(self, arrays, options, n: int, rng: np.random.Generator) -> list:
        """``n`` strings from the predictive, symbol by symbol until the end symbol
        (:func:`context_predictive`)."""
        return context_predictive(arrays, options, self.variant).draw(n, rng)

    def perplexity_log_prob(self, arrays, options, corpus, *, continuation: bool,
                            per_symbol: bool = False, details: dict | None = None) -> float:
        """``log p(test | train)``, the test strings integrated as they are read (the hook of
        :mod:`bayesfa.methods`); on sentences not the sum of :meth:`predict_log_prob`, which
        gives each string the training data only. ``per_symbol`` changes nothing for one
        particle. ``details`` (a dict) receives the ``quantity``
        (:func:`bayesfa.samplers.ngram.hpyp.quantity`) and the ``estimator``."""
        check_shape(options, continuation)
        if details is not None:
            details.update(quantity=quantity(continuation),
                           estimator="one particle: the training data, then the test, each "
                                     "symbol seated once as it is read, never resampled")
        return float(self.predict_log_prob(arrays, options, corpus, carry=True).sum())

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        """Peak bytes of a fit and a prediction of as many symbols (:mod:`bayesfa.methods`):
        at least the peak resident memory they are measured to add, and at most 1.5 times it,
        on ~210,000 symbols of two letters
        (``tests/test_memoizer.py::test_memory_estimate_covers_the_measured_peak_of_fit_and_predict``)."""
        n = flat_size(corpus, bool(options.get("sequence", False)))
        s = corpus.alphabet_size + 1
        # suffix sorting (a few int64 arrays of n), the tree (<= 2n nodes) and its counts,
        # for the training data and a test set of the same size
        n2 = 2 * n
        return int(n2 * 8 * 16 + 2 * n2 * (s * 8 + 8 * 6))


METHOD = _Memoizer()
