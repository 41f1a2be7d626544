"""HMM trained by expectation-maximisation (``--method hmm-em``): the HMM-EM baseline of Pfau,
Bartlett & Wood (2010), Sect. 4, Table 1 (Rabiner's Baum-Welch, their reference [8]).

The EM itself is hmmlearn's :class:`~hmmlearn.hmm.CategoricalHMM` (a maintained, compiled
forward-backward), not code of ours. This module only shapes the data, runs several restarts
and keeps the one of highest training log-likelihood, and scores strings with
:func:`bayesfa.forward.forward_log_prob` on the fitted parameters.

Data shapes (as for ``pdfa`` / ``pdia``):

- *sentences* (default): every string starts from the initial distribution ``pi`` and its
  end is a symbol (token 0 of the :class:`~bayesfa.corpus.Corpus`), emitted like a letter,
  so the HMM emits ``S = A + 1`` symbols. As a PFA for the forward algorithm:
  ``init = pi``, ``trans[a, q, r] = B[q, a + 1] T[q, r]``, ``stop[q] = B[q, 0]``
  (:class:`bayesfa.automata.HMM`); ``Pr(x) = Pr(x_1 .. x_n, end)``.
- *sequence* (``--sequence``): the letters of all strings in order are one long sequence
  (``S = A``, no end symbol); a test set continues it from the state distribution reached at
  the end of training (the filtered posterior of the last state, moved on by ``T``).

Arrays saved: ``startprob [K]``, ``transmat [K, K]``, ``emissionprob [K, S]`` and, for a
sequence, ``next_state [K]``, the distribution of the state of the first test symbol (the
filtered posterior of the last training state, from hmmlearn's ``predict_proba``, times ``T``).

The number of states is an option (``--states K``). The paper chose it by the perplexity on
the *test* data ("optimistic ... for comparison purposes only"); that choice is made outside
the method, by ``benchmarks/pdia_table1.py``'s ``hmm_states_by_test``.

``--pseudo-count c`` adds ``c`` to every emission count in the M-step (the MAP estimate under a
``Dirichlet(1 + c)`` prior; hmmlearn's ``emissionprob_prior``), so that a letter a state never
emitted in training keeps a small probability; ``c = 0`` is plain maximum likelihood.

Validation mutants (:data:`MUTATIONS`, ``bayesfa validate hmm-em:mutant-NAME``): the EM is
hmmlearn's, so the mutants change one thing of the code around it here: the prior handed to
hmmlearn, the conversion to a PFA, the state a sequence continues from, the likelihood that
ranks the restarts.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from typing import Any

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import FitResult, positive_float, positive_int
from bayesfa.samplers.plugin import DrawAutomata


#: validation mutants (``variant`` of :func:`new_model`, :func:`fit_restarts`, :func:`to_pfa`
#: and the method; 0 is the method), each one term of our code around hmmlearn changed
MUTATIONS = {
    "prior-without-one": 1,  # emissionprob_prior = c, not 1 + c: hmmlearn adds c - 1 to counts
    "emission-at-destination": 2,  # to_pfa: trans[a, q, r] = T[q, r] B[r, a], not B[q, a]
    "carry-without-transition": 3,  # --sequence: next_state = the last posterior, not times T
    "likelihood-from-trace": 4,  # restarts ranked (and reported) by hmmlearn's last trace value,
                                 # the likelihood before the last M-step, not the fit's
}


def _nonnegative_float(text: str) -> float:
    value = float(text)
    if not value >= 0 or not np.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a non-negative number, got {text}")
    return value


def symbols(corpus: Corpus, sequence: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """``(X [T, 1] int, lengths, S)`` as hmmlearn reads them: sentences, the corpus tokens (0
    is the end) cut into strings; sequence, the letters (0-based) as one sequence."""
    if sequence:
        letters = corpus.tokens[corpus.tokens != 0].astype(np.int64) - 1
        return letters[:, None], np.array([letters.size]), corpus.alphabet_size
    return (corpus.tokens.astype(np.int64)[:, None], np.diff(corpus.offsets),
            corpus.alphabet_size + 1)


def new_model(n_states: int, n_features: int, options: dict[str, Any], random_state: int,
              variant: int = 0):
    """A hmmlearn ``CategoricalHMM`` with this method's settings (random start from
    ``random_state``); ``variant`` 1: a validation mutant (:data:`MUTATIONS`)."""
    from hmmlearn.hmm import CategoricalHMM

    one = 0.0 if variant == MUTATIONS["prior-without-one"] else 1.0
    return CategoricalHMM(n_components=n_states, n_features=n_features,
                          emissionprob_prior=one + float(options.get("pseudo_count", 0.01)),
                          n_iter=int(options.get("n_iter", 100)),
                          tol=float(options.get("tol", 1e-3)), random_state=random_state,
                          params="ste", init_params="ste", implementation="scaling")


class _quiet_hmmlearn:
    """Silence hmmlearn's log (it warns on a non-increasing step; we record the trace)."""

    def __enter__(self):
        self.logger = logging.getLogger("hmmlearn")
        self.level = self.logger.level
        self.logger.setLevel(logging.ERROR)

    def __exit__(self, *exc):
        self.logger.setLevel(self.level)


