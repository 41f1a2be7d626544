"""iPFA: the infinite PFA, a fully connected PFA under a hierarchical Dirichlet process prior,
by the weak-limit blocked sampler (the default, issue 38) or collapsed direct-assignment Gibbs
sampling (``--sampler direct``, issue 23).

The model and the sweep are in :mod:`bayesfa.samplers.pfa._ipfa_kernel`: ``beta ~ GEM(gamma)``
over the states, ``xi_i ~ DP(alpha, H)`` over (letter, next state) with ``H(a, j) = beta_j /
A`` and ``H(end) = 1 / A``, so that with ``beta`` uniform on ``N`` states and ``alpha = N A
beta`` it is the prior of Eq. 2 of Shibata & Yoshinaka (2013) (their Sect. 5 names this model
as future work). This front checks arguments, spawns one Generator per chain from
``np.random.SeedSequence(seed)``, runs the chains (growing the kernel's arrays with the
states in use), and records each draw's counts and the posterior mean of ``beta`` given its
table counts.

``--sampler blocked`` (``sampler="blocked"``, the default) runs the weak-limit blocked
sampler of :mod:`bayesfa.samplers.pfa._ipfa_blocked_kernel` (Fox, Sudderth, Jordan & Willsky
2011), by default with an annealed start (:data:`ANNEAL_SWEEPS`, :data:`IPFA_ANNEAL_START`):
the model truncated to ``L = --truncate`` states (0: :func:`default_truncation`), each sweep
a direct-assignment sweep of the truncated model (which opens states) and then every string's
path redrawn by forward filtering-backward sampling
(:func:`~bayesfa.samplers.pfa._ipfa_blocked_kernel.build_hybrid`), ``alpha`` and ``gamma``
sampled or fixed; its draws are stored as the truncated direct sampler's, with the
states in use (not ``L``) as ``n_states``.

Prediction (Eq. 6): the mean over draws of ``Pr(b | xi~(s))`` with each draw's plug-in
``xi~ = E[xi | z, m, alpha, gamma]`` (``m`` the draw's table counts),

    ``xi~_iaj = (C_iaj + alpha beta~_j / A) / (C_i + alpha)``, ``xi~_i00 = (C_i00 + alpha / A) / (C_i + alpha)``,
    ``beta~_k = m_.k / (m.. + gamma)``, and a new state of mass ``beta~_u = gamma / (m.. + gamma)``
    whose own row is ``H~`` (``beta~_j / A``, ``beta~_u / A`` to itself, ``1 / A`` to the end).

All states not in use behave alike under ``xi~`` (their rows are all ``H~``), so lumping them
into the one new state is exact, and every string has a positive probability. With
``--truncate L`` (the weak-limit model): ``beta~_k = (gamma / L + m_.k) / (gamma + m..)`` and no
new state.

Counts: the chains keep ``C_iaj`` in float32 below 2**24 tokens and in float64 from 2**24
tokens on (:func:`bayesfa.samplers.pfa.cgs_pfa.count_dtype`, CGS-PFA's rule), exact either
way; both samplers' kernels run either type, and ``info["count_dtype"]`` (the manifest)
records it.

Online (``fit(..., predict=TEST)``, ``bayesfa fit --predict TEST``, the units of ``bayesfa
pautomac run``): each draw's ``log Pr(b | xi~(s))`` for the test strings is folded into a
:class:`bayesfa.online.LogMeanAccumulator` as the draw is made, and ``max_draws = K`` keeps the
counts of only K draws per chain (:func:`bayesfa.samplers.pfa.cgs_pfa.kept_draw_indices`), so a
long chain's memory does not grow with its draws (each draw's counts grow with its states in
use). The plug-in of each draw is the one above, new state included; the result equals Eq. 6
over the stored draws (:func:`predict_log_prob`) up to the order of the floating-point sums.

References: C. Shibata and R. Yoshinaka, Machine Learning (2013), Sect. 2.1-2.3 (Eq. 2, 4, 6,
9) and 5; Y. W. Teh, M. I. Jordan, M. J. Beal and D. M. Blei, "Hierarchical Dirichlet
processes", JASA 101 (2006), Sect. 5.3, 7 and App. A; M. D. Escobar and M. West, JASA 90
(1995), Sect. 6.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from bayesfa.automata import PFA
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.forward import forward_log_prob, log_mean_exp_by_strings, xi_to_pfa
from bayesfa.methods import (FitResult, add_mcmc_arguments, draws_per_chain, nonnegative_int,
                             positive_float)
from bayesfa.samplers.chains import (CHECKPOINT_EVERY, add_checkpoint_argument,
                                     block_sweeps, check_chain_arguments, check_checkpoint_every,
                                     check_generator_state, corrupt_checkpoint, chain_path,
                                     digest, free_positions, generator_state, map_chains,
                                     n_free_positions,
                                     read_checkpoint, save_checkpoint)
from bayesfa.samplers.pfa._ffbs_kernel import SLICE_MUTATIONS
from bayesfa.samplers.pfa._ipfa_blocked_kernel import PATHS  # --paths: the blocked step 2
from bayesfa.samplers.pfa.auto import budget_arg, cpu_seconds
from bayesfa.samplers.pfa.cgs_pfa import (KEPT_DRAWS_RULE, add_anneal_arguments,
                                         count_dtype, kept_draw_indices)
from bayesfa.samplers.plugin import DrawAutomata

_BLOCK_SWEEPS = 64  # burn-in sweeps per kernel call at most (never changes the result)
#: ... and about this many (state capacity x free positions) units of work per call, so that
#: a checkpoint check and a progress report come every second or so on large data.
_BLOCK_UNITS = 25_000_000
_XI_CHUNK_BYTES = 1 << 26
#: Default Gamma (shape, rate) hyperpriors of alpha and gamma (mean 10, sd 10).
ALPHA_PRIOR = "1,0.1"
GAMMA_PRIOR = "1,0.1"
#: ``--sampler`` values of ``ipfa`` (the first the default: measured better, issue 38).
SAMPLERS = ("blocked", "direct")
#: The blocked sampler's default annealed start (issue 38): the first ``ANNEAL_SWEEPS`` sweeps
#: (or the whole burn-in if shorter) at an inverse temperature rising from ``IPFA_ANNEAL_START``.
#: Chosen on held-out *training* strings of a generated 40-state PFA (benchmarks/RESULTS.md,
#: "The annealed iPFA against the plain blocked sampler at equal sweeps"), not on test strings.
ANNEAL_SWEEPS = 300
IPFA_ANNEAL_START = 0.5
#: The default schedule (sweeps per chain, burn-in), the one measured for the default sampler.
ITERATIONS, BURN_IN = 2000, 1000
#: The blocked sampler warns when the states in use reach this fraction of its truncation.
TRUNCATION_WARN = 0.9


#: The blocked sampler's smallest default truncation (issue 38): starts of up to this many / 2
#: states sample one and the same weak-limit model.
MIN_DEFAULT_TRUNCATION = 200


def default_truncation(states: int, n_letters: int) -> int:
    """The blocked sampler's truncation ``L`` when ``--truncate`` is 0: ``max(2 states, min(200,
    n_letters))``.

    ``L`` is part of the model (``beta ~ Dir(gamma/L, ..)``), so a default that followed the
    start (``max(2 states, 20)`` before) made starts of 10 and of 100 states sample two
    different posteriors, the first capped at 20 states (a generated 40-state PFA's chains
    filled it; benchmarks/RESULTS.md, issue 38 item 1). A path of ``n_letters`` letters uses at
    most that many states, so a corpus of fewer than 200 letters gets ``L = n_letters`` (at
    least ``2 states``): every path still fits, and the FFBS (``O(L^2)`` a token) does not pay
    for labels no path can fill."""
    return max(2 * int(states), min(MIN_DEFAULT_TRUNCATION, int(n_letters)))


#: States in use assumed by :meth:`_IPFA.estimate_memory` (they are not known before the fit).
MEMORY_STATES_FACTOR, MEMORY_STATES_MIN = 4, 100


def parse_gamma_prior(text) -> tuple[float, float] | None:
    """``"SHAPE,RATE"`` -> ``(shape, rate)`` of a Gamma hyperprior; ``"fixed"`` -> None. An
    :class:`InputError` otherwise."""
    text = str(text).strip()
    if text == "fixed":
        return None
    try:
        shape, rate = (float(x) for x in text.split(","))
    except ValueError:
        raise InputError(f"a hyperprior must be SHAPE,RATE or fixed, got {text!r}") from None
    if not (np.isfinite(shape) and np.isfinite(rate) and shape > 0 and rate > 0):
        raise InputError(f"a Gamma hyperprior needs shape > 0 and rate > 0, got {text!r}")
    return shape, rate


def _prior_arg(text: str) -> str:
    try:
        parse_gamma_prior(text)
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text.strip()


class IPFAResult(NamedTuple):
    """Samples of the iPFA (``K`` = the most states any kept draw used).

    counts : int32 ``[chain, kept, K+1, A, K+1]``, ``C_iaj`` of each kept draw (labels
        ``1..K_s`` in use, zeros past them); every draw without ``max_draws``, else the draws
        :func:`~bayesfa.samplers.pfa.cgs_pfa.kept_draw_indices` names (``kept``).
    beta_bar : float64 ``[chain, kept, K+1]``, ``E[beta_k | m]`` at ``k = 1..K``, and at 0
        the new-state mass ``beta~_u`` (module docstring).
    alpha, gamma : float64 ``[chain, draw]``, every draw's hyperparameters.
    log_joint : float64 ``[chain, draw]``, ``log Pr(data, z | beta, alpha)`` (Eq. 4 with the
        prior ``alpha H``; :func:`bayesfa.samplers.pfa._ipfa_kernel.log_joint`).
    n_states : int32 ``[chain, draw]``, states in use (besides 0).
    z : int32 ``[chain, T + 1]``, the last state path of each chain.
    info : timings and sizes.
    moved : float64 ``[chain, draw]``, the fraction of the free positions whose state changed,
        per sweep, over each draw's sweeps (the sampler statistic of
        :data:`bayesfa.rundir.SAMPLE_STATS`; a relabelling is not a move; with ``--sampler
        blocked`` step 0's moves and step 2's changes added, so up to 2).
    beta : float64 ``[chain, kept, K+1]``, the sampled weights ``beta_k`` each kept draw's
        log joint is conditioned on (``beta[0] = beta_u``), for the ``recorded`` check.
    tables : int64 ``[chain, kept, K+1]``, the table counts ``m_.k`` behind ``beta_bar``
        (slot 0 unused, 0).
    """

    counts: np.ndarray
    beta_bar: np.ndarray
    alpha: np.ndarray
    gamma: np.ndarray
    log_joint: np.ndarray
    n_states: np.ndarray
    z: np.ndarray
    info: dict[str, Any]
    kept: np.ndarray | None = None
    predict_log_mean: np.ndarray | None = None
    moved: np.ndarray | None = None
    beta: np.ndarray | None = None
    tables: np.ndarray | None = None

    @property
    def kept_alpha(self) -> np.ndarray:
        """``alpha`` ``[chain, kept]`` of the kept draws (what the plug-in of ``counts`` needs)."""
        return self.alpha if self.kept is None else self.alpha[:, self.kept]

    @property
    def kept_gamma(self) -> np.ndarray:
        """``gamma`` ``[chain, kept]`` of the kept draws (behind their ``beta_bar``)."""
        return self.gamma if self.kept is None else self.gamma[:, self.kept]


def lump_unused(counts: np.ndarray, beta_bar: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each sample's labels not in use (``C_k = 0``) merged into its new state: ``counts [S, K+1,
    A, K+1]``, ``beta_bar [S, K+1]`` -> the same over ``K' + 1`` (``K'`` the most labels any
    sample uses), each sample's labels in use first in their order, ``beta_bar[:, 0]`` plus the
    unused labels' ``beta~``.

    Exact for the plug-in (module docstring): a label no path visits has no counts in or out,
    so under ``xi~`` its row is ``H~``, like the new state's, and the mass into it is ``alpha
    beta~_k / A`` a letter; states with one row are lumped into one with the summed mass without
    changing any string's probability. A truncated draw (``--truncate L``, the blocked sampler)
    keeps all ``L`` labels and no new state; lumped, it is a draw over its states in use and
    one new state, as the HDP's are, so Eq. 6 and the exported automaton cost those states, not
    ``L``. An HDP draw (labels ``1..K_s`` in use, zeros past them) is unchanged but for its
    trailing padding."""
    counts = np.asarray(counts)
    beta_bar = np.asarray(beta_bar, dtype=np.float64)
    s = counts.shape[0]
    used = counts[:, 1:].sum(axis=(2, 3)) > 0  # [S, K]: C_k > 0
    order = np.argsort(~used, axis=1, kind="stable") + 1  # in use first, in label order
    if used.all():  # every label in use (an HDP batch of one size): nothing to lump
        return counts, beta_bar
    k_new = int(used.sum(axis=1).max()) if s else 0
    keep = np.concatenate([np.zeros((s, 1), dtype=order.dtype), order[:, :k_new]], axis=1)
    rows = np.arange(s)[:, None]
    out = counts[rows, keep]                                  # [S, K'+1, A, K+1]
    out = np.take_along_axis(out, keep[:, None, None, :], axis=3)
    in_use = np.take_along_axis(used, keep[:, 1:] - 1, axis=1)  # padding past K_s: not in use
    bar = np.zeros((s, k_new + 1))
    bar[:, 1:] = np.where(in_use, np.take_along_axis(beta_bar, keep[:, 1:], axis=1), 0.0)
    bar[:, 0] = beta_bar[:, 0] + np.where(used, 0.0, beta_bar[:, 1:]).sum(axis=1)
    return out, bar  # (a label not in use has no counts in or out: its rows and columns are 0)


