"""One corpus across a Dask cluster: approximate distributed CGS-PFA (``--shards K``).

The collapsed Gibbs sampler of Shibata & Yoshinaka (2013), Sect. 2.3 (Eq. 9, Algorithm 1),
distributed as Newman, Asuncion, Smyth & Welling (2009), "Distributed algorithms for topic
models", JMLR 10, distribute LDA's (AD-LDA, Sect. 2.1 there): the training strings are split
into ``K`` shards of consecutive strings with about ``T / K`` tokens each
(:func:`shard_bounds`); each shard's tokens, free positions, state path ``z`` and random
number generator live on a Dask worker, in a Dask actor (:class:`ShardActor`: sent once,
never again); every sweep,

1. the driver sends each shard the global counts ``C_iaj`` (Definition 2; one ``[N+1, A, N+1]``
   int32 table per chain, the argument of the actor's ``sweep`` call);
2. each shard rebuilds its local copy ``c, ct, ci, recip`` from it and runs one sweep of the
   production kernel over its own positions (``_cgs_pfa_kernel.sweeps``, one
   ``rng.random(M_k)`` per sweep), reading the other shards' transitions as they were at the
   start of the sweep: the approximation of AD-LDA (Newman et al. 2009, Eq. 3-4), exact for
   ``K = 1``;
3. it returns its count delta (local after - global before, int32) and how many of its
   positions changed state, and the driver adds the ``K`` deltas to the global counts: the
   reconciliation is exact, the global counts are always those of the gathered path
   (``tests/test_sharded.py`` checks this after every sweep).

Draws are recorded by the driver from the global counts as the one-process front records
them (counts, log joint of Eq. 4, states and edges used, the held-out slice's log predictive,
Eq. 6 online for ``--predict``, ``--max-draws``), with the sampler statistic ``moved`` (the
shards' moved positions summed over the draw's ``period`` sweeps, over ``period`` times the
free positions: :func:`~bayesfa.samplers.pfa.cgs_pfa.sampler_stats`), so the run has the
arrays, trace and prediction of a ``cgs-pfa`` run: ``bayesfa predict``, ``perplexity`` and
``diagnose`` read it alike.

Seeds. Chain ``c`` has the ``c``-th child of ``SeedSequence(seed)`` as in the one-process
front (:func:`~bayesfa.samplers.pfa.cgs_pfa.seed_chains`, the same held-out slice); its shard 0
draws from that chain sequence itself and shard ``k >= 1`` from its ``k``-th child
(``chain_seq.spawn(K)[k]``), each a ``np.random.Generator`` that first draws its shard's
initial path (Algorithm 1, line 1) and then one uniform per free position per sweep. So with
``K = 1`` a chain is the one-process chain bit for bit, and the same seed and ``K`` give the
same result bit for bit whatever the workers, their number or the scheduler.

Checkpoints. With a work folder (``bayesfa fit --out``), each chain's file
(``chain-CCCC.npz``) is saved atomically after the first sweep that ends ``--checkpoint-every``
seconds after the last save, and when the chain ends: its whole path (gathered from the
shards), every shard's generator state, the draws so far, the sweeps done and the positions
moved in the sweeps since the last draw. A rerun
resumes each chain there (the global counts are recomputed from the path) and ends bit for
bit as the uninterrupted run. An actor is not moved when its worker dies: a lost worker
stops the fit with Dask's error, and the same command then resumes from the last checkpoint.

This module does not import the one-process front (:mod:`bayesfa.samplers.pfa.cgs_pfa`,
which imports it); the front hands itself in (``front=``), as to :mod:`~bayesfa.samplers.pfa.auto`.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any, Callable

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import positive_int
from bayesfa.samplers.chains import (CHECKPOINT_EVERY, ChainBook, check_checkpoint_every,
                                     check_generator_state, corrupt_checkpoint, digest,
                                     free_positions, n_free_positions, random_path, read_checkpoint,
                                     save_checkpoint)

#: The options of a sharded fit (all absent from a run's options unless given, so that
#: one-process runs keep their identity); ``scheduler`` and ``workers`` never change the result.
SHARD_OPTIONS = ("shards", "scheduler", "workers")
_FORMAT = "bayesfa-cgs-pfa-sharded-chain/2"  # /2: the positions moved (stats, moving)
_FIELDS = ("counts", "log_joint", "used", "edges", "heldout", "stats", "moving", "pred_log_sum",
           "z", "rng_states", "seconds", "sweeps_done", "draws_done")


def _scheduler(text: str) -> str:
    from bayesfa.cluster import check_scheduler

    try:
        check_scheduler(text, None)
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err).split(": ", 1)[-1]) from None
    return text


def add_shard_arguments(parser) -> None:
    """``--shards``, ``--scheduler``, ``--workers`` of ``bayesfa fit --method cgs-pfa``."""
    parser.add_argument("--shards", type=positive_int, default=argparse.SUPPRESS, metavar="K",
                        help="split the training strings into K shards swept in parallel on a Dask "
                             "cluster, the counts reconciled after every sweep (approximate "
                             "distributed Gibbs, Newman et al. 2009; K = 1 is the one-process "
                             "chain); gibbs kernel only; default: no sharding, one process")
    parser.add_argument("--scheduler", type=_scheduler, default=argparse.SUPPRESS,
                        metavar="local|tcp://HOST:PORT",
                        help="with --shards: local (default) starts a LocalCluster of --workers "
                             "processes; or a running dask scheduler's address (never changes the "
                             "result)")
    parser.add_argument("--workers", type=positive_int, default=argparse.SUPPRESS, metavar="W",
                        help="with --shards and --scheduler local: worker processes; default "
                             "min(K, 2)")


def is_sharded(options: dict[str, Any]) -> bool:
    """Whether ``options`` ask for a sharded fit (any of :data:`SHARD_OPTIONS` given)."""
    return any(options.get(k) is not None for k in SHARD_OPTIONS)


def shard_bounds(offsets: np.ndarray, shards: int) -> np.ndarray:
    """String indices ``b [K + 1]`` (``b[0] = 0``, ``b[K] = n_strings``, strictly increasing):
    shard ``k`` holds strings ``b[k]..b[k+1]-1``, cut where the tokens reach ``k T / K``, every
    shard at least one string. ``offsets``: the corpus's ``[n_strings + 1]`` token offsets."""
    offsets = np.asarray(offsets, dtype=np.int64)
    n = offsets.size - 1
    if isinstance(shards, bool) or not isinstance(shards, (int, np.integer)) or shards < 1:
        raise InputError(f"--shards must be an integer >= 1, got {shards!r}")
    if shards > n:
        raise InputError(f"--shards {shards} exceeds the {n} training strings sampled")
    targets = (np.arange(1, shards, dtype=np.int64) * offsets[-1]) // shards
    cuts = np.searchsorted(offsets, targets, side="left")
    bounds = np.concatenate([[0], cuts, [n]]).astype(np.int64)
    for k in range(1, shards):  # at least one string a shard, and room for the shards after
        bounds[k] = min(max(bounds[k], bounds[k - 1] + 1), n - (shards - k))
    return bounds


