"""What the sampler fronts share around their chains: the argument checks, the free positions
of a state path and its uniformly random start, the process pool that runs chains in
parallel, mid-chain checkpoints (the ``--checkpoint-every`` option, a chain state's atomic
save and its guarded load), a fit's chain files (:class:`ChainBook`: which chains are done,
which resume) and the loop of one chain (:class:`ChainLoop`: burn-in, then draws, in blocks,
with a checkpoint when one is due).

Used by CGS-PFA (:mod:`bayesfa.samplers.pfa.cgs_pfa`), CGS-SG and CGS-HMM
(:mod:`bayesfa.samplers.pfa.cgs_sg`, :mod:`bayesfa.samplers.pfa.cgs_hmm`; the three share the
chain files and the chain loop), and, for the checks and the free positions, the variational
fits (:mod:`bayesfa.learners.cvb`); the checkpoints by CGS-PFA and the PDFA / PDIA fronts
(:mod:`bayesfa.samplers.pdia.pdfa`). Plain Python and numpy: importing it compiles nothing.

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
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import ESTIMATE_SECONDS, check_schedule
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
    """Indices ``t`` of ``z`` (length ``T + 1``) with ``tokens[t-1] != 0``, int64: one array of
    8 bytes a letter, made without temporaries of the tokens' size (a boolean mask, and int64
    copies for ``+ 1`` and the cast, had held 17 bytes a token more at once)."""
    pos = np.flatnonzero(np.asarray(tokens)[:-1]).astype(np.int64, copy=False)
    pos += 1
    return pos


def n_free_positions(tokens: np.ndarray) -> int:
    """``free_positions(tokens).size`` (the letters), counted without making the array."""
    return int(np.count_nonzero(np.asarray(tokens)[:-1]))


def random_path(tokens: np.ndarray, n_states: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random ``z`` (Algorithm 1, line 1): 0 where fixed, ``1..N`` elsewhere,
    int32 ``[T + 1]``; draws one integer a free position from ``rng``."""
    positions = free_positions(tokens)
    z = np.zeros(tokens.size + 1, dtype=np.int32)
    z[positions] = rng.integers(1, n_states + 1, size=positions.size, dtype=np.int32)
    return z


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


# -- a fit's chain files and the loop of one chain ------------------------------------------------

class ChainBook:
    """A fit's chains as its checkpoint folder holds them: each chain's file (``paths[c]``,
    None without a folder), the state saved there (``saved[c]``, None when there is none or it
    is another run's) and the chain's output (``outs[c]``, None until the chain is done).
    Shared by the fronts that keep one file a chain (CGS-PFA, CGS-SG, CGS-HMM)."""

    def __init__(self, paths: list, saved: list, outs: list):
        self.paths, self.saved, self.outs = paths, saved, outs

    @classmethod
    def open(cls, checkpoint_dir, prints: list[str], load: Callable,
             finished: Callable) -> "ChainBook":
        """The book of ``len(prints)`` chains (``prints``: their fingerprints). With a
        ``checkpoint_dir`` (made if missing), ``load(path, fingerprint)`` reads each chain's
        file that exists (None: another run's); ``finished(state)`` is the output of a chain
        saved finished, else None (the chain resumes from ``state``)."""
        chains = len(prints)
        paths: list = [None] * chains
        saved: list = [None] * chains
        if checkpoint_dir is not None:
            Path(checkpoint_dir).mkdir(parents=True, exist_ok=True)
            paths = [chain_path(checkpoint_dir, c) for c in range(chains)]
            saved = [load(p, f) if p.exists() else None for p, f in zip(paths, prints)]
        return cls(paths, saved, [None if s is None else finished(s) for s in saved])

    def todo(self) -> list[int]:
        """The chains not done yet, in order."""
        return [c for c, out in enumerate(self.outs) if out is None]

    def resumed_mid_chain(self, todo: list[int]) -> int:
        """How many of ``todo`` continue from a saved state."""
        return sum(self.saved[c] is not None for c in todo)


