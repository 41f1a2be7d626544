"""The registry of learning methods: every ``--method NAME`` of the CLI is one entry here.

A method is an object with

- ``name`` and ``summary`` (one line, shown by ``bayesfa fit --help``);
- ``add_arguments(parser)``: its own ``bayesfa fit`` options (use :func:`add_mcmc_arguments`
  for the shared sampler options so that they are spelled the same everywhere);
- ``fit(corpus, options, seed, progress) -> FitResult``;
- ``predict_log_prob(arrays, options, corpus) -> [n_strings]`` natural-log posterior
  predictive probabilities of ``corpus``'s strings, from the arrays ``fit`` saved;
- ``estimate_memory(corpus, options) -> int``: the peak bytes its ``fit`` and a
  ``predict_log_prob`` on a corpus of the same size will need, stored draws included;
  ``bayesfa fit`` and ``bayesfa select`` call it before any work and refuse, in one line,
  what exceeds the available memory (:mod:`bayesfa.memory`). A method that does not define
  it yet is let through unchecked.

Optional hook for ``bayesfa perplexity`` (the conventions of Pfau, Bartlett & Wood 2010, Sect. 4):

- ``perplexity_log_prob(arrays, options, corpus, *, continuation: bool) -> float``: the
  natural-log probability of the whole test ``corpus`` given the training data, the test
  strings read in order and *integrated into the model as they are read* (the standard
  Bayesian update: string s is predicted given the training data and test strings 1..s-1, so
  the result is log p(test | train), not a sum of independent string predictives; a
  posterior mixture averages the per-sample *joint* of the test set, i.e. log-mean-exp over
  samples of each sample's total). ``continuation=False`` (sentence data, e.g. Alice): every
  string starts at the initial state and its end is a predicted symbol.
  ``continuation=True`` (one long sequence, e.g. DNA; the run was fitted with ``--sequence``):
  the test letters continue the training sequence from the state reached at its end, no end
  symbols. ``bayesfa perplexity`` divides by ``n_symbols``: letters + ends for sentence
  data, letters for a sequence. A hook may take ``letters_only`` (``--letters-only``): the
  same test pass, with the predictions of the sentence ends left out of the total, which is
  then divided by the letters (how the PDIA paper counts AIW). The run's data shape is the manifest's
  ``train["data_shape"]`` (``"sentences"`` or ``"sequence"``, from the method's
  ``--sequence`` option). A method without the hook is scored by ``sum(predict_log_prob)``
  (each string given the training data only) and the output says ``"incremental": false``.
  Optional keywords, passed only when asked for: ``map=True`` (``perplexity --map``: the single
  sample of highest joint probability) and ``per_symbol=True`` (``perplexity --per-symbol``:
  the authors' estimator, each symbol's predictive averaged over the samples with equal
  weights, ``sum_t log mean_k p_k(x_t | x_<t)``, which converges to
  ``sum_t log E[p(x_t | x_<t)]``, not to log p(test | train)). A hook may take ``details``
  (a dict it fills: ``quantity``, ``estimator``, ``se`` (Monte Carlo standard error, nats),
  ``converged``, ...; ``bayesfa perplexity`` prints them) and ``mc_tolerance``,
  ``max_particles``, ``draw_sets``, ``proposal`` (``--mc-tolerance``, ``--max-particles``,
  ``--draw-sets``, ``--proposal``; pdfa / pdia / pdia-smoothed).

A method with ``resumable = True`` also takes ``fit(..., workdir=PATH)``: it saves each
finished piece of work (a chain) there and reuses it when the same fit is run again, so an
interrupted ``bayesfa fit`` loses no finished chain.

Entries are import paths, so that ``bayesfa --help`` imports neither numba nor JAX.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any, NamedTuple, Protocol

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError


#: With ``progress``, a method prints an estimate of its whole fit (after a short timed start)
#: when that estimate exceeds this many seconds; every method's progress reporting reads it
#: (each module binds the name, so a test can force the estimate per module).
ESTIMATE_SECONDS = 10.0


class FitResult(NamedTuple):
    """What a method's ``fit`` returns; :mod:`bayesfa.rundir` saves it.

    arrays : name -> array, everything ``predict_log_prob`` needs.
    trace : name -> ``[chain, draw]`` array of per-sample diagnostics (may be empty).
    info : JSON-able facts about the run (timings, acceptance rates, ...).
    """

    arrays: dict[str, np.ndarray]
    trace: dict[str, np.ndarray]
    info: dict[str, Any]


class Method(Protocol):
    name: str
    summary: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool) -> FitResult: ...

    def predict_log_prob(self, arrays: dict[str, np.ndarray], options: dict[str, Any],
                         corpus: Corpus) -> np.ndarray: ...

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int: ...


REGISTRY: dict[str, str] = {
    "cgs-pfa": "bayesfa.samplers.pfa.cgs_pfa:METHOD",
    "ipfa": "bayesfa.samplers.pfa.ipfa:METHOD",
    "cgs-sg": "bayesfa.samplers.pfa.cgs_sg:METHOD",
    "cgs-hmm": "bayesfa.samplers.pfa.cgs_hmm:CGS_HMM",
    "cgs-hmm-star": "bayesfa.samplers.pfa.cgs_hmm:CGS_HMM_STAR",
    "cvb0": "bayesfa.learners.cvb:CVB0",
    "gcvb0": "bayesfa.learners.cvb:GCVB0",
    "cvb2": "bayesfa.learners.cvb:CVB2",
    "oracle-pfa": "bayesfa.models.oracle_methods:ORACLE_PFA",
    "oracle-hmm": "bayesfa.models.oracle_methods:ORACLE_HMM",
    "oracle-pdfa": "bayesfa.models.oracle_methods:ORACLE_PDFA",
    "pdfa": "bayesfa.samplers.pdia.pdfa:METHOD",
    "pdia": "bayesfa.samplers.pdia.pdia:METHOD",
    "pdia-smoothed": "bayesfa.samplers.pdia.pdia_smoothed:METHOD",
    "estatemerge": "bayesfa.learners.greedy.estatemerge:METHOD",
    "evgram": "bayesfa.learners.greedy.evgram:METHOD",
    "cvgram": "bayesfa.learners.greedy.cvgram:METHOD",
    "alergia": "bayesfa.learners.greedy.alergia:METHOD",
    "hmm-em": "bayesfa.learners.hmm_em:METHOD",
    "hpyp": "bayesfa.samplers.ngram.hpyp:METHOD",
    "memoizer": "bayesfa.samplers.ngram.memoizer:METHOD",
}


#: About how many CPU seconds numba takes to compile a method's fit kernels on first use (an
#: empty cache; a toy fit, 2026-11-28, numba 0.68 on Python 3.11), for the notice ``bayesfa
#: fit`` prints then (:mod:`bayesfa.compiling`); a busy machine takes longer. The oracles and
#: hmm-em compile no numba kernel.
COMPILE_SECONDS: dict[str, float] = {
    "cgs-pfa": 3, "ipfa": 10, "cgs-sg": 8, "cgs-hmm": 2, "cgs-hmm-star": 2, "cvb0": 3, "gcvb0": 1,
    "cvb2": 5, "pdfa": 40, "pdia": 40, "pdia-smoothed": 40, "estatemerge": 12, "evgram": 8,
    "cvgram": 8, "alergia": 10, "hpyp": 9, "memoizer": 3,
}


def method_names() -> list[str]:
    return list(REGISTRY)


def get_method(name: str) -> Method:
    """The method registered as ``name`` (imports its module)."""
    try:
        target = REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(REGISTRY)}") from None
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def nonnegative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text}")
    return value


#: The largest ``--seed``: ``np.random.SeedSequence`` takes any non-negative integer, but
#: seeds are stored and combined as 64-bit integers here and there; 2**63 - 1 fits them all.
SEED_MAX = 2**63 - 1


def seed_int(text: str) -> int:
    """The argparse type of every ``--seed``: an integer from 0 to :data:`SEED_MAX` (a
    negative seed is refused at parse time, in one line, by every command alike)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer from 0 to {SEED_MAX}, got {text!r}") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be an integer from 0 to {SEED_MAX}, got {text}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0 or not np.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _in_unit_interval(text: str, zero: bool, one: bool) -> float:
    """``text`` as a number of the unit interval, 0 and 1 included as ``zero`` and ``one``."""
    value = float(text)
    if not (0.0 <= value if zero else 0.0 < value) or not (value <= 1.0 if one else value < 1.0):
        raise argparse.ArgumentTypeError(
            f"must be a number in {'[' if zero else '('}0, 1{']' if one else ')'}, got {text}")
    return value


