"""CGS-PFA: collapsed Gibbs sampling for fully connected PFAs (Shibata & Yoshinaka 2013, Sect. 2.3).

The front of the sampler: argument checks, one ``np.random.Generator`` per chain spawned from
``np.random.SeedSequence(seed)``, burn-in, recording, chains in parallel processes, mid-chain
checkpoints (``z``, the Generator's state and the draws so far, saved atomically; a resumed
chain ends bit-identical), the held-out slice whose log predictive each draw records
(``heldout_log_pred``, label-invariant, for the diagnostics), and the posterior predictive of
Eq. 6. The sweeps themselves are the numba kernels of :mod:`bayesfa.samplers.pfa._cgs_pfa_kernel`.

Reference: C. Shibata and R. Yoshinaka, "A comparison of collapsed Bayesian methods for
probabilistic finite automata", Machine Learning (published online 3 October 2013),
Sect. 2.1-2.3: Eq. 2 (prior), 4 (collapsed joint), 6 (predictive), 9 (conditional), Algorithm 1.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

from bayesfa.automata import PFA
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.forward import forward_log_prob, log_mean_exp_by_strings, xi_to_pfa
from bayesfa.methods import (FitResult, add_mcmc_arguments, draws_per_chain, fraction,
                             inverse_temperature, nonnegative_int, open_fraction, positive_int)
from bayesfa.samplers.pfa._replica_kernel import MIN_B as REPLICA_MIN_B, SWAP_EVERY
from bayesfa.samplers.pfa._split_merge_kernel import SCANS as SPLIT_MERGE_SCANS
from bayesfa.samplers.plugin import DrawAutomata
from bayesfa.samplers.chains import (CHECKPOINT_EVERY, ChainBook, ChainLoop,
                                     add_checkpoint_argument, block_sweeps, check_chain_arguments,
                                     check_checkpoint_every, check_generator_state,
                                     corrupt_checkpoint, digest as _digest, free_positions,
                                     generator_state, mp_context, n_free_positions, random_path,
                                     read_checkpoint, save_checkpoint)

# Sweeps are run in blocks of about this many (N x T) units between progress updates
# (about 0.05 s at 2 ns per unit); the block size never changes the result.
_BLOCK_UNITS = 25_000_000
#: float32 counts are exact below this many tokens (see _cgs_pfa_kernel); a larger corpus
#: gets float64 counts (:func:`count_dtype`), which the plain gibbs sweep runs
FLOAT32_EXACT_TOKENS = 1 << 24


def count_dtype(n_tokens: int) -> type:
    """The type of the chain's counts ``c``, ``ct``, ``recip`` for ``n_tokens`` tokens:
    float32 (exact, and faster) below :data:`FLOAT32_EXACT_TOKENS`, float64 (exact up to
    2**53) above; ``ci`` stays int32 (the token limit of :func:`_check_arguments`)."""
    return np.float32 if n_tokens < FLOAT32_EXACT_TOKENS else np.float64
_XI_CHUNK_BYTES = 1 << 26  # plug-in xi~ built for at most 64 MiB of samples at a time
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
    predict_log_mean : float64 ``[n_test]``, Eq. 6 for the ``predict`` strings over every
        draw of every chain, folded in as each draw was made; None without ``predict``.
    sample_stats : the sampler's own statistics, float64 ``[chain, draw]`` by name
        (:func:`sampler_stats`: ``moved`` and, for some kernels and moves, an ``accept_*``).

    With ``max_draws = K`` the ``draw`` axis of ``counts`` holds only the K draws
    :func:`kept_draw_indices` names; the other arrays keep every draw.
    """

    counts: np.ndarray
    log_joint: np.ndarray
    n_states: np.ndarray
    n_edges: np.ndarray
    z: np.ndarray
    info: dict[str, Any]
    heldout_log_pred: np.ndarray | None = None
    predict_log_mean: np.ndarray | None = None
    sample_stats: dict | None = None


#: With a cap on kept draws, draws are made this many at a time into a scratch buffer.
_SCRATCH_DRAWS = 4
#: How :func:`kept_draw_indices` thins (recorded in the run's info).
KEPT_DRAWS_RULE = "(i + 1) * n_draws // max_draws - 1 for i in range(max_draws)"


def kept_draw_indices(n_draws: int, max_draws: int | None) -> np.ndarray:
    """Indices (0-based, among a chain's ``n_draws`` recorded draws) of the draws whose counts
    are kept under the cap ``max_draws``: ``(i + 1) * n_draws // max_draws - 1`` for ``i <
    max_draws``, evenly spaced and ending at the last draw; every draw when ``max_draws`` is
    None or at least ``n_draws``. int64, strictly increasing."""
    if max_draws is None or max_draws >= n_draws:
        return np.arange(n_draws, dtype=np.int64)
    return (np.arange(1, max_draws + 1, dtype=np.int64) * n_draws) // max_draws - 1


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
    # over blocks of strings when the [S, n_strings] table would exceed the forward budget
    return log_mean_exp_by_strings(lambda part: plugin_log_prob(flat, beta, part), flat.shape[0], corpus)


def _check_arguments(corpus, n_states, beta, iterations, burn_in, period, chains, jobs) -> int:
    """:func:`bayesfa.samplers.chains.check_chain_arguments` (below 2**31 tokens: ``ci`` and
    ``z`` are int32)."""
    return check_chain_arguments(corpus, n_states, beta, iterations, burn_in, period, chains, jobs)


def _wide_counts_options(n_tokens: int, kernel: str, interleave, anneal, split_merge,
                         blocked_every, replicas=1) -> tuple[str, int | None]:
    """``(kernel, interleave)`` for a corpus of ``n_tokens``: unchanged below
    :data:`FLOAT32_EXACT_TOKENS`; above, the float64 counts run in the plain gibbs sweep one
    chain at a time (``auto`` resolves to that), and an option that needs float32 counts is a
    one-line error."""
    if count_dtype(n_tokens) is np.float32:
        return kernel, interleave
    kernel = "gibbs" if kernel == "auto" else kernel
    interleave = 1 if interleave is None else interleave
    other = [name for name, on in (("--kernel " + kernel, kernel != "gibbs"),
                                   ("--interleave", interleave != 1), ("--anneal", bool(anneal)),
                                   ("--split-merge", bool(split_merge)),
                                   ("--blocked-every", bool(blocked_every)),
                                   ("--replicas", replicas != 1)) if on]
    if other:
        raise InputError(f"the training corpus has {n_tokens} tokens: from {FLOAT32_EXACT_TOKENS} "
                         f"tokens on the counts are float64, which only the plain gibbs sweep runs "
                         f"(not {', '.join(other)})")
    return kernel, interleave


#: The sweep kernels (``--kernel``): ``gibbs``, Algorithm 1's O(N)-per-token Gibbs sweep
#: (:mod:`bayesfa.samplers.pfa._cgs_pfa_kernel`); ``alias-mh``, Metropolis-Hastings within Gibbs
#: with O(1) alias-table proposals (:mod:`bayesfa.samplers.pfa._cgs_pfa_alias_kernel`);
#: ``bucket-mh``, the same with table-free proposals from token buckets
#: (:mod:`bayesfa.samplers.pfa._cgs_pfa_bucket_kernel`). All leave the posterior of Eq. 4
#: invariant and run on the same chain state.
KERNELS = ("gibbs", "alias-mh", "bucket-mh")
#: ``--kernel auto`` runs ``alias-mh`` from this many states on, ``gibbs`` below; None: always
#: ``gibbs``. Measured (benchmarks/RESULTS.md, "CGS-PFA alias-MH kernel (issue 12)"): at every
#: N tried (10-400) the Gibbs kernel reached a given PAutomaC score sooner, and so it did
#: against ``bucket-mh`` ("Table-free proposals", N = 30 and 90), so there is no crossover to
#: set yet.
ALIAS_MH_MIN_STATES: int | None = None


def choose_kernel(kernel: str, n_states: int) -> str:
    """The kernel ``--kernel`` names (:data:`KERNELS`), or for ``auto`` the faster of ``gibbs``
    and ``alias-mh`` at ``n_states`` (:data:`ALIAS_MH_MIN_STATES`)."""
    if kernel == "auto":
        threshold = ALIAS_MH_MIN_STATES
        return "alias-mh" if threshold is not None and n_states >= threshold else "gibbs"
    if kernel not in KERNELS:
        raise InputError(f"kernel must be one of {', '.join(KERNELS)} or auto, got {kernel!r}")
    return kernel


def kernel_module(kernel: str):
    """The numba module of ``kernel`` (a name of :data:`KERNELS`): ``fill_counts``, ``sweeps``
    and ``sample_draws`` with the same signatures and chain state."""
    if kernel == "alias-mh":
        from bayesfa.samplers.pfa import _cgs_pfa_alias_kernel as module
    elif kernel == "bucket-mh":
        from bayesfa.samplers.pfa import _cgs_pfa_bucket_kernel as module
    else:
        from bayesfa.samplers.pfa import _cgs_pfa_kernel as module
    return module


def new_counts(n_states: int, n_symbols: int, dtype: type = np.float32):
    """Zeroed ``(c, ct, ci, recip)`` of the kernel's chain state (see ``_cgs_pfa_kernel``),
    the counts in ``dtype`` (:func:`count_dtype`)."""
    from bayesfa.samplers.pfa._cgs_pfa_kernel import padded_width

    width = padded_width(n_states)
    return (np.zeros((n_states + 1, n_symbols, width), dtype=dtype),
            np.zeros((n_symbols, n_states + 1, width), dtype=dtype),
            np.zeros(n_states + 1, dtype=np.int32),
            np.zeros(width, dtype=dtype))


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