def plugin_xi(counts: np.ndarray, beta_bar: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """The plug-in ``xi~`` of each sample (module docstring), with the new state last, the
    labels not in use lumped into it first (:func:`lump_unused`).

    counts ``[S, K+1, A, K+1]``, beta_bar ``[S, K+1]``, alpha ``[S]`` -> float64
    ``[S, K'+2, A, K'+2]`` (states ``0..K'``, ``K'`` the most labels a sample uses, and the
    new state ``K'+1``)."""
    counts, beta_bar = lump_unused(counts, beta_bar)
    counts = np.asarray(counts, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=np.float64).reshape(-1)
    s, k1, n_symbols, _ = counts.shape
    q = k1 + 1
    prior = np.zeros((s, n_symbols, q))
    prior[:, 1:, 1:k1] = (alpha[:, None] * beta_bar[:, 1:] / n_symbols)[:, None, :]
    prior[:, 1:, k1] = (alpha * beta_bar[:, 0] / n_symbols)[:, None]
    prior[:, 0, 0] = alpha / n_symbols
    xi = np.broadcast_to(prior[:, None], (s, q, n_symbols, q)).copy()
    xi[:, :k1, :, :k1] += counts
    return xi / xi.sum(axis=(-2, -1), keepdims=True)


def plugin_log_prob(counts, beta_bar, alpha, corpus: Corpus) -> np.ndarray:
    """``log Pr(b | xi~(s))`` ``[S, n_strings]`` for samples ``counts [S, K+1, A, K+1]``."""
    counts = np.asarray(counts)
    n_letters = counts.shape[-2] - 1
    if corpus.alphabet_size > n_letters:
        raise InputError(f"the strings use {corpus.alphabet_size} letters, the model was trained "
                         f"on {n_letters}")
    corpus = corpus.with_alphabet(n_letters)
    per = 8 * (counts.shape[-1] + 1) ** 2 * counts.shape[-2]
    chunk = max(1, _XI_CHUNK_BYTES // per)
    out = np.empty((counts.shape[0], corpus.n_strings))
    for lo in range(0, counts.shape[0], chunk):
        xi = plugin_xi(counts[lo:lo + chunk], np.asarray(beta_bar)[lo:lo + chunk],
                       np.asarray(alpha).reshape(-1)[lo:lo + chunk])
        out[lo:lo + chunk] = forward_log_prob(*xi_to_pfa(xi), corpus)
    return out


def _flat(arrays: dict[str, np.ndarray]):
    counts = np.asarray(arrays["counts"])
    flat = counts.reshape((-1,) + counts.shape[-3:])
    beta_bar = np.asarray(arrays["beta_bar"]).reshape(flat.shape[0], -1)
    return flat, beta_bar, np.asarray(arrays["alpha"]).reshape(-1)


def per_sample_log_prob(arrays: dict[str, np.ndarray], corpus: Corpus) -> np.ndarray:
    """``log Pr(b | xi~(s))`` ``[chain, draw, n_strings]`` from a fit's arrays."""
    shape = np.shape(arrays["counts"])[:2]
    return plugin_log_prob(*_flat(arrays), corpus).reshape(shape + (-1,))


def predict_log_prob(arrays: dict[str, np.ndarray], corpus: Corpus) -> np.ndarray:
    """Eq. 6: ``log`` of the mean of ``Pr(b | xi~(s))`` over every draw of every chain."""
    flat, beta_bar, alpha = _flat(arrays)
    return log_mean_exp_by_strings(lambda part: plugin_log_prob(flat, beta_bar, alpha, part),
                                   flat.shape[0], corpus)


class _Chain:
    """One chain's kernel state (module docstring of the kernel), grown on demand."""

    def __init__(self, tokens, n_symbols, k0, rng, alpha, gamma, truncate, capacity=None,
                 start=None):
        from bayesfa.samplers.pfa import _ipfa_kernel as kern

        self.dtype = count_dtype(tokens.size)  # of c, ct, recip, bk: float32 or float64

        self.tokens = tokens
        self.positions = free_positions(tokens)
        self.uniforms = np.zeros(self.positions.size)
        self.truncated = truncate > 0
        z = np.zeros(tokens.size + 1, dtype=np.int32)
        if self.truncated:  # the initial path over states 1..start (all L when None)
            z[self.positions] = rng.integers(1, (start or truncate) + 1, size=self.positions.size,
                                             dtype=np.int32)
            cap = truncate
            beta = np.zeros(cap + 1)
            beta[1:] = 1.0 / truncate
        else:
            z[self.positions] = rng.integers(1, k0 + 1, size=self.positions.size, dtype=np.int32)
            used = np.unique(z[self.positions])
            relabel = np.zeros(k0 + 1, dtype=np.int32)
            relabel[used] = np.arange(1, used.size + 1, dtype=np.int32)
            z = relabel[z]
            cap = kern.padded_width(max(2 * used.size, 1)) - 1 if capacity is None else capacity
            beta = np.zeros(cap + 1)
            beta[:used.size + 1] = 1.0 / (used.size + 1)  # beta[0] = beta_u
        self.z = z
        self.hyper = np.array([alpha, gamma], dtype=np.float64)
        self._allocate(cap, n_symbols)
        self.beta[:] = beta
        kern.fill_state(tokens, z, self.c, self.ct, self.ci, self.recip, self.bk, self.beta,
                        self.meta, self.hyper[0], self.truncated)

    @classmethod
    def restore(cls, tokens, n_symbols, z, beta, hyper, truncate):
        """The chain at a sweep boundary from its saved ``z``, ``beta`` (labels ``0..K``) and
        ``(alpha, gamma)``: the counts and weights are recomputed exactly as each sweep ends."""
        from bayesfa.samplers.pfa import _ipfa_kernel as kern

        self = cls.__new__(cls)
        self.tokens = tokens
        self.dtype = count_dtype(tokens.size)
        self.positions = free_positions(tokens)
        self.uniforms = np.zeros(self.positions.size)
        self.truncated = truncate > 0
        self.z = np.array(z, dtype=np.int32)
        self.hyper = np.array(hyper, dtype=np.float64)
        k = beta.size - 1
        self._allocate(truncate if self.truncated else kern.padded_width(max(2 * k, 1)) - 1, n_symbols)
        self.beta[:k + 1] = beta
        kern.fill_state(tokens, self.z, self.c, self.ct, self.ci, self.recip, self.bk, self.beta,
                        self.meta, self.hyper[0], self.truncated)
        return self

    def _allocate(self, cap, n_symbols):
        from bayesfa.samplers.pfa._ipfa_kernel import padded_width

        w = padded_width(cap)
        self.c = np.zeros((cap + 1, n_symbols, w), dtype=self.dtype)
        self.ct = np.zeros((n_symbols, cap + 1, w), dtype=self.dtype)
        self.ci = np.zeros(cap + 1, dtype=np.int32)
        self.recip = np.zeros(w, dtype=self.dtype)
        self.bk = np.zeros(w, dtype=self.dtype)
        self.beta = np.zeros(cap + 1)
        self.meta = np.zeros(3, dtype=np.int64)  # K, highest label, positions moved
        self.mcol = np.zeros(cap + 1, dtype=np.int64)
        self.mrow = np.zeros(cap + 1, dtype=np.int64)

    @property
    def capacity(self) -> int:
        return self.c.shape[0] - 1

    def grow(self):
        """Twice the room, the same labels and values (results do not depend on it)."""
        from bayesfa.samplers.pfa._ipfa_kernel import padded_width

        old = (self.c, self.ct, self.ci, self.recip, self.bk, self.beta, self.meta, self.mcol,
               self.mrow)
        k1, w = self.c.shape[0], self.c.shape[2]
        self._allocate(padded_width(2 * self.capacity) - 1, self.c.shape[1])
        self.c[:k1, :, :w] = old[0]
        self.ct[:, :k1, :w] = old[1]
        self.ci[:k1] = old[2]
        self.recip[:w] = old[3]
        self.bk[:w] = old[4]
        self.beta[:k1] = old[5]
        self.meta[:] = old[6]
        self.mcol[:k1] = old[7]
        self.mrow[:k1] = old[8]

    def run(self, n_sweeps, rng, priors, sweeps):
        done, start = 0, 0
        while done < n_sweeps:
            s, start = sweeps(n_sweeps - done, start, self.positions, self.uniforms, self.tokens,
                              self.z, self.c,
                              self.ct, self.ci, self.recip, self.bk, self.beta, self.meta,
                              self.mcol, self.mrow, self.hyper, priors, rng, self.truncated)
            done += s
            if done < n_sweeps:
                self.grow()

    def draw(self, mutation=None):
        """``(counts [K+1, A, K+1] int32, beta_bar [K+1], log joint, K, beta [K+1], m [K+1])``
        now (labels 1..K): ``beta`` the weights the log joint is conditioned on (``beta[0] =
        beta_u``), ``m`` the table counts ``m_.k`` behind ``beta_bar`` (``m[0] = 0``).
        ``mutation``: only :data:`~bayesfa.samplers.pfa._ipfa_kernel.RECORDING_MUTATIONS`
        reach the log joint."""
        from bayesfa.samplers.pfa._ipfa_kernel import log_joint

        k = int(self.meta[1])
        counts = self.c[:k + 1, :, :k + 1].astype(np.int32)
        alpha, gamma = self.hyper
        m = self.mcol[1:k + 1].astype(np.float64)
        beta_bar = np.zeros(k + 1)
        if self.truncated:
            beta_bar[1:] = (gamma / k + m) / (gamma + m.sum())
        else:
            beta_bar[1:] = m / (m.sum() + gamma)
            beta_bar[0] = gamma / (m.sum() + gamma)
        lj = log_joint(self.c, self.ci, self.beta, self.meta, alpha,
                       mutation == "log-joint-end-prior")
        tables = np.zeros(k + 1, dtype=np.int64)
        tables[1:] = self.mcol[1:k + 1]
        return counts, beta_bar, lj, int(self.meta[0]), self.beta[:k + 1].copy(), tables


class _BlockedChain(_Chain):
    """One chain of the weak-limit blocked sampler (:mod:`bayesfa.samplers.pfa._ipfa_blocked_kernel`):
    the truncated chain state, its initial path over states ``1..k0`` of the ``L``, and the
    FFBS scratch. Its draws report the states in use (``C_k > 0``), not ``L``."""

    def __init__(self, tokens, n_symbols, k0, rng, alpha, gamma, truncate):
        super().__init__(tokens, n_symbols, k0, rng, alpha, gamma, truncate, start=k0)
        self._scratch(n_symbols)

    @classmethod
    def restore(cls, tokens, n_symbols, z, beta, hyper, truncate):
        self = super().restore(tokens, n_symbols, z, beta, hyper, truncate)
        self._scratch(n_symbols)
        return self

    def _scratch(self, n_symbols):
        from bayesfa.samplers.pfa._ipfa_blocked_kernel import scratch

        self.theta, self.filt = scratch(self.tokens, self.capacity, n_symbols)

    def run(self, n_sweeps, rng, priors, sweeps):
        """``n_sweeps`` sweeps of ``sweeps`` (:func:`~bayesfa.samplers.pfa._ipfa_blocked_kernel.build_hybrid`:
        step 0, the direct-assignment sweep, then the blocked steps 1-6)."""
        sweeps(n_sweeps, self.positions, self.uniforms, self.tokens, self.z, self.c, self.ct,
               self.ci, self.recip, self.bk, self.beta, self.meta, self.mcol, self.mrow,
               self.hyper, priors, rng, self.theta, self.filt)

    def draw(self, mutation=None):
        from bayesfa.samplers.pfa._cgs_pfa_kernel import n_states_used

        counts, beta_bar, lj, _, beta, tables = super().draw(mutation)
        return counts, beta_bar, lj, int(n_states_used(self.ci)), beta, tables


_CHAIN_FORMAT = "bayesfa-ipfa-chain/4"  # 3: moved per draw (issue 36); 4: kept beta, tables (39)
_TRACE_FIELDS = ("log_joint", "n_states", "alpha", "gamma", "moved")  # every draw
_KEPT_FIELDS = ("counts", "beta_bar", "beta_draw", "tables")  # the kept draws only
_DRAW_FIELDS = _KEPT_FIELDS + _TRACE_FIELDS
_STATE_FIELDS = _DRAW_FIELDS + ("sizes", "z", "beta", "hyper", "seconds", "sweeps_done",
                                "draws_done", "rng_state", "pred_log_sum")


def _chain_fingerprint(tokens, settings: dict, seed_seq: np.random.SeedSequence) -> str:
    """What determines a chain's output (the data by SHA-256, the settings with the test
    strings predicted online and the cap on kept draws, the chain's seed; not ``jobs`` nor the
    checkpoint interval), as a string."""
    return json.dumps({"format": _CHAIN_FORMAT, "tokens": digest(tokens), **settings,
                       "entropy": str(seed_seq.entropy), "spawn_key": list(seed_seq.spawn_key)},
                      sort_keys=True)


def _pack(out: dict) -> dict:
    """The draws of ``out`` as arrays (the kept counts and beta_bar padded to the largest)."""
    kept = len(out["counts"])
    sizes = np.array([c.shape[0] for c in out["counts"]], dtype=np.int64)
    k1 = int(sizes.max()) if kept else 1
    a = out["counts"][0].shape[1] if kept else 1
    counts = np.zeros((kept, k1, a, k1), dtype=np.int32)
    beta_bar = np.zeros((kept, k1))
    beta = np.zeros((kept, k1))
    tables = np.zeros((kept, k1), dtype=np.int64)
    for i in range(kept):
        counts[i, :sizes[i], :, :sizes[i]] = out["counts"][i]
        beta_bar[i, :sizes[i]] = out["beta_bar"][i]
        beta[i, :sizes[i]] = out["beta_draw"][i]
        tables[i, :sizes[i]] = out["tables"][i]
    packed = {k: np.asarray(out[k], dtype=np.int64 if k == "n_states" else np.float64)
              for k in _TRACE_FIELDS}
    return {"counts": counts, "beta_bar": beta_bar, "beta_draw": beta, "tables": tables,
            "sizes": sizes, **packed}


def _unpack(state: dict) -> dict:
    out = {k: [x for x in np.asarray(state[k])] for k in _TRACE_FIELDS}
    sizes = np.asarray(state["sizes"])
    out["counts"] = [state["counts"][i, :n, :, :n] for i, n in enumerate(sizes)]
    out["beta_bar"] = [state["beta_bar"][i, :n] for i, n in enumerate(sizes)]
    out["beta_draw"] = [state["beta_draw"][i, :n] for i, n in enumerate(sizes)]
    out["tables"] = [state["tables"][i, :n] for i, n in enumerate(sizes)]
    return out


def _load_chain(path, fingerprint: str, *, n_draws: int, z_size: int, burn_in: int,
                period: int, max_draws: int | None = None, n_test: int = 0) -> dict | None:
    """A chain state saved at ``path`` (finished or not), None if saved for another run, an
    :class:`InputError` naming the file if it is inconsistent."""
    state = read_checkpoint(path, fingerprint, _STATE_FIELDS)
    if state is None:
        return None
    d, done = int(state["draws_done"]), int(state["sweeps_done"])
    n_kept = int(np.searchsorted(kept_draw_indices(n_draws, max_draws), d)) if d <= n_draws else -1
    ok = (0 <= d <= n_draws and state["z"].shape == (z_size,) and state["hyper"].shape == (2,)
          and all(state[k].shape[:1] == (d,) for k in _TRACE_FIELDS)
          and all(state[k].shape[:1] == (n_kept,) for k in _KEPT_FIELDS + ("sizes",))
          and state["pred_log_sum"].shape == (n_test,)
          and done == (min(done, burn_in) if d == 0 else burn_in + d * period))
    if not ok:
        raise corrupt_checkpoint(path, "its arrays do not match its settings")
    if d < n_draws:
        check_generator_state(path, state["rng_state"])
    return state


def _run_chain(tokens, n_symbols, k0, alpha, gamma, priors, truncate, burn_in, period, n_draws,
               seed_seq, mutation=None, capacity=None, checkpoint=None,
               checkpoint_every=CHECKPOINT_EVERY, fingerprint=None, resume=None, predict=None,
               max_draws=None, on_sweeps=None, alpha_hold=0, sampler="direct",
               split_merge=(0.0, None), anneal=(0, 1.0), pace=None, paths="dense"):
    """One chain (``sampler``: ``direct`` or ``blocked``, the weak limit's blocked sampler
    with ``truncate`` states, its initial path over ``k0`` of them): random initial ``z`` over ``k0`` states (or the ``truncate`` states), burn-in,
    then ``n_draws`` draws ``period`` sweeps apart. Returns a dict of per-draw lists
    (``counts`` and ``beta_bar`` of the kept draws only) and ``pred_log_sum``.
    ``alpha_hold``: the first that many sweeps (all in the burn-in) keep ``alpha`` at its
    initial value, its prior applying after. ``anneal``: ``(A, b0)``, the blocked sampler's
    first ``A`` sweeps (all in the burn-in) draw their paths at inverse temperature
    :func:`bayesfa.samplers.pfa.cgs_pfa.anneal_b` (from ``b0`` up to 1; the kernel's fifth
    ``priors`` entry), one sweep a call. ``split_merge``: ``(moves per sweep, launch
    scans)`` of the blocked sampler's split-merge move
    (:func:`~bayesfa.samplers.pfa._ipfa_blocked_kernel.build_hybrid`); ``paths``: its step 2,
    ``dense`` or ``slice`` (``--paths``).
    ``capacity``: the kernel's initial room for states (tests; never changes the result).

    ``predict`` (a :class:`Corpus` with the training alphabet): each draw's plug-in ``log Pr(b
    | xi~(s))`` (Eq. 6's terms, the new state included) is folded into a
    :class:`bayesfa.online.LogMeanAccumulator` as the draw is made (``pred_log_sum``, float64
    ``[n_test]``). ``max_draws``: only the draws ``kept_draw_indices(n_draws, max_draws)``
    keep their counts; the trace keeps every draw. Neither changes the chain.

    ``checkpoint`` (a path): the chain state (``z``, ``beta``, ``(alpha, gamma)``, the
    Generator's state, the draws so far) is saved there atomically, at a sweep boundary, at
    most every ``checkpoint_every`` seconds; ``resume`` (a state of :func:`_load_chain`)
    continues it, bit-identical to an uninterrupted chain.

    ``on_sweeps(n)``: called after each kernel call with its ``n`` sweeps (first with the
    sweeps done before a resume); the sweeps run in blocks of at most :data:`_BLOCK_SWEEPS`
    and about :data:`_BLOCK_UNITS` units (a draw's ``period`` sweeps too), which never
    change the chain.

    ``pace``: ``(cpu_seconds, draw_seconds)`` (``--budget``, :func:`budget_options`; no
    checkpoint then): the burn-in runs, one sweep a call, until this thread has spent half of
    ``cpu_seconds`` (and at least the ``anneal`` and ``alpha_hold`` sweeps, and one; the
    ``burn_in`` given is not used), and the ``n_draws`` draws are then ``period`` sweeps apart, the
    period sized from the mean CPU of the burn-in's last sweeps so that the chain ends near
    ``cpu_seconds`` (a draw's online Eq. 6 counted as ``draw_seconds``). The realized
    ``burn_in`` and ``period`` are returned in the output: the same chain, bit for bit, as one
    run with them (a kernel call of one sweep or of many gives the same chain).
    """
    from bayesfa.online import LogMeanAccumulator
    if sampler == "blocked":
        from bayesfa.samplers.pfa._ipfa_blocked_kernel import build_hybrid as build_sweeps
        chain_type = _BlockedChain
    else:
        from bayesfa.samplers.pfa._ipfa_kernel import build_sweeps
        chain_type = _Chain

    sweeps = (build_sweeps(mutation, *split_merge, paths=paths) if sampler == "blocked"
              else build_sweeps(mutation))
    rng = np.random.default_rng(seed_seq)
    priors = np.asarray(priors, dtype=np.float64)
    kept = kept_draw_indices(n_draws, max_draws)
    acc = LogMeanAccumulator(0 if predict is None else predict.n_strings)
    out = {k: [] for k in _DRAW_FIELDS}
    if resume is None:
        chain = (_BlockedChain(tokens, n_symbols, k0, rng, alpha, gamma, truncate)
                 if sampler == "blocked" else
                 _Chain(tokens, n_symbols, k0, rng, alpha, gamma, truncate, capacity))
        done, seconds_before = 0, 0.0
    else:
        rng.bit_generator.state = json.loads(str(resume["rng_state"]))
        chain = chain_type.restore(tokens, n_symbols, resume["z"], np.asarray(resume["beta"]),
                               resume["hyper"], truncate)
        out = _unpack(resume)
        acc = LogMeanAccumulator.from_state(resume["pred_log_sum"], int(resume["draws_done"]))
        done, seconds_before = int(resume["sweeps_done"]), float(resume["seconds"])
    t0 = time.perf_counter()
    last_save = time.monotonic()

    def save(force=False):
        nonlocal last_save
        if checkpoint is None or not (force or time.monotonic() - last_save >= checkpoint_every):
            return
        k = int(chain.meta[1])
        save_checkpoint(checkpoint, fingerprint, {
            **_pack(out), "z": chain.z, "beta": chain.beta[:k + 1],
            "hyper": chain.hyper, "seconds": seconds_before + time.perf_counter() - t0,
            "sweeps_done": done, "draws_done": len(out["log_joint"]),
            "rng_state": generator_state(rng), "pred_log_sum": acc.log_sum})
        last_save = time.monotonic()

    if on_sweeps is not None and done:
        on_sweeps(done)

    def block() -> int:
        return min(_BLOCK_SWEEPS, block_sweeps(_BLOCK_UNITS, chain.capacity, chain.positions.size))

    held = priors.copy()
    held[:2] = 0.0  # alpha fixed (shape <= 0), gamma as given
    from bayesfa.samplers.pfa.cgs_pfa import anneal_b

    spent: list[float] = []  # with pace: each burn-in sweep's CPU seconds
    t_cpu = time.thread_time()

    def burning() -> bool:
        if pace is None:
            return done < burn_in
        if done < max(anneal[0], alpha_hold, 1):
            return True
        return time.thread_time() - t_cpu < 0.5 * pace[0]

    while burning():
        hold = done < alpha_hold
        if pace is not None:  # one sweep a call, timed
            t_sweep = time.thread_time()
            chain.run(1, rng, np.append(held if hold else priors,
                                        anneal_b(done, anneal[0], anneal[1]))
                      if done < anneal[0] else (held if hold else priors), sweeps)
            spent.append(time.thread_time() - t_sweep)
            done += 1
            if on_sweeps is not None:
                on_sweeps(1)
            continue
        if done < anneal[0]:  # one tempered sweep a call, b from the sweep's index
            step = 1
            chain.run(1, rng, np.append(held if hold else priors,
                                        anneal_b(done, anneal[0], anneal[1])), sweeps)
        else:
            step = min(block(), (alpha_hold if hold else burn_in) - done)
            chain.run(step, rng, held if hold else priors, sweeps)
        done += step
        save()
        if on_sweeps is not None:
            on_sweeps(step)
    if pace is not None:  # the period that spends the rest of the chain's CPU
        burn_in = done
        recent = spent[-max(1, min(10, len(spent) // 4)):]
        per_sweep = max(float(np.mean(recent)), 1e-9)
        rest = pace[0] - (time.thread_time() - t_cpu) - n_draws * pace[1]
        period = max(1, int(rest / (n_draws * per_sweep)))
    while len(out["log_joint"]) < n_draws:
        moved_before = int(chain.meta[2])
        left = period
        while left > 0:  # a draw's sweeps in blocks too (progress and Ctrl-C between calls)
            step = min(block(), left)
            chain.run(step, rng, priors, sweeps)
            left -= step
            if on_sweeps is not None:
                on_sweeps(step)
        done += period
        counts, beta_bar, lj, k, beta, tables = chain.draw(mutation)
        if predict is not None:  # Eq. 6's term of this draw, folded in now
            acc.add(plugin_log_prob(counts[None], beta_bar[None], chain.hyper[:1], predict))
        d = len(out["log_joint"])
        if d == kept[np.searchsorted(kept, d)]:  # kept ends at the last draw: in range
            out["counts"].append(counts)
            out["beta_bar"].append(beta_bar)
            out["beta_draw"].append(beta)
            out["tables"].append(tables)
        out["log_joint"].append(lj)
        out["n_states"].append(k)
        out["alpha"].append(chain.hyper[0])
        out["gamma"].append(chain.hyper[1])
        out["moved"].append((int(chain.meta[2]) - moved_before)
                            / max(1, period * chain.positions.size))
        save()
    save(force=True)
    out["z"] = chain.z.copy()
    out["seconds"] = seconds_before + time.perf_counter() - t0
    out["capacity"] = chain.capacity
    out["pred_log_sum"] = acc.log_sum
    out["burn_in"], out["period"] = int(burn_in), int(period)
    return out


def sample_ipfa(corpus: Corpus, *, states: int = 10, iterations: int = ITERATIONS,
                burn_in: int = BURN_IN,
                period: int = 10, chains: int = 4, seed: int = 0, alpha: float = 1.0,
                gamma: float = 1.0, alpha_prior: str = ALPHA_PRIOR, gamma_prior: str = GAMMA_PRIOR,
                truncate: int = 0, jobs: int = 1, mutation: str | None = None,
                checkpoint_dir: str | os.PathLike | None = None,
                checkpoint_every: float = CHECKPOINT_EVERY, predict: Corpus | None = None,
                max_draws: int | None = None, progress: bool = False,
                alpha_hold: int = 0, sampler: str = SAMPLERS[0], split_merge: float = 0.0,
                split_merge_scans: int | None = None, anneal: int | None = None,
                anneal_start: float = IPFA_ANNEAL_START,
                pace: tuple[float, float] | None = None, paths: str | None = None) -> IPFAResult:
    """Run ``chains`` chains of the iPFA sampler on ``corpus``.

    states : states of the random initial ``z`` (the sampler adds and removes states).
    alpha, gamma : initial concentrations (their values throughout when the prior is ``fixed``).
    alpha_prior, gamma_prior : ``"SHAPE,RATE"`` of a Gamma hyperprior, or ``"fixed"``.
    truncate : 0 for the HDP; ``L > 0`` for the weak-limit model with ``L`` states
        (``gamma`` then fixed with the direct sampler). With ``sampler="blocked"``, ``L``
        (0: :func:`default_truncation` of ``states`` and the letters), ``gamma`` sampled or
        fixed.
    sampler : ``"direct"`` (collapsed direct-assignment Gibbs, :mod:`._ipfa_kernel`) or
        ``"blocked"`` (the default: the weak limit's blocked sampler, :mod:`._ipfa_blocked_kernel`: every
        path redrawn by FFBS each sweep; ``states`` then only starts the path).
    alpha_hold : the first ``alpha_hold`` sweeps of each chain (at most ``burn_in``) keep
        ``alpha`` at ``alpha``; ``alpha_prior`` applies after them. A start of the burn-in
        only: the draws are of the same posterior.
    anneal, anneal_start : blocked sampler only: the first ``anneal`` sweeps of each chain (at
        most ``burn_in``) draw their paths at an inverse temperature rising geometrically from
        ``anneal_start`` to 1 (:func:`bayesfa.samplers.pfa.cgs_pfa.anneal_b`;
        :func:`~bayesfa.samplers.pfa._ipfa_blocked_kernel.build_sweeps`): flatter paths that
        open the empty states, forgetting the start. A start of the burn-in only: the draws
        are of the same posterior. 0: none; None (default): :data:`ANNEAL_SWEEPS` or the
        whole burn-in if shorter with the blocked sampler, none with the direct one.
    split_merge, split_merge_scans : blocked sampler only: split-merge moves per sweep (a
        fraction: that probability of one more) after each sweep, and their launch scans
        (None: :data:`bayesfa.samplers.pfa._ipfa_split_kernel.SCANS`); 0 (default) none.
    paths : blocked sampler only: how its step 2 redraws every path given ``theta``:
        ``"slice"`` (None, the default, is it with the blocked sampler), the slice-sampled
        FFBS (:func:`~bayesfa.samplers.pfa._ffbs_kernel.build_slice`: the beam sampler's
        auxiliary slices, Van Gael et al. 2008, on the weak limit), at the cost of the cells
        above their slices a token; ``"dense"``, forward filtering-backward sampling,
        ``O(L^2)`` a token; the same target (a slice mutant implies ``"slice"``). Slice is
        the default since it passed issue 38's 40-state measurement from both starts at a
        third to a fifth of dense's CPU (``benchmarks/RESULTS.md``).
    mutation : a deliberately wrong kernel (validation only; ``_ipfa_kernel.MUTATIONS``).
    checkpoint_dir : where each chain keeps its state (``chain-CCCC.npz``); a chain found
        there finished is reused, one found unfinished resumes (bit-identical).
    predict : test strings whose Eq. 6 is accumulated online, draw by draw (the result's
        ``predict_log_mean``, over every draw of every chain).
    max_draws : keep the counts of only this many draws per chain (``kept_draw_indices``;
        the result's ``kept``); never changes the chains nor ``predict_log_mean``.
    progress : a tqdm bar of sweeps on standard error, moving after every kernel call, when
        the chains run in this process (``jobs`` 1; :func:`bayesfa.samplers.chains.progress_callback`);
        never changes the result.
    pace : ``(cpu_seconds, draw_seconds)`` of ``--budget`` (:func:`budget_options`): chain 0
        paces its burn-in and its draws' period by the CPU it spends (:func:`_run_chain`),
        and the other chains run the schedule it realized (``info["burn_in"]``,
        ``info["period"]``), so the fit is the fit of those options with this seed, bit for
        bit; ``burn_in`` and ``period`` given here are the plan's (the anneal and the alpha
        hold are fixed by them). No checkpoints (``checkpoint_dir`` must be None).
    """
    if pace is not None and checkpoint_dir is not None:
        raise InputError("a paced (--budget) iPFA fit keeps no checkpoints: give no checkpoint_dir")
    n_draws = check_chain_arguments(corpus, states, 1.0, iterations, burn_in, period, chains, jobs,
                                    alpha=alpha, gamma=gamma)
    if isinstance(truncate, bool) or not isinstance(truncate, (int, np.integer)) or truncate < 0:
        raise InputError(f"truncate must be an integer >= 0, got {truncate!r}")
    a_prior = parse_gamma_prior(alpha_prior)
    g_prior = parse_gamma_prior(gamma_prior)
    from bayesfa.samplers.pfa._ipfa_blocked_kernel import MUTATIONS as BLOCKED_MUTATIONS

    if sampler not in SAMPLERS:
        raise InputError(f"--sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
    if mutation is not None and (mutation in BLOCKED_MUTATIONS) != (sampler == "blocked"):
        raise InputError(f"mutation {mutation!r} is not of the {sampler} sampler")
    if paths is not None and paths not in PATHS:
        raise InputError(f"--paths must be one of {', '.join(PATHS)}, got {paths!r}")
    if mutation in SLICE_MUTATIONS:
        paths = "slice"
    if paths is not None and sampler != "blocked":
        raise InputError(f"--paths {paths} needs --sampler blocked")
    if sampler == "blocked" and paths is None:
        paths = PATHS[0]
    if sampler == "blocked":
        truncate = int(truncate) or default_truncation(states, corpus.n_letters)
        if states > truncate:
            raise InputError(f"--states {states} exceeds the truncation --truncate {truncate} "
                             f"of the blocked sampler")
    elif truncate and g_prior is not None:
        raise InputError("--truncate keeps gamma fixed: give --gamma-prior fixed with it")
    if (isinstance(split_merge, bool)
            or not isinstance(split_merge, (int, float, np.integer, np.floating))
            or not 0 <= split_merge < math.inf):
        raise InputError(f"--split-merge must be a number >= 0, got {split_merge!r}")
    if split_merge_scans is not None and (isinstance(split_merge_scans, bool) or not isinstance(
            split_merge_scans, (int, np.integer)) or split_merge_scans < 0):
        raise InputError(f"--split-merge-scans must be an integer >= 0, got {split_merge_scans!r}")
    if split_merge and sampler != "blocked":
        raise InputError("--split-merge needs --sampler blocked")
    if anneal is None:  # the default: the annealed start with the blocked sampler only
        anneal = min(ANNEAL_SWEEPS, int(burn_in)) if sampler == "blocked" else 0
    if isinstance(anneal, bool) or not isinstance(anneal, (int, np.integer)) \
            or not 0 <= anneal <= burn_in:
        raise InputError(f"--anneal must be an integer from 0 to the burn-in ({burn_in}), "
                         f"got {anneal!r}")
    if isinstance(anneal_start, bool) or not isinstance(anneal_start, (int, float, np.floating)) \
            or not 0.0 < anneal_start <= 1.0:
        raise InputError(f"--anneal-start must be a number in (0, 1], got {anneal_start!r}")
    if anneal and sampler != "blocked":
        raise InputError("--anneal needs --sampler blocked")
    if isinstance(alpha_hold, bool) or not isinstance(alpha_hold, (int, np.integer)) \
            or not 0 <= alpha_hold <= burn_in:
        raise InputError(f"alpha_hold must be an integer from 0 to the burn-in ({burn_in}), "
                         f"got {alpha_hold!r}")
    from bayesfa.online import check_online_arguments

    predict = check_online_arguments(corpus, predict, max_draws)
    kept = kept_draw_indices(n_draws, max_draws)
    priors = [*(a_prior or (0.0, 0.0)), *(g_prior or (0.0, 0.0))]
    tokens = np.ascontiguousarray(corpus.tokens, dtype=np.int32)
    n_symbols = corpus.alphabet_size + 1
    children = np.random.SeedSequence(seed).spawn(chains)
    checkpoint_every = check_checkpoint_every(checkpoint_every)
    settings = {"n_symbols": n_symbols, "states": int(states), "alpha": float(alpha),
                "gamma": float(gamma), "priors": [float(x) for x in priors],
                "truncate": int(truncate), "burn_in": int(burn_in), "period": int(period),
                "n_draws": int(n_draws), "mutation": mutation,
                "predict": None if predict is None else [digest(predict.tokens),
                                                         digest(predict.offsets)],
                "max_draws": None if max_draws is None else int(max_draws)}
    if alpha_hold:  # (absent when 0: the fingerprints of earlier checkpoints stay as they were)
        settings["alpha_hold"] = int(alpha_hold)
    if sampler != "direct":  # (likewise)
        settings["sampler"] = sampler
    from bayesfa.samplers.pfa._ipfa_split_kernel import SCANS as SPLIT_SCANS

    split = (float(split_merge),
             SPLIT_SCANS if split_merge_scans is None else int(split_merge_scans))
    if split_merge:  # (likewise)
        settings["split_merge"] = list(split)
    if anneal:  # (likewise)
        settings["anneal"] = [int(anneal), float(anneal_start)]
    if paths == "slice":  # (likewise: dense, the default before slice, as it was)
        settings["paths"] = paths
    dtype = np.dtype(count_dtype(tokens.size)).name  # the chains' counts (c, ct): exact
    if dtype != "float32":  # (likewise)
        settings["count_dtype"] = dtype
    prints = [_chain_fingerprint(tokens, settings, s) for s in children]
    chain_files: list = [None] * chains
    saved: list = [None] * chains
    if checkpoint_dir is not None:
        Path(checkpoint_dir).mkdir(parents=True, exist_ok=True)
        chain_files = [chain_path(checkpoint_dir, c) for c in range(chains)]
        saved = [_load_chain(p, f, n_draws=n_draws, z_size=tokens.size + 1, burn_in=burn_in,
                             period=period, max_draws=max_draws,
                             n_test=0 if predict is None else predict.n_strings)
                 if p.exists() else None for p, f in zip(chain_files, prints)]
    outs: list = [None] * chains
    for c, state in enumerate(saved):
        if state is not None and int(state["draws_done"]) == n_draws:
            outs[c] = {**_unpack(state), "z": np.asarray(state["z"]),
                       "seconds": float(state["seconds"]), "capacity": 0,
                       "pred_log_sum": np.asarray(state["pred_log_sum"], dtype=np.float64)}
    todo = [c for c in range(chains) if outs[c] is None]
    workers = min(jobs, max(1, len(todo)))
    from bayesfa.samplers.chains import progress_callback

    sweeps_per_chain = burn_in + n_draws * period
    on_sweeps, close = progress_callback(progress, workers, chains * sweeps_per_chain, "ipfa")
    if on_sweeps is not None and len(todo) < chains:  # finished chains: done
        on_sweeps((chains - len(todo)) * sweeps_per_chain)
    def chain_args(c, burn, per, paced=None):
        return (tokens, n_symbols, int(states), float(alpha), float(gamma), priors, int(truncate),
                int(burn), int(per), int(n_draws), children[c], mutation, None, chain_files[c],
                checkpoint_every, prints[c], saved[c], predict, max_draws, on_sweeps, int(alpha_hold),
                sampler, split, (int(anneal), float(anneal_start)), paced, paths)

    t0 = time.perf_counter()
    try:
        if pace is not None:  # chain 0 finds the schedule, the others run it
            outs[0] = _run_chain(*chain_args(0, burn_in, period, tuple(map(float, pace))))
            burn_in, period = outs[0]["burn_in"], outs[0]["period"]
            todo = todo[1:]
        args = [chain_args(c, burn_in, period) for c in todo]
        for c, out in zip(todo, map_chains(_run_chain, args, workers)):
            outs[c] = out
    finally:
        close()
    seconds = time.perf_counter() - t0
    k_max = max(max(c.shape[0] for c in o["counts"]) for o in outs) - 1
    counts = np.zeros((chains, kept.size, k_max + 1, n_symbols, k_max + 1), dtype=np.int32)
    beta_bar = np.zeros((chains, kept.size, k_max + 1))
    beta = np.zeros((chains, kept.size, k_max + 1))
    tables = np.zeros((chains, kept.size, k_max + 1), dtype=np.int64)
    for ch, o in enumerate(outs):
        for d, (c, b) in enumerate(zip(o["counts"], o["beta_bar"])):
            counts[ch, d, :c.shape[0], :, :c.shape[0]] = c
            beta_bar[ch, d, :b.size] = b
            beta[ch, d, :b.size] = o["beta_draw"][d]
            tables[ch, d, :b.size] = o["tables"][d]
    stack = {k: np.array([o[k] for o in outs]) for k in _TRACE_FIELDS}
    positions = n_free_positions(tokens)
    info = {
        "n_draws_per_chain": int(n_draws),
        "n_free_positions": int(positions),
        "n_tokens": int(tokens.size),
        "count_dtype": dtype,  # the chains' counts (c, ct; count_dtype of cgs_pfa)
        "truncate": int(truncate),
        "max_states_in_use": int(stack["n_states"].max()),  # over every draw, not only the kept
        "seconds": seconds,
        "chain_seconds": [float(o["seconds"]) for o in outs],
        "capacity": [int(o["capacity"]) for o in outs],
        "mutation": mutation,
        "chains_resumed": int(chains - len(todo)),
        "chains_resumed_mid_chain": int(sum(saved[c] is not None for c in todo)),
        "max_draws": None if max_draws is None else int(max_draws),
        "kept_draws_per_chain": int(kept.size),
        "kept_draws_rule": KEPT_DRAWS_RULE,
        "predict_strings": None if predict is None else int(predict.n_strings),
        "sampler": sampler,
        "paths": paths if sampler == "blocked" else None,
        "anneal": [int(anneal), float(anneal_start)],  # resolved (the option's default is None)
        "burn_in": int(burn_in), "period": int(period),  # as run (paced by chain 0 with pace)
    }
    if sampler == "blocked":  # the weak limit: are the L states enough?
        used = int(stack["n_states"].max())
        info["truncation_used_fraction"] = used / truncate
        if used >= TRUNCATION_WARN * truncate:
            msg = (f"ipfa --sampler blocked: up to {used} of the {truncate} states in use "
                   f"(>= {TRUNCATION_WARN:.0%}); the truncation may bind: rerun with a larger "
                   f"--truncate")
            info["warning"] = msg
            warnings.warn(msg, stacklevel=2)
    predict_log_mean = None
    if predict is not None:  # Eq. 6 over every draw of every chain (same count per chain)
        from bayesfa.online import combine_log_means

        predict_log_mean = combine_log_means(
            np.stack([o["pred_log_sum"] for o in outs]) - np.log(n_draws), np.full(chains, n_draws))
    return IPFAResult(counts, beta_bar, stack["alpha"], stack["gamma"], stack["log_joint"],
                      stack["n_states"].astype(np.int32), np.stack([o["z"] for o in outs]), info,
                      None if kept.size == n_draws else kept, predict_log_mean,
                      stack["moved"].astype(np.float64), beta, tables)


# -- --budget (issue 38): the sweeps sized to a CPU budget ---------------------------------

#: With ``--budget``, the chains are planned to spend this fraction of it (the rest covers the
#: calibration's error); the calibration's own CPU is spent from it first.
BUDGET_TARGET = 0.95
#: The calibration times the sampler on the first strings of at most this many tokens (the
#: blocked sampler's sweep is linear in the tokens at a fixed truncation) ...
BUDGET_CALIBRATION_TOKENS = 5_000
#: ... over this many sweeps (the difference of two runs, so that set-up and a draw cancel).
BUDGET_TIMED_SWEEPS = 3
#: Draws per chain at most, and the share of a chain's CPU their online Eq. 6 may take.
BUDGET_MAX_DRAWS, BUDGET_DRAW_SHARE = 100, 0.25
#: Fewer sweeps per chain than this: the budget is refused as too small.
BUDGET_MIN_SWEEPS = 4


def budget_plan(sweep_seconds: float, draw_seconds: float, money: float, chains: int) -> dict | None:
    """The schedule ``--budget`` runs (a pure function of its costs): each of ``chains``
    chains gets ``money / chains`` CPU seconds, spent on ``S`` sweeps of ``sweep_seconds`` and
    ``D`` draws of ``draw_seconds`` (a draw's online Eq. 6 of the test strings; 0 without them),
    ``D`` at most :data:`BUDGET_MAX_DRAWS`, at most :data:`BUDGET_DRAW_SHARE` of the chain's
    CPU and at most the second half of its sweeps; the first half (and what the draws' period
    leaves over) is burn-in. ``{"iterations", "burn_in", "period", "n_draws"}``, or None when
    fewer than :data:`BUDGET_MIN_SWEEPS` sweeps fit."""
    each = money / max(1, int(chains))
    draws = BUDGET_MAX_DRAWS
    if draw_seconds > 0:
        draws = min(draws, int(BUDGET_DRAW_SHARE * each / draw_seconds))
    draws = max(1, draws)
    sweeps = int((each - draws * draw_seconds) / sweep_seconds) if each > draws * draw_seconds else 0
    if sweeps - sweeps // 2 < draws:  # short chains: a draw after every sweep of the second half
        draws = max(1, int(each / (2 * sweep_seconds + draw_seconds)))
        sweeps = int((each - draws * draw_seconds) / sweep_seconds) if each > draws * draw_seconds else 0
        draws = max(1, min(draws, sweeps - sweeps // 2))
    if sweeps < BUDGET_MIN_SWEEPS:
        return None
    period = (sweeps - sweeps // 2) // draws
    return {"iterations": int(sweeps), "burn_in": int(sweeps - draws * period), "period": int(period),
            "n_draws": int(draws)}


def budget_costs(corpus: Corpus, options: dict[str, Any], predict: Corpus | None) -> dict[str, float]:
    """``--budget``'s costs, timed here (CPU seconds of this thread): ``sweep_seconds``, one
    sweep of one chain on ``corpus``, and ``draw_seconds``. The sweep is timed on ``corpus``'s
    first strings of at most :data:`BUDGET_CALIBRATION_TOKENS` tokens (the difference of
    :func:`sample_ipfa` runs of 1 and ``1 + BUDGET_TIMED_SWEEPS`` burn-in sweeps, at the
    truncation ``corpus`` gets) and scaled by the free positions, the chain started on as many
    states as it can use (the truncation; ``max(4 x --states, 100)`` for the direct sampler): a
    sweep's cost grows with the states in use (the forward filter skips states without mass;
    PAutomaC 43: 0.16 CPU s a sweep at 12 states, 0.75 at 110), and the annealed start opens
    most of them, so this is near an upper bound and a chain that uses fewer spends less than
    its part. (Timed from the start's few states, the theta draw's ``O(L^2 A)`` cost a sweep
    made a proportional scaling too dear on small data, and a fit of a constant and a cost per
    token from two sizes, with the states collapsing at different speeds on the two, 2-4 times
    too dear.) ``draw_seconds``: one draw's online Eq. 6 of ``predict`` (a plug-in
    forward pass at the truncation's states, an upper bound; the blocked sampler's, or ``max(4
    x --states, 100)`` states for the direct one; 0 without ``predict``). The plan made from
    them fixes only the draws and the anneal: the chain is paced by the CPU it spends
    (:func:`_run_chain`'s ``pace``)."""
    sampler = options["sampler"]
    truncate = options["truncate"] or (default_truncation(options["states"], corpus.n_letters)
                                       if sampler == "blocked" else 0)
    # timed at the most states the chain can use (its truncation, or the direct sampler's
    # memory estimate): a sweep's cost grows with the states in use (PAutomaC 43: 0.16 CPU s at
    # 12 states, 0.75 at 110), and the annealed start opens most of the truncation
    busy = truncate or max(MEMORY_STATES_FACTOR * options["states"], MEMORY_STATES_MIN)
    timed = {**options, "states": busy, "truncate": truncate, "chains": 1, "jobs": 1, "period": 1,
             "anneal": 0, "alpha_hold": 0, "max_draws": None}

    def sweep(part: Corpus) -> float:
        def run(burn):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sample_ipfa(part, **{**timed, "iterations": burn + 1, "burn_in": burn})

        run(1)  # compiled or loaded from numba's cache (the first time)
        t0 = time.thread_time()
        run(1)
        t1 = time.thread_time()
        run(1 + BUDGET_TIMED_SWEEPS)
        t2 = time.thread_time()
        return max((t2 - t1) - (t1 - t0), 1e-9) / BUDGET_TIMED_SWEEPS

    n = max(1, int(np.searchsorted(corpus.offsets[1:], BUDGET_CALIBRATION_TOKENS, side="right")))
    part = corpus.subset(np.arange(min(n, corpus.n_strings)))
    per = sweep(part) / max(1, n_free_positions(part.tokens))
    out = {"sweep_seconds": max(per * n_free_positions(corpus.tokens), 1e-9),
           "draw_seconds": 0.0, "truncate": int(truncate)}
    if predict is not None and predict.n_strings:
        k = truncate or max(MEMORY_STATES_FACTOR * options["states"], MEMORY_STATES_MIN)
        a = corpus.alphabet_size + 1
        counts = np.ones((1, k + 1, a, k + 1), dtype=np.int32)
        bar = np.full((1, k + 1), 1.0 / (k + 1))
        sample = predict.with_alphabet(corpus.alphabet_size)
        plugin_log_prob(counts, bar, np.ones(1), sample)
        t0 = time.thread_time()
        plugin_log_prob(counts, bar, np.ones(1), sample)
        out["draw_seconds"] = time.thread_time() - t0
    return out


def budget_options(corpus: Corpus, options: dict[str, Any],
                   predict: Corpus | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(options, record)``: ``options`` (those of :meth:`_IPFA._options`) with the plan
    ``--budget`` affords at the sweep's most states (:func:`budget_costs`, :func:`budget_plan`:
    the chains get :data:`BUDGET_TARGET` of the budget less the timing's CPU) and ``pace``, each
    chain's part and a draw's cost, by which :func:`sample_ipfa` paces its first chain (a chain
    that uses fewer states than its truncation sweeps faster than planned: the plan fixes the
    draws, the anneal and the least burn-in, the CPU spent fixes the burn-in and the period);
    ``record``, kept in the fit's ``info["budget"]`` with the schedule run."""
    budget = float(options["budget"])
    start = cpu_seconds()
    costs = budget_costs(corpus, {k: v for k, v in options.items() if k != "budget"}, predict)
    spent = cpu_seconds() - start
    money = BUDGET_TARGET * budget - spent
    plan = budget_plan(costs["sweep_seconds"], costs["draw_seconds"], money, options["chains"])
    if plan is None:
        raise InputError(f"--budget {budget:g} CPU seconds is too small for these {corpus.n_tokens} "
                         f"tokens: a sweep of a chain costs up to {costs['sweep_seconds']:.3g} CPU s "
                         f"and each of {options['chains']} chains needs {BUDGET_MIN_SWEEPS} at least")
    record = {"budget": budget, "target": BUDGET_TARGET, **costs, "calibration_cpu": spent,
              "plan": plan}
    pace = (money / options["chains"], costs["draw_seconds"])
    return {**options, **{k: plan[k] for k in ("iterations", "burn_in", "period")}, "pace": pace}, record


class _IPFA(DrawAutomata):
    """The ``ipfa`` entry of :data:`bayesfa.methods.REGISTRY` (``mutation``: validation only).
    Its plug-in automata (:class:`~bayesfa.samplers.plugin.DrawAutomata`): each stored draw's
    ``xi~`` of :func:`plugin_xi`, new state included, unreachable labels left out; no
    posterior-mean automaton (the states in use differ from draw to draw)."""

    mean_plugin = False
    no_mean_reason = ("the states in use and their labels differ from draw to draw, so a mean "
                      "of the draws' parameters is not the parameters of any one automaton")
    trim = True

    name = "ipfa"
    resumable = True  # fit(..., workdir=) keeps chain states there (finished or not)
    online_predict = True  # fit(..., predict=TEST) accumulates Eq. 6 draw by draw (bayesfa.online)
    infers_states = True  # --states only starts the chains: summaries report the states in use
    summary = ("infinite PFA: HDP prior on a fully connected PFA, the number of states sampled "
               "(weak-limit blocked sampler with an annealed start; --sampler direct: collapsed "
               "direct-assignment Gibbs)")
    validation = "bayesfa.validation.pfa.ipfa:SPEC"

    def __init__(self, mutation: str | None = None):
        self.mutation = mutation

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_mcmc_arguments(parser, states=10, beta=None, iterations=ITERATIONS, burn_in=BURN_IN,
                           period=10)
        for action in parser._actions:  # the shared option, with what it means here
            if action.dest == "states":
                action.help = ("states of the random initial path (the number in use is "
                               "sampled; the blocked sampler's annealed start forgets this "
                               "start: from 10 and from 100 on a generated 40-state PFA the "
                               "states in use met, benchmarks/RESULTS.md; the direct sampler's "
                               "stay near it on large data); default 10")
        parser.add_argument("--alpha", type=positive_float, default=1.0,
                            help="initial concentration alpha of each state's DP over (letter, "
                                 "next state), then sampled under --alpha-prior; default 1")
        parser.add_argument("--gamma", type=positive_float, default=1.0,
                            help="initial concentration gamma of the states' weights beta ~ "
                                 "GEM(gamma); default 1")
        parser.add_argument("--alpha-prior", type=_prior_arg, default=ALPHA_PRIOR,
                            metavar="SHAPE,RATE|fixed",
                            help=f"Gamma hyperprior of alpha, or fixed; default {ALPHA_PRIOR}")
        parser.add_argument("--gamma-prior", type=_prior_arg, default=GAMMA_PRIOR,
                            metavar="SHAPE,RATE|fixed",
                            help=f"Gamma hyperprior of gamma, or fixed; default {GAMMA_PRIOR}")
        parser.add_argument("--truncate", type=nonnegative_int, default=0, metavar="L",
                            help="direct sampler: 0 (default) the HDP, states added and removed; "
                                 "L > 0 the weak-limit model with L states, beta ~ Dir(gamma/L, "
                                 "...) (needs --gamma-prior fixed). Blocked sampler: its L "
                                 "(0: max(2 x --states, 200), so starts up to 100 share one "
                                 "model; on fewer than 200 letters, their number), gamma "
                                 "sampled or fixed")
        parser.add_argument("--sampler", choices=SAMPLERS, default=SAMPLERS[0],
                            help="blocked (default): the weak-limit blocked sampler (Fox et al. "
                                 "2011), each sweep a direct-assignment sweep of the truncated "
                                 "model, then every string's path redrawn by forward "
                                 "filtering-backward sampling, O(L^2) per token; direct: "
                                 "collapsed direct-assignment Gibbs of the HDP, one position at "
                                 "a time")
        parser.add_argument("--paths", choices=PATHS, default=None,
                            help="blocked sampler: how each sweep redraws every string's path "
                                 "given the rows theta. slice (default): auxiliary slices "
                                 "under the current path's cells, then the path drawn on the "
                                 "cells above them (the beam sampler's step, Van Gael et al. "
                                 "2008, on the weak limit), each token costing the cells above "
                                 "its slice; dense: forward filtering-backward sampling, O(L^2) "
                                 "per token; the same target")
        parser.add_argument("--alpha-hold", type=nonnegative_int, default=0, metavar="SWEEPS",
                            help="keep alpha at --alpha for the first SWEEPS sweeps of the "
                                 "burn-in, its prior applying after (a start that mixes faster "
                                 "on large data; the draws are of the same posterior); default 0")
        parser.add_argument("--split-merge", type=float, default=0.0, metavar="RATE",
                            help="blocked sampler: split-merge moves per sweep (Jain & Neal "
                                 "2004's restricted Gibbs move on the paths given beta and "
                                 "alpha: a split fills an empty state of the truncation, a merge "
                                 "empties one; a fraction is that probability of one move); "
                                 "default 0, none")
        parser.add_argument("--split-merge-scans", type=nonnegative_int, default=None,
                            metavar="SCANS",
                            help="restricted Gibbs scans of each move's launch; default "
                                 "_ipfa_split_kernel.SCANS (100)")
        add_anneal_arguments(parser, "blocked sampler: the first SWEEPS sweeps of the burn-in "
                                     "draw their paths at an inverse temperature rising "
                                     "geometrically from --anneal-start to 1 (flatter paths that "
                                     "open empty states; the draws are of the same posterior); "
                                     f"default {ANNEAL_SWEEPS}, or the whole burn-in if shorter "
                                     "(0: off; none with --sampler direct)",
                             default=None, start=IPFA_ANNEAL_START)
        parser.add_argument("--budget", type=budget_arg, default=None, metavar="CPU_SECONDS",
                            help="CPU seconds (user + system) for the whole fit: a short timing "
                                 "plans the draws (at most 100) and the anneal, the first chain "
                                 "paces its burn-in (half its part) and its draws' period by the "
                                 "CPU it spends, the others run its schedule (--iterations, "
                                 "--burn-in, --period and --anneal are then ignored; the fit's "
                                 "info.budget records the schedule run, which those options "
                                 "repeat bit for bit; no checkpoints); default none")
        add_checkpoint_argument(parser)

    def _options(self, options: dict[str, Any]) -> dict[str, Any]:
        return dict(states=options["states"], iterations=options["iterations"],
                    burn_in=options["burn_in"], period=options["period"],
                    chains=options["chains"], alpha=options.get("alpha", 1.0),
                    gamma=options.get("gamma", 1.0),
                    alpha_prior=options.get("alpha_prior", ALPHA_PRIOR),
                    gamma_prior=options.get("gamma_prior", GAMMA_PRIOR),
                    truncate=options.get("truncate", 0), jobs=options.get("jobs", 1),
                    max_draws=options.get("max_draws"),
                    alpha_hold=options.get("alpha_hold", 0), sampler=self._sampler(options),
                    split_merge=options.get("split_merge", 0.0),
                    split_merge_scans=options.get("split_merge_scans"),
                    anneal=options.get("anneal"),
                    anneal_start=options.get("anneal_start", IPFA_ANNEAL_START),
                    paths=options.get("paths"))

    def _sampler(self, options: dict[str, Any]) -> str:
        """The blocked sampler for its own mutants, else ``--sampler``."""
        from bayesfa.samplers.pfa._ipfa_blocked_kernel import MUTATIONS as BLOCKED_MUTATIONS

        if self.mutation in BLOCKED_MUTATIONS:
            return "blocked"
        return options.get("sampler", SAMPLERS[0])

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        """Peak bytes of ``fit`` and ``predict_log_prob``, for ``K = max(4 x --states, 100)``
        states in use (or the truncation), which are not known before the fit: every kept
        draw's counts ``[K+1, A, K+1]`` (and its ``beta_bar``, ``beta``, tables) twice (per
        chain, then padded and stacked), each chain's kernel state (``c``, ``ct`` at twice
        ``K``, in float32 or from 2**24 tokens on in float64,
        :func:`~bayesfa.samplers.pfa.cgs_pfa.count_dtype`; ``z`` and positions; the blocked
        sampler's ``theta`` and filter, and with ``--paths slice`` the slice FFBS's sorted
        rows and supports), and for Eq. 6 a chunk of plug-in ``xi~`` (two float64 copies) with
        its forward pass.

        ``options["max_draws"] = K``: K draws' counts kept per chain.
        ``options["predict_sha256"]`` (set by ``bayesfa fit --predict``): each draw's online
        Eq. 6 during the fit (one ``xi~`` and its forward pass), for a test set taken to be
        the size of ``corpus`` (as for ``predict_log_prob``)."""
        from bayesfa.memory import forward_bytes
        from bayesfa.samplers.pfa._ipfa_kernel import padded_width

        k = options.get("truncate") or (default_truncation(options["states"], corpus.n_letters)
                                        if self._sampler(options) == "blocked" else
                                        max(MEMORY_STATES_FACTOR * options["states"], MEMORY_STATES_MIN))
        a, chains = corpus.alphabet_size + 1, options["chains"]
        draws = draws_per_chain(options)
        kept = len(kept_draw_indices(draws, options.get("max_draws")))
        size = (k + 1) * a * (k + 1)
        stored = 2 * chains * (kept * (size * 4 + (k + 1) * 24 + 8) + draws * 40)
        cap = padded_width(2 * k)
        width = np.dtype(count_dtype(corpus.n_tokens)).itemsize  # c and ct: float32 or float64
        state = 2 * (cap + 1) * a * cap * width + corpus.n_tokens * 16
        if self._sampler(options) == "blocked":  # theta and the FFBS filter (at most T rows)
            state += (k + 1) ** 2 * a * 8 + corpus.n_tokens * (k + 1) * 8
            if (options.get("paths") or PATHS[0]) == "slice" or self.mutation in SLICE_MUTATIONS:
                # build_slice's rows in order (int32) and their counts, each filter row's
                # support (int32) with its size, and the slices
                state += (k + 1) * a * (k * 4 + 8) + corpus.n_tokens * ((k + 1) * 4 + 16)
        if options.get("predict_sha256"):  # one draw's xi~ (two copies) and forward pass,
            # its log Pr row (plugin_log_prob's out) and the chain's running log-sum of Eq. 6
            state += (2 * (k + 2) ** 2 * a * 8 + forward_bytes(1, k + 2, corpus)
                      + 2 * corpus.n_strings * 8)
        jobs = min(options.get("jobs", 1), chains)
        fit = stored + jobs * state
        samples = chains * kept
        chunk = max(1, min(samples, _XI_CHUNK_BYTES // (8 * (k + 2) ** 2 * a)))
        work = 2 * chunk * (k + 2) ** 2 * a * 8 + forward_bytes(chunk, k + 2, corpus)
        predict = stored // 2 + work + 2 * samples * corpus.n_strings * 8
        return int(max(fit, predict))

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool,
            workdir: str | os.PathLike | None = None, predict: Corpus | None = None) -> FitResult:
        """The chains of :func:`sample_ipfa`; with ``predict`` (test strings), the arrays also
        hold ``predict_log_mean`` (Eq. 6 accumulated online over every draw) and
        ``predict_n_draws``, which :func:`bayesfa.online.fit_and_predict` takes out."""
        start, opts, record = cpu_seconds(), self._options(options), None
        if options.get("budget") is not None:
            budget = options["budget"]
            if isinstance(budget, bool) or not isinstance(budget, (int, float)) \
                    or not (budget > 0 and math.isfinite(budget)):
                raise InputError(f"--budget must be a positive finite number of CPU seconds, "
                                 f"got {budget!r}")
            opts, record = budget_options(corpus, {**opts, "budget": float(budget)}, predict)
            opts.pop("budget")
            workdir = None  # a paced fit keeps no checkpoints: an interrupted one starts again
        res = sample_ipfa(corpus, seed=seed, mutation=self.mutation, checkpoint_dir=workdir,
                          checkpoint_every=options.get("checkpoint_every", CHECKPOINT_EVERY),
                          predict=predict, progress=progress, **opts)
        if record is not None:  # the schedule run, which --iterations/--burn-in/--period repeat
            burn, period, draws = res.info["burn_in"], res.info["period"], res.info["n_draws_per_chain"]
            res.info["budget"] = {**record, "iterations": burn + draws * period, "burn_in": burn,
                                  "period": period, "n_draws": draws, "anneal": res.info["anneal"][0],
                                  "cpu_seconds": cpu_seconds() - start}
        trace = {"log_joint": res.log_joint, "n_states": res.n_states, "alpha": res.alpha,
                 "gamma": res.gamma, "moved": res.moved}
        arrays = {"counts": res.counts, "beta_bar": res.beta_bar, "alpha": res.kept_alpha,
                  "beta": res.beta, "tables": res.tables, "gamma": res.kept_gamma}
        if predict is not None:
            arrays["predict_log_mean"] = res.predict_log_mean
            arrays["predict_n_draws"] = np.int64(res.log_joint.size)
        return FitResult(arrays, trace, res.info)

    def predict_log_prob(self, arrays: dict[str, np.ndarray], options: dict[str, Any],
                         corpus: Corpus) -> np.ndarray:
        return predict_log_prob(arrays, corpus)

    def draw_grid(self, arrays: dict[str, np.ndarray]) -> tuple[int, int]:
        return tuple(np.shape(arrays["counts"])[:2])

    def kept_draws(self, options: dict[str, Any], n_draws: int):
        return kept_draw_indices(n_draws, options.get("max_draws"))

    def draw_pfa(self, arrays, options, chain: int, k: int) -> PFA:
        """:func:`plugin_xi` of stored draw ``(chain, k)`` (the code of
        :func:`plugin_log_prob`), the new state last, as a PFA."""
        xi = plugin_xi(np.asarray(arrays["counts"][chain, k])[None],
                       np.asarray(arrays["beta_bar"][chain, k])[None],
                       np.asarray(arrays["alpha"][chain, k]).reshape(1))[0]
        return PFA.from_xi(xi)


METHOD = _IPFA()