# -- what runs on the workers ---------------------------------------------------------------------

def count_table(tokens: np.ndarray, z: np.ndarray, n_states: int, n_symbols: int) -> np.ndarray:
    """``C_iaj`` of Definition 2 for the path ``z`` of ``tokens``, int64 ``[N+1, A, N+1]``."""
    n1 = n_states + 1
    index = (z[:-1].astype(np.int64) * n_symbols + tokens) * n1 + z[1:]
    return np.bincount(index, minlength=n1 * n_symbols * n1).reshape(n1, n_symbols, n1)


def local_counts(table: np.ndarray, beta: float, dtype) -> tuple:
    """The kernel's chain state ``(c, ct, ci, recip)`` (``_cgs_pfa_kernel``'s module
    docstring) holding the counts ``table [N+1, A, N+1]``, ``c`` and ``ct`` in ``dtype``;
    ``recip`` as ``fill_counts`` and ``move_state`` compute it, ``1 / (C_k + N A beta)``
    rounded once to ``dtype``."""
    from bayesfa.samplers.pfa._cgs_pfa_kernel import padded_width

    n1, n_symbols = table.shape[0], table.shape[1]
    width = padded_width(n1 - 1)
    c = np.zeros((n1, n_symbols, width), dtype=dtype)
    c[:, :, :n1] = table
    ct = np.zeros((n_symbols, n1, width), dtype=dtype)
    ct[:, :, :n1] = table.transpose(1, 2, 0)
    ci = table.sum(axis=(1, 2)).astype(np.int32)
    recip = np.zeros(width, dtype=dtype)
    recip[1:n1] = 1.0 / (ci[1:] + (n1 - 1) * n_symbols * beta)
    return c, ct, ci, recip