def fraction(text: str) -> float:
    """A number in ``[0, 1)`` (a Pitman-Yor discount, a held-out share of the strings)."""
    return _in_unit_interval(text, zero=True, one=False)


def inverse_temperature(text: str) -> float:
    """A number in ``(0, 1]`` (an annealing schedule's start)."""
    return _in_unit_interval(text, zero=False, one=True)


def open_fraction(text: str) -> float:
    """A number in ``(0, 1)``."""
    return _in_unit_interval(text, zero=False, one=False)


def add_mcmc_arguments(parser: argparse.ArgumentParser, *, states: int = 10, beta: float | None = 0.1,
                       iterations: int = 1000, burn_in: int = 500, period: int = 10,
                       parallel_chains: bool = True) -> None:
    """The sampler options every MCMC method shares, with per-method defaults.

    ``parallel_chains=False``: the method accepts ``--jobs`` (one command line for all) but
    runs its chains its own way, and the help says so.
    """
    parser.add_argument("--states", type=positive_int, default=states,
                        help=f"number of states N (besides the initial state 0); default {states}")
    if beta is not None:
        parser.add_argument("--beta", type=positive_float, default=beta,
                            help=f"Dirichlet hyperparameter beta; default {beta}")
    parser.add_argument("--iterations", type=positive_int, default=iterations,
                        help=f"sweeps per chain, burn-in included; default {iterations}")
    parser.add_argument("--burn-in", type=nonnegative_int, default=burn_in,
                        help=f"sweeps discarded at the start of each chain; default {burn_in}")
    parser.add_argument("--period", type=positive_int, default=period,
                        help=f"keep one sample every PERIOD sweeps after burn-in; default {period}")
    parser.add_argument("--chains", type=positive_int, default=4, help="independent chains; default 4")
    add_jobs_argument(parser, None if parallel_chains else "this method runs all chains in one "
                                                           "compiled call")


def add_jobs_argument(parser: argparse.ArgumentParser, ignored: str | None = None) -> None:
    """``--jobs``, default 1: the processes the chains run in, or, given ``ignored`` (why), an
    option accepted so that one command line serves every method."""
    parser.add_argument("--jobs", type=positive_int, default=1,
                        help="chains run in parallel processes; default 1 (in this process)"
                        if ignored is None else f"ignored ({ignored}); default 1")


def draws_per_chain(options: dict[str, Any]) -> int:
    """The draws a chain keeps, ``(iterations - burn_in) // period`` (0 when the burn-in
    takes every iteration): the one definition the fronts, the memory estimates and
    :func:`check_schedule` share."""
    return max(0, (options["iterations"] - options["burn_in"]) // options["period"])


def check_schedule(options: dict[str, Any]) -> int:
    """Samples per chain, :func:`draws_per_chain`; an :class:`InputError` if 0."""
    n = draws_per_chain(options)
    if n < 1:
        raise InputError(f"--iterations {options['iterations']} with --burn-in {options['burn_in']} "
                         f"and --period {options['period']} keeps no sample")
    return n
