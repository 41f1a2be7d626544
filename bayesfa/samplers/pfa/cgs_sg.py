"""CGS-SG: collapsed Gibbs sampling of sparse PFAs with their graph (Shibata & Yoshinaka 2013, Sect. 3).

The front: argument checks, one ``np.random.Generator`` per chain from
``np.random.SeedSequence(seed).spawn(chains)``, burn-in, recording, and Eq. 6 with
``xi~ = E[xi | alpha, z, G]``: ``(C_iaj + beta) / (C_i + v_i beta)`` on the edges of ``G``
and 0 elsewhere. The sweeps (Algorithm 2 with the update of ``G`` inside the loop over
``z_t``, every ``--graph-interval`` positions, by default ``N A``) are the numba kernels of
:mod:`bayesfa.samplers.pfa._cgs_sg_kernel`. ``Pr(v)`` is uniform (Sect. 4.3). Every chain starts
from the full graph and a uniformly random ``z``.

Trace (Table 1's rows, per draw): ``log_joint`` (Eq. 18), ``n_states`` (states ``i >= 1``
with ``C_i > 0``; Table 1 also counts state 0), ``n_pairs`` (valid pairs ``C_ia > 0``),
``n_edges`` (valid edges ``C_iaj > 0``, the minimal NFA), ``n_graph_edges`` (``|G|``) and
``determinacy`` (valid edges / valid pairs).

Reference: C. Shibata and R. Yoshinaka, "A comparison of collapsed Bayesian methods for
probabilistic finite automata", Machine Learning 96, 2014, Sect. 3 (Algorithm 2, Eq. 18),
Sect. 4.3 (Table 1, Fig. 9).
"""

from __future__ import annotations

import argparse
import time
from typing import Any, NamedTuple

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import FitResult, add_mcmc_arguments, nonnegative_int
from bayesfa.samplers.pfa.cgs_hmm import DrawMixture, chunked_log_prob, random_path, stored_bytes
from bayesfa.samplers.chains import check_chain_arguments, free_positions, map_chains


class SGResult(NamedTuple):
    """Samples of CGS-SG: counts int32 and graph uint8 ``[chain, draw, N+1, A, N+1]``
    (``C_iaj`` and ``G``), the trace arrays ``[chain, draw]`` (module docstring), z int32
    ``[chain, T+1]`` (last path), info."""

    counts: np.ndarray
    graph: np.ndarray
    trace: dict[str, np.ndarray]
    z: np.ndarray
    info: dict[str, Any]


def sg_xi(counts: np.ndarray, graph: np.ndarray, beta: float) -> np.ndarray:
    """``xi~ = E[xi | alpha, z, G]`` ``[..., N+1, A, N+1]``: ``(C_iaj + beta) / (C_i + v_i beta)``
    on the edges of ``G``, 0 elsewhere (a state without edges has a zero row)."""
    alpha = (np.asarray(counts, dtype=np.float64) + beta) * np.asarray(graph, dtype=bool)
    total = alpha.sum(axis=(-2, -1), keepdims=True)
    return np.divide(alpha, total, out=np.zeros_like(alpha), where=total > 0)


def sg_log_prob(counts: np.ndarray, graph: np.ndarray, beta: float, corpus: Corpus) -> np.ndarray:
    """``log Pr(b | xi~(s))`` ``[S, n_strings]`` for ``counts, graph`` ``[S, N+1, A, N+1]``."""
    counts, graph = np.asarray(counts), np.asarray(graph)
    return chunked_log_prob(lambda sl: sg_xi(counts[sl], graph[sl], beta), counts.shape[0],
                            8 * int(np.prod(counts.shape[1:])), corpus, counts.shape[-2] - 1)


def new_state(n_states: int, n_symbols: int):
    """Zeroed ``(c, ct, ci, gr, grt, v, meta)`` of the kernel's chain state, ``meta[2] = E``."""
    from bayesfa.samplers.pfa._cgs_sg_kernel import n_full_edges

    q = n_states + 1
    meta = np.zeros(3, dtype=np.int64)
    meta[2] = n_full_edges(n_states, n_symbols)
    return (np.zeros((q, n_symbols, q), dtype=np.int32), np.zeros((n_symbols, q, q), dtype=np.int32),
            np.zeros(q, dtype=np.int64), np.zeros((q, n_symbols, q), dtype=np.uint8),
            np.zeros((n_symbols, q, q), dtype=np.uint8), np.zeros(q, dtype=np.int64), meta)


TRACE = ("log_joint", "n_states", "n_pairs", "n_edges", "n_graph_edges")


def _run_chain(tokens, n_symbols, n_states, beta, burn_in, period, n_draws, interval, seed_seq,
               variant):
    from bayesfa.samplers.pfa import _cgs_sg_kernel as kernel

    rng = np.random.default_rng(seed_seq)
    positions = free_positions(tokens)
    z = random_path(tokens, n_states, rng)
    state = new_state(n_states, n_symbols)
    c, ct, ci, gr, grt, v, meta = state
    kernel.fill_counts(tokens, z, c, ct, ci)
    kernel.set_graph(gr, grt, v, meta, True)
    t0 = time.perf_counter()
    args = (positions, tokens, z, *state, rng, float(beta), int(interval), int(variant))
    kernel.sweeps(burn_in, *args)
    shape = (n_draws, n_states + 1, n_symbols, n_states + 1)
    counts = np.zeros(shape, dtype=np.int32)
    graph = np.zeros(shape, dtype=np.uint8)
    lj = np.zeros(n_draws)
    ints = [np.zeros(n_draws, dtype=np.int32) for _ in TRACE[1:]]
    kernel.sample_draws(period, *args, counts, graph, lj, *ints)
    return counts, graph, lj, *ints, z, time.perf_counter() - t0