def seed_chains(corpus: Corpus, seed, chains: int, holdout: float):
    """The chains' seeds and strings, ``(children, corpus, held, held_idx)``: ``children`` is
    ``np.random.SeedSequence(seed).spawn(chains)``; ``held_idx`` the held-out slice of
    :func:`holdout_split` (from that root), ``held`` its strings (a :class:`_Held`, None when
    empty) and ``corpus`` the strings the chains sample (the others)."""
    root = np.random.SeedSequence(seed)
    children = root.spawn(chains)
    kept, held_idx = holdout_split(corpus.n_strings, float(holdout), root)
    held = None
    if held_idx.size:
        part = corpus.subset(held_idx)
        held = _Held(part.tokens, part.offsets, part.alphabet_size)
        corpus = corpus.subset(kept)
    return children, corpus, held, held_idx


def _heldout_log_pred(counts: np.ndarray, beta: float, held: _Held | None) -> np.ndarray:
    """``sum_b log Pr(b | xi~(s))`` over the held-out strings ``b``, per draw ``s`` of
    ``counts [D, N+1, A, N+1]`` (the plug-in of Sect. 2.3); NaN when there is no slice.
    Label-invariant: a permutation of the states leaves it unchanged, unlike ``z``."""
    if held is None:
        return np.full(counts.shape[0], np.nan)
    return plugin_log_prob(counts, beta, held.corpus()).sum(axis=1)


#: ``--anneal-start`` default: the inverse temperature of the first annealed sweep.
ANNEAL_START = 0.1


def anneal_b(sweep: int, anneal: int, start: float = ANNEAL_START) -> float:
    """Inverse temperature of sweep ``sweep`` (0-based) of a chain annealed over its first
    ``anneal`` sweeps (``--anneal``): ``start ** ((anneal - sweep) / anneal)``, rising
    geometrically from ``start`` at sweep 0 to ``start ** (1 / anneal)`` at sweep
    ``anneal - 1``; exactly 1.0 from sweep ``anneal`` on (and always, for ``anneal == 0``)."""
    if sweep >= anneal:
        return 1.0
    return float(start ** ((anneal - sweep) / anneal))


def check_anneal(anneal, anneal_start, burn_in, kernel: str) -> None:
    """One-line :class:`InputError` unless ``anneal`` (``--anneal``) is an integer in
    ``[0, burn_in]`` and ``anneal_start`` (``--anneal-start``) in (0, 1]; annealing > 0 runs on
    the ``gibbs`` kernel (the others have no tempered sweep). That it runs one chain at a time
    (no ``--interleave``) is checked where the interleave group is known."""
    if isinstance(anneal, bool) or not isinstance(anneal, (int, np.integer)) or anneal < 0:
        raise InputError(f"--anneal must be an integer >= 0, got {anneal!r}")
    if (isinstance(anneal_start, bool) or not isinstance(anneal_start, (int, float, np.floating))
            or not 0.0 < anneal_start <= 1.0):
        raise InputError(f"--anneal-start must be a number in (0, 1], got {anneal_start!r}")
    if anneal > burn_in:
        raise InputError(f"--anneal {anneal} exceeds --burn-in {burn_in}: every recorded draw must "
                         f"come from the untempered chain")
    if anneal and kernel != "gibbs":
        raise InputError(f"--anneal needs --kernel gibbs (the {kernel} kernel has no tempered sweep)")


def check_split_merge(split_merge, scans, kernel: str) -> None:
    """One-line :class:`InputError` unless ``split_merge`` (``--split-merge``) is a finite
    number >= 0 and ``scans`` (``--split-merge-scans``) an integer >= 0; split-merge moves run
    with the ``gibbs`` kernel only."""
    if (isinstance(split_merge, bool) or not isinstance(split_merge, (int, float, np.integer, np.floating))
            or not 0 <= split_merge < math.inf):
        raise InputError(f"--split-merge must be a number >= 0, got {split_merge!r}")
    if isinstance(scans, bool) or not isinstance(scans, (int, np.integer)) or scans < 0:
        raise InputError(f"--split-merge-scans must be an integer >= 0, got {scans!r}")
    if split_merge and kernel != "gibbs":
        raise InputError(f"--split-merge needs --kernel gibbs (not {kernel})")


def check_blocked(blocked_every, kernel: str, anneal, split_merge) -> None:
    """One-line :class:`InputError` unless ``blocked_every`` (``--blocked-every``) is an integer
    >= 0; blocked moves run with the ``gibbs`` kernel only, and neither with ``--anneal`` (a
    blocked move is a Gibbs step of the untempered joint) nor with ``--split-merge``."""
    if (isinstance(blocked_every, bool) or not isinstance(blocked_every, (int, np.integer))
            or blocked_every < 0):
        raise InputError(f"--blocked-every must be an integer >= 0, got {blocked_every!r}")
    if blocked_every and kernel != "gibbs":
        raise InputError(f"--blocked-every needs --kernel gibbs (not {kernel})")
    if blocked_every and anneal:
        raise InputError("--blocked-every is not available with --anneal")
    if blocked_every and split_merge:
        raise InputError("--blocked-every is not available with --split-merge")