class ShardActor:
    """One shard of one chain, held on a Dask worker as an actor (``client.submit(ShardActor,
    ..., actor=True)``): its tokens (the layout of :mod:`bayesfa.corpus`), free positions,
    state path ``z [T_k + 1]`` and Generator stay there; the driver calls :meth:`sweep` once a
    sweep with the global counts and gets the counts' change back. Actor calls go from the
    driver to the worker directly (no scheduler hop): an empty round of 2 workers took 6.4 ms
    against 42 ms for a chain of futures on the loaded 2-core machine
    (``benchmarks/dask_round_trip.py``, ``benchmarks/RESULTS.md``).

    New (``seed_seq``: its Generator first draws a uniformly random path, Algorithm 1 line 1,
    as the one-process chain does) or resumed (``z`` and the Generator's saved ``rng_state``)."""

    def __init__(self, tokens, n_states, n_symbols, seed_seq=None, z=None, rng_state=None):
        if rng_state is None:
            rng = np.random.default_rng(seed_seq)
        else:
            rng = np.random.Generator(np.random.PCG64())
            rng.bit_generator.state = json.loads(rng_state)
        self.tokens = np.ascontiguousarray(tokens, dtype=np.int32)
        self.positions = free_positions(self.tokens)
        self.z = random_path(self.tokens, n_states, rng) if z is None else np.array(z, dtype=np.int32)
        self.rng = rng
        self.n_states, self.n_symbols = int(n_states), int(n_symbols)

    def counts(self) -> np.ndarray:
        """``C_iaj`` of the shard's path, int32 ``[N+1, A, N+1]``."""
        return count_table(self.tokens, self.z, self.n_states, self.n_symbols).astype(np.int32)

    def sweep(self, table: np.ndarray, beta: float, dtype: str) -> tuple[np.ndarray, int]:
        """One sweep of the shard's positions against the global counts ``table`` (Eq. 9 with
        the other shards' transitions as of the start of the sweep); returns the change of
        the counts (local after - ``table``, int32) and how many of the shard's positions
        changed state."""
        from bayesfa.samplers.pfa import _cgs_pfa_kernel as kernel

        c, ct, ci, recip = local_counts(table, beta, np.dtype(dtype).type)
        moved = kernel.sweeps(1, self.positions, self.tokens, self.z, c, ct, ci, recip, self.rng,
                              float(beta))
        n1 = table.shape[0]
        return (c[:, :, :n1].astype(np.int64) - table).astype(np.int32), int(moved)

    def path(self) -> tuple[np.ndarray, str]:
        """The shard's path and its Generator's state (JSON): what a checkpoint keeps."""
        return self.z.copy(), json.dumps(self.rng.bit_generator.state)


# -- the driver -----------------------------------------------------------------------------------

def shard_seeds(chain_seq: np.random.SeedSequence, shards: int) -> list:
    """The shards' seed sequences of a chain: the chain's own for shard 0 (so ``K = 1`` is the
    one-process chain), ``chain_seq.spawn(K)[k]`` for shard ``k >= 1`` (built from its spawn
    key, so ``chain_seq`` is not advanced)."""
    key = tuple(chain_seq.spawn_key)
    return [chain_seq] + [np.random.SeedSequence(chain_seq.entropy, spawn_key=key + (k,))
                          for k in range(1, shards)]


class _Chain:
    """One chain as the driver sees it: its shards (Dask futures), global counts ``table``
    (int64), sweeps done, draws made and recorded arrays; ``stats`` int64 ``[D, STATS]`` as
    the one-process kernel's ``out_stats`` (column 0, the positions moved in the draw's
    sweeps; the gibbs sweep leaves the others 0), ``moving`` those moved since the last draw."""

    def __init__(self, index: int, n_draws: int, kept: np.ndarray, shape: tuple, n_test: int):
        from bayesfa.online import LogMeanAccumulator

        self.index = index
        self.shards: list = []  # the shards' actors (ShardActor proxies)
        self.futures: list = []  # their futures
        self.table: np.ndarray | None = None
        self.done = 0
        self.d = 0
        self.kept = kept
        self.counts = np.zeros((kept.size,) + shape, dtype=np.int32)
        self.log_joint = np.zeros(n_draws)
        self.used = np.zeros(n_draws, dtype=np.int32)
        self.edges = np.zeros(n_draws, dtype=np.int32)
        self.heldout = np.full(n_draws, np.nan)
        from bayesfa.samplers.pfa._cgs_pfa_kernel import STATS

        self.stats = np.zeros((n_draws, STATS), dtype=np.int64)
        self.moving = 0
        self.acc = LogMeanAccumulator(n_test)
        self.seconds_before = 0.0


