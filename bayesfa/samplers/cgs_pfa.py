"""CGS-PFA: collapsed Gibbs sampling for fully connected PFAs (Shibata & Yoshinaka 2013, Sect. 2.3).

The front of the sampler: argument checks, one ``np.random.Generator`` per chain spawned from
``np.random.SeedSequence(seed)``, burn-in, recording, chains in parallel processes, and the
posterior predictive of Eq. 6. The sweeps themselves are the numba kernels of
:mod:`bayesfa.samplers._cgs_pfa_kernel`.

Reference: C. Shibata and R. Yoshinaka, "A comparison of collapsed Bayesian methods for
probabilistic finite automata", Machine Learning (published online 3 October 2013),
Sect. 2.1-2.3: Eq. 2 (prior), 4 (collapsed joint), 6 (predictive), 9 (conditional), Algorithm 1.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import multiprocessing
import sys
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

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


class CGSResult(NamedTuple):
    """Samples of CGS-PFA.

    counts : int32 ``[chain, draw, N+1, A, N+1]``, ``C_iaj`` of each recorded ``z`` (the
        plug-in ``xi~`` of Sect. 2.3 follows from them and ``beta``, see :func:`plugin_xi`).
    log_joint : float64 ``[chain, draw]``, ``log Pr(alpha, z)`` of Eq. 4.
    n_states : int32 ``[chain, draw]``, states ``i >= 1`` with ``C_i > 0``.
    n_edges : int32 ``[chain, draw]``, transitions with ``C_iaj > 0``.
    z : int32 ``[chain, T + 1]``, the last state path of each chain.
    info : timings and sizes.
    """

    counts: np.ndarray
    log_joint: np.ndarray
    n_states: np.ndarray
    n_edges: np.ndarray
    z: np.ndarray
    info: dict[str, Any]


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


def _run_chain(tokens, n_symbols, n_states, beta, burn_in, period, n_draws, seed_seq, on_sweeps=None):
    """One chain from its ``SeedSequence``: random init, burn-in, ``n_draws`` recorded draws."""
    from bayesfa.samplers import _cgs_pfa_kernel as kernel

    rng = np.random.default_rng(seed_seq)
    positions = _free_positions(tokens)
    z = np.zeros(tokens.size + 1, dtype=np.int32)
    z[positions] = rng.integers(1, n_states + 1, size=positions.size, dtype=np.int32)
    c, ct, ci, recip = new_counts(n_states, n_symbols)
    kernel.fill_counts(tokens, z, c, ct, ci, recip, float(beta))
    state = (positions, tokens, z, c, ct, ci, recip, rng, float(beta))

    counts = np.zeros((n_draws, n_states + 1, n_symbols, n_states + 1), dtype=np.int32)
    log_joint = np.zeros(n_draws)
    used = np.zeros(n_draws, dtype=np.int32)
    edges = np.zeros(n_draws, dtype=np.int32)
    block = _block(n_states, positions.size)
    t0 = time.perf_counter()
    done = 0
    while done < burn_in:
        step = min(block, burn_in - done)
        kernel.sweeps(step, *state)
        done += step
        if on_sweeps is not None:
            on_sweeps(step)
    draws_per_block = max(1, block // period)
    d = 0
    while d < n_draws:
        e = min(n_draws, d + draws_per_block)
        kernel.sample_draws(period, *state, counts[d:e], log_joint[d:e], used[d:e], edges[d:e])
        if on_sweeps is not None:
            on_sweeps((e - d) * period)
        d = e
    seconds = time.perf_counter() - t0
    return counts, log_joint, used, edges, z, seconds


def _run_chain_job(args):
    return _run_chain(*args)


def _mp_context():
    """``fork`` while this process has no other thread (fast, and scripts need no
    ``if __name__ == "__main__"`` guard); else ``forkserver`` (JAX, for one, starts threads)."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1 and "jax" not in sys.modules:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _chain_fingerprint(tokens, n_symbols, n_states, beta, burn_in, period, n_draws,
                       seed_seq: np.random.SeedSequence) -> str:
    """What determines a chain's output, as a string (the data by its SHA-256)."""
    digest = hashlib.sha256(np.ascontiguousarray(tokens).tobytes()).hexdigest()
    return json.dumps({"format": "bayesfa-cgs-pfa-chain/1", "tokens": digest, "n_symbols": n_symbols,
                       "n_states": n_states, "beta": float(beta), "burn_in": burn_in, "period": period,
                       "n_draws": n_draws, "entropy": str(seed_seq.entropy),
                       "spawn_key": list(seed_seq.spawn_key)}, sort_keys=True)


_CHAIN_FIELDS = ("counts", "log_joint", "used", "edges", "z", "seconds")


def _load_chain(path: Path, fingerprint: str):
    """A finished chain saved by :func:`_save_chain` with the same fingerprint, else None."""
    try:
        with np.load(path) as npz:
            if str(npz["fingerprint"]) != fingerprint:
                return None
            return tuple(npz[k] if k != "seconds" else float(npz[k]) for k in _CHAIN_FIELDS)
    except (OSError, KeyError, ValueError):
        return None


def _save_chain(path: Path, fingerprint: str, out) -> None:
    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez(f, fingerprint=np.array(fingerprint), **dict(zip(_CHAIN_FIELDS, out)))

    atomic_write(path, write)