def check_replicas(replicas, swap_every, min_b, kernel: str, anneal, split_merge,
                   threads=1) -> None:
    """One-line :class:`InputError` unless ``replicas`` (``--replicas``), ``swap_every``
    (``--swap-every``) and ``threads`` (``--replica-threads``) are integers >= 1 and ``min_b``
    (``--replica-min-b``) a number in
    (0, 1); replica exchange runs with the plain ``gibbs`` kernel only, with neither
    ``--anneal`` nor ``--split-merge`` (``--blocked-every`` moves the b = 1 replica:
    :mod:`bayesfa.samplers.pfa._replica_kernel`)."""
    for name, value in (("--replicas", replicas), ("--swap-every", swap_every),
                        ("--replica-threads", threads)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError(f"{name} must be an integer >= 1, got {value!r}")
    if (isinstance(min_b, bool) or not isinstance(min_b, (int, float, np.integer, np.floating))
            or not 0.0 < min_b < 1.0):
        raise InputError(f"--replica-min-b must be a number in (0, 1), got {min_b!r}")
    if replicas == 1:
        return
    if kernel != "gibbs":
        raise InputError(f"--replicas needs --kernel gibbs (not {kernel})")
    for name, value in (("--anneal", anneal), ("--split-merge", split_merge)):
        if value:
            raise InputError(f"--replicas is not available with {name}")


def _run_chain(tokens, n_symbols, n_states, beta, burn_in, period, n_draws, seed_seq, on_sweeps=None,
               held=None, checkpoint=None, checkpoint_every=CHECKPOINT_EVERY, fingerprint=None,
               resume=None, predict=None, max_draws=None, kernel="gibbs", init_z=None,
               anneal=0, anneal_start=ANNEAL_START, split_merge=0, split_merge_scans=SPLIT_MERGE_SCANS,
               blocked_every=0, replicas=1, swap_every=SWAP_EVERY, replica_min_b=REPLICA_MIN_B,
               replica_mutation=None, replica_threads=1):
    """One chain from its ``SeedSequence``: random init, burn-in, ``n_draws`` recorded draws,
    by the sweeps of ``kernel`` (a name of :data:`KERNELS`, see :func:`kernel_module`).

    ``checkpoint`` (a path): the chain state (``z``, the Generator's ``bit_generator.state``,
    the draws so far, the sweeps done) is saved there atomically after the first block of
    sweeps that ends ``checkpoint_every`` seconds or more after the last save. ``resume`` (a
    state loaded by :func:`_load_chain`) continues such a chain: the counts are rebuilt from
    ``z`` by ``fill_counts`` and the Generator's state restored, so the chain ends exactly as
    an uninterrupted one. Neither the interval nor the block size changes the result: each
    sweep draws one ``rng.random(M)`` whatever the blocks.

    ``predict`` (a :class:`_Held` of test strings): each draw's plug-in ``log Pr(b | xi~)``
    (Eq. 6's terms) is folded into a :class:`bayesfa.online.LogMeanAccumulator` as the draw is
    made. ``max_draws``: only the draws :func:`kept_draw_indices` names keep their counts
    (the others are made in a scratch buffer of a few draws), and a checkpoint saves those
    and the accumulator, not every draw.

    ``init_z`` (int32 ``[T + 1]``, a state path of ``tokens``): the chain starts there instead
    of at a uniformly random ``z`` (:mod:`bayesfa.samplers.pfa.auto` continues chains so);
    the Generator then draws no initial path.

    ``anneal`` (at most ``burn_in``; ``gibbs`` kernel only): burn-in sweep ``s < anneal`` is
    the Gibbs sweep of ``Pr(alpha, z)^b`` (Eq. 4 tempered, ``_cgs_pfa_kernel.tempered_sweeps``)
    at ``b =`` :func:`anneal_b` ``(s, anneal, anneal_start)``; the sweeps after are untempered,
    so every recorded draw and Eq. 6 are unchanged: annealing only moves the chain's start.

    ``split_merge`` (``gibbs`` kernel only; 0: off): split-merge moves per sweep, burn-in and
    draws alike (:mod:`bayesfa.samplers.pfa._split_merge_kernel`, ``n_moves_now``: a fractional
    rate such as 0.1 makes one move after a tenth of the sweeps, at random; each move with
    ``split_merge_scans`` launch scans), which leave Eq. 4's posterior invariant; with 0 the
    chain is the plain Gibbs chain bit for bit.

    ``blocked_every = K`` (``gibbs`` kernel only; 0: off): after every ``K``-th sweep of the
    chain (sweep ``s``, 0-based, with ``(s + 1) % K == 0``; burn-in and draws alike), one
    blocked move (:mod:`bayesfa.samplers.pfa._ffbs_kernel`: ``theta`` from its Dirichlet
    posterior, every string's path by forward filtering-backward sampling, ``theta``
    dropped), which leaves Eq. 4's posterior invariant; with 0 the chain is the plain Gibbs
    chain bit for bit.

    ``replicas = R > 1`` (``gibbs`` kernel only; 1: off): replica exchange
    (:class:`bayesfa.samplers.pfa._replica_kernel.Replicas`): slot 0 starts from the path a
    plain chain starts from, the other ``R - 1`` from uniformly random paths drawn next; each
    sweep of the chain is a tempered sweep of every replica, a swap round follows every
    ``swap_every`` sweeps, the ladder (from 1 down to ``replica_min_b``) adapts during burn-in
    only, and the draws are slot 0's (``b = 1``). ``replica_mutation``: a mutant of
    :data:`~bayesfa.samplers.pfa._replica_kernel.MUTATIONS` (validation only). With
    ``blocked_every = K`` as well, slot 0 gets a blocked move after every ``K``-th sweep (the
    hot replicas none: :mod:`~bayesfa.samplers.pfa._replica_kernel`). ``replica_threads``:
    the replicas' sweeps of each round run on this many threads (the chain is the same bit for
    bit whatever it is). Its checkpoint also holds every replica's path, the ladder, the swap
    counters and the replicas' Generators (``Replicas.checkpoint``), so it resumes bit for bit
    like a plain chain.

    Returns ``(counts, log_joint, used, edges, heldout, z, seconds, pred_log_sum, stats)``;
    ``pred_log_sum`` is ``log sum_draws Pr(b | xi~)`` per test string (empty without
    ``predict``); ``stats`` int64 ``[n_draws, 3]`` the sampler's own counts of each draw's
    ``period`` sweeps (``_cgs_pfa_kernel.STATS``: positions moved, then the proposals and
    acceptances of the kernel's Metropolis-Hastings steps, of the split-merge moves or of the
    replica swaps; :func:`sampler_stats` turns them into rates). With replicas a tenth item
    follows: the swap statistics and ladders of
    :meth:`~bayesfa.samplers.pfa._replica_kernel.Replicas.stats`.
    """
    from bayesfa.online import LogMeanAccumulator
    kernel = kernel_module(kernel) if isinstance(kernel, str) else kernel  # or a _Lockstep

    rng = np.random.default_rng(seed_seq)
    positions = free_positions(tokens)
    kept = kept_draw_indices(n_draws, max_draws)
    capped = kept.size < n_draws
    counts = np.zeros((kept.size, n_states + 1, n_symbols, n_states + 1), dtype=np.int32)
    acc = LogMeanAccumulator(0 if predict is None else predict.offsets.size - 1)
    test = None if predict is None else predict.corpus()
    log_joint = np.zeros(n_draws)
    used = np.zeros(n_draws, dtype=np.int32)
    edges = np.zeros(n_draws, dtype=np.int32)
    heldout = np.full(n_draws, np.nan)
    from bayesfa.samplers.pfa._cgs_pfa_kernel import STATS

    stats = np.zeros((n_draws, STATS), dtype=np.int64)
    loop = ChainLoop(rng, resume)
    if resume is not None:
        z = np.array(resume["z"], dtype=np.int32)
        d = loop.d
        counts[:int(np.searchsorted(kept, d))], log_joint[:d], used[:d], edges[:d], heldout[:d], stats[:d] = (
            resume[k] for k in ("counts", "log_joint", "used", "edges", "heldout", "stats"))
        acc = LogMeanAccumulator.from_state(resume["pred_log_sum"], d)
    else:
        z = random_path(tokens, n_states, rng) if init_z is None else np.array(init_z, dtype=np.int32)
    rex = None
    if replicas > 1:
        from bayesfa.samplers.pfa._replica_kernel import Replicas

        states = []
        paths = ([np.array(zr, dtype=np.int32) for zr in resume["rex_z"]] if resume is not None
                 else [z.copy()] + [random_path(tokens, n_states, rng) for _ in range(replicas - 1)])
        for zr in paths:
            counts_r = new_counts(n_states, n_symbols, count_dtype(tokens.size))
            kernel.fill_counts(tokens, zr, *counts_r, float(beta))
            states.append((zr, *counts_r))
        rex = Replicas(tokens, positions, states, beta, rng, burn_in, swap_every, replica_min_b,
                       replica_mutation, blocked_every, replica_threads)
        if resume is not None:
            rex.restore(resume)
    c, ct, ci, recip = new_counts(n_states, n_symbols, count_dtype(tokens.size))
    kernel.fill_counts(tokens, z, c, ct, ci, recip, float(beta))
    state = (positions, tokens, z, c, ct, ci, recip, rng, float(beta))

    def save():
        d = loop.d
        save_checkpoint(checkpoint, fingerprint, {
            "counts": counts[:np.searchsorted(kept, d)], "log_joint": log_joint[:d],
            "used": used[:d], "edges": edges[:d], "pred_log_sum": acc.log_sum,
            "heldout": heldout[:d], "stats": stats[:d], "z": z if rex is None else rex.state[0],
            "seconds": loop.seconds(), "sweeps_done": loop.done, "draws_done": d,
            "rng_state": generator_state(rng), **({} if rex is None else rex.checkpoint())})

    block = block_sweeps(_BLOCK_UNITS, n_states, positions.size)
    per_block = max(1, block // period)
    if capped:  # the draws are made in a scratch buffer, and the kept ones copied out
        per_block = min(per_block, _SCRATCH_DRAWS)
        scratch = np.zeros((per_block,) + counts.shape[1:], dtype=np.int32)

    sm_args = ()
    if split_merge:
        from bayesfa.samplers.pfa import _split_merge_kernel as sm_kernel

        sm_args = (float(split_merge), int(split_merge_scans), np.zeros(positions.size, dtype=np.int64),
                   np.zeros(positions.size, dtype=np.int32), np.zeros(sm_kernel.STATS))

    blk_args = ()
    if blocked_every and rex is None:  # with replicas, Replicas holds the move's scratch
        from bayesfa.samplers.pfa import _ffbs_kernel as blk_kernel

        blk_args = blk_kernel.scratch(tokens, n_states, n_symbols)

    def draws(d, e):
        made = scratch[:e - d] if capped else counts[d:e]
        if rex is not None:
            from bayesfa.samplers.pfa._cgs_pfa_kernel import record_draw

            for k in range(e - d):
                stats[d + k] = rex.sweeps(period)
                _, rc, _, rci, _ = rex.state
                record_draw(k, rc, rci, float(beta), made, log_joint[d:e], used[d:e], edges[d:e])
        elif blk_args:
            blk_kernel.sample_draws(period, burn_in + d * period, int(blocked_every), *state,
                                    *blk_args, made, log_joint[d:e], used[d:e], edges[d:e], stats[d:e])
        elif sm_args:
            sm_kernel.sample_draws(period, *state, *sm_args, made, log_joint[d:e], used[d:e], edges[d:e],
                                   stats[d:e])
        else:
            kernel.sample_draws(period, *state, made, log_joint[d:e], used[d:e], edges[d:e], stats[d:e])
        heldout[d:e] = _heldout_log_pred(made, beta, held)
        if test is not None:
            acc.add(plugin_log_prob(made, beta, test))
        if capped:
            lo, hi = np.searchsorted(kept, (d, e))
            counts[lo:hi] = made[kept[lo:hi] - d]

    def burn(n):
        hot = min(n, max(0, anneal - loop.done))  # the annealed sweeps of this block, one call each
        for s in range(loop.done, loop.done + hot):
            kernel.tempered_sweeps(1, *state, anneal_b(s, anneal, anneal_start))
        if rex is not None:
            rex.sweeps(n)
        elif n > hot and blk_args:
            blk_kernel.sweeps(n - hot, loop.done + hot, int(blocked_every), *state, *blk_args)
        elif n > hot and sm_args:
            sm_kernel.sweeps(n - hot, *state, *sm_args)
        elif n > hot:
            kernel.sweeps(n - hot, *state)

    seconds = loop.run(burn, draws, burn_in=burn_in, period=period,
                       n_draws=n_draws, block=block, per_block=per_block,
                       save=None if checkpoint is None else save,
                       checkpoint_every=checkpoint_every, on_sweeps=on_sweeps)
    if rex is not None:
        return (counts, log_joint, used, edges, heldout, rex.state[0], seconds, acc.log_sum, stats,
                rex.stats())
    return counts, log_joint, used, edges, heldout, z, seconds, acc.log_sum, stats


def sampler_stats(stats: np.ndarray, period: int, n_positions: int, kernel: str,
                  split_merge: float = 0, replicas: int = 1) -> dict[str, np.ndarray]:
    """The sampler statistics of :data:`bayesfa.rundir.SAMPLE_STATS` (float64 ``[chain,
    draw]``) from the chains' counts ``stats`` int64 ``[chain, draw, 3]`` (:func:`_run_chain`):
    ``moved``, the fraction of the ``n_positions`` free positions whose state changed, per
    sweep, over the draw's ``period`` sweeps of the single-site kernel (0 with no free
    position); and the acceptance rate of the chain's other moves, NaN in a draw that tried
    none: ``accept_mh`` (``alias-mh``, ``bucket-mh``: each Metropolis-Hastings step that
    proposed another state), ``accept_split_merge`` (``--split-merge``: splits and merges
    tried) or ``accept_swap`` (``--replicas``: swaps of neighbouring replicas tried)."""
    stats = np.asarray(stats, dtype=np.int64)
    out = {"moved": stats[..., 0] / float(max(1, period * n_positions))}
    name = ("accept_swap" if replicas > 1 else "accept_split_merge" if split_merge
            else "accept_mh" if kernel in ("alias-mh", "bucket-mh") else None)
    if name is not None:
        tried = stats[..., 1]
        out[name] = np.divide(stats[..., 2], tried, out=np.full(tried.shape, np.nan),
                              where=tried > 0)
    return out


_WORKER_PROGRESS = None  # in a worker process: shared sweep counts, one slot per chain


def _init_worker(progress) -> None:
    global _WORKER_PROGRESS
    _WORKER_PROGRESS = progress


#: ``interleave`` default (``--interleave``): with more chains than processes, up to
#: ``INTERLEAVE_CHAINS`` chains of the ``gibbs`` kernel share one interleaved kernel
#: (:mod:`bayesfa.samplers.pfa._cgs_pfa_multichain_kernel`) when ``N <= INTERLEAVE_MAX_STATES``.
#: Measured slower per chain than one chain at a time at N = 10 and 30 on the shared 2-core
#: machine (benchmarks/RESULTS.md, "CGS-PFA multi-chain kernel (issue 12)"), so off by default
#: (0 states): ``--interleave CHAINS`` opts in.
INTERLEAVE_CHAINS = 8
INTERLEAVE_MAX_STATES = 0


def interleave_size(interleave: int | None, kernel: str, n_states: int) -> int:
    """Chains per interleaved kernel: ``interleave`` when given, else the default above; 1
    (one chain at a time) for kernels other than ``gibbs``."""
    if interleave is not None and (isinstance(interleave, bool)
                                   or not isinstance(interleave, (int, np.integer)) or interleave < 1):
        raise InputError(f"interleave must be an integer >= 1, got {interleave!r}")
    if kernel != "gibbs":
        return 1
    if interleave is None:
        return INTERLEAVE_CHAINS if n_states <= INTERLEAVE_MAX_STATES else 1
    return int(interleave)


class _Lockstep:
    """Stands in for the kernel module of :func:`_run_chain` (its ``kernel=``) when several
    chains run in threads of one process: a chain's ``sweeps`` or ``sample_draws`` call waits
    until every chain still running has made its call; the last to arrive runs the calls that
    match (same operation, length and data) through the interleaved kernel, at most
    ``max_chains`` chains per kernel call (:func:`_interleaved_call`), and releases them all.
    Each chain's ``z``, counts and Generator end bit for bit as the one-chain kernel leaves
    them, and the rest (checkpoints, resume, held-out slice, online prediction, draw caps) is
    :func:`_run_chain`'s own code, so the chains end exactly as when run one by one. When a
    chain fails (or the caller is interrupted), :meth:`abort` stops the others at their next
    kernel call (:class:`_Aborted`), each with the checkpoint of its last block, as an
    interruption stops chains run one by one."""

    def __init__(self, n_chains: int, max_chains: int):
        self._cv = threading.Condition()
        self._live = n_chains
        self._max = max_chains
        self._pending: list[dict] = []
        self._round = 0
        self._aborted = False

    def fill_counts(self, *args) -> None:
        from bayesfa.samplers.pfa import _cgs_pfa_kernel

        _cgs_pfa_kernel.fill_counts(*args)

    def sweeps(self, n_sweeps, *state) -> None:
        self._submit(("sweeps", n_sweeps), state, ())

    def sample_draws(self, period, *args) -> None:
        self._submit(("draws", period), args[:9], args[9:])  # outs: the 5 of sample_draws

    def leave(self) -> None:
        """A chain is done (or failed): the others no longer wait for it."""
        with self._cv:
            self._live -= 1
            if self._pending and len(self._pending) >= self._live and not self._aborted:
                self._run()

    def abort(self) -> None:
        """Stop every chain at its next kernel call (or now, if it is waiting for one)."""
        with self._cv:
            self._aborted = True
            self._cv.notify_all()

    def _submit(self, op: tuple, state: tuple, outs: tuple) -> None:
        call = {"op": op, "state": state, "outs": outs, "error": None}
        with self._cv:
            this = self._round
            if not self._aborted:
                self._pending.append(call)
                if len(self._pending) >= self._live:
                    self._run()
            while self._round == this and not self._aborted:
                self._cv.wait()
            if self._round == this:
                raise _Aborted
        if call["error"] is not None:
            raise call["error"]

    def _run(self) -> None:  # with the lock held
        calls, self._pending = self._pending, []
        groups: dict[tuple, list[dict]] = {}
        for call in calls:
            positions, tokens, beta = call["state"][0], call["state"][1], call["state"][8]
            key = (call["op"], id(tokens), positions.size, beta, tuple(o.shape for o in call["outs"]))
            groups.setdefault(key, []).append(call)
        for group in groups.values():
            for lo in range(0, len(group), self._max):
                part = group[lo:lo + self._max]
                try:
                    _interleaved_call(part)
                except BaseException as err:  # noqa: BLE001 - re-raised in each chain's thread
                    for call in part:
                        call["error"] = err
        self._round += 1
        self._cv.notify_all()


class _Aborted(Exception):
    """Raised in a chain's thread when another chain of its :class:`_Lockstep` failed."""


def _interleaved_call(calls: list[dict]) -> None:
    """Run the same ``sweeps`` or ``sample_draws`` call of several chains (each call's state
    ``(positions, tokens, z, c, ct, ci, recip, rng, beta)`` as :func:`_run_chain` passes it)
    through :mod:`bayesfa.samplers.pfa._cgs_pfa_multichain_kernel`: the chains' states are stacked,
    swept together, and copied back."""
    from numba.typed import List

    from bayesfa.samplers.pfa import _cgs_pfa_multichain_kernel as multi

    states = [call["state"] for call in calls]
    positions, tokens, beta = states[0][0], states[0][1], states[0][8]
    z = np.stack([s[2] for s in states], axis=1)
    c, ct, ci, recip = (np.stack([s[i] for s in states]) for i in (3, 4, 5, 6))
    rngs = List([s[7] for s in states])
    kind, n = calls[0]["op"]
    if kind == "sweeps":
        multi.sweeps(n, positions, tokens, z, c, ct, ci, recip, rngs, beta)
    else:
        outs = [np.stack([call["outs"][i] for call in calls]) for i in range(len(calls[0]["outs"]))]
        multi.sample_draws(n, positions, tokens, z, c, ct, ci, recip, rngs, beta, *outs)
        for h, call in enumerate(calls):
            for dst, src in zip(call["outs"], outs):
                dst[...] = src[h]
    for h, s in enumerate(states):
        s[2][...] = z[:, h]
        for dst, src in zip(s[3:7], (c, ct, ci, recip)):
            dst[...] = src[h]


def _run_chains_interleaved(args: list[tuple], kwargs: list[dict], max_chains: int) -> list:
    """:func:`_run_chain` of each ``(args[i], kwargs[i])``, the chains in threads of this
    process sweeping through one interleaved kernel (:class:`_Lockstep`), at most
    ``max_chains`` per kernel call; the outputs are those of the calls made one by one.
    ``on_sweeps`` callbacks are called from those threads."""
    if len(args) == 1 or max_chains <= 1:
        return [_run_chain(*a, **k) for a, k in zip(args, kwargs)]
    lock = _Lockstep(len(args), max_chains)
    outs: list = [None] * len(args)
    errors: list = [None] * len(args)

    def run(i):
        try:
            outs[i] = _run_chain(*args[i], **{**kwargs[i], "kernel": lock})
        except _Aborted:
            pass
        except BaseException as err:  # noqa: BLE001 - re-raised below
            errors[i] = err
            lock.abort()
        finally:
            lock.leave()

    threads = [threading.Thread(target=run, args=(i,), name=f"cgs-pfa-chain-{i}", daemon=True)
               for i in range(len(args))]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except BaseException:  # e.g. KeyboardInterrupt in this thread: stop the chains first
        lock.abort()
        for thread in threads:
            thread.join()
        raise
    for err in errors:
        if err is not None:
            raise err
    return outs


def _run_chains_job(chains: list[int], args: list[tuple], kwargs: list[dict], max_chains: int):
    """:func:`_run_chains_interleaved` in a worker process; each chain reports its sweeps into
    its slot of the shared progress array when there is one."""
    progress = _WORKER_PROGRESS
    if progress is not None:
        def reporter(chain):
            def on_sweeps(n):
                progress[chain] += n
            return on_sweeps
        kwargs = [{**k, "on_sweeps": reporter(c)} for c, k in zip(chains, kwargs)]
    return _run_chains_interleaved(args, kwargs, max_chains)


def _chain_fingerprint(tokens, n_symbols, n_states, beta, burn_in, period, n_draws,
                       seed_seq: np.random.SeedSequence, held: _Held | None = None,
                       predict: _Held | None = None, max_draws: int | None = None,
                       kernel: str = "gibbs", anneal: int = 0,
                       anneal_start: float = ANNEAL_START, split_merge: float = 0,
                       split_merge_scans: int = SPLIT_MERGE_SCANS, blocked_every: int = 0,
                       replicas: int = 1, swap_every: int = SWAP_EVERY,
                       replica_min_b: float = REPLICA_MIN_B) -> str:
    """What determines a chain's output, as a string (the data by SHA-256): the training
    tokens, the held-out slice, the test strings predicted online, the cap on kept draws,
    the settings and the chain's seed; not ``jobs`` nor the checkpoint interval."""
    return json.dumps({"format": _CHAIN_FORMAT, "tokens": _digest(tokens),
                       "heldout": None if held is None else [_digest(held.tokens), _digest(held.offsets)],
                       "predict": None if predict is None else [_digest(predict.tokens),
                                                                _digest(predict.offsets)],
                       "max_draws": None if max_draws is None else int(max_draws),
                       "kernel": kernel, "n_symbols": n_symbols, "n_states": n_states, "beta": float(beta),
                       "burn_in": burn_in, "period": period, "n_draws": n_draws,
                       "entropy": str(seed_seq.entropy), "spawn_key": list(seed_seq.spawn_key),
                       # annealing only when on, so that earlier checkpoints keep their print
                       **({"anneal": int(anneal), "anneal_start": float(anneal_start)} if anneal else {}),
                       **({"split_merge": float(split_merge), "split_merge_scans": int(split_merge_scans)}
                          if split_merge else {}),
                       **({"blocked_every": int(blocked_every)} if blocked_every else {}),
                       **({"replicas": int(replicas), "swap_every": int(swap_every),
                           "replica_min_b": float(replica_min_b)} if replicas > 1 else {})},
                      sort_keys=True)


_CHAIN_FORMAT = "bayesfa-cgs-pfa-chain/4"  # 4: the sampler's own counts, "stats" (issue 36)
_CHAIN_FIELDS = ("counts", "log_joint", "used", "edges", "heldout", "z", "seconds", "pred_log_sum",
                 "stats")
_STATE_FIELDS = _CHAIN_FIELDS + ("sweeps_done", "draws_done", "rng_state")


def _load_chain(path: Path, fingerprint: str, *, n_draws: int, z_size: int, burn_in: int,
                period: int, max_draws: int | None = None, n_test: int = 0,
                replicas: int = 1) -> dict | None:
    """The chain state saved at ``path`` by :func:`bayesfa.samplers.chains.save_checkpoint` (finished or not), or None
    when it was saved for other data, settings or seed. An :class:`InputError` naming the
    file when it cannot be read or is inconsistent (it was written atomically, so only damage
    from outside, e.g. a truncated copy, does that). ``replicas = R > 1``: a replica chain's,
    which also holds ``Replicas.checkpoint``'s fields mid-chain and the swap statistics
    (``rex_stats``, JSON) once finished."""
    state = read_checkpoint(path, fingerprint, None if replicas > 1 else _STATE_FIELDS)
    if state is None:
        return None  # another run's chain (data, settings, seed or version): not ours
    if replicas > 1:
        _check_replica_state(path, state, replicas, n_draws, z_size)
    d, done = int(state["draws_done"]), int(state["sweeps_done"])
    shapes_ok = (0 <= d <= n_draws and state["z"].shape == (z_size,)
                 and all(state[k].shape[:1] == (d,) for k in ("log_joint", "used", "edges", "heldout",
                                                                "stats"))
                 and state["counts"].shape[:1] == (np.searchsorted(kept_draw_indices(n_draws, max_draws), d),)
                 and state["pred_log_sum"].shape == (n_test,)
                 and done == (min(done, burn_in) if d == 0 else burn_in + d * period))
    if not shapes_ok:
        raise corrupt_checkpoint(path, "its arrays do not match its settings")
    check_generator_state(path, state["rng_state"])
    return state


def _check_replica_state(path, state: dict, replicas: int, n_draws: int, z_size: int) -> None:
    """:func:`_load_chain`'s check of a replica chain's own fields (in place: ``rex_stats``
    parsed); an :class:`InputError` naming ``path`` when one is missing or inconsistent."""
    from bayesfa.samplers.pfa._replica_kernel import CHECKPOINT_FIELDS

    finished = "draws_done" in state and int(state["draws_done"]) == n_draws
    missing = [k for k in (_STATE_FIELDS + (("rex_stats",) if finished else CHECKPOINT_FIELDS))
               if k not in state]
    if missing:
        raise corrupt_checkpoint(path, f"missing {', '.join(missing)}")
    try:
        if finished:
            state["rex_stats"] = json.loads(str(state["rex_stats"]))
            ok = isinstance(state["rex_stats"], dict)
        else:
            slots = json.loads(str(state["rex_slot_rngs"]))
            ok = (state["rex_z"].shape == (replicas, z_size) and state["rex_b"].shape == (replicas,)
                  and state["rex_counters"].shape == (4, replicas - 1)
                  and state["rex_counts"].shape == (3,)
                  and state["rex_ladder_at_burn_in"].shape == (replicas,)
                  and isinstance(slots, list) and len(slots) == replicas
                  and all(isinstance(g, dict) and "state" in g for g in slots))
    except (ValueError, TypeError):
        ok = False
    if not ok:
        raise corrupt_checkpoint(path, "its replica arrays do not match its settings")


def _finished_state(out, n_sweeps: int, rng_state: str = "{\"state\": null}") -> dict:
    """A finished chain's checkpoint from its output (a replica chain's: its swap statistics
    too, as ``rex_stats``)."""
    return {**dict(zip(_CHAIN_FIELDS, out)), "sweeps_done": n_sweeps,
            "draws_done": int(out[1].shape[0]), "rng_state": rng_state,
            **({"rex_stats": json.dumps(out[9])} if len(out) > len(_CHAIN_FIELDS) else {})}


def sample_cgs_pfa(corpus: Corpus, n_states: int, beta: float, iterations: int, burn_in: int,
                   period: int, chains: int, seed: int | None, jobs: int = 1,
                   progress: bool = False, checkpoint_dir: str | os.PathLike | None = None,
                   checkpoint_every: float = CHECKPOINT_EVERY, holdout: float = 0.0,
                   on_sweeps: Callable[[int], None] | None = None, predict: Corpus | None = None,
                   max_draws: int | None = None, kernel: str = "gibbs",
                   interleave: int | None = None, anneal: int = 0,
                   anneal_start: float = ANNEAL_START, split_merge: float = 0,
                   split_merge_scans: int = SPLIT_MERGE_SCANS, blocked_every: int = 0,
                   replicas: int = 1, swap_every: int = SWAP_EVERY,
                   replica_min_b: float = REPLICA_MIN_B, replica_threads: int = 1) -> CGSResult:
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

    ``predict`` (a corpus of test strings): Eq. 6 for them is accumulated online, each draw's
    plug-in predictive folded in (log-sum-exp, float64) as the draw is made
    (:mod:`bayesfa.online`); the result's ``predict_log_mean``. ``max_draws = K``: each chain
    keeps the counts of only K draws, :func:`kept_draw_indices` (evenly thinned), so memory
    and checkpoints stay bounded whatever the number of sweeps; the trace keeps every draw.
    Neither changes the chains.

    ``kernel``: the sweep, a name of :data:`KERNELS` (``auto`` is resolved by the method's
    ``fit``, :func:`choose_kernel`); part of each chain's checkpoint fingerprint.

    ``interleave``: with more chains to run than processes, each process runs its chains up
    to this many at a time in one kernel, interleaved position by position
    (:mod:`bayesfa.samplers.pfa._cgs_pfa_multichain_kernel`, ``gibbs`` only); None: the default of
    :func:`interleave_size`. The result is bit-identical whatever ``interleave`` and ``jobs``.
    Interleaved chains run in threads of their process (``on_sweeps`` is called from them), in
    lockstep: when one fails or is interrupted, the others stop at their next block.

    ``anneal`` (``--anneal``, at most ``burn_in``; 0: off): each chain's first ``anneal``
    burn-in sweeps are tempered, ``b`` rising geometrically from ``anneal_start`` to 1
    (:func:`anneal_b`, :func:`_run_chain`); the draws are those of the untempered chain.

    ``split_merge`` (``--split-merge``, 0: off; ``gibbs`` kernel, one chain at a time):
    split-merge moves per sweep, e.g. 0.1 for one after a tenth of the sweeps at random
    (:mod:`bayesfa.samplers.pfa._split_merge_kernel`), each launched by ``split_merge_scans``
    restricted Gibbs scans.

    ``blocked_every`` (``--blocked-every K``, 0: off; ``gibbs`` kernel, one chain at a time):
    one blocked whole-string move after every ``K`` sweeps (:func:`_run_chain`,
    :mod:`bayesfa.samplers.pfa._ffbs_kernel`).

    ``replicas = R`` (``--replicas``, 1: off; plain ``gibbs`` kernel, one chain at a time):
    each chain is a replica exchange of ``R`` tempered copies (:func:`_run_chain`,
    :mod:`bayesfa.samplers.pfa._replica_kernel`), a swap round every ``swap_every`` sweeps,
    the ladder from 1 to ``replica_min_b`` adapted during burn-in; only ``b = 1`` is recorded,
    the swap rates and ladders are in ``info["replica_stats"]`` (one dict per chain).
    ``replica_threads = T`` (``--replica-threads``): each chain's replicas sweep on ``T``
    threads at once (the sweep releases the GIL; every replica has its own Generator), so a
    chain of ``R`` replicas takes about ``1/min(R, T)`` of the wall time on idle cores, and the
    result is bit-identical whatever ``T``. Such
    chains are checkpointed as plain ones are, with every replica's state.
    """
    n_draws = _check_arguments(corpus, n_states, beta, iterations, burn_in, period, chains, jobs)
    kernel, interleave = _wide_counts_options(corpus.n_tokens, kernel, interleave, anneal,
                                              split_merge, blocked_every, replicas)
    setup = _setup(corpus, n_states, beta, burn_in, period, n_draws, chains, seed, holdout,
                   predict, max_draws, kernel, checkpoint_every, anneal, anneal_start,
                   split_merge, split_merge_scans, blocked_every, replicas, swap_every,
                   replica_min_b, replica_threads)
    jobs = min(jobs, chains)
    if on_sweeps is not None and jobs > 1:
        raise ValueError("on_sweeps is called only when the chains run in this process (jobs=1)")
    context = mp_context() if jobs > 1 else None  # before the bar starts its monitor thread
    bar = _progress_bar(progress, chains * setup.sweeps_per_chain)
    book = _Book.of(setup, checkpoint_dir)
    todo = book.todo()
    resumed_mid = book.resumed_mid_chain(todo)
    if bar is not None:
        bar.update((chains - len(todo)) * setup.sweeps_per_chain)
    group = interleave_size(interleave, kernel, n_states)
    if anneal and chains > 1 and group > 1:
        raise InputError("--anneal runs one chain at a time (no --interleave)")
    if split_merge and chains > 1 and group > 1:
        raise InputError("--split-merge runs one chain at a time (no --interleave)")
    if blocked_every and chains > 1 and group > 1:
        raise InputError("--blocked-every runs one chain at a time (no --interleave)")
    if setup.replicas > 1 and chains > 1 and group > 1:
        raise InputError("--replicas runs one chain at a time (no --interleave)")
    t0 = time.perf_counter()
    try:
        if jobs == 1 or len(todo) <= 1:
            _run_here(setup, book, todo, group, bar, on_sweeps)
        else:
            _run_in_pool(setup, book, todo, group, bar, jobs, context)
    finally:
        if bar is not None:
            bar.close()
    run = {"jobs": int(jobs), "interleave": int(group), "chains_resumed": int(chains - len(todo)),
           "chains_resumed_mid_chain": int(resumed_mid),
           "start_method": None if context is None else context.get_start_method(),
           "seconds": time.perf_counter() - t0}
    return _result(setup, book.outs, run, holdout, max_draws)


class _Setup(NamedTuple):
    """What every chain of one :func:`sample_cgs_pfa` call shares (argument checks done)."""

    tokens: np.ndarray
    n_symbols: int
    n_states: int
    beta: float
    burn_in: int
    period: int
    n_draws: int
    children: list
    held: "_Held | None"
    held_idx: np.ndarray
    predict: "_Held | None"
    max_draws: int | None
    kernel: str
    checkpoint_every: float
    prints: list
    anneal: int = 0
    anneal_start: float = ANNEAL_START
    split_merge: float = 0.0
    split_merge_scans: int = SPLIT_MERGE_SCANS
    blocked_every: int = 0
    replicas: int = 1
    swap_every: int = SWAP_EVERY
    replica_min_b: float = REPLICA_MIN_B
    replica_threads: int = 1

    @property
    def sweeps_per_chain(self) -> int:
        return self.burn_in + self.n_draws * self.period

    @property
    def n_test(self) -> int:
        return 0 if self.predict is None else self.predict.offsets.size - 1

    def chain_args(self, c: int) -> tuple:
        return (self.tokens, self.n_symbols, self.n_states, self.beta, self.burn_in,
                self.period, self.n_draws, self.children[c])


def _setup(corpus, n_states, beta, burn_in, period, n_draws, chains, seed, holdout, predict,
           max_draws, kernel, checkpoint_every, anneal=0, anneal_start=ANNEAL_START,
           split_merge=0, split_merge_scans=SPLIT_MERGE_SCANS, blocked_every=0, replicas=1,
           swap_every=SWAP_EVERY, replica_min_b=REPLICA_MIN_B, replica_threads=1) -> _Setup:
    """Check the remaining arguments, split off the held-out strings, seed the chains
    (``SeedSequence(seed).spawn(chains)``) and fingerprint them."""
    if kernel not in KERNELS:
        raise InputError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
    check_anneal(anneal, anneal_start, burn_in, kernel)
    check_split_merge(split_merge, split_merge_scans, kernel)
    check_blocked(blocked_every, kernel, anneal, split_merge)
    check_replicas(replicas, swap_every, replica_min_b, kernel, anneal, split_merge, replica_threads)
    from bayesfa.online import check_online_arguments

    test = check_online_arguments(corpus, predict, max_draws)
    if test is not None:
        predict = _Held(test.tokens, test.offsets, test.alphabet_size)
    checkpoint_every = check_checkpoint_every(checkpoint_every)
    children, corpus, held, held_idx = seed_chains(corpus, seed, chains, holdout)
    tokens, n_symbols = corpus.tokens, corpus.alphabet_size + 1
    prints = [_chain_fingerprint(tokens, n_symbols, n_states, beta, burn_in, period, n_draws, s,
                                 held, predict, max_draws, kernel, anneal, anneal_start,
                                 split_merge, split_merge_scans, blocked_every, replicas,
                                 swap_every, replica_min_b) for s in children]
    return _Setup(tokens, n_symbols, n_states, beta, burn_in, period, n_draws, children, held,
                  held_idx, predict, max_draws, kernel, float(checkpoint_every), prints,
                  int(anneal), float(anneal_start), float(split_merge), int(split_merge_scans),
                  int(blocked_every), int(replicas), int(swap_every), float(replica_min_b),
                  int(replica_threads))


def _progress_bar(progress: bool, total: int):
    if not progress:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="sweep", desc="cgs-pfa", leave=False, dynamic_ncols=True,
                file=sys.stderr)


class _Book(ChainBook):
    """The chain files of one :func:`sample_cgs_pfa` call
    (:class:`bayesfa.samplers.chains.ChainBook`); :meth:`finish` records a chain and saves its
    final checkpoint."""

    @classmethod
    def of(cls, setup: _Setup, checkpoint_dir) -> "_Book":
        def load(path, fingerprint):
            return _load_chain(path, fingerprint, n_draws=setup.n_draws, z_size=setup.tokens.size + 1,
                               burn_in=setup.burn_in, period=setup.period,
                               max_draws=setup.max_draws, n_test=setup.n_test,
                               replicas=setup.replicas)

        def finished(state):
            if int(state["draws_done"]) != setup.n_draws:
                return None
            out = tuple(state[k] if k != "seconds" else float(state[k]) for k in _CHAIN_FIELDS)
            return out + ((state["rex_stats"],) if setup.replicas > 1 else ())

        book = cls.open(checkpoint_dir, setup.prints, load, finished)
        book.setup = setup
        return book

    def finish(self, c: int, out) -> None:
        self.outs[c] = out
        if self.paths[c] is not None:
            save_checkpoint(self.paths[c], self.setup.prints[c],
                            _finished_state(out, self.setup.sweeps_per_chain))

    def chain_kwargs(self, c: int) -> dict:
        s = self.setup
        return {"held": s.held, "checkpoint": self.paths[c], "checkpoint_every": s.checkpoint_every,
                "fingerprint": s.prints[c], "resume": self.saved[c], "predict": s.predict,
                "max_draws": s.max_draws, "kernel": s.kernel,
                **({"anneal": s.anneal, "anneal_start": s.anneal_start} if s.anneal else {}),
                **({"split_merge": s.split_merge, "split_merge_scans": s.split_merge_scans}
                   if s.split_merge else {}),
                **({"blocked_every": s.blocked_every} if s.blocked_every else {}),
                **({"replicas": s.replicas, "swap_every": s.swap_every,
                    "replica_min_b": s.replica_min_b, "replica_threads": s.replica_threads}
                   if s.replicas > 1 else {})}


def _run_here(setup: _Setup, book: _Book, todo: list, group: int, bar, on_sweeps) -> None:
    """The chains of ``todo`` in this process: interleaved in one kernel by ``group``, then
    any left one at a time; sweeps reported to the bar and ``on_sweeps``."""
    callbacks = [f for f in (None if bar is None else bar.update, on_sweeps) if f is not None]
    report = None
    if callbacks:
        def report(n):
            for f in callbacks:
                f(n)
    if group > 1 and len(todo) > 1:
        for c, out in zip(todo, _run_chains_interleaved(
                [setup.chain_args(c) for c in todo],
                [{**book.chain_kwargs(c), "on_sweeps": report} for c in todo], group)):
            book.finish(c, out)
    for c in todo:
        if book.outs[c] is None:
            book.finish(c, _run_chain(*setup.chain_args(c), report, **book.chain_kwargs(c)))


def _run_in_pool(setup: _Setup, book: _Book, todo: list, group: int, bar, jobs: int, context) -> None:
    """The chains of ``todo`` in ``jobs`` worker processes: one job per chain, or, interleaving,
    one group of chains per process; the bar follows the workers' shared sweep counters."""
    chains, per_chain = len(book.outs), setup.sweeps_per_chain
    shared = context.RawArray("q", chains) if bar is not None else None
    with concurrent.futures.ProcessPoolExecutor(
            max_workers=min(jobs, len(todo)), mp_context=context,
            initializer=_init_worker, initargs=(shared,)) as pool:
        parts = ([[c] for c in todo] if group <= 1 or len(todo) <= jobs
                 else [[int(c) for c in p] for p in np.array_split(todo, jobs)])
        futures = {pool.submit(_run_chains_job, part, [setup.chain_args(c) for c in part],
                               [book.chain_kwargs(c) for c in part], group): part
                   for part in parts}
        pending = set(futures)
        while pending:
            done, pending = concurrent.futures.wait(
                pending, timeout=0.5, return_when=concurrent.futures.FIRST_COMPLETED)
            for f in done:
                for c, out in zip(futures[f], f.result()):
                    book.finish(c, out)
            if bar is not None:
                now = sum(per_chain if book.outs[c] is not None else min(shared[c], per_chain)
                          for c in todo)
                bar.update((chains - len(todo)) * per_chain + now - bar.n)


def _result(setup: _Setup, outs: list, run: dict, holdout: float, max_draws) -> CGSResult:
    """Stack the chains' outputs into a :class:`CGSResult` with the run's ``info``, and Eq. 6
    over every draw of every chain for the strings predicted online."""
    chains = len(outs)
    counts, log_joint, used, edges, heldout, z, chain_seconds, pred_log_sum, stats = (
        np.stack(x) for x in zip(*(out[:9] for out in outs)))
    held, tokens = setup.held, setup.tokens
    info = {
        "kernel": setup.kernel,
        "anneal": int(setup.anneal),
        "anneal_start": float(setup.anneal_start),
        "split_merge": float(setup.split_merge),
        "split_merge_scans": int(setup.split_merge_scans),
        "blocked_every": int(setup.blocked_every),
        **({"replicas": int(setup.replicas), "swap_every": int(setup.swap_every),
            "replica_min_b": float(setup.replica_min_b),
            "replica_threads": int(setup.replica_threads),
            "replica_stats": [out[9] for out in outs]} if setup.replicas > 1 else {}),
        "n_draws_per_chain": int(setup.n_draws),
        "n_free_positions": n_free_positions(tokens),
        "n_tokens": int(tokens.size),
        "count_dtype": np.dtype(count_dtype(tokens.size)).name,  # the chains' counts (c, ct)
        "holdout": float(holdout),
        "holdout_strings": int(setup.held_idx.size),
        "holdout_letters": 0 if held is None else int(held.corpus().n_letters),
        "jobs": run["jobs"],
        "interleave": run["interleave"],
        "chains_resumed": run["chains_resumed"],
        "chains_resumed_mid_chain": run["chains_resumed_mid_chain"],
        "checkpoint_every": setup.checkpoint_every,
        "start_method": run["start_method"],
        "seconds": run["seconds"],
        "chain_seconds": [float(s) for s in chain_seconds],
        "ns_per_state_token": float(np.mean(chain_seconds) * 1e9
                                    / max(1, setup.sweeps_per_chain * setup.n_states * tokens.size)),
        "max_draws": None if max_draws is None else int(max_draws),
        "kept_draws_per_chain": int(counts.shape[1]),
        "kept_draws_rule": KEPT_DRAWS_RULE,
        "predict_strings": setup.n_test if setup.predict is not None else None,
    }
    predict_log_mean = None
    if setup.predict is not None:  # Eq. 6 over every draw of every chain (same count per chain)
        from bayesfa.online import combine_log_means

        predict_log_mean = combine_log_means(pred_log_sum - np.log(setup.n_draws),
                                             np.full(chains, setup.n_draws))
    stats = sampler_stats(stats, setup.period, info["n_free_positions"], setup.kernel,
                          setup.split_merge, setup.replicas)
    return CGSResult(counts, log_joint, used, edges, z, info, heldout if held is not None else None,
                     predict_log_mean, stats)


def add_anneal_arguments(parser: argparse.ArgumentParser, anneal_help: str, *,
                         default: int | None = 0, start: float = ANNEAL_START) -> None:
    """``--anneal SWEEPS`` (help ``anneal_help``, default ``default``) and ``--anneal-start B``
    (:func:`anneal_b`'s schedule, default ``start``), as CGS-PFA and the iPFA's blocked sampler
    declare them."""
    parser.add_argument("--anneal", type=nonnegative_int, default=default, metavar="SWEEPS",
                        help=anneal_help)
    parser.add_argument("--anneal-start", type=inverse_temperature, default=start, metavar="B",
                        help=f"inverse temperature of the first annealed sweep, in (0, 1]; "
                             f"default {start}")


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text}") from None
    if not 0.0 <= value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text}")
    return value


