"""What the sampler fronts share around their chains: the argument checks, the free positions
of a state path, the process pool that runs chains in parallel, and mid-chain checkpoints
(the ``--checkpoint-every`` option, a chain state's atomic save and its guarded load).

Used by CGS-PFA (:mod:`bayesfa.samplers.pfa.cgs_pfa`), CGS-SG and CGS-HMM
(:mod:`bayesfa.samplers.pfa.cgs_sg`, :mod:`bayesfa.samplers.pfa.cgs_hmm`), and, for the checks and
the free positions, the variational fits (:mod:`bayesfa.learners.cvb`); the checkpoints by
CGS-PFA and the PDFA / PDIA fronts (:mod:`bayesfa.samplers.pdia.pdfa`). Plain Python and numpy:
importing it compiles nothing.

Positions follow Shibata & Yoshinaka (2013), Algorithm 1: ``z`` has length ``T + 1`` for
``T`` tokens, ``z[t]`` is the state before token ``t``, fixed to 0 at ``t = 0`` and after an
end marker, free elsewhere.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import math
import multiprocessing
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import check_schedule
from bayesfa.rundir import atomic_write

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


# -- mid-chain checkpoints ------------------------------------------------------------------------

#: Default seconds between two saves of a running chain's state (``--checkpoint-every``).
CHECKPOINT_EVERY = 120.0


def nonnegative_seconds(text: str) -> float:
    """The argparse type of ``--checkpoint-every``: a finite number of seconds ``>= 0``."""
    value = float(text)
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text}")
    return value


def add_checkpoint_argument(parser: argparse.ArgumentParser) -> None:
    """``--checkpoint-every SECONDS`` (default :data:`CHECKPOINT_EVERY`), the option of the
    methods with ``resumable = True``; an execution option (``bayesfa.rundir``), never part
    of a run's identity or of a chain's fingerprint."""
    parser.add_argument("--checkpoint-every", type=nonnegative_seconds, default=CHECKPOINT_EVERY,
                        metavar="SECONDS",
                        help=f"save each running chain's state this often, so that an "
                             f"interrupted fit resumes mid-chain (never changes the result); "
                             f"default {CHECKPOINT_EVERY:g}")


def check_checkpoint_every(value) -> float:
    """``value`` as float seconds, or an :class:`InputError` unless a finite number >= 0."""
    if not (isinstance(value, (int, float, np.integer, np.floating))
            and not isinstance(value, bool) and value >= 0 and math.isfinite(value)):
        raise InputError(f"checkpoint_every must be a number of seconds >= 0, got {value!r}")
    return float(value)


def digest(array: np.ndarray) -> str:
    """SHA-256 of an array's bytes (C order), hex: the data part of a chain's fingerprint."""
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def chain_path(workdir, chain: int) -> Path:
    """Where chain ``chain`` of a fit keeps its state: ``workdir/chain-CCCC.npz``."""
    return Path(workdir) / f"chain-{chain:04d}.npz"


def corrupt_checkpoint(path, why: str) -> InputError:
    """The one-line error of an unreadable or inconsistent checkpoint, naming the file."""
    return InputError(f"corrupt checkpoint ({why}); delete it to run this chain afresh", path)


def read_checkpoint(path, fingerprint: str, fields: Iterable[str] | None = None) -> dict | None:
    """The arrays saved at ``path`` by :func:`save_checkpoint`, or None when they were saved
    under another ``fingerprint`` (another run's chain: other data, settings, seed or format
    version). ``fields``: the arrays that must be there (only those are read); None: every
    array of the file is read. An unreadable file, one without a fingerprint or without one
    of ``fields`` is an :class:`InputError` naming it (:func:`corrupt_checkpoint`): the file
    was written atomically, so only damage from outside, e.g. a truncated copy, does that."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            if "fingerprint" not in npz.files:
                raise corrupt_checkpoint(path, "no fingerprint")
            if str(npz["fingerprint"]) != fingerprint:
                return None  # another run's chain (data, settings, seed or version): not ours
            names = [k for k in npz.files if k != "fingerprint"] if fields is None else fields
            missing = [k for k in names if k not in npz.files]
            if missing:
                raise corrupt_checkpoint(path, f"missing {', '.join(missing)}")
            return {k: npz[k] for k in names}
    except InputError:
        raise
    except Exception as err:  # noqa: BLE001 - zipfile, pickle, OS and format errors alike
        why = f"{type(err).__name__}: {err}".splitlines()[0][:120]
        raise corrupt_checkpoint(path, why) from None


def save_checkpoint(path, fingerprint: str, state: dict) -> None:
    """Write ``state`` (name -> array or number) and ``fingerprint`` to ``path`` as an npz,
    atomically (a temporary file renamed onto ``path``): a crash leaves the old file or the
    new one, never a part."""
    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez(f, fingerprint=np.array(fingerprint),
                     **{k: np.asarray(v) for k, v in state.items()})

    atomic_write(path, write)


def generator_state(rng: np.random.Generator) -> str:
    """The state of ``rng``'s bit generator as JSON (how a checkpoint stores it)."""
    return json.dumps(rng.bit_generator.state)


def check_generator_state(path, text) -> dict:
    """The saved JSON of :func:`generator_state`, parsed, or the :class:`InputError` of a
    corrupt checkpoint at ``path``."""
    try:
        state = json.loads(str(text))
        state["state"]
    except (ValueError, KeyError, TypeError):
        raise corrupt_checkpoint(path, "unreadable random-number-generator state") from None
    return state