def sample_cgs_sg(corpus: Corpus, n_states: int, beta: float, iterations: int, burn_in: int,
                  period: int, chains: int, seed: int | None, jobs: int = 1,
                  graph_interval: int = 0, variant: int = 0) -> SGResult:
    """Run CGS-SG on ``corpus`` (module docstring). ``graph_interval``: positions between
    two updates of ``G`` (0: ``N A``, the order Sect. 3 recommends). Chain ``c`` uses the
    ``c``-th child of ``np.random.SeedSequence(seed)``; the result does not depend on
    ``jobs``. ``variant`` != 0 runs a deliberately wrong kernel (validation only)."""
    n_draws = check_chain_arguments(corpus, n_states, beta, iterations, burn_in, period, chains, jobs)
    if isinstance(graph_interval, bool) or not isinstance(graph_interval, (int, np.integer)) \
            or graph_interval < 0:
        raise InputError(f"graph_interval must be an integer >= 0, got {graph_interval!r}")
    tokens = corpus.tokens
    n_symbols = corpus.alphabet_size + 1
    interval = int(graph_interval) or n_states * n_symbols
    children = np.random.SeedSequence(seed).spawn(chains)
    t0 = time.perf_counter()
    outs = map_chains(_run_chain, [(tokens, n_symbols, n_states, beta, burn_in, period, n_draws,
                                    interval, s, variant) for s in children], jobs)
    stacked = [np.stack(x) for x in zip(*outs)]
    counts, graph = stacked[0], stacked[1]
    trace = dict(zip(TRACE, stacked[2:2 + len(TRACE)]))
    trace["determinacy"] = trace["n_edges"] / np.maximum(trace["n_pairs"], 1)
    z, secs = stacked[-2], stacked[-1]
    sweeps = burn_in + n_draws * period
    n_free = int(free_positions(tokens).size)
    info = {"n_draws_per_chain": int(n_draws), "n_free_positions": n_free,
            "n_tokens": int(tokens.size), "graph_interval": interval,
            "n_full_edges": int(new_state(n_states, n_symbols)[-1][2]),
            "jobs": int(min(jobs, chains)), "seconds": time.perf_counter() - t0,
            "chain_seconds": [float(s) for s in secs],
            "ns_per_state_token": float(np.mean(secs) * 1e9 / max(1, sweeps * n_states * n_free))}
    if variant:
        info["mutant_variant"] = int(variant)
    return SGResult(counts, graph, trace, z, info)


class _CGSSG(DrawMixture):
    """The ``cgs-sg`` entry of :data:`bayesfa.methods.REGISTRY`."""

    summary = "collapsed Gibbs sampling of a sparse PFA and its graph (Shibata & Yoshinaka 2013, Alg. 2)"

    def __init__(self, variant: int = 0, name: str = "cgs-sg"):
        self.variant = variant
        self.name = name
        if variant == 0:
            self.validation = "bayesfa.validation.pfa.variants:CGS_SG"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_mcmc_arguments(parser, states=10, beta=0.1, iterations=1000, burn_in=500, period=10)
        parser.add_argument("--graph-interval", type=nonnegative_int, default=0,
                            help="positions of z between two updates of the graph G; default 0 "
                                 "= N A (Sect. 3)")

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        """Stored ``C_iaj`` (int32) and ``G`` (uint8) per draw, the chain state, and Eq. 6."""
        n, a = options["states"], corpus.alphabet_size + 1
        cells = (n + 1) * a * (n + 1)
        state = 10 * cells + 24 * (corpus.n_tokens + 1)
        return stored_bytes(corpus, options, 5 * cells + 16, state) + 2 * cells * 8

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool) -> FitResult:
        res = sample_cgs_sg(corpus, options["states"], options["beta"], options["iterations"],
                            options["burn_in"], options["period"], options["chains"], seed,
                            options.get("jobs", 1), options.get("graph_interval", 0), self.variant)
        return FitResult({"counts": res.counts, "graph": res.graph}, res.trace, res.info)

    def per_sample_log_prob(self, arrays: dict[str, np.ndarray], options: dict[str, Any],
                            corpus: Corpus) -> np.ndarray:
        """``log Pr(b | xi~(s))`` ``[chain, draw, n_strings]``."""
        counts, graph = np.asarray(arrays["counts"]), np.asarray(arrays["graph"])
        lead = counts.shape[:-3]
        flat = (-1,) + counts.shape[-3:]
        out = sg_log_prob(counts.reshape(flat), graph.reshape(flat), options["beta"], corpus)
        return out.reshape(lead + (-1,))


METHOD = _CGSSG()