def _fit_result(res: CGSResult, predict) -> FitResult:
    """The :class:`FitResult` of a :class:`CGSResult` (one process or sharded alike)."""
    trace = {"log_joint": res.log_joint, "n_states": res.n_states, "n_edges": res.n_edges,
             **(res.sample_stats or {})}
    if res.heldout_log_pred is not None:
        trace["heldout_log_pred"] = res.heldout_log_pred
    arrays = {"counts": res.counts}
    if predict is not None:
        arrays["predict_log_mean"] = res.predict_log_mean
        arrays["predict_n_draws"] = np.int64(res.log_joint.size)
    return FitResult(arrays, trace, res.info)


class _CGSPFA(DrawAutomata):
    """The ``cgs-pfa`` entry of :data:`bayesfa.methods.REGISTRY` (its plug-in automata for
    ``bayesfa export``: :class:`~bayesfa.samplers.plugin.DrawAutomata`)."""

    name = "cgs-pfa"
    resumable = True  # fit(..., workdir=) keeps chain states there (finished or not)
    online_predict = True  # fit(..., predict=TEST) accumulates Eq. 6 draw by draw (bayesfa.online)
    summary = "collapsed Gibbs sampling of a fully connected PFA (Shibata & Yoshinaka 2013, Alg. 1)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_mcmc_arguments(parser, states=10, beta=0.1, iterations=1000, burn_in=500, period=10)
        parser.add_argument("--holdout", type=fraction, default=HOLDOUT, metavar="FRACTION",
                            help=f"fraction of the training strings (at most {HOLDOUT_MAX}) left out "
                                 f"of sampling, chosen from the seed; each draw records their log "
                                 f"predictive (heldout_log_pred) for diagnose; 0 disables; default "
                                 f"{HOLDOUT}")
        add_checkpoint_argument(parser)
        add_anneal_arguments(parser, "temper the first SWEEPS burn-in sweeps of each chain (the "
                                     "Gibbs sweep of Pr(alpha, z)^b, Eq. 4), b rising geometrically "
                                     "from --anneal-start to 1; at most --burn-in, so every draw is "
                                     "untempered; gibbs kernel only; default 0 (off)")
        parser.add_argument("--split-merge", type=_rate, default=0.0, metavar="RATE",
                            help="split-merge moves on whole states per sweep, e.g. 0.1 for one "
                                 "after a tenth of the sweeps at random (Metropolis-Hastings with a "
                                 "restricted Gibbs launch; they keep Eq. 4's posterior, checked by "
                                 "bayesfa validate cgs-pfa); gibbs kernel only; default 0 (off)")
        parser.add_argument("--split-merge-scans", type=nonnegative_int, default=SPLIT_MERGE_SCANS,
                            metavar="SCANS",
                            help=f"restricted Gibbs scans of each split-merge move's launch; "
                                 f"default {SPLIT_MERGE_SCANS}")
        parser.add_argument("--blocked-every", type=nonnegative_int, default=0, metavar="K",
                            help="one blocked whole-string move after every K sweeps: the "
                                 "transition parameters drawn from their Dirichlet posterior, "
                                 "every string's state path by forward filtering-backward "
                                 "sampling, the parameters dropped (an exact Gibbs step that "
                                 "keeps Eq. 4's posterior, checked by bayesfa validate cgs-pfa); "
                                 "gibbs kernel only; default 0 (off)")
        parser.add_argument("--replicas", type=positive_int, default=1, metavar="R",
                            help="replica exchange: R copies of each chain at inverse temperatures "
                                 "1 > ... > --replica-min-b on Pr(alpha, z)^b (Eq. 4), neighbours "
                                 "swapping states (non-reversible even/odd scheme), the ladder "
                                 "adapted during burn-in only; only b = 1 is recorded (checked by "
                                 "bayesfa validate cgs-pfa); with --blocked-every K the b = 1 "
                                 "replica gets a blocked move every K sweeps; plain gibbs kernel "
                                 "only; default 1 (off)")
        parser.add_argument("--swap-every", type=positive_int, default=SWAP_EVERY, metavar="K",
                            help=f"with --replicas, a swap round after every K sweeps; default "
                                 f"{SWAP_EVERY}")
        parser.add_argument("--replica-min-b", type=open_fraction, default=REPLICA_MIN_B,
                            metavar="B",
                            help=f"with --replicas, the inverse temperature of the hottest "
                                 f"replica, in (0, 1); default {REPLICA_MIN_B}")
        parser.add_argument("--replica-threads", type=positive_int, default=1, metavar="T",
                            help="with --replicas, each chain's replicas sweep on T threads at "
                                 "once (about 1/min(R, T) of the wall time on idle cores; the "
                                 "result is the same bit for bit whatever T); default 1")
        parser.add_argument("--kernel", choices=(*KERNELS, "auto"), default="auto",
                            help=f"the sweep: gibbs (Algorithm 1, O(N) per token), alias-mh "
                                 f"(Metropolis-Hastings within Gibbs, O(1) alias-table proposals) "
                                 f"or bucket-mh (the same, table-free proposals); "
                                 f"default auto: the faster for the N given ("
                                 + ("gibbs at every N measured" if ALIAS_MH_MIN_STATES is None else
                                    f"alias-mh from {ALIAS_MH_MIN_STATES} states on")
                                 + ", benchmarks/RESULTS.md)")
        parser.add_argument("--interleave", type=positive_int, default=None, metavar="CHAINS",
                            help=f"with more chains than --jobs, run up to CHAINS chains per process "
                                 f"in one interleaved gibbs kernel (never changes the result); "
                                 + (f"default {INTERLEAVE_CHAINS} up to {INTERLEAVE_MAX_STATES} "
                                    f"states, 1 (one chain at a time) above"
                                    if INTERLEAVE_MAX_STATES else "default 1, one chain at a time")
                                 + " (measured in benchmarks/RESULTS.md)")
        from bayesfa.samplers.pfa.auto import add_auto_arguments

        add_auto_arguments(parser)  # --auto --budget --schedule (bayesfa.samplers.pfa.auto)
        from bayesfa.samplers.pfa.sharded import add_shard_arguments

        add_shard_arguments(parser)  # --shards --scheduler --workers (bayesfa.samplers.pfa.sharded)

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        """Peak bytes of ``fit`` and of ``predict_log_prob`` on a corpus of this size: the
        kernel's chain state (``c``, ``ct``, ``z``, positions, uniforms) of each running chain,
        every chain's recorded counts twice (per chain, then stacked), one chain more while a
        resumed or parallel chain is read back; for Eq. 6, the counts, a chunk of plug-in ``xi~``
        (three float64 copies) and the forward pass, over bounded blocks of strings
        (:func:`bayesfa.memory.eq6_bytes`).

        ``options["interleave"]``: the chains of a process run at once, each state twice.

        ``options["max_draws"] = K``: K draws' counts kept per chain, plus a scratch buffer of
        a few draws. ``options["predict_sha256"]`` (set by ``bayesfa fit --predict``): the
        online Eq. 6 of each block of draws during the fit, for a test set taken to be the
        size of ``corpus`` (as for ``predict_log_prob``)."""
        from bayesfa.memory import eq6_bytes, forward_bytes
        from bayesfa.samplers.pfa._cgs_pfa_kernel import padded_width

        if options.get("auto"):  # N chosen by the fit: bayesfa.samplers.pfa.auto
            from bayesfa.samplers.pfa.auto import estimate_memory

            return estimate_memory(corpus, options, front=sys.modules[__name__])
        n, a, chains = options["states"], corpus.alphabet_size + 1, options["chains"]
        draws = draws_per_chain(options)
        kept = len(kept_draw_indices(draws, options.get("max_draws")))
        jobs = min(options.get("jobs", 1), chains)
        size = (n + 1) * a * (n + 1)                       # one recorded C_iaj (int32)
        chain = kept * size * 4 + draws * 16              # + log joint, states and edges used
        scratch = 0 if kept == draws else min(draws, _SCRATCH_DRAWS) * size * 4
        width = np.dtype(count_dtype(corpus.n_tokens)).itemsize  # c and ct: float32 or float64
        state = 2 * (n + 1) * a * padded_width(n) * width + corpus.n_tokens * 20 + scratch
        if options.get("split_merge"):  # the move's scratch: members (int64) and saved (int32)
            state += corpus.n_tokens * 12
        if options.get("blocked_every"):  # the blocked move's theta and filters (float64)
            longest = int(np.diff(corpus.offsets).max()) if corpus.n_strings else 0
            state += ((n + 1) * a + max(1, longest)) * (n + 1) * 8
        if options.get("replicas", 1) > 1:  # every replica's z and counts
            state += (options["replicas"] - 1) * (2 * (n + 1) * a * padded_width(n) * 4
                                                  + corpus.n_tokens * 4)
            # the uniforms of the sweeps running at once (float64, one per position)
            threads = min(options.get("replica_threads", 1), options["replicas"])
            state += (threads - 1) * corpus.n_tokens * 8
        if choose_kernel(options.get("kernel", "gibbs"), n) == "alias-mh":
            # the other block's counts and the alias tables (2 A (N+1) tables of N slots)
            state += 2 * (n + 1) * a * padded_width(n) * 4 + 2 * a * (n + 1) * n * 12
        elif choose_kernel(options.get("kernel", "gibbs"), n) == "bucket-mh":
            from bayesfa.samplers.pfa._cgs_pfa_bucket_kernel import scratch_bytes

            state += scratch_bytes(n, a, corpus.n_tokens)  # each block's counts and the buckets
        samples = chains * kept

        def eq6_work(k):  # a chunk of k plug-in xi~ (three float64 copies) and its forward pass
            return 3 * k * size * 8 + forward_bytes(k, n + 1, corpus)

        chunk = max(1, _XI_CHUNK_BYTES // (8 * size))
        k = min(samples, chunk)
        if options.get("predict_sha256"):  # each block's draws (a scratch's with a cap) scored
            block = min(draws, chunk, _SCRATCH_DRAWS if scratch else draws)
            state += eq6_work(block) + corpus.n_strings * 8
        group = min(interleave_size(options.get("interleave"),
                                    choose_kernel(options.get("kernel", "gibbs"), n), n), -(-chains // jobs))
        if group > 1:  # interleaved (--interleave): a process's chains at once, and their stacked copy
            state *= 2 * group
        stored = chains * chain
        fit = max(stored + state, 2 * stored) + chain
        if jobs > 1:  # each worker: its chain state, its draws and their pickle
            fit += jobs * (state + 2 * chain)
        if options.get("shards") is not None:  # --shards: every chain's shards live at once (on
            fit += (chains - 1) * state          # this machine's workers with --scheduler local)
        # Eq. 6 of every draw, over blocks of strings (bayesfa.forward.log_mean_exp_by_strings)
        predict = samples * size * 4 + eq6_bytes(samples, k, size * 8, n + 1, corpus)
        return int(max(fit, predict))

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool,
            workdir: str | os.PathLike | None = None, predict: Corpus | None = None) -> FitResult:
        """The chains of :func:`sample_cgs_pfa`; with ``predict`` (test strings), the arrays
        also hold ``predict_log_mean`` (Eq. 6 accumulated online over all draws) and
        ``predict_n_draws``, which :func:`bayesfa.online.fit_and_predict` takes out.
        ``options["auto"]``: N and beta chosen within ``options["budget"]`` CPU seconds,
        :func:`bayesfa.samplers.pfa.auto.fit_auto`. ``options["shards"]``: the strings split
        across a Dask cluster, :func:`bayesfa.samplers.pfa.sharded.fit_sharded`."""
        from bayesfa.samplers.pfa.sharded import fit_sharded, is_sharded

        if is_sharded(options):
            return _fit_result(fit_sharded(corpus, options, seed, progress, front=sys.modules[__name__],
                                           workdir=workdir, predict=predict), predict)
        from bayesfa.samplers.pfa.auto import AUTO_OPTIONS

        if any(options.get(k) is not None for k in AUTO_OPTIONS[1:]) or options.get("auto"):
            if options.get("anneal"):
                raise InputError("--anneal is not available with --auto")
            if options.get("split_merge"):
                raise InputError("--split-merge is not available with --auto")
            if options.get("blocked_every"):
                raise InputError("--blocked-every is not available with --auto (the final chains' "
                                 "blocked moves: --final-blocked-every K, 0 = off)")
            if options.get("replicas", 1) > 1:
                raise InputError("--replicas is not available with --auto")
            from bayesfa.samplers.pfa.auto import check_auto_options, fit_auto

            check_auto_options(options)
            return fit_auto(corpus, options, seed, predict=predict, front=sys.modules[__name__])
        res = sample_cgs_pfa(corpus, n_states=options["states"], beta=options["beta"],
                             iterations=options["iterations"], burn_in=options["burn_in"],
                             period=options["period"], chains=options["chains"], seed=seed,
                             jobs=options.get("jobs", 1), progress=progress, checkpoint_dir=workdir,
                             checkpoint_every=options.get("checkpoint_every", CHECKPOINT_EVERY),
                             holdout=options.get("holdout", 0.0), predict=predict,
                             max_draws=options.get("max_draws"),
                             kernel=choose_kernel(options.get("kernel", "gibbs"), options["states"]),
                             interleave=options.get("interleave"),
                             anneal=options.get("anneal", 0),
                             anneal_start=options.get("anneal_start", ANNEAL_START),
                             split_merge=options.get("split_merge", 0),
                             split_merge_scans=options.get("split_merge_scans", SPLIT_MERGE_SCANS),
                             blocked_every=options.get("blocked_every", 0),
                             replicas=options.get("replicas", 1),
                             swap_every=options.get("swap_every", SWAP_EVERY),
                             replica_min_b=options.get("replica_min_b", REPLICA_MIN_B),
                             replica_threads=options.get("replica_threads", 1))
        return _fit_result(res, predict)

    def predict_log_prob(self, arrays: dict[str, np.ndarray], options: dict[str, Any],
                         corpus: Corpus) -> np.ndarray:
        # a --auto run keeps the beta it chose in its arrays
        return predict_log_prob(arrays["counts"], float(arrays.get("beta", options["beta"])), corpus)

    def draw_grid(self, arrays: dict[str, np.ndarray]) -> tuple[int, int]:
        return tuple(np.shape(arrays["counts"])[:2])

    def kept_draws(self, options: dict[str, Any], n_draws: int):
        return kept_draw_indices(n_draws, options.get("max_draws"))

    def draw_pfa(self, arrays, options, chain: int, k: int) -> PFA:
        """The plug-in ``xi~`` of stored draw ``(chain, k)`` (Sect. 2.3; :func:`plugin_xi`, the
        code of :func:`plugin_log_prob`) as a PFA."""
        beta = float(arrays.get("beta", options["beta"]))
        return PFA.from_xi(plugin_xi(np.asarray(arrays["counts"][chain, k]), beta))


METHOD = _CGSPFA()