def _progress_bar(progress: bool, total: int):
    """A tqdm bar of ``total`` EM iterations on standard error, or None without ``progress``."""
    if not progress:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="it", desc="hmm-em", leave=False, dynamic_ncols=True,
                file=sys.stderr)


def _report_to(model, bar, estimate=None) -> None:
    """Move ``bar`` by one after each EM iteration of ``model`` (hmmlearn reports every
    iteration's bound to its ``monitor_``; the wrapper only counts, the fit is unchanged);
    ``estimate(seconds)``: called once, after the first iteration, with its seconds (the
    start of ``fit`` included)."""
    report = model.monitor_.report
    t0 = time.perf_counter()

    def counted(log_prob):
        nonlocal estimate
        report(log_prob)
        bar.update(1)
        if estimate is not None:
            estimate(time.perf_counter() - t0)
            estimate = None

    model.monitor_.report = counted


def _estimate(bar, iterations: int):
    """``estimate(seconds)`` of :func:`_report_to`: the line of
    :func:`bayesfa.learners.cvb.estimate_message` for ``iterations`` EM iterations (when
    long), written above ``bar``."""
    def estimate(seconds: float) -> None:
        from bayesfa.learners.cvb import estimate_message

        text = estimate_message("hmm-em", seconds, iterations, "the first EM iteration")
        if text is not None:
            bar.write(text, file=sys.stderr)
    return estimate


def fit_restarts(corpus: Corpus, options: dict[str, Any], seed: int | None, variant: int = 0,
                 progress: bool = False):
    """``(best model, per-restart summaries)``: ``--restarts`` EM runs from random starts
    (hmmlearn's ``random_state`` from ``SeedSequence(seed).spawn``), the one of highest
    training log-likelihood kept. ``variant``: a validation mutant (:data:`MUTATIONS`).
    ``progress``: a tqdm bar of the EM iterations (``--restarts`` x ``--n-iter`` at most; a
    restart stopped by ``--tol`` skips the rest of its share) on standard error."""
    sequence = bool(options.get("sequence", False))
    x, lengths, n_features = symbols(corpus, sequence)
    if x.shape[0] < 1:
        raise InputError("the training data have no symbol")
    n_states = int(options["states"])
    best, summaries = None, []
    restarts = int(options.get("restarts", 5))
    bar = None
    try:
        for r, child in enumerate(np.random.SeedSequence(seed).spawn(restarts)):
            model = new_model(n_states, n_features, options, int(child.generate_state(1)[0]),
                              variant)
            if r == 0:  # the bar's total from the model's own n_iter (one default, new_model's)
                bar = _progress_bar(progress, restarts * model.n_iter)
            if bar is not None:
                _report_to(model, bar, _estimate(bar, restarts * model.n_iter) if r == 0 else None)
            t0 = time.perf_counter()
            with _quiet_hmmlearn():
                model.fit(x, lengths)
            if bar is not None:
                bar.update((r + 1) * model.n_iter - bar.n)  # converged early: its share done
            best, summaries = _summarise(model, x, lengths, variant, t0, best, summaries)
    finally:
        if bar is not None:
            bar.close()
    return best[0], summaries


def _summarise(model, x, lengths, variant, t0, best, summaries):
    """One restart's summary appended to ``summaries``; ``(best, summaries)`` with ``best``
    the ``(model, log-likelihood)`` of the highest training likelihood so far."""
    history = np.asarray(model.monitor_.history, dtype=float)
    if variant == MUTATIONS["likelihood-from-trace"]:
        ll = float(history[-1])
    else:
        ll = float(model.score(x, lengths))
    # hmmlearn calls a run that used up --n-iter "converged" too: say whether --tol stopped it
    stopped = history.size > 1 and history[-1] - history[-2] < model.tol
    summaries.append({"log_likelihood": ll, "iterations": int(history.size),
                      "converged": bool(stopped),
                      "seconds": round(time.perf_counter() - t0, 3),
                      "largest_decrease": float(max(0.0, -np.diff(history).min()))
                      if history.size > 1 else 0.0})
    if best is None or ll > best[1]:
        best = (model, ll)
    return best, summaries


