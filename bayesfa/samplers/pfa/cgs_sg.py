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
``determinacy`` (valid edges / valid pairs), and with ``--holdout`` ``heldout_log_pred`` (the
log predictive of the held-out strings, which the chains do not sample, under each draw's
``xi~``; label-invariant, for ``diagnose``).

Chains are resumable mid-chain (``--checkpoint-every``; the runner shared with CGS-HMM,
:func:`bayesfa.samplers.pfa.cgs_hmm.run_chain`): ``z``, the counts, the graph and its
update counter, the Generator's state and the draws so far are saved atomically, and a
rerun of the same fit ends bit-identical to an uninterrupted one.

Reference: C. Shibata and R. Yoshinaka, "A comparison of collapsed Bayesian methods for
probabilistic finite automata", Machine Learning 96, 2014, Sect. 3 (Algorithm 2, Eq. 18),
Sect. 4.3 (Table 1, Fig. 9).
"""

from __future__ import annotations

import argparse
from typing import Any, NamedTuple

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import FitResult, nonnegative_int
from bayesfa.samplers.chains import CHECKPOINT_EVERY, check_chain_arguments
from bayesfa.samplers.pfa.cgs_hmm import (ChainFront, chunked_log_prob, draw_bytes, moved_fraction,
                                         path_bytes, sample_chains, stored_bytes)


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


class _SGKind(NamedTuple):
    """How a CGS-SG chain is built, swept and recorded
    (:func:`bayesfa.samplers.pfa.cgs_hmm.run_chain`): the kernel's parameters after the
    Generator; its chain state is ``(c, ct, ci, gr, grt, v, meta)`` (:func:`new_state`), the
    graph and the graph-update counter ``meta[1]`` included, so a resumed chain updates ``G``
    at the same positions."""

    beta: float
    interval: int
    variant: int
    new_state = staticmethod(new_state)

    def kernel(self):
        from bayesfa.samplers.pfa import _cgs_sg_kernel

        return _cgs_sg_kernel

    def params(self) -> tuple:
        return float(self.beta), int(self.interval), int(self.variant)

    def init(self, kernel, tokens, z, state) -> None:
        """Counts of ``z`` and the full graph (every chain starts from it)."""
        c, ct, ci, gr, grt, v, meta = state
        kernel.fill_counts(tokens, z, c, ct, ci)
        kernel.set_graph(gr, grt, v, meta, True)

    @staticmethod
    def new_outs(n_draws: int, n_states: int, n_symbols: int) -> tuple:
        """``(counts, graph, log_joint, n_states, n_pairs, n_edges, n_graph_edges, moves)``
        (``moves`` int64: the positions moved in each draw's sweeps)."""
        shape = (n_draws, n_states + 1, n_symbols, n_states + 1)
        return (np.zeros(shape, dtype=np.int32), np.zeros(shape, dtype=np.uint8), np.zeros(n_draws),
                *(np.zeros(n_draws, dtype=np.int32) for _ in TRACE[1:]),
                np.zeros(n_draws, dtype=np.int64))

    def heldout(self, outs: tuple, held: Corpus) -> np.ndarray:
        """``sum_b log Pr(b | xi~(s))`` over the held-out strings, per draw (Eq. 6's plug-in
        ``E[xi | alpha, z, G]``, :func:`sg_xi`)."""
        return sg_log_prob(outs[0], outs[1], self.beta, held).sum(axis=1)


def sample_cgs_sg(corpus: Corpus, n_states: int, beta: float, iterations: int, burn_in: int,
                  period: int, chains: int, seed: int | None, jobs: int = 1,
                  graph_interval: int = 0, variant: int = 0, *, holdout: float = 0.0,
                  checkpoint_dir=None, checkpoint_every: float = CHECKPOINT_EVERY,
                  on_sweeps=None) -> SGResult:
    """Run CGS-SG on ``corpus`` (module docstring). ``graph_interval``: positions between
    two updates of ``G`` (0: ``N A``, the order Sect. 3 recommends). Chain ``c`` uses the
    ``c``-th child of ``np.random.SeedSequence(seed)``; the result does not depend on
    ``jobs``. ``variant`` != 0 runs a deliberately wrong kernel (validation only).

    ``holdout``, ``checkpoint_dir``, ``checkpoint_every``, ``on_sweeps``: as
    :func:`bayesfa.samplers.pfa.cgs_hmm.sample_chains` (held-out strings not sampled, each
    draw's ``heldout_log_pred`` in the trace; mid-chain checkpoints, bit-identical resume)."""
    n_draws = check_chain_arguments(corpus, n_states, beta, iterations, burn_in, period, chains, jobs)
    if isinstance(graph_interval, bool) or not isinstance(graph_interval, (int, np.integer)) \
            or graph_interval < 0:
        raise InputError(f"graph_interval must be an integer >= 0, got {graph_interval!r}")
    n_symbols = corpus.alphabet_size + 1
    interval = int(graph_interval) or n_states * n_symbols
    kind = _SGKind(float(beta), interval, int(variant))
    stacked, info = sample_chains(kind, corpus, n_states, burn_in, period, n_draws, chains, seed,
                                  jobs, holdout, checkpoint_dir, checkpoint_every, on_sweeps)
    counts, graph = stacked[0], stacked[1]
    trace = dict(zip(TRACE, stacked[2:2 + len(TRACE)]))
    trace["determinacy"] = trace["n_edges"] / np.maximum(trace["n_pairs"], 1)
    trace["moved"] = moved_fraction(stacked[2 + len(TRACE)], period, info["n_free_positions"])
    heldout, z = stacked[-3], stacked[-2]
    if heldout is not None:
        trace["heldout_log_pred"] = heldout
    info = {**info, "graph_interval": interval,
            "n_full_edges": int(new_state(n_states, n_symbols)[-1][2])}
    if variant:
        info["mutant_variant"] = int(variant)
    return SGResult(counts, graph, trace, z, info)


class _CGSSG(ChainFront):
    """The ``cgs-sg`` entry of :data:`bayesfa.methods.REGISTRY`."""

    summary = "collapsed Gibbs sampling of a sparse PFA and its graph (Shibata & Yoshinaka 2013, Alg. 2)"

    def __init__(self, variant: int = 0, name: str = "cgs-sg"):
        self.variant = variant
        self.name = name
        if variant == 0:
            self.validation = "bayesfa.validation.pfa.variants:CGS_SG"

    def add_own_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--graph-interval", type=nonnegative_int, default=0,
                            help="positions of z between two updates of the graph G; default 0 "
                                 "= N A (Sect. 3)")

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        """Stored ``C_iaj`` (int32), ``G`` (uint8) and the trace per draw
        (:func:`~bayesfa.samplers.pfa.cgs_hmm.draw_bytes`), the chain state (:func:`new_state`'s
        arrays, :func:`path_bytes`), and Eq. 6."""
        n, a = options["states"], corpus.alphabet_size + 1
        cells = (n + 1) * a * (n + 1)
        state = 10 * cells + 16 * (n + 1) + 24 + path_bytes(corpus)
        return stored_bytes(corpus, options, draw_bytes(_SGKind, n, a), state) + 2 * cells * 8

    def sample(self, corpus: Corpus, options: dict[str, Any], seed: int, jobs: int,
               **chain_options) -> FitResult:
        """:func:`sample_cgs_sg` with ``options`` (``chain_options``: :meth:`ChainFront.fit`'s)."""
        res = sample_cgs_sg(corpus, options["states"], options["beta"], options["iterations"],
                            options["burn_in"], options["period"], options["chains"], seed, jobs,
                            options.get("graph_interval", 0), self.variant, **chain_options)
        return FitResult({"counts": res.counts, "graph": res.graph}, res.trace, res.info)

    def per_sample_log_prob(self, arrays: dict[str, np.ndarray], options: dict[str, Any],
                            corpus: Corpus) -> np.ndarray:
        """``log Pr(b | xi~(s))`` ``[chain, draw, n_strings]``."""
        counts, graph = np.asarray(arrays["counts"]), np.asarray(arrays["graph"])
        lead = counts.shape[:-3]
        flat = (-1,) + counts.shape[-3:]
        out = sg_log_prob(counts.reshape(flat), graph.reshape(flat), options["beta"], corpus)
        return out.reshape(lead + (-1,))

    trim = True  # a state without edges (a zero row of xi~) is left out of the automaton

    def draw_xi(self, arrays, options, chain: int, k: int) -> np.ndarray:
        """:func:`sg_xi` of stored draw ``(chain, k)`` (what :meth:`per_sample_log_prob`
        scores), a state without edges made to stop: no string reaches it (else an
        InputError), and :meth:`automaton` leaves it out."""
        xi = sg_xi(arrays["counts"][chain, k], arrays["graph"][chain, k], options["beta"])
        empty = np.flatnonzero(xi.sum(axis=(1, 2)) == 0)
        if np.any(xi[:, :, empty] > 0):
            raise InputError("a state of the run's graph has incoming but no outgoing edges: "
                             "its plug-in is not a PFA")
        xi[empty, 0, 0] = 1.0
        return xi


METHOD = _CGSSG()
