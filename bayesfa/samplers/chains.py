"""What the sampler fronts share around their chains: the argument checks, the free positions
of a state path, and the process pool that runs chains in parallel.

Used by CGS-PFA (:mod:`bayesfa.samplers.cgs_pfa`), CGS-SG and CGS-HMM
(:mod:`bayesfa.samplers.cgs_sg`, :mod:`bayesfa.samplers.cgs_hmm`), and, for the checks and
the free positions, the variational fits (:mod:`bayesfa.samplers.cvb`). Plain Python and
numpy: importing it compiles nothing.

Positions follow Shibata & Yoshinaka (2013), Algorithm 1: ``z`` has length ``T + 1`` for
``T`` tokens, ``z[t]`` is the state before token ``t``, fixed to 0 at ``t = 0`` and after an
end marker, free elsewhere.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import sys
import threading
from typing import Any, Callable, Iterable

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import check_schedule

#: Corpora are checked to have fewer tokens than this by default: int32 counts hold them.
INT32_TOKENS = 1 << 31


def check_numbers(corpus: Corpus, integers: Iterable[tuple[str, Any, int]],
                  positive: dict[str, Any]) -> None:
    """The checks every front starts with, in this order: ``corpus`` is a :class:`Corpus`
    (else ``TypeError``); each ``(name, value, low)`` of ``integers`` is an integer (not a
    bool) ``>= low``; each value of ``positive`` is a finite number ``> 0``; the corpus has
    a string. A failure is an :class:`InputError` naming the first offending argument."""
    if not isinstance(corpus, Corpus):
        raise TypeError("corpus must be a bayesfa.Corpus")
    for name, value, low in integers:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise InputError(f"{name} must be an integer >= {low}, got {value!r}")
    for name, value in positive.items():
        if not (isinstance(value, (int, float, np.floating, np.integer)) and np.isfinite(value)
                and value > 0):
            raise InputError(f"{name} must be a positive number, got {value!r}")
    if corpus.n_strings < 1:
        raise InputError("the training corpus has no string")


def check_chain_arguments(corpus: Corpus, n_states, beta, iterations, burn_in, period, chains,
                          jobs, *, max_tokens: int = INT32_TOKENS, too_many: str = ", too many",
                          **positive) -> int:
    """:func:`check_numbers` for an MCMC front, then the corpus size (fewer than
    ``max_tokens`` tokens, by default :data:`INT32_TOKENS`; the error reads ``the training
    corpus has T tokens`` followed by ``too_many``) and the schedule (:func:`bayesfa.methods.check_schedule`). ``positive``:
    further hyperparameters that must be positive numbers (e.g. ``alpha=0.1``). Returns
    the draws per chain, ``(iterations - burn_in) // period``."""
    check_numbers(corpus, (("n_states", n_states, 1), ("iterations", iterations, 1),
                           ("burn_in", burn_in, 0), ("period", period, 1),
                           ("chains", chains, 1), ("jobs", jobs, 1)),
                  {"beta": beta, **positive})
    if corpus.n_tokens >= max_tokens:
        raise InputError(f"the training corpus has {corpus.n_tokens} tokens{too_many}")
    return check_schedule({"iterations": iterations, "burn_in": burn_in, "period": period})


def free_positions(tokens: np.ndarray) -> np.ndarray:
    """Indices ``t`` of ``z`` (length ``T + 1``) with ``tokens[t-1] != 0``, int64."""
    return (np.flatnonzero(np.asarray(tokens)[:-1] != 0) + 1).astype(np.int64)


def mp_context():
    """The start method of the chains' worker processes: ``fork`` while this process has no
    other thread (fast, and scripts need no ``if __name__ == "__main__"`` guard); else
    ``forkserver`` (JAX, for one, starts threads), or ``spawn`` where there is none."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1 and "jax" not in sys.modules:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def map_chains(run_one: Callable, args: list[tuple], jobs: int) -> list:
    """``[run_one(*a) for a in args]``, in ``jobs`` worker processes (:func:`mp_context`)
    when ``jobs > 1`` and there is more than one chain. Results in input order, so a result
    never depends on ``jobs``."""
    if jobs <= 1 or len(args) <= 1:
        return [run_one(*a) for a in args]
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(jobs, len(args)),
                                                mp_context=mp_context()) as pool:
        return list(pool.map(run_one, *zip(*args)))