def sample_cgs_pfa(corpus: Corpus, n_states: int, beta: float, iterations: int, burn_in: int,
                   period: int, chains: int, seed: int | None, jobs: int = 1,
                   progress: bool = False, checkpoint_dir: str | os.PathLike | None = None) -> CGSResult:
    """Run CGS-PFA (Algorithm 1) on ``corpus`` with ``N = n_states`` states besides state 0.

    Each chain starts from a uniformly random ``z``, runs ``burn_in`` sweeps, then records the
    counts every ``period`` sweeps: ``(iterations - burn_in) // period`` draws per chain
    (sweeps past the last recorded one are not run). Chain ``c`` uses the ``c``-th child of
    ``np.random.SeedSequence(seed)``, so the result does not depend on ``jobs``.

    With ``jobs > 1`` the chains run in worker processes, forked when this process has no other
    thread and started by a fork server otherwise; in the latter case a script that calls this
    needs the usual ``if __name__ == "__main__":`` guard.

    With ``checkpoint_dir``, every finished chain is saved there at once (atomically), and a
    later call with the same data, settings and seed reuses the saved chains instead of
    running them again: an interrupted run loses no finished chain.
    """
    n_draws = _check_arguments(corpus, n_states, beta, iterations, burn_in, period, chains, jobs)
    tokens = corpus.tokens
    n_symbols = corpus.alphabet_size + 1
    children = np.random.SeedSequence(seed).spawn(chains)
    jobs = min(jobs, chains)
    context = _mp_context() if jobs > 1 else None  # before the bar starts its monitor thread
    bar = None
    if progress:
        from tqdm import tqdm

        # with jobs > 1 the bar moves when a chain finishes
        bar = tqdm(total=chains * (burn_in + n_draws * period), unit="sweep", desc="cgs-pfa",
                   leave=False, dynamic_ncols=True, file=sys.stderr)
    prints = [_chain_fingerprint(tokens, n_symbols, n_states, beta, burn_in, period, n_draws, s)
              for s in children]
    paths = [None] * chains
    outs: list = [None] * chains
    if checkpoint_dir is not None:
        Path(checkpoint_dir).mkdir(parents=True, exist_ok=True)
        paths = [Path(checkpoint_dir) / f"chain-{c:04d}.npz" for c in range(chains)]
        outs = [_load_chain(p, f) if p.exists() else None for p, f in zip(paths, prints)]
    todo = [c for c in range(chains) if outs[c] is None]
    sweeps_per_chain = burn_in + n_draws * period
    if bar is not None:
        bar.update((chains - len(todo)) * sweeps_per_chain)

    def finish(c, out):
        outs[c] = out
        if paths[c] is not None:
            _save_chain(paths[c], prints[c], out)

    t0 = time.perf_counter()
    try:
        if jobs == 1 or len(todo) <= 1:
            on_sweeps = None if bar is None else bar.update
            for c in todo:
                finish(c, _run_chain(tokens, n_symbols, n_states, beta, burn_in, period, n_draws,
                                     children[c], on_sweeps))
        else:
            with concurrent.futures.ProcessPoolExecutor(max_workers=min(jobs, len(todo)),
                                                        mp_context=context) as pool:
                futures = {pool.submit(_run_chain_job, (tokens, n_symbols, n_states, beta, burn_in,
                                                        period, n_draws, children[c])): c for c in todo}
                for f in concurrent.futures.as_completed(futures):
                    finish(futures[f], f.result())
                    if bar is not None:
                        bar.update(sweeps_per_chain)
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - t0
    counts, log_joint, used, edges, z, chain_seconds = (np.stack(x) for x in zip(*outs))
    sweeps_run = burn_in + n_draws * period
    info = {
        "n_draws_per_chain": int(n_draws),
        "n_free_positions": int(_free_positions(tokens).size),
        "n_tokens": int(tokens.size),
        "jobs": int(jobs),
        "chains_resumed": int(chains - len(todo)),
        "start_method": None if context is None else context.get_start_method(),
        "seconds": seconds,
        "chain_seconds": [float(s) for s in chain_seconds],
        "ns_per_state_token": float(np.mean(chain_seconds) * 1e9
                                    / max(1, sweeps_run * n_states * tokens.size)),
    }
    return CGSResult(counts, log_joint, used, edges, z, info)


class _CGSPFA:
    """The ``cgs-pfa`` entry of :data:`bayesfa.methods.REGISTRY`."""

    name = "cgs-pfa"
    resumable = True  # fit(..., workdir=) keeps finished chains there
    summary = "collapsed Gibbs sampling of a fully connected PFA (Shibata & Yoshinaka 2013, Alg. 1)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_mcmc_arguments(parser, states=10, beta=0.1, iterations=1000, burn_in=500, period=10)

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool,
            workdir: str | os.PathLike | None = None) -> FitResult:
        res = sample_cgs_pfa(corpus, n_states=options["states"], beta=options["beta"],
                             iterations=options["iterations"], burn_in=options["burn_in"],
                             period=options["period"], chains=options["chains"], seed=seed,
                             jobs=options.get("jobs", 1), progress=progress, checkpoint_dir=workdir)
        trace = {"log_joint": res.log_joint, "n_states": res.n_states, "n_edges": res.n_edges}
        return FitResult({"counts": res.counts}, trace, res.info)

    def predict_log_prob(self, arrays: dict[str, np.ndarray], options: dict[str, Any],
                         corpus: Corpus) -> np.ndarray:
        return predict_log_prob(arrays["counts"], options["beta"], corpus)


METHOD = _CGSPFA()