def _fingerprint(setup, c: int, shards: int, bounds: np.ndarray) -> str:
    return json.dumps({"format": _FORMAT, "shards": int(shards), "bounds": digest(bounds),
                       "chain": setup.prints[c]}, sort_keys=True)


def _load(path, fingerprint: str, setup, shards: int, kept: np.ndarray) -> dict | None:
    """A chain's saved state (or None: another run's), checked; a one-line
    :class:`InputError` naming the file when it is damaged."""
    from bayesfa.samplers.pfa._cgs_pfa_kernel import STATS

    state = read_checkpoint(path, fingerprint, _FIELDS)
    if state is None:
        return None
    d, done = int(state["draws_done"]), int(state["sweeps_done"])
    rng_states = [str(s) for s in np.atleast_1d(state["rng_states"])]
    ok = (0 <= d <= setup.n_draws and state["z"].shape == (setup.tokens.size + 1,)
          and len(rng_states) == shards
          and state["counts"].shape[:1] == (int(np.searchsorted(kept, d)),)
          and all(state[k].shape == (d,) for k in ("log_joint", "used", "edges", "heldout"))
          and state["stats"].shape == (d, STATS) and bool((state["stats"] >= 0).all())
          and state["moving"].shape == () and int(state["moving"]) >= 0
          and state["pred_log_sum"].shape == (setup.n_test,)
          # a chain's sweeps: in its last draw's window, and at most the chain's (a finished
          # chain: exactly sweeps_per_chain = burn_in + n_draws period)
          and done <= setup.sweeps_per_chain
          and (done <= setup.burn_in if d == 0 else
               setup.burn_in + d * setup.period <= done < setup.burn_in + (d + 1) * setup.period))
    if not ok:
        raise corrupt_checkpoint(path, "its arrays do not match its settings")
    for s in rng_states:
        check_generator_state(path, s)
    state["rng_states"] = rng_states
    return state


