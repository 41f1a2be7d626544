"""CGS-PFA: collapsed Gibbs sampling for fully connected PFAs (Shibata & Yoshinaka 2013, Sect. 2.3).

The front of the sampler: argument checks, one ``np.random.Generator`` per chain spawned from
``np.random.SeedSequence(seed)``, burn-in, recording, chains in parallel processes, mid-chain
checkpoints (``z``, the Generator's state and the draws so far, saved atomically; a resumed
chain ends bit-identical), the held-out slice whose log predictive each draw records
(``heldout_log_pred``, label-invariant, for the diagnostics), and the posterior predictive of
Eq. 6. The sweeps themselves are the numba kernels of :mod:`bayesfa.samplers._cgs_pfa_kernel`.

Reference: C. Shibata and R. Yoshinaka, "A comparison of collapsed Bayesian methods for
probabilistic finite automata", Machine Learning (published online 3 October 2013),
Sect. 2.1-2.3: Eq. 2 (prior), 4 (collapsed joint), 6 (predictive), 9 (conditional), Algorithm 1.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import math
import multiprocessing
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.forward import forward_log_prob, log_mean_exp, xi_to_pfa
from bayesfa.rundir import atomic_write
from bayesfa.methods import FitResult, add_mcmc_arguments, check_schedule

# Sweeps are run in blocks of about this many (N x T) units between progress updates
# (about 0.05 s at 2 ns per unit); the block size never changes the result.
_BLOCK_UNITS = 25_000_000
_MAX_TOKENS = 1 << 24  # float32 counts are exact below this (see _cgs_pfa_kernel)
_XI_CHUNK_BYTES = 1 << 26  # plug-in xi~ built for at most 64 MiB of samples at a time
#: Default seconds between two saves of a running chain's state (``--checkpoint-every``).
CHECKPOINT_EVERY = 120.0
#: Default fraction of the training strings held out for ``heldout_log_pred`` (``--holdout``),
#: and the most strings held out whatever the fraction.
HOLDOUT = 0.02
HOLDOUT_MAX = 1000
_HOLDOUT_KEY = 0x686F6C64  # spawn-key word of the held-out slice's Generator (chains use 0..C-1)


class CGSResult(NamedTuple):
    """Samples of CGS-PFA.

    counts : int32 ``[chain, draw, N+1, A, N+1]``, ``C_iaj`` of each recorded ``z`` (the
        plug-in ``xi~`` of Sect. 2.3 follows from them and ``beta``, see :func:`plugin_xi`).
    log_joint : float64 ``[chain, draw]``, ``log Pr(alpha, z)`` of Eq. 4.
    n_states : int32 ``[chain, draw]``, states ``i >= 1`` with ``C_i > 0``.
    n_edges : int32 ``[chain, draw]``, transitions with ``C_iaj > 0``.
    z : int32 ``[chain, T + 1]``, the last state path of each chain (over the strings sampled).
    info : timings and sizes.
    heldout_log_pred : float64 ``[chain, draw]``, the log predictive of the held-out slice
        under each draw's plug-in ``xi~`` (label-invariant); None without a held-out slice.
    """

    counts: np.ndarray
    log_joint: np.ndarray
    n_states: np.ndarray
    n_edges: np.ndarray
    z: np.ndarray
    info: dict[str, Any]
    heldout_log_pred: np.ndarray | None = None


def prior_matrix(n_states: int, n_symbols: int, beta: float) -> np.ndarray:
    """Dirichlet parameters of Eq. 2, ``[N+1, A, N+1]``: ``beta`` on ``(a != 0, j != 0)``,
    ``N beta`` on ``(i, 0, 0)``, 0 on impossible transitions."""
    prior = np.zeros((n_states + 1, n_symbols, n_states + 1))
    prior[:, 1:, 1:] = beta
    prior[:, 0, 0] = n_states * beta
    return prior


def plugin_xi(counts: np.ndarray, beta: float) -> np.ndarray:
    """``xi~_iaj = (C_iaj + prior_iaj) / (C_i + N A beta)`` (Sect. 2.3, Algorithm 1 line 9).

    counts ``[..., N+1, A, N+1]`` -> float64 of the same shape.
    """
    counts = np.asarray(counts)
    n_states, n_symbols = counts.shape[-3] - 1, counts.shape[-2]
    alpha = counts + prior_matrix(n_states, n_symbols, beta)
    return alpha / alpha.sum(axis=(-2, -1), keepdims=True)


def plugin_log_prob(counts: np.ndarray, beta: float, corpus: Corpus) -> np.ndarray:
    """``log Pr(b | xi~(s))`` for every sample ``s`` and string ``b`` of ``corpus``.

    counts ``[S, N+1, A, N+1]`` -> ``[S, n_strings]``. An empty string gets ``xi~(0, 0, 0)``.
    """
    counts = np.asarray(counts)
    n_letters = counts.shape[-2] - 1
    if corpus.alphabet_size > n_letters:
        raise InputError(f"the strings use {corpus.alphabet_size} letters, the model was trained "
                         f"on {n_letters}")
    corpus = corpus.with_alphabet(n_letters)
    # xi~ is float64 and copied once more by xi_to_pfa: build it for a chunk of samples at a time
    chunk = max(1, _XI_CHUNK_BYTES // (8 * int(np.prod(counts.shape[-3:]))))
    out = np.empty((counts.shape[0], corpus.n_strings))
    for lo in range(0, counts.shape[0], chunk):
        xi = plugin_xi(counts[lo:lo + chunk], beta)
        out[lo:lo + chunk] = forward_log_prob(*xi_to_pfa(xi), corpus)
    return out


def predict_log_prob(counts: np.ndarray, beta: float, corpus: Corpus) -> np.ndarray:
    """Posterior predictive ``log Pr(b | alpha)`` of each string ``b`` of ``corpus`` by Eq. 6:
    the mean of ``Pr(b | xi~(s))`` over all samples of all chains.

    counts ``[chain, draw, N+1, A, N+1]`` (or ``[S, N+1, A, N+1]``) -> ``[n_strings]``.
    """
    counts = np.asarray(counts)
    flat = counts.reshape((-1,) + counts.shape[-3:])
    return log_mean_exp(plugin_log_prob(flat, beta, corpus), axis=0)


def _check_arguments(corpus, n_states, beta, iterations, burn_in, period, chains, jobs) -> int:
    if not isinstance(corpus, Corpus):
        raise TypeError("corpus must be a bayesfa.Corpus")
    for name, value, low in (("n_states", n_states, 1), ("iterations", iterations, 1),
                             ("burn_in", burn_in, 0), ("period", period, 1),
                             ("chains", chains, 1), ("jobs", jobs, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise InputError(f"{name} must be an integer >= {low}, got {value!r}")
    if not (isinstance(beta, (int, float, np.floating, np.integer)) and np.isfinite(beta) and beta > 0):
        raise InputError(f"beta must be a positive number, got {beta!r}")
    if corpus.n_strings < 1:
        raise InputError("the training corpus has no string")
    if corpus.n_tokens >= _MAX_TOKENS:
        raise InputError(f"the training corpus has {corpus.n_tokens} tokens; the sampler keeps its "
                         f"counts in float32, exact below {_MAX_TOKENS} tokens")
    return check_schedule({"iterations": iterations, "burn_in": burn_in, "period": period})


def _free_positions(tokens: np.ndarray) -> np.ndarray:
    """Indices ``t`` of ``z`` (length ``T + 1``) with ``tokens[t-1] != 0``, int64."""
    return (np.flatnonzero(tokens[:-1] != 0) + 1).astype(np.int64)


def new_counts(n_states: int, n_symbols: int):
    """Zeroed ``(c, ct, ci, recip)`` of the kernel's chain state (see ``_cgs_pfa_kernel``)."""
    from bayesfa.samplers._cgs_pfa_kernel import padded_width

    width = padded_width(n_states)
    return (np.zeros((n_states + 1, n_symbols, width), dtype=np.float32),
            np.zeros((n_symbols, n_states + 1, width), dtype=np.float32),
            np.zeros(n_states + 1, dtype=np.int32),
            np.zeros(width, dtype=np.float32))