def block_sweeps(units: int, n_states: int, n_free: int) -> int:
    """Sweeps in a block of about ``units`` (states x free positions) units of work, at least 1."""
    return max(1, units // max(1, n_states * n_free))


class ChainLoop:
    """The schedule of one chain and the clock of its checkpoints: ``burn_in`` sweeps, then
    ``n_draws`` draws ``period`` sweeps apart (:meth:`run`). ``resume`` (a saved state):
    the sweeps and draws done (``sweeps_done``, ``draws_done``), the seconds spent and
    ``rng``'s state (``rng_state``, :func:`generator_state`) are taken from it; else the
    chain starts at sweep 0. ``done`` and ``d`` count the sweeps and the draws made."""

    def __init__(self, rng: np.random.Generator, resume: dict | None = None):
        if resume is None:
            self.done, self.d, self._before = 0, 0, 0.0
        else:
            rng.bit_generator.state = json.loads(str(resume["rng_state"]))
            self.done, self.d = int(resume["sweeps_done"]), int(resume["draws_done"])
            self._before = float(resume["seconds"])
        self._t0 = time.perf_counter()
        self._last_save = time.monotonic()

    def seconds(self) -> float:
        """The chain's seconds so far, those before a resume included."""
        return self._before + time.perf_counter() - self._t0

    def run(self, sweeps: Callable[[int], None], draws: Callable[[int, int], None], *,
            burn_in: int, period: int, n_draws: int, block: int, per_block: int,
            save: Callable[[], None] | None = None, checkpoint_every: float = CHECKPOINT_EVERY,
            on_sweeps: Callable[[int], None] | None = None) -> float:
        """The rest of the chain, in blocks: ``sweeps(n)`` runs ``n`` of the burn-in sweeps
        (``block`` at most), ``draws(d, e)`` makes draws ``d`` to ``e - 1`` (``per_block`` at
        most, ``period`` sweeps each). After each block, ``save()`` when ``checkpoint_every``
        seconds or more have passed since the last save (never with ``save`` None), then
        ``on_sweeps(n)`` with the block's sweeps (first with those done before a resume).
        The blocks and saves never change what the chain draws. Returns :meth:`seconds`."""
        self._t0, self._last_save = time.perf_counter(), time.monotonic()
        if on_sweeps is not None and self.done:
            on_sweeps(self.done)
        while self.done < burn_in:
            step = min(block, burn_in - self.done)
            sweeps(step)
            self.done += step
            self._block_done(step, save, checkpoint_every, on_sweeps)
        while self.d < n_draws:
            e = min(n_draws, self.d + per_block)
            draws(self.d, e)
            step = (e - self.d) * period
            self.done += step
            self.d = e
            self._block_done(step, save, checkpoint_every, on_sweeps)
        return self.seconds()

    def _block_done(self, step: int, save, checkpoint_every: float, on_sweeps) -> None:
        if save is not None and time.monotonic() - self._last_save >= checkpoint_every:
            save()
            self._last_save = time.monotonic()
        if on_sweeps is not None:
            on_sweeps(step)


#: ... timed on the sweeps reported from this many seconds after the bar starts (earlier
#: reports are sweeps done before: finished or resumed chains).
_RESUMED_SECONDS = 0.05


def progress_callback(progress: bool, jobs: int, total: int, desc: str):
    """``(on_sweeps, close)``: a tqdm bar of ``total`` sweeps on standard error when
    ``progress`` and the chains run in this process; else ``(None, no-op)``.

    ``on_sweeps(n)`` moves the bar by ``n``; at the first report that comes after sweeps were
    run (a short timed start: one block), ``"DESC: estimated N s for M sweeps"`` is printed
    when the rest of the fit at that pace exceeds :data:`ESTIMATE_SECONDS`. Only reports
    are timed: the chains draw the same whatever the bar does."""
    if not progress or jobs > 1:
        return None, lambda: None
    from tqdm import tqdm

    bar = tqdm(total=total, unit="sweep", desc=desc, leave=False, dynamic_ncols=True, file=sys.stderr)
    t0 = time.perf_counter()
    before = [0, False]  # sweeps reported as done before the run; estimated yet

    def on_sweeps(n: int) -> None:
        bar.update(n)
        took = time.perf_counter() - t0
        if before[1]:
            return
        if took < _RESUMED_SECONDS:
            before[0] += n
            return
        before[1] = True
        timed = bar.n - before[0]
        left = (total - bar.n) * took / max(1, timed)
        if left > ESTIMATE_SECONDS:
            bar.write(f"{desc}: estimated roughly {left:.0f} s for the {total - bar.n} sweeps "
                      f"left ({took / max(1, timed):.3g} s a sweep, timed on the first "
                      f"{timed})", file=sys.stderr)

    return on_sweeps, bar.close