def sample_sharded(corpus: Corpus, n_states: int, beta: float, iterations: int, burn_in: int,
                   period: int, chains: int, seed, shards: int, *, front, client,
                   holdout: float = 0.0, checkpoint_dir=None,
                   checkpoint_every: float = CHECKPOINT_EVERY, predict: Corpus | None = None,
                   max_draws: int | None = None, progress: bool = False,
                   on_sweep: Callable[["_Chain", Callable[[], np.ndarray]], None] | None = None):
    """CGS-PFA (Algorithm 1) with each chain's strings split into ``shards`` shards swept in
    parallel on the Dask ``client``'s workers (module docstring); the arguments and the
    result (a ``CGSResult`` of ``front``, :mod:`bayesfa.samplers.pfa.cgs_pfa`) as
    ``front.sample_cgs_pfa``'s. All chains advance together, one sweep a round, so ``C`` chains
    keep up to ``C K`` workers busy.

    ``on_sweep(chain, gather_path)`` (tests): called after every sweep of every chain, with
    the chain (its ``table``: the global counts) and a function that gathers its whole path
    from the shards."""
    n_draws = front._check_arguments(corpus, n_states, beta, iterations, burn_in, period, chains, 1)
    setup = front._setup(corpus, n_states, beta, burn_in, period, n_draws, chains, seed, holdout,
                         predict, max_draws, "gibbs", checkpoint_every)
    tokens, n_symbols = setup.tokens, setup.n_symbols
    offsets = np.concatenate([[0], np.flatnonzero(tokens == 0) + 1]).astype(np.int64)
    bounds = shard_bounds(offsets, shards)
    cuts = offsets[bounds]  # token offsets of the shards
    dtype = np.dtype(front.count_dtype(tokens.size)).name
    kept = front.kept_draw_indices(n_draws, max_draws)
    shape = (n_states + 1, n_symbols, n_states + 1)
    prints = [_fingerprint(setup, c, shards, bounds) for c in range(chains)]
    # every chain restarts its shards, a finished one too (its path is read back from them)
    book = ChainBook.open(checkpoint_dir, prints, lambda p, f: _load(p, f, setup, shards, kept),
                          lambda state: None)
    workers = sorted(client.scheduler_info()["workers"])
    held, test = setup.held, None if setup.predict is None else setup.predict.corpus()
    from bayesfa.samplers.pfa import _cgs_pfa_kernel as kernel

    t0 = time.perf_counter()
    runs = [_Chain(c, n_draws, kept, shape, setup.n_test) for c in range(chains)]
    starts = []
    resumed = 0
    for ch in runs:
        saved = book.saved[ch.index]
        seeds = shard_seeds(setup.children[ch.index], shards)
        if saved is not None:
            resumed += 1
            ch.done, ch.d = int(saved["sweeps_done"]), int(saved["draws_done"])
            n_kept = int(np.searchsorted(kept, ch.d))
            ch.counts[:n_kept] = saved["counts"]
            for k in ("log_joint", "used", "edges", "heldout", "stats"):
                getattr(ch, k)[:ch.d] = saved[k]
            ch.moving = int(saved["moving"])
            from bayesfa.online import LogMeanAccumulator

            ch.acc = LogMeanAccumulator.from_state(saved["pred_log_sum"], ch.d)
            ch.seconds_before = float(saved["seconds"])
        for k in range(shards):
            where = workers[(ch.index * shards + k) % len(workers)]
            part = tokens[cuts[k]:cuts[k + 1]]
            [tok_f] = client.scatter([part], workers=[where], hash=False)
            extra = ({"seed_seq": seeds[k]} if saved is None else
                     {"z": saved["z"][cuts[k]:cuts[k + 1] + 1], "rng_state": saved["rng_states"][k]})
            ch.shards.append(client.submit(ShardActor, tok_f, n_states, n_symbols, **extra,
                                           actor=True, workers=[where]))
        starts.append(ch)
    for ch in starts:  # the actors' proxies; the futures keep the actors alive until the end
        ch.futures, ch.shards = ch.shards, [f.result() for f in ch.shards]
    for ch, deltas in zip(starts, _results([[a.counts() for a in ch.shards] for ch in starts])):
        ch.table = np.sum(deltas, axis=0, dtype=np.int64)

    def gather_path(ch) -> tuple[np.ndarray, list[str]]:
        parts = [f.result() for f in [a.path() for a in ch.shards]]
        z = np.concatenate([p[0][:-1] for p in parts] + [np.zeros(1, dtype=np.int32)])
        return z, [p[1] for p in parts]

    def record(ch) -> None:  # draw ch.d from the global counts, as record_draw does
        d, table = ch.d, ch.table
        made = table.astype(np.int32)[None]
        ch.log_joint[d] = kernel.log_joint(table, float(beta))
        ch.used[d] = kernel.n_states_used(table.sum(axis=(1, 2)).astype(np.int32))
        ch.edges[d] = kernel.n_edges(table)
        ch.heldout[d] = front._heldout_log_pred(made, beta, held)[0]
        ch.stats[d, 0], ch.moving = ch.moving, 0
        if test is not None:
            ch.acc.add(front.plugin_log_prob(made, beta, test))
        slot = int(np.searchsorted(kept, d))
        if slot < kept.size and kept[slot] == d:
            ch.counts[slot] = made[0]
        ch.d += 1

    def save(ch, seconds) -> None:
        if book.paths[ch.index] is None:
            return
        z, rng_states = gather_path(ch)
        save_checkpoint(book.paths[ch.index], prints[ch.index], {
            "counts": ch.counts[:int(np.searchsorted(kept, ch.d))], "log_joint": ch.log_joint[:ch.d],
            "used": ch.used[:ch.d], "edges": ch.edges[:ch.d], "heldout": ch.heldout[:ch.d],
            "stats": ch.stats[:ch.d], "moving": np.int64(ch.moving), "pred_log_sum": ch.acc.log_sum, "z": z, "rng_states": np.array(rng_states),
            "seconds": ch.seconds_before + seconds, "sweeps_done": ch.done, "draws_done": ch.d})

    total = setup.sweeps_per_chain
    bar = None
    if progress:
        import sys

        from tqdm import tqdm

        bar = tqdm(total=chains * total, initial=sum(ch.done for ch in runs), unit="sweep",
                   desc=f"cgs-pfa x{shards}", leave=False, dynamic_ncols=True, file=sys.stderr)
    every = check_checkpoint_every(checkpoint_every)
    last_save = time.monotonic()
    rounds = 0
    round_seconds: list[float] = []  # each sweep of every chain (the first compiles on new workers)
    try:
        while True:
            live = [ch for ch in runs if ch.done < total]
            if not live:
                break
            t_round = time.perf_counter()
            calls = []
            for ch in live:  # the table to every shard of the chain, then their deltas back
                table = ch.table.astype(np.int32)
                calls.append([a.sweep(table, float(beta), dtype) for a in ch.shards])
            for ch, deltas in zip(live, _results(calls)):
                for delta, moved in deltas:
                    ch.table += delta
                    ch.moving += moved
                ch.done += 1
                if ch.done <= burn_in:  # the draws' statistics count their own sweeps only
                    ch.moving = 0
                if ch.done > burn_in and (ch.done - burn_in) % period == 0:
                    record(ch)
                if on_sweep is not None:
                    on_sweep(ch, lambda ch=ch: gather_path(ch)[0])
            rounds += 1
            round_seconds.append(time.perf_counter() - t_round)
            if bar is not None:
                bar.update(len(live))
            if time.monotonic() - last_save >= every:
                for ch in live:
                    save(ch, time.perf_counter() - t0)
                last_save = time.monotonic()
        seconds = time.perf_counter() - t0
        paths = []
        for ch in runs:  # the final state of every chain (a rerun then only reads it back)
            save(ch, seconds)
            paths.append(gather_path(ch)[0])
    except (RuntimeError, OSError) as err:
        if isinstance(err, OSError) or "lost" in str(err).lower():
            raise WorkerLost(f"a Dask worker holding a shard was lost ({type(err).__name__}: "
                             f"{str(err).splitlines()[0][:120]}); the same command resumes from "
                             f"the last checkpoint") from err
        raise
    finally:
        if bar is not None:
            bar.close()
    table_bytes = int(np.prod(shape)) * 4
    info = {"shards": int(shards), "shard_strings": np.diff(bounds).tolist(),
            "shard_tokens": np.diff(cuts).tolist(), "workers": len(workers),
            "chains_resumed_mid_chain": int(resumed), "rounds": int(rounds),
            "sweep_seconds": seconds / max(1, rounds),
            "round_seconds_median": float(np.median(round_seconds[1:])) if rounds > 1 else None,
            # per sweep and chain: the table to each shard and each shard's delta back (int32)
            "bytes_per_sweep": 2 * int(shards) * table_bytes}
    return _result(front, setup, runs, paths, info, holdout, max_draws, seconds)