def _block(n_states: int, n_free: int) -> int:
    return max(1, _BLOCK_UNITS // max(1, n_states * n_free))


def holdout_split(n_strings: int, fraction: float, seed_seq: np.random.SeedSequence):
    """``(kept, held)``: sorted indices of the strings the chains sample from and of the
    held-out slice, ``floor(fraction * n_strings)`` strings (at most :data:`HOLDOUT_MAX`, and
    never all of them) drawn without replacement by a Generator derived from ``seed_seq`` (the
    run's root ``SeedSequence``, not one of its chain children): the same slice for every
    chain, and the same for the same seed."""
    if not (0.0 <= fraction < 1.0):
        raise InputError(f"holdout must be a fraction in [0, 1), got {fraction!r}")
    k = min(HOLDOUT_MAX, int(math.floor(fraction * n_strings + 1e-9)), n_strings - 1)
    if k <= 0:
        return np.arange(n_strings, dtype=np.int64), np.zeros(0, dtype=np.int64)
    child = np.random.SeedSequence(seed_seq.entropy, spawn_key=tuple(seed_seq.spawn_key) + (_HOLDOUT_KEY,))
    held = np.sort(np.random.default_rng(child).choice(n_strings, size=k, replace=False))
    kept = np.setdiff1d(np.arange(n_strings, dtype=np.int64), held)
    return kept, held.astype(np.int64)


class _Held(NamedTuple):
    """The held-out slice as the chain needs it (picklable for worker processes)."""

    tokens: np.ndarray
    offsets: np.ndarray
    alphabet_size: int

    def corpus(self) -> Corpus:
        return Corpus(self.tokens, self.offsets, self.alphabet_size)


def _heldout_log_pred(counts: np.ndarray, beta: float, held: _Held | None) -> np.ndarray:
    """``sum_b log Pr(b | xi~(s))`` over the held-out strings ``b``, per draw ``s`` of
    ``counts [D, N+1, A, N+1]`` (the plug-in of Sect. 2.3); NaN when there is no slice.
    Label-invariant: a permutation of the states leaves it unchanged, unlike ``z``."""
    if held is None:
        return np.full(counts.shape[0], np.nan)
    return plugin_log_prob(counts, beta, held.corpus()).sum(axis=1)


def _run_chain(tokens, n_symbols, n_states, beta, burn_in, period, n_draws, seed_seq, on_sweeps=None,
               held=None, checkpoint=None, checkpoint_every=CHECKPOINT_EVERY, fingerprint=None,
               resume=None):
    """One chain from its ``SeedSequence``: random init, burn-in, ``n_draws`` recorded draws.

    ``checkpoint`` (a path): the chain state (``z``, the Generator's ``bit_generator.state``,
    the draws so far, the sweeps done) is saved there atomically after the first block of
    sweeps that ends ``checkpoint_every`` seconds or more after the last save. ``resume`` (a
    state loaded by :func:`_load_chain`) continues such a chain: the counts are rebuilt from
    ``z`` by ``fill_counts`` and the Generator's state restored, so the chain ends exactly as
    an uninterrupted one. Neither the interval nor the block size changes the result: each
    sweep draws one ``rng.random(M)`` whatever the blocks.

    Returns ``(counts, log_joint, used, edges, heldout, z, seconds)``.
    """
    from bayesfa.samplers import _cgs_pfa_kernel as kernel

    rng = np.random.default_rng(seed_seq)
    positions = _free_positions(tokens)
    counts = np.zeros((n_draws, n_states + 1, n_symbols, n_states + 1), dtype=np.int32)
    log_joint = np.zeros(n_draws)
    used = np.zeros(n_draws, dtype=np.int32)
    edges = np.zeros(n_draws, dtype=np.int32)
    heldout = np.full(n_draws, np.nan)
    if resume is None:
        z = np.zeros(tokens.size + 1, dtype=np.int32)
        z[positions] = rng.integers(1, n_states + 1, size=positions.size, dtype=np.int32)
        done, d, seconds_before = 0, 0, 0.0
    else:
        z = np.array(resume["z"], dtype=np.int32)
        rng.bit_generator.state = json.loads(str(resume["rng_state"]))
        done, d, seconds_before = int(resume["sweeps_done"]), int(resume["draws_done"]), float(resume["seconds"])
        counts[:d], log_joint[:d], used[:d], edges[:d], heldout[:d] = (
            resume[k] for k in ("counts", "log_joint", "used", "edges", "heldout"))
    c, ct, ci, recip = new_counts(n_states, n_symbols)
    kernel.fill_counts(tokens, z, c, ct, ci, recip, float(beta))
    state = (positions, tokens, z, c, ct, ci, recip, rng, float(beta))
    t0 = time.perf_counter()
    last_save = time.monotonic()

    def save_if_due():
        nonlocal last_save
        if checkpoint is not None and time.monotonic() - last_save >= checkpoint_every:
            _save_chain(checkpoint, fingerprint, {
                "counts": counts[:d], "log_joint": log_joint[:d], "used": used[:d], "edges": edges[:d],
                "heldout": heldout[:d], "z": z, "seconds": seconds_before + time.perf_counter() - t0,
                "sweeps_done": done, "draws_done": d,
                "rng_state": json.dumps(rng.bit_generator.state)})
            last_save = time.monotonic()

    if on_sweeps is not None and done:
        on_sweeps(done)
    block = _block(n_states, positions.size)
    while done < burn_in:
        step = min(block, burn_in - done)
        kernel.sweeps(step, *state)
        done += step
        save_if_due()
        if on_sweeps is not None:
            on_sweeps(step)
    draws_per_block = max(1, block // period)
    while d < n_draws:
        e = min(n_draws, d + draws_per_block)
        kernel.sample_draws(period, *state, counts[d:e], log_joint[d:e], used[d:e], edges[d:e])
        heldout[d:e] = _heldout_log_pred(counts[d:e], beta, held)
        step = (e - d) * period
        done += step
        d = e
        save_if_due()
        if on_sweeps is not None:
            on_sweeps(step)
    seconds = seconds_before + time.perf_counter() - t0
    return counts, log_joint, used, edges, heldout, z, seconds


_WORKER_PROGRESS = None  # in a worker process: shared sweep counts, one slot per chain


def _init_worker(progress) -> None:
    global _WORKER_PROGRESS
    _WORKER_PROGRESS = progress


def _run_chain_job(chain: int, args: tuple, kwargs: dict):
    """:func:`_run_chain` in a worker process; reports its sweeps into the shared slot
    ``chain`` of the progress array when there is one."""
    progress = _WORKER_PROGRESS
    if progress is not None:
        def on_sweeps(n):
            progress[chain] += n
        kwargs = {**kwargs, "on_sweeps": on_sweeps}
    return _run_chain(*args, **kwargs)


def _mp_context():
    """``fork`` while this process has no other thread (fast, and scripts need no
    ``if __name__ == "__main__"`` guard); else ``forkserver`` (JAX, for one, starts threads)."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1 and "jax" not in sys.modules:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def _chain_fingerprint(tokens, n_symbols, n_states, beta, burn_in, period, n_draws,
                       seed_seq: np.random.SeedSequence, held: _Held | None = None) -> str:
    """What determines a chain's output, as a string (the data by SHA-256): the training
    tokens, the held-out slice, the settings and the chain's seed; not ``jobs`` nor the
    checkpoint interval."""
    return json.dumps({"format": _CHAIN_FORMAT, "tokens": _digest(tokens),
                       "heldout": None if held is None else [_digest(held.tokens), _digest(held.offsets)],
                       "n_symbols": n_symbols, "n_states": n_states, "beta": float(beta),
                       "burn_in": burn_in, "period": period, "n_draws": n_draws,
                       "entropy": str(seed_seq.entropy), "spawn_key": list(seed_seq.spawn_key)},
                      sort_keys=True)


_CHAIN_FORMAT = "bayesfa-cgs-pfa-chain/2"
_CHAIN_FIELDS = ("counts", "log_joint", "used", "edges", "heldout", "z", "seconds")
_STATE_FIELDS = _CHAIN_FIELDS + ("sweeps_done", "draws_done", "rng_state")


def _load_chain(path: Path, fingerprint: str, *, n_draws: int, z_size: int, burn_in: int,
                period: int) -> dict | None:
    """The chain state saved at ``path`` by :func:`_save_chain` (finished or not), or None
    when it was saved for other data, settings or seed. An :class:`InputError` naming the
    file when it cannot be read or is inconsistent (it was written atomically, so only damage
    from outside, e.g. a truncated copy, does that)."""
    def corrupt(why: str):
        return InputError(f"corrupt checkpoint ({why}); delete it to run this chain afresh", path)

    try:
        with np.load(path, allow_pickle=False) as npz:
            if "fingerprint" not in npz.files:
                raise corrupt("no fingerprint")
            stored = str(npz["fingerprint"])
            if stored != fingerprint:
                return None  # another run's chain (data, settings, seed or version): not ours
            missing = [k for k in _STATE_FIELDS if k not in npz.files]
            if missing:
                raise corrupt(f"missing {', '.join(missing)}")
            state = {k: npz[k] for k in _STATE_FIELDS}
    except InputError:
        raise
    except Exception as err:  # noqa: BLE001 - zipfile, pickle, OS and format errors alike
        raise corrupt(f"{type(err).__name__}: {err}".splitlines()[0][:120]) from None
    d, done = int(state["draws_done"]), int(state["sweeps_done"])
    shapes_ok = (0 <= d <= n_draws and state["z"].shape == (z_size,)
                 and all(state[k].shape[:1] == (d,) for k in ("counts", "log_joint", "used", "edges", "heldout"))
                 and done == (min(done, burn_in) if d == 0 else burn_in + d * period))
    if not shapes_ok:
        raise corrupt("its arrays do not match its settings")
    try:
        json.loads(str(state["rng_state"]))["state"]
    except (ValueError, KeyError, TypeError):
        raise corrupt("unreadable random-number-generator state") from None
    return state


def _save_chain(path: Path, fingerprint: str, state: dict) -> None:
    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez(f, fingerprint=np.array(fingerprint),
                     **{k: np.asarray(v) for k, v in state.items()})

    atomic_write(path, write)


def _finished_state(out, n_sweeps: int, rng_state: str = "{\"state\": null}") -> dict:
    return {**dict(zip(_CHAIN_FIELDS, out)), "sweeps_done": n_sweeps,
            "draws_done": int(out[0].shape[0]), "rng_state": rng_state}


def sample_cgs_pfa(corpus: Corpus, n_states: int, beta: float, iterations: int, burn_in: int,
                   period: int, chains: int, seed: int | None, jobs: int = 1,
                   progress: bool = False, checkpoint_dir: str | os.PathLike | None = None,
                   checkpoint_every: float = CHECKPOINT_EVERY, holdout: float = 0.0,
                   on_sweeps: Callable[[int], None] | None = None) -> CGSResult:
    """Run CGS-PFA (Algorithm 1) on ``corpus`` with ``N = n_states`` states besides state 0.

    Each chain starts from a uniformly random ``z``, runs ``burn_in`` sweeps, then records the
    counts every ``period`` sweeps: ``(iterations - burn_in) // period`` draws per chain
    (sweeps past the last recorded one are not run). Chain ``c`` uses the ``c``-th child of
    ``np.random.SeedSequence(seed)``, so the result does not depend on ``jobs``.

    ``holdout``: the fraction of the strings (see :func:`holdout_split`; 0 for none) left
    out of sampling; every draw records ``heldout_log_pred``, the log predictive of that
    slice under the draw's plug-in ``xi~``. The chains (and so the returned counts) are fitted
    on the other strings.

    With ``jobs > 1`` the chains run in worker processes, forked when this process has no other
    thread and started by a fork server otherwise; in the latter case a script that calls this
    needs the usual ``if __name__ == "__main__":`` guard. Workers report their sweeps to the
    progress bar as they go.

    With ``checkpoint_dir``, each chain saves its state there (``chain-CCCC.npz``, atomically)
    every ``checkpoint_every`` seconds and when it finishes, and a later call with the same
    data, settings and seed continues from the saved states: finished chains are reused and
    unfinished ones resume, and the result is bit-identical to an uninterrupted run. A saved
    state of other data, settings or seed is ignored (and overwritten); an unreadable one is an
    :class:`InputError` naming it.

    ``on_sweeps(n)`` is called after every block of ``n`` sweeps when the chains run in this
    process (``jobs == 1``).
    """
    n_draws = _check_arguments(corpus, n_states, beta, iterations, burn_in, period, chains, jobs)
    if not (isinstance(checkpoint_every, (int, float)) and checkpoint_every >= 0
            and math.isfinite(checkpoint_every)):
        raise InputError(f"checkpoint_every must be a number of seconds >= 0, got {checkpoint_every!r}")
    root = np.random.SeedSequence(seed)
    children = root.spawn(chains)
    kept, held_idx = holdout_split(corpus.n_strings, float(holdout), root)
    held = None
    if held_idx.size:
        part = corpus.subset(held_idx)
        held = _Held(part.tokens, part.offsets, part.alphabet_size)
        corpus = corpus.subset(kept)
    tokens = corpus.tokens
    n_symbols = corpus.alphabet_size + 1
    jobs = min(jobs, chains)
    if on_sweeps is not None and jobs > 1:
        raise ValueError("on_sweeps is called only when the chains run in this process (jobs=1)")
    context = _mp_context() if jobs > 1 else None  # before the bar starts its monitor thread
    sweeps_per_chain = burn_in + n_draws * period
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=chains * sweeps_per_chain, unit="sweep", desc="cgs-pfa",
                   leave=False, dynamic_ncols=True, file=sys.stderr)
    prints = [_chain_fingerprint(tokens, n_symbols, n_states, beta, burn_in, period, n_draws, s, held)
              for s in children]
    paths: list = [None] * chains
    saved: list = [None] * chains
    if checkpoint_dir is not None:
        Path(checkpoint_dir).mkdir(parents=True, exist_ok=True)
        paths = [Path(checkpoint_dir) / f"chain-{c:04d}.npz" for c in range(chains)]
        saved = [_load_chain(p, f, n_draws=n_draws, z_size=tokens.size + 1, burn_in=burn_in,
                             period=period) if p.exists() else None for p, f in zip(paths, prints)]
    outs: list = [None] * chains
    for c, state in enumerate(saved):
        if state is not None and int(state["draws_done"]) == n_draws:
            outs[c] = tuple(state[k] if k != "seconds" else float(state[k]) for k in _CHAIN_FIELDS)
    todo = [c for c in range(chains) if outs[c] is None]
    resumed_mid = sum(saved[c] is not None for c in todo)
    if bar is not None:
        bar.update((chains - len(todo)) * sweeps_per_chain)

    def finish(c, out):
        outs[c] = out
        if paths[c] is not None:
            _save_chain(paths[c], prints[c], _finished_state(out, sweeps_per_chain))

    def chain_kwargs(c):
        return {"held": held, "checkpoint": paths[c], "checkpoint_every": float(checkpoint_every),
                "fingerprint": prints[c], "resume": saved[c]}

    def chain_args(c):
        return (tokens, n_symbols, n_states, beta, burn_in, period, n_draws, children[c])

    t0 = time.perf_counter()
    try:
        if jobs == 1 or len(todo) <= 1:
            callbacks = [f for f in (None if bar is None else bar.update, on_sweeps) if f is not None]
            report = None
            if callbacks:
                def report(n):
                    for f in callbacks:
                        f(n)
            for c in todo:
                finish(c, _run_chain(*chain_args(c), report, **chain_kwargs(c)))
        else:
            shared = context.RawArray("q", chains) if bar is not None else None
            with concurrent.futures.ProcessPoolExecutor(
                    max_workers=min(jobs, len(todo)), mp_context=context,
                    initializer=_init_worker, initargs=(shared,)) as pool:
                futures = {pool.submit(_run_chain_job, c, chain_args(c), chain_kwargs(c)): c
                           for c in todo}
                pending = set(futures)
                while pending:
                    done, pending = concurrent.futures.wait(
                        pending, timeout=0.5, return_when=concurrent.futures.FIRST_COMPLETED)
                    for f in done:
                        finish(futures[f], f.result())
                    if bar is not None:
                        now = sum(sweeps_per_chain if outs[c] is not None else min(shared[c], sweeps_per_chain)
                                  for c in todo)
                        bar.update((chains - len(todo)) * sweeps_per_chain + now - bar.n)
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - t0
    counts, log_joint, used, edges, heldout, z, chain_seconds = (np.stack(x) for x in zip(*outs))
    info = {
        "n_draws_per_chain": int(n_draws),
        "n_free_positions": int(_free_positions(tokens).size),
        "n_tokens": int(tokens.size),
        "holdout": float(holdout),
        "holdout_strings": int(held_idx.size),
        "holdout_letters": 0 if held is None else int(held.corpus().n_letters),
        "jobs": int(jobs),
        "chains_resumed": int(chains - len(todo)),
        "chains_resumed_mid_chain": int(resumed_mid),
        "checkpoint_every": float(checkpoint_every),
        "start_method": None if context is None else context.get_start_method(),
        "seconds": seconds,
        "chain_seconds": [float(s) for s in chain_seconds],
        "ns_per_state_token": float(np.mean(chain_seconds) * 1e9
                                    / max(1, sweeps_per_chain * n_states * tokens.size)),
    }
    return CGSResult(counts, log_joint, used, edges, z, info, heldout if held is not None else None)


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be a fraction in [0, 1), got {text}")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text}")
    return value


class _CGSPFA:
    """The ``cgs-pfa`` entry of :data:`bayesfa.methods.REGISTRY`."""

    name = "cgs-pfa"
    resumable = True  # fit(..., workdir=) keeps chain states there (finished or not)
    summary = "collapsed Gibbs sampling of a fully connected PFA (Shibata & Yoshinaka 2013, Alg. 1)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_mcmc_arguments(parser, states=10, beta=0.1, iterations=1000, burn_in=500, period=10)
        parser.add_argument("--holdout", type=_fraction, default=HOLDOUT, metavar="FRACTION",
                            help=f"fraction of the training strings (at most {HOLDOUT_MAX}) left out "
                                 f"of sampling, chosen from the seed; each draw records their log "
                                 f"predictive (heldout_log_pred) for diagnose; 0 disables; default "
                                 f"{HOLDOUT}")
        parser.add_argument("--checkpoint-every", type=_seconds, default=CHECKPOINT_EVERY,
                            metavar="SECONDS",
                            help=f"save each running chain's state this often, so that an "
                                 f"interrupted fit resumes mid-chain (never changes the result); "
                                 f"default {CHECKPOINT_EVERY:g}")

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        """Peak bytes of ``fit`` and of ``predict_log_prob`` on a corpus of this size: the
        kernel's chain state (``c``, ``ct``, ``z``, positions, uniforms) of each running chain,
        every chain's recorded counts twice (per chain, then stacked), one chain more while a
        resumed or parallel chain is read back; for Eq. 6, the counts, a chunk of plug-in ``xi~``
        (three float64 copies) and the forward pass (:mod:`bayesfa.memory`)."""
        from bayesfa.memory import forward_bytes
        from bayesfa.samplers._cgs_pfa_kernel import padded_width

        n, a, chains = options["states"], corpus.alphabet_size + 1, options["chains"]
        draws = max(0, (options["iterations"] - options["burn_in"]) // options["period"])
        jobs = min(options.get("jobs", 1), chains)
        size = (n + 1) * a * (n + 1)                       # one recorded C_iaj (int32)
        chain = draws * (size * 4 + 16)                   # + log joint, states and edges used
        state = 2 * (n + 1) * a * padded_width(n) * 4 + corpus.n_tokens * 20
        stored = chains * chain
        fit = max(stored + state, 2 * stored) + chain
        if jobs > 1:  # each worker: its chain state, its draws and their pickle
            fit += jobs * (state + 2 * chain)
        samples = chains * draws
        k = min(samples, max(1, _XI_CHUNK_BYTES // (8 * size)))
        work = max(3 * k * size * 8 + forward_bytes(k, n + 1, corpus), 2 * samples * corpus.n_strings * 8)
        return int(max(fit, samples * size * 4 + samples * corpus.n_strings * 8 + work))

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool,
            workdir: str | os.PathLike | None = None) -> FitResult:
        res = sample_cgs_pfa(corpus, n_states=options["states"], beta=options["beta"],
                             iterations=options["iterations"], burn_in=options["burn_in"],
                             period=options["period"], chains=options["chains"], seed=seed,
                             jobs=options.get("jobs", 1), progress=progress, checkpoint_dir=workdir,
                             checkpoint_every=options.get("checkpoint_every", CHECKPOINT_EVERY),
                             holdout=options.get("holdout", 0.0))
        trace = {"log_joint": res.log_joint, "n_states": res.n_states, "n_edges": res.n_edges}
        if res.heldout_log_pred is not None:
            trace["heldout_log_pred"] = res.heldout_log_pred
        return FitResult({"counts": res.counts}, trace, res.info)

    def predict_log_prob(self, arrays: dict[str, np.ndarray], options: dict[str, Any],
                         corpus: Corpus) -> np.ndarray:
        return predict_log_prob(arrays["counts"], options["beta"], corpus)


METHOD = _CGSPFA()