def to_pfa(startprob: np.ndarray, transmat: np.ndarray, emissionprob: np.ndarray,
           sequence: bool, variant: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(init, trans [A, K, K], stop)`` for :func:`bayesfa.forward.forward_log_prob`; a
    sequence stops nowhere (``stop = 1``: the forward sum is the probability of the letters).
    ``variant`` 2: a validation mutant (:data:`MUTATIONS`)."""
    from bayesfa.automata import HMM

    if variant == MUTATIONS["emission-at-destination"]:
        letters = emissionprob if sequence else emissionprob[:, 1:]
        stop = np.ones(startprob.shape[0]) if sequence else emissionprob[:, 0]
        return startprob, transmat[None, :, :] * letters.T[:, None, :], stop
    if sequence:
        trans = emissionprob.T[:, :, None] * transmat[None, :, :]
        return startprob, trans, np.ones(startprob.shape[0])
    pfa = HMM(startprob, emissionprob[:, 1:], transmat, emissionprob[:, 0]).to_pfa()
    return pfa.init, pfa.trans, pfa.stop


def next_state(init: np.ndarray, trans: np.ndarray, one: Corpus) -> np.ndarray:
    """The distribution of the state after the letters of ``one`` (a single string) read from
    ``init``: ``init . M(x_1) ... M(x_n) . e_r`` normalised over ``r`` (the forward
    algorithm with ``stop = e_r``, all ``r`` at once on the sample axis)."""
    from bayesfa.forward import forward_log_prob

    k = init.shape[0]
    lp = forward_log_prob(np.broadcast_to(init, (k, k)), np.broadcast_to(trans, (k,) + trans.shape),
                          np.eye(k), one)[:, 0]
    w = np.exp(lp - lp.max())
    return w / w.sum()


class _HMMEM(DrawAutomata):
    """The ``hmm-em`` entry of :data:`bayesfa.methods.REGISTRY`; its one automaton
    (:class:`~bayesfa.samplers.plugin.DrawAutomata`, ``map`` and ``mean`` alike): the best
    restart's HMM as a PFA (:func:`to_pfa`, what :meth:`predict_log_prob` scores)."""

    name = "hmm-em"
    variant = 0  # != 0: a validation mutant (MUTATIONS)
    summary = "HMM trained by EM (Baum-Welch, hmmlearn CategoricalHMM), best of several restarts"
    validation = "bayesfa.validation.learners.hmm_em:HMM_EM"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--states", type=positive_int, default=10,
                            help="number of hidden states K; default 10")
        parser.add_argument("--restarts", type=positive_int, default=5,
                            help="EM runs from random starts; the one of highest training "
                                 "likelihood is kept; default 5")
        parser.add_argument("--n-iter", type=positive_int, default=100,
                            help="EM iterations at most per restart; default 100")
        parser.add_argument("--tol", type=positive_float, default=1e-3,
                            help="stop when the log-likelihood rises less than this; default 1e-3")
        parser.add_argument("--pseudo-count", type=_nonnegative_float, default=0.01,
                            help="added to every emission count in the M-step (0: maximum "
                                 "likelihood); default 0.01")
        parser.add_argument("--sequence", action="store_true",
                            help="read the training strings as one long sequence (no end "
                                 "symbol); a test set continues it from the state reached at the end")

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool) -> FitResult:
        model, summaries = fit_restarts(corpus, options, seed, self.variant, progress)
        arrays = {"startprob": model.startprob_, "transmat": model.transmat_,
                  "emissionprob": model.emissionprob_}
        if options.get("sequence", False):
            x, lengths, _ = symbols(corpus, True)
            last = model.predict_proba(x, lengths)[-1]
            arrays["next_state"] = (last if self.variant == MUTATIONS["carry-without-transition"]
                                    else last @ model.transmat_)
        best = int(np.argmax([s["log_likelihood"] for s in summaries]))
        info = {"n_states": int(options["states"]), "best_restart": best,
                "train_log_likelihood": summaries[best]["log_likelihood"], "restarts": summaries,
                "data_shape": "sequence" if options.get("sequence", False) else "sentences",
                # the kept restart's, for diagnose (an optimisation history, not draws)
                "iterations_run": summaries[best]["iterations"],
                "converged": summaries[best]["converged"]}
        # the kept restart's log-likelihood per EM iteration, one row (bayesfa.rundir.OBJECTIVES)
        trace = {"log_lik": np.asarray(model.monitor_.history, dtype=np.float64)[None, :]}
        return FitResult({k: np.asarray(v, dtype=np.float64) for k, v in arrays.items()}, trace, info)

    def predict_log_prob(self, arrays, options, corpus: Corpus) -> np.ndarray:
        """Sentences: ``log Pr(x)`` of each string from the initial distribution. Sequence: the
        strings continue the training sequence and one another; each value is the log
        probability of a string's letters given everything before it."""
        from bayesfa.forward import forward_log_prob

        sequence = bool(options.get("sequence", False))
        emission = np.asarray(arrays["emissionprob"])
        n_letters = emission.shape[1] - (0 if sequence else 1)
        if corpus.alphabet_size > n_letters:
            raise InputError(f"the strings use {corpus.alphabet_size} letters, the model was "
                             f"trained on {n_letters}")
        corpus = corpus.with_alphabet(n_letters)
        init, trans, stop = to_pfa(arrays["startprob"], arrays["transmat"], emission, sequence,
                                   self.variant)
        if not sequence:
            return forward_log_prob(init, trans, stop, corpus)
        # one long sequence: each string from the state distribution the ones before it left
        carry = np.asarray(arrays["next_state"], dtype=np.float64)
        out = np.empty(corpus.n_strings)
        for s in range(corpus.n_strings):
            one = corpus.subset([s])
            out[s] = forward_log_prob(carry, trans, stop, one)[0]
            carry = next_state(carry, trans, one)  # (after the last string: unused)
        return out

    def draw_grid(self, arrays) -> tuple[int, int]:
        return 1, 1

    def draw_pfa(self, arrays, options, chain: int, k: int):
        from bayesfa.automata import PFA

        if options.get("sequence", False):
            raise InputError("a run fitted with --sequence models one long sequence, not a "
                             "distribution over strings: it has no automaton to export")
        return PFA(*to_pfa(arrays["startprob"], arrays["transmat"], arrays["emissionprob"],
                           False, self.variant))

    def perplexity_log_prob(self, arrays, options, corpus: Corpus, *, continuation: bool,
                            letters_only: bool = False) -> float:
        """A point estimate: nothing to update with the test data, so ``log p(test | train)``
        is the sum of :meth:`predict_log_prob` (sentences from ``pi``; a sequence continuing
        from the end of training). ``letters_only`` (sentences): the ends' predictions left
        out, i.e. each string's prefix probability ``pi M(x_1) ... M(x_n) 1`` (the PFA's rows
        and stop sum to one, so the forward mass after the letters is the probability that a
        string begins with them); a sequence has no ends to leave out."""
        from bayesfa.forward import forward_log_prob

        sequence = bool(options.get("sequence", False))
        if continuation != sequence:
            raise InputError("the run's data shape (--sequence or not) does not match the test's")
        if not letters_only or sequence:
            return float(np.sum(self.predict_log_prob(arrays, options, corpus)))
        emission = np.asarray(arrays["emissionprob"])
        if corpus.alphabet_size > emission.shape[1] - 1:
            raise InputError(f"the strings use {corpus.alphabet_size} letters, the model was "
                             f"trained on {emission.shape[1] - 1}")
        corpus = corpus.with_alphabet(emission.shape[1] - 1)
        init, trans, _ = to_pfa(arrays["startprob"], arrays["transmat"], emission, False,
                                self.variant)
        return float(np.sum(forward_log_prob(init, trans, np.ones(init.shape[0]), corpus)))

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        """hmmlearn's forward-backward, one string (sentences) or the whole sequence at a time:
        six ``[L, K]`` float64 lattices (log-probabilities of the frames, forward, backward,
        posteriors, scaling), ``L`` the longest string's tokens (its end included) or, for a
        sequence, the corpus's tokens; five ``[K, K]`` and four ``[K, S + 1]`` float64 tables;
        176 bytes a string and 12 a token (the frames handed to hmmlearn, its per-string views
        and their lengths); and 16 KiB a fit. The terms were chosen to cover the
        ``tracemalloc`` peaks of fits with 2-300 states on 2-40 letters, 50-3,000 strings, and
        1,000 letters (where the ``[K, S]`` tables lead; the traced-peak test's last case): over
        the grid of ``benchmarks/memory_traced.py`` the estimate is 1.12-1.33 times the peak
        (``benchmarks/results/memory-traced/hmm-em.json``). At least a fit's peak and at most 1.5
        times it (``tests/test_hmm_em.py::test_memory_estimate_is_within_half_again_of_a_fits_traced_peak``;
        issue 39: the last formula, with 32 bytes a token and four ``[K, K + S]`` tables, was
        0.84-0.99 of the peak with 50-300 states on a few hundred strings)."""
        k = int(options["states"])
        s = corpus.alphabet_size + 1
        sequence = bool(options.get("sequence", False))
        longest = corpus.n_tokens if sequence else int(np.diff(corpus.offsets).max(initial=0))
        n_strings = 1 if sequence else corpus.n_strings
        return int(6 * 8 * longest * k + 8 * k * (5 * k + 4 * s) + 176 * n_strings
                   + 12 * corpus.n_tokens + 16384)


METHOD = _HMMEM()