class WorkerLost(OSError):
    """A worker holding a shard's actor died or became unreachable (an actor is not moved to
    another worker): the fit stops, and the same command resumes from the last checkpoint.
    An ``OSError``, so that the command line prints it in one line."""


def _results(calls: list[list]) -> list[list]:
    """The results of actor calls (``ActorFuture``), in the same nesting."""
    return [[f.result() for f in fs] for fs in calls]


def _result(front, setup, runs: list, paths: list, extra: dict, holdout: float, max_draws,
            seconds: float):
    """The chains' draws as the one-process front's ``CGSResult`` (same arrays and info keys,
    and the sharding's)."""
    tokens = setup.tokens
    counts = np.stack([ch.counts for ch in runs])
    chain_seconds = [float(ch.seconds_before + seconds) for ch in runs]
    info = {
        "kernel": "gibbs", "n_draws_per_chain": int(setup.n_draws),
        "n_free_positions": n_free_positions(tokens), "n_tokens": int(tokens.size),
        "count_dtype": np.dtype(front.count_dtype(tokens.size)).name,
        "holdout": float(holdout), "holdout_strings": int(setup.held_idx.size),
        "holdout_letters": 0 if setup.held is None else int(setup.held.corpus().n_letters),
        "checkpoint_every": setup.checkpoint_every, "seconds": seconds,
        "chain_seconds": chain_seconds,
        "ns_per_state_token": float(seconds * 1e9 / max(1, setup.sweeps_per_chain * setup.n_states
                                                         * tokens.size * len(runs))),
        "max_draws": None if max_draws is None else int(max_draws),
        "kept_draws_per_chain": int(counts.shape[1]), "kept_draws_rule": front.KEPT_DRAWS_RULE,
        "predict_strings": setup.n_test if setup.predict is not None else None,
        **extra,
    }
    predict_log_mean = None
    if setup.predict is not None:
        from bayesfa.online import combine_log_means

        pred = np.stack([ch.acc.log_sum for ch in runs])
        predict_log_mean = combine_log_means(pred - np.log(setup.n_draws),
                                             np.full(len(runs), setup.n_draws))
    stats = front.sampler_stats(np.stack([ch.stats for ch in runs]), setup.period,
                                info["n_free_positions"], "gibbs")
    return front.CGSResult(counts, np.stack([ch.log_joint for ch in runs]),
                           np.stack([ch.used for ch in runs]), np.stack([ch.edges for ch in runs]),
                           np.stack(paths), info,
                           np.stack([ch.heldout for ch in runs]) if setup.held is not None else None,
                           predict_log_mean, stats)


