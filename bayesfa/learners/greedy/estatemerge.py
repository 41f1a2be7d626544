"""EStateMerge: evidence-based state merging for PDFAs (Shibata & Yoshinaka 2013, Sect. 4.5.1).

Start from the probabilistic prefix tree acceptor of the training strings. Take blue states
in ``(len(prefix), prefix)`` order (the red-blue framework of ALERGIA); for each, try merging
it (with the recursive fold that keeps the machine deterministic) into every red state and
keep the merge that raises the marginal probability of Eq. 21 the most (``first_fit``: the
first red state, in prefix order, whose merge raises it),

    Pr(a | G) = prod_i  prod_a Gamma(C_ia + beta) / Gamma(C_i + A beta)  * Gamma(A beta) / Gamma(beta)^A

(``A`` symbols: the letters and the end of string); if no merge raises it, the blue state
becomes red. A fold changes ``C_i`` and ``C_ia`` only for the states it touches, so the
change of ``log Pr(a|G)`` is summed over those states alone (the paper's point about cost):
``sum_{touched x} [s(x after) - s(x before)] - sum_{folded y} s(y)``, with ``s`` the factor of
one state. A trial fold writes into the tables and is undone from a log.

Smoothing: prediction uses the posterior mean ``(C_qa + beta) / (C_q + A beta)`` in every
state, and a letter a state never read leads to a sink state with the smoothed unigram
distribution (:mod:`bayesfa.learners.greedy._prefix_tree`), so every string has a positive probability.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any

import numpy as np
from numba import njit

from bayesfa.corpus import Corpus
from bayesfa.methods import ESTIMATE_SECONDS, FitResult
from bayesfa.learners.greedy import _prefix_tree as pt
from bayesfa.learners.greedy.alergia import _PDFAMethod, add_beta_argument


@njit(cache=True)
def state_log_evidence(count, q, beta):
    """``log`` of state ``q``'s factor of Eq. 21: ``sum_a [lgamma(C_qa + beta) - lgamma(beta)]
    + lgamma(A beta) - lgamma(C_q + A beta)`` (0 for a state with no counts)."""
    total = 0
    s = 0.0
    n_sym = count.shape[1]
    for a in range(n_sym):
        c = count[q, a]
        total += c
        if c > 0:
            s += math.lgamma(c + beta) - math.lgamma(beta)
    if total == 0:
        return 0.0
    return s + math.lgamma(n_sym * beta) - math.lgamma(total + n_sym * beta)


@njit(cache=True)
def _logged_add(count, x, a, c, log_x, log_a, log_c, n_log):
    """``count[x, a] += c``, the old value logged at ``n_log`` for the undo of
    :func:`_trial_gain`; returns ``n_log + 1``."""
    log_x[n_log] = x
    log_a[n_log] = a
    log_c[n_log] = count[x, a]
    count[x, a] += c
    return n_log + 1


@njit(cache=True)
def _trial_gain(red, blue, child, count, order, n_keys, beta, stack, log_a, log_c, log_x,
                mark, touched, variant):
    """Change of ``log Pr(a|G)`` if ``blue`` were folded into ``red``; the tables are
    restored before returning. ``log_*`` and ``touched`` are scratch (grown as needed).
    ``variant`` 1 (a validation mutant, :data:`MUTATIONS`) forgets the factors of the folded
    states."""
    n_log = 0
    gain = 0.0
    # every touched x is marked once; y's end count is added when the pair is pushed
    mark[red] = True
    touched[0] = red
    n_touched = 1
    if variant != 1:
        gain -= state_log_evidence(count, blue, beta)
    n_log = _logged_add(count, red, 0, count[blue, 0], log_x, log_a, log_c, n_log)
    stack, top = pt.push_pair(stack, 0, red, blue)
    while True:  # the walk of pt.fold, every change logged
        top, x, y, a = pt.next_letter(stack, top, order, n_keys)
        if top == 0:
            break
        yc = child[y, a]
        xc = child[x, a]
        if n_log + 2 >= log_a.shape[0]:
            log_a, log_c, log_x = pt.grow(log_a), pt.grow(log_c), pt.grow(log_x)
        n_log = _logged_add(count, x, a, count[y, a], log_x, log_a, log_c, n_log)
        if xc >= 0:
            if not mark[xc]:
                mark[xc] = True
                if n_touched >= touched.shape[0]:
                    touched = pt.grow(touched)
                touched[n_touched] = xc
                n_touched += 1
            if variant != 1:
                gain -= state_log_evidence(count, yc, beta)
            n_log = _logged_add(count, xc, 0, count[yc, 0], log_x, log_a, log_c, n_log)
            stack, top = pt.push_pair(stack, top, xc, yc)
        else:
            # attach: yc keeps its counts; x's row changes (logged above). Record the
            # pointer change as a = -(letter) so that undo clears it.
            child[x, a] = yc
            log_x[n_log] = x
            log_a[n_log] = -a
            log_c[n_log] = 0
            n_log += 1
    # gain so far: - s(folded y); add s(x) after the fold, undo, subtract s(x) before
    for i in range(n_touched):
        gain += state_log_evidence(count, touched[i], beta)
    for i in range(n_log - 1, -1, -1):
        x = log_x[i]
        a = log_a[i]
        if a < 0:
            child[x, -a] = -1
        else:
            count[x, a] = log_c[i]
    before = 0.0
    for i in range(n_touched):
        q = touched[i]
        before += state_log_evidence(count, q, beta)
        mark[q] = False
    gain -= before
    return gain, stack, log_a, log_c, log_x, touched


@njit(cache=True)
def estatemerge_start(child, order, n_keys):
    """The merger's state at its start (:func:`bayesfa.learners.greedy._prefix_tree.red_blue_start`
    and the scratch arrays of :func:`_trial_gain`), a tuple for :func:`estatemerge_steps`."""
    is_red, dead, red_list, n_red, heap, heap_size, stack = pt.red_blue_start(child, order, n_keys)
    return (is_red, dead, red_list, n_red, heap, heap_size, stack,
            np.zeros(child.shape[0], dtype=np.bool_), np.empty(256, dtype=np.int64),
            np.empty(256, dtype=np.int64), np.empty(256, dtype=np.int64),
            np.empty(64, dtype=np.int64))


@njit(cache=True)
def estatemerge_steps(state, child, count, order, n_keys, sym, parent, beta, first_fit,
                      max_steps, variant):
    """Greedy evidence-based red-blue merging (module docstring) for at most ``max_steps``
    blue states, from ``state`` (:func:`estatemerge_start`, or this function's last return);
    mutates the tables. Returns ``(state, steps, done)``: the state to continue from, the
    blue states decided (merged or made red) and whether no blue state is left. Calls of any
    ``max_steps`` make the same merges as one call (the state carries everything)."""
    is_red, dead, red_list, n_red, heap, heap_size, stack, mark, log_a, log_c, log_x, touched = state
    steps = 0
    done = False
    while steps < max_steps:
        b, heap_size = pt.pop_blue(heap, heap_size, child, sym, parent, is_red, dead)
        if b < 0:
            done = True
            break
        best = -1
        best_gain = 0.0
        p = parent[b]
        for i in range(n_red):
            r = red_list[i]
            child[p, sym[b]] = r  # the pointer the merge redirects (it matters for loops)
            gain, stack, log_a, log_c, log_x, touched = _trial_gain(
                r, b, child, count, order, n_keys, beta, stack, log_a, log_c, log_x, mark, touched,
                variant)
            child[p, sym[b]] = b
            if gain > best_gain:
                best_gain = gain
                best = r
                if first_fit:
                    break
        n_red, heap, heap_size, stack = pt.merge_or_promote(
            b, best, red_list, n_red, is_red, dead, child, count, order, n_keys, sym, parent,
            heap, heap_size, stack)
        steps += 1
    return ((is_red, dead, red_list, n_red, heap, heap_size, stack, mark, log_a, log_c, log_x,
             touched), steps, done)


@njit(cache=True)
def estatemerge_kernel(child, count, order, n_keys, sym, parent, beta, first_fit, variant):
    """Greedy evidence-based red-blue merging (module docstring) in one call; mutates the
    tables and returns ``(delta, counts)`` of the red states in prefix order."""
    state = estatemerge_start(child, order, n_keys)
    state, _, _ = estatemerge_steps(state, child, count, order, n_keys, sym, parent, beta,
                                    first_fit, 1 << 62, variant)
    return pt.red_machine(state[2], state[3], child, count)


#: With ``progress``, the merger runs in calls lasting about this many seconds each (the
#: number of blue states per call adapted as it goes), the bar moving after each; the merges
#: are those of one call. The documented contract (:func:`estatemerge`'s docstring): the bar
#: moves about once a second, never waiting much longer than a second between two moves once
#: a call's pace is known (``tests/test_progress.py::test_estatemerge_bar_moves_about_once_a_second``).
PROGRESS_SECONDS = 1.0
#: With ``progress``, after this many seconds an upper bound of the time left is printed when
#: it exceeds :data:`ESTIMATE_SECONDS` (every prefix-tree state decided once at the pace so far)
ESTIMATE_AFTER_SECONDS = 2.0


def _stepped(child, count, order, n_keys, sym, parent, beta, first_fit, variant, bar):
    """:func:`estatemerge_kernel` in calls of :func:`estatemerge_steps` of about
    :data:`PROGRESS_SECONDS`, ``bar.update(steps)`` after each."""
    state = estatemerge_start(child, order, n_keys)
    chunk = 1
    done = False
    start, estimated = time.perf_counter(), False
    while not done:
        t0 = time.perf_counter()
        state, steps, done = estatemerge_steps(state, child, count, order, n_keys, sym, parent,
                                               beta, first_fit, chunk, variant)
        took = time.perf_counter() - t0
        if steps:
            bar.update(steps)
            bar.set_postfix(red=int(state[3]), refresh=False)
        if not estimated and not done and time.perf_counter() - start >= ESTIMATE_AFTER_SECONDS:
            estimated = True  # a short timed start: an upper bound of the rest
            per = (time.perf_counter() - start) / max(1, bar.n)
            bound = per * (child.shape[0] - bar.n)
            if bound > ESTIMATE_SECONDS:
                bar.write(f"estatemerge: at most roughly {bound:.0f} s more ({child.shape[0]} "
                          f"prefix-tree states, each decided at most once, at {per:.3g} s a "
                          f"blue state timed on the first {bar.n}); usually far fewer are "
                          f"decided", file=sys.stderr)
        chunk = max(1, min(2 * chunk, int(chunk * PROGRESS_SECONDS / max(took, 1e-9))))
    return pt.red_machine(state[2], state[3], child, count)


#: deliberately wrong merge criteria for :mod:`bayesfa.validation.learners.greedy`
MUTATIONS = {"no-folded-factor": 1}


def estatemerge(corpus: Corpus, beta: float, first_fit: bool = False,
                variant: int = 0, progress: bool = False) -> dict[str, np.ndarray]:
    """Learn a PDFA with EStateMerge at Dirichlet hyperparameter ``beta``.

    Returns ``delta`` int32 ``[Q, A+1]``, ``counts`` int64 ``[Q, A+1]`` and ``unigram``
    int64 ``[A+1]`` (:mod:`bayesfa.learners.greedy._prefix_tree`). ``progress``: a tqdm
    count of the blue states decided on standard error, moving about once a second
    (:data:`PROGRESS_SECONDS`; the first calls, one blue state then twice as many each time
    until a call's pace is known, come sooner), with the same machine as without; about 2 s
    after the start (:data:`ESTIMATE_AFTER_SECONDS`, at the first move of the bar from then
    on) one line on stderr gives an upper bound of the time left when it exceeds
    :data:`bayesfa.methods.ESTIMATE_SECONDS` (every prefix-tree state decided once, at the pace
    so far). ``variant``: 0, the method, or a code of :data:`MUTATIONS`; any other is refused.
    """
    if variant != 0 and variant not in MUTATIONS.values():
        raise ValueError(f"estatemerge: unknown variant {variant!r} (0 or one of {MUTATIONS})")
    child, count, order, n_keys, sym, parent = pt.prefix_tree(corpus)
    if progress:
        from tqdm import tqdm

        bar = tqdm(unit="state", desc="estatemerge (blue states)", leave=False, dynamic_ncols=True,
                   file=sys.stderr)
        try:
            delta, counts = _stepped(child, count, order, n_keys, sym, parent, float(beta),
                                     bool(first_fit), int(variant), bar)
        finally:
            bar.close()
        return {"delta": delta, "counts": counts, "unigram": pt.unigram_counts(corpus)}
    delta, counts = estatemerge_kernel(child, count, order, n_keys, sym, parent, float(beta),
                                       bool(first_fit), int(variant))
    return {"delta": delta, "counts": counts, "unigram": pt.unigram_counts(corpus)}


def log_evidence(counts: np.ndarray, beta: float) -> float:
    """``log Pr(a|G)`` of Eq. 21 for the per-state counts ``[Q, A]`` of a PDFA."""
    from scipy.special import gammaln

    counts = np.asarray(counts, dtype=np.float64)
    used = counts.sum(axis=1) > 0
    c = counts[used]
    n_sym = c.shape[1]
    return float(np.sum(gammaln(c + beta).sum(axis=1) - gammaln(c.sum(axis=1) + n_sym * beta)
                        + gammaln(n_sym * beta) - n_sym * gammaln(beta)))


class _EStateMerge(_PDFAMethod):
    """The ``estatemerge`` entry of :data:`bayesfa.methods.REGISTRY`."""

    name = "estatemerge"
    validation = "bayesfa.validation.learners.greedy:ESTATEMERGE"
    variant = 0  # != 0: a validation mutant (MUTATIONS)
    summary = "evidence-based greedy state merging for PDFAs (Shibata & Yoshinaka 2013, Sect. 4.5.1)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_beta_argument(parser, "the merge criterion Eq. 21 and the smoothing")
        parser.add_argument("--first-fit", action="store_true",
                            help="merge a blue state into the first red state that raises Eq. 21 "
                                 "(default: the red state that raises it most)")

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool) -> FitResult:
        arrays = estatemerge(corpus, options["beta"], options.get("first_fit", False),
                             progress=progress,
                             **({"variant": self.variant} if self.variant else {}))
        return FitResult(arrays, {}, {"n_states": int(arrays["counts"].shape[0]),
                                      "log_evidence": log_evidence(arrays["counts"], options["beta"])})


METHOD = _EStateMerge()