#: Options of the one-process front that a sharded fit does not run (each refused in one line
#: when set away from its default).
_NOT_SHARDED = (("kernel", ("gibbs", "auto"), "--kernel"), ("anneal", (0,), "--anneal"),
                ("split_merge", (0, 0.0), "--split-merge"), ("blocked_every", (0,), "--blocked-every"),
                ("replicas", (1,), "--replicas"), ("auto", (None, False), "--auto"),
                ("budget", (None,), "--budget"), ("schedule", (None,), "--schedule"),
                ("jobs", (1,), "--jobs"), ("interleave", (None, 1), "--interleave"))


def check_shard_options(options: dict[str, Any]) -> tuple[int, str, int | None]:
    """``(shards, scheduler, workers)`` of a sharded fit; one-line :class:`InputError` for a
    bad value or an option the sharded sampler does not run."""
    from bayesfa.cluster import check_scheduler

    shards = options.get("shards")
    if shards is None:
        raise InputError("--scheduler and --workers go with --shards K")
    if isinstance(shards, bool) or not isinstance(shards, (int, np.integer)) or shards < 1:
        raise InputError(f"--shards must be an integer >= 1, got {shards!r}")
    scheduler = options.get("scheduler") or "local"
    workers = options.get("workers")
    check_scheduler(scheduler, workers)
    for key, allowed, flag in _NOT_SHARDED:
        if options.get(key, allowed[0]) not in allowed:
            raise InputError(f"{flag} is not available with --shards (the sharded sampler runs the "
                             f"plain gibbs sweep; its chains run together on the cluster)")
    return int(shards), scheduler, workers


def fit_sharded(corpus: Corpus, options: dict[str, Any], seed, progress: bool, *, front,
                workdir=None, predict: Corpus | None = None, client=None):
    """The ``cgs-pfa`` fit with ``--shards`` (:func:`sample_sharded`) on the cluster of
    ``--scheduler``/``--workers`` (:func:`bayesfa.cluster.open_cluster`; ``local``, the
    default, starts a ``LocalCluster`` of ``min(K, 2)`` processes unless ``--workers``), or on
    ``client`` when given (tests). Returns the front's ``CGSResult``."""
    shards, scheduler, workers = check_shard_options(options)
    # the shards' strings are known before any cluster starts (the held-out slice comes first)
    kept, _ = front.holdout_split(corpus.n_strings, float(options.get("holdout", 0.0)),
                                  np.random.SeedSequence(seed))
    shard_bounds(np.zeros(kept.size + 1), shards)
    kwargs = dict(n_states=options["states"], beta=options["beta"], iterations=options["iterations"],
                  burn_in=options["burn_in"], period=options["period"], chains=options["chains"],
                  seed=seed, shards=shards, front=front, holdout=options.get("holdout", 0.0),
                  checkpoint_dir=workdir,
                  checkpoint_every=options.get("checkpoint_every", CHECKPOINT_EVERY),
                  predict=predict, max_draws=options.get("max_draws"), progress=progress)
    if client is not None:
        return sample_sharded(corpus, client=client, **kwargs)
    from bayesfa.cluster import open_cluster

    if scheduler == "local" and workers is None:
        workers = min(shards, 2)
    with open_cluster(scheduler, workers) as cluster:
        res = sample_sharded(corpus, client=cluster.client, **kwargs)
    res.info["scheduler"] = scheduler
    return res
