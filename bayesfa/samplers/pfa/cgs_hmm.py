"""CGS-HMM and CGS-HMM(*): collapsed Gibbs sampling for HMMs (Shibata & Yoshinaka 2013, Sect. 4.4).

One sampler, two predictors. The chain samples ``z`` under the collapsed HMM
(``xi_iaj = eta_ia theta_ij``, ``eta_i ~ Dir(alpha)``, ``theta_i ~ Dir(beta)``; kernels in
:mod:`bayesfa.samplers.pfa._cgs_hmm_kernel`) and records ``C_iaj`` of each draw. Prediction is
Eq. 6 with

- ``cgs-hmm``: ``xi~ = E[eta_ia | z] E[theta_ij | z]`` (Eq. 20), i.e.
  ``(C_ia + alpha) / (C_i + A alpha) * (C_ij + beta) / (C_i - C_i0 + N beta)`` and
  ``xi~_i00 = (C_i0 + alpha) / (C_i + A alpha)``. Eq. 20 as printed has ``C_i + N beta`` in
  the second denominator, under which ``xi~_i`` does not sum to 1 when ``C_i0 > 0``; the
  posterior mean of ``theta_ij`` (``theta`` is used only after non-end letters, whose count
  out of ``i`` is ``C_i - C_i0``) is what is implemented.
- ``cgs-hmm-star``: ``xi~ = (C_iaj + beta) / (C_i + N A beta)`` (CGS-HMM(*); the CGS-PFA
  plug-in with its ``N beta`` on the end transition, :func:`bayesfa.samplers.pfa.cgs_pfa.plugin_xi`).

Reference: C. Shibata and R. Yoshinaka, "A comparison of collapsed Bayesian methods for
probabilistic finite automata", Machine Learning 96, 2014, Sect. 4.4, Eq. 20, Fig. 10, Table 2.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable, NamedTuple

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.forward import forward_log_prob, log_mean_exp, xi_to_pfa
from bayesfa.methods import FitResult, add_mcmc_arguments, positive_float
from bayesfa.samplers.chains import check_chain_arguments, free_positions, map_chains

_XI_CHUNK_BYTES = 1 << 26  # xi~ built for at most 64 MiB of samples at a time


class HMMResult(NamedTuple):
    """Samples of CGS-HMM: counts int32 ``[chain, draw, N+1, A, N+1]`` (``C_iaj``), log_joint
    float64 ``[chain, draw]`` (collapsed HMM), n_states / n_edges int32 ``[chain, draw]``,
    z int32 ``[chain, T+1]`` (last path), info."""

    counts: np.ndarray
    log_joint: np.ndarray
    n_states: np.ndarray
    n_edges: np.ndarray
    z: np.ndarray
    info: dict[str, Any]


# -- shared by the samplers of issue 7 (the chain loop's pieces: bayesfa.samplers.chains) -----

def random_path(tokens: np.ndarray, n_states: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random ``z`` (Algorithm 1, line 1): 0 where fixed, ``1..N`` elsewhere."""
    positions = free_positions(tokens)
    z = np.zeros(tokens.size + 1, dtype=np.int32)
    z[positions] = rng.integers(1, n_states + 1, size=positions.size, dtype=np.int32)
    return z


def chunked_log_prob(make_xi: Callable[[slice], np.ndarray], n_samples: int, sample_bytes: int,
                     corpus: Corpus, n_letters: int) -> np.ndarray:
    """``log Pr(b | xi_s)`` ``[S, n_strings]`` with ``xi_s = make_xi(slice)[s]``, built for at
    most 64 MiB of ``xi`` at a time (``sample_bytes`` per sample, float64)."""
    if corpus.alphabet_size > n_letters:
        raise InputError(f"the strings use {corpus.alphabet_size} letters, the model was trained "
                         f"on {n_letters}")
    corpus = corpus.with_alphabet(n_letters)
    chunk = max(1, _XI_CHUNK_BYTES // max(1, sample_bytes))
    out = np.empty((n_samples, corpus.n_strings))
    for lo in range(0, n_samples, chunk):
        sl = slice(lo, min(n_samples, lo + chunk))
        out[sl] = forward_log_prob(*xi_to_pfa(make_xi(sl)), corpus)
    return out


def stored_bytes(corpus: Corpus, options: dict[str, Any], per_draw: int, state: int) -> int:
    """Peak bytes of a sampler that stores ``per_draw`` bytes a draw and keeps ``state``
    bytes of chain state, and of Eq. 6 over its draws (64 MiB chunks of float64 ``xi``, the
    forward pass and the ``[S, n_strings]`` table): :mod:`bayesfa.memory`'s pieces."""
    from bayesfa.memory import forward_bytes

    n, a, chains = options["states"], corpus.alphabet_size + 1, options["chains"]
    draws = max(0, (options["iterations"] - options["burn_in"]) // options["period"])
    jobs = min(options.get("jobs", 1), chains)
    chain = draws * (per_draw + 24)
    stored = chains * chain
    fit = 2 * stored + state * max(1, jobs) + (jobs > 1) * jobs * 2 * chain
    samples = chains * draws
    size = (n + 1) * a * (n + 1) * 8
    k = min(samples, max(1, _XI_CHUNK_BYTES // size))
    predict = (stored + 3 * k * size + forward_bytes(k, n + 1, corpus)
               + 2 * samples * corpus.n_strings * 8)
    return int(max(fit, predict))


# -- CGS-HMM ---------------------------------------------------------------------------------

#: ``plugin`` codes of :func:`hmm_xi` and :func:`star_xi`: 0 is the predictor; the others are
#: deliberately wrong plug-ins used only by :mod:`bayesfa.validation.pfa.variants`.
PLUGIN_CORRECT = 0
UNNORMALISED_EQ20 = 1  # Eq. 20 as printed: theta's denominator C_i + N beta (all visits)
ALPHA_BETA_SWAPPED = 2  # eta with beta, theta with alpha
LITERAL_STAR = 3  # CGS-HMM(*) as printed: (C_i00 + beta) / (C_i + N A beta) on the end edge


def hmm_xi(counts: np.ndarray, alpha: float, beta: float, plugin: int = PLUGIN_CORRECT) -> np.ndarray:
    """Eq. 20 (with the move total, module docstring): ``xi~`` ``[..., N+1, A, N+1]`` from
    ``C_iaj`` ``[..., N+1, A, N+1]``. ``plugin`` != 0: a wrong plug-in (validation only)."""
    counts = np.asarray(counts, dtype=np.float64)
    n_states, n_symbols = counts.shape[-3] - 1, counts.shape[-2]
    if plugin == ALPHA_BETA_SWAPPED:
        alpha, beta = beta, alpha
    emit = counts.sum(axis=-1)                          # C_ia  [..., N+1, A]
    move = counts[..., 1:, 1:].sum(axis=-2)             # C_ij  [..., N+1, N]
    eta = (emit + alpha) / (emit.sum(axis=-1, keepdims=True) + n_symbols * alpha)
    if plugin == UNNORMALISED_EQ20:
        theta = (move + beta) / (emit.sum(axis=-1, keepdims=True) + n_states * beta)
    else:
        theta = (move + beta) / (move.sum(axis=-1, keepdims=True) + n_states * beta)
    xi = np.zeros(counts.shape)
    xi[..., 0, 0] = eta[..., 0]
    xi[..., 1:, 1:] = eta[..., 1:, None] * theta[..., None, :]
    return xi


def hmm_log_prob(counts: np.ndarray, alpha: float, beta: float, corpus: Corpus,
                 plugin: int = PLUGIN_CORRECT) -> np.ndarray:
    """``log Pr(b | xi~(s))`` ``[S, n_strings]`` for counts ``[S, N+1, A, N+1]`` (Eq. 20)."""
    counts = np.asarray(counts)
    return chunked_log_prob(lambda sl: hmm_xi(counts[sl], alpha, beta, plugin), counts.shape[0],
                            8 * int(np.prod(counts.shape[1:])), corpus, counts.shape[-2] - 1)


def star_log_prob(counts: np.ndarray, beta: float, corpus: Corpus,
                  plugin: int = PLUGIN_CORRECT) -> np.ndarray:
    """``log Pr(b | xi~(s))`` of CGS-HMM(*): the CGS-PFA plug-in (``plugin`` 0), or with
    ``LITERAL_STAR`` the formula as printed in Sect. 4.4, ``(C_iaj + beta) / (C_i + N A beta)``
    on every edge, the end edge included (validation only: its rows do not sum to 1)."""
    from bayesfa.samplers.pfa.cgs_pfa import plugin_log_prob

    if plugin != LITERAL_STAR:
        return plugin_log_prob(counts, beta, corpus)
    counts = np.asarray(counts)
    n_states, n_symbols = counts.shape[-3] - 1, counts.shape[-2]

    def make(sl):
        c = counts[sl].astype(np.float64)
        xi = np.zeros(c.shape)
        total = c.sum(axis=(-2, -1))[..., None, None] + n_states * n_symbols * beta
        xi[..., 1:, 1:] = (c[..., 1:, 1:] + beta) / total
        xi[..., 0, 0] = (c[..., 0, 0] + beta) / total[..., 0, 0]
        return xi

    return chunked_log_prob(make, counts.shape[0], 8 * int(np.prod(counts.shape[1:])), corpus,
                            n_symbols - 1)


def _run_chain(tokens, n_symbols, n_states, alpha, beta, burn_in, period, n_draws, seed_seq, variant):
    """One chain: random ``z``, ``burn_in`` sweeps, ``n_draws`` draws ``period`` sweeps apart."""
    from bayesfa.samplers.pfa import _cgs_hmm_kernel as kernel

    rng = np.random.default_rng(seed_seq)
    positions = free_positions(tokens)
    z = random_path(tokens, n_states, rng)
    state = new_state(n_states, n_symbols)
    kernel.fill_counts(tokens, z, *state)
    t0 = time.perf_counter()
    args = (positions, tokens, z, *state, rng, float(alpha), float(beta), int(variant))
    kernel.sweeps(burn_in, *args)
    counts = np.zeros((n_draws, n_states + 1, n_symbols, n_states + 1), dtype=np.int32)
    log_joint = np.zeros(n_draws)
    used = np.zeros(n_draws, dtype=np.int32)
    edges = np.zeros(n_draws, dtype=np.int32)
    kernel.sample_draws(period, *args, counts, log_joint, used, edges)
    return counts, log_joint, used, edges, z, time.perf_counter() - t0


def new_state(n_states: int, n_symbols: int):
    """Zeroed ``(et, mv, mvt, ci, cm)`` of the kernel's chain state."""
    q = n_states + 1
    return (np.zeros((n_symbols, q)), np.zeros((q, q)), np.zeros((q, q)), np.zeros(q), np.zeros(q))


def sample_cgs_hmm(corpus: Corpus, n_states: int, alpha: float, beta: float, iterations: int,
                   burn_in: int, period: int, chains: int, seed: int | None, jobs: int = 1,
                   variant: int = 0) -> HMMResult:
    """Run CGS-HMM on ``corpus``: chain ``c`` uses the ``c``-th child of
    ``np.random.SeedSequence(seed)`` (the result does not depend on ``jobs``); each starts
    from a uniformly random ``z``, runs ``burn_in`` sweeps and records ``C_iaj`` every
    ``period`` sweeps, ``(iterations - burn_in) // period`` draws. ``variant`` != 0 runs a
    deliberately wrong kernel (validation only)."""
    n_draws = check_chain_arguments(corpus, n_states, beta, iterations, burn_in, period, chains,
                                    jobs, alpha=alpha)
    tokens = corpus.tokens
    n_symbols = corpus.alphabet_size + 1
    children = np.random.SeedSequence(seed).spawn(chains)
    t0 = time.perf_counter()
    outs = map_chains(_run_chain, [(tokens, n_symbols, n_states, alpha, beta, burn_in, period,
                                    n_draws, s, variant) for s in children], jobs)
    counts, log_joint, used, edges, z, secs = (np.stack(x) for x in zip(*outs))
    sweeps = burn_in + n_draws * period
    n_free = int(free_positions(tokens).size)
    info = {"n_draws_per_chain": int(n_draws), "n_free_positions": n_free,
            "n_tokens": int(tokens.size), "jobs": int(min(jobs, chains)),
            "seconds": time.perf_counter() - t0, "chain_seconds": [float(s) for s in secs],
            "ns_per_state_token": float(np.mean(secs) * 1e9 / max(1, sweeps * n_states * n_free))}
    if variant:
        info["mutant_variant"] = int(variant)
    return HMMResult(counts, log_joint, used, edges, z, info)


class DrawMixture:
    """``predict_log_prob`` of a registry entry from its ``per_sample_log_prob``
    (``[chain, draw, n_strings]``): Eq. 6, the mean of ``Pr(b | xi~(s))`` over every draw of
    every chain."""

    def predict_log_prob(self, arrays: dict[str, np.ndarray], options: dict[str, Any],
                         corpus: Corpus) -> np.ndarray:
        """Eq. 6: the mean of ``Pr(b | xi~(s))`` over every draw of every chain."""
        logp = self.per_sample_log_prob(arrays, options, corpus)
        return log_mean_exp(logp.reshape(-1, logp.shape[-1]), axis=0)


class _CGSHMM(DrawMixture):
    """The ``cgs-hmm`` (``star=False``) and ``cgs-hmm-star`` entries of the registry."""

    def __init__(self, star: bool, variant: int = 0, name: str | None = None, plugin: int = 0):
        self.star = star
        self.variant = variant
        self.plugin = plugin
        base = "cgs-hmm-star" if star else "cgs-hmm"
        self.name = name or base
        if variant == 0 and plugin == 0:
            self.validation = ("bayesfa.validation.pfa.variants:"
                               + ("CGS_HMM_STAR" if star else "CGS_HMM"))
        self.summary = ("collapsed Gibbs sampling of an HMM, PFA plug-in xi~ "
                        "(CGS-HMM(*), Shibata & Yoshinaka 2013, Sect. 4.4)" if star else
                        "collapsed Gibbs sampling of an HMM, xi~ = eta~ theta~ "
                        "(CGS-HMM, Shibata & Yoshinaka 2013, Sect. 4.4, Eq. 20)")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_mcmc_arguments(parser, states=10, beta=0.1, iterations=1000, burn_in=500, period=10)
        parser.add_argument("--alpha", type=positive_float, default=0.1,
                            help="Dirichlet hyperparameter alpha of the emissions eta (beta is "
                                 "that of the transitions theta); default 0.1 (the paper's)")

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        """Stored ``C_iaj`` (int32) per draw, the chain state (float64 counts, ``z``), and
        Eq. 6 over every draw (:func:`stored_bytes`)."""
        n, a = options["states"], corpus.alphabet_size + 1
        state = 8 * (a * (n + 1) + 2 * (n + 1) ** 2 + 2 * (n + 1)) + 24 * (corpus.n_tokens + 1)
        return stored_bytes(corpus, options, 4 * (n + 1) * a * (n + 1), state)

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool) -> FitResult:
        res = sample_cgs_hmm(corpus, options["states"], options["alpha"], options["beta"],
                             options["iterations"], options["burn_in"], options["period"],
                             options["chains"], seed, options.get("jobs", 1), self.variant)
        trace = {"log_joint": res.log_joint, "n_states": res.n_states, "n_edges": res.n_edges}
        return FitResult({"counts": res.counts}, trace, res.info)

    def per_sample_log_prob(self, arrays: dict[str, np.ndarray], options: dict[str, Any],
                            corpus: Corpus) -> np.ndarray:
        """``log Pr(b | xi~(s))`` ``[chain, draw, n_strings]``."""
        counts = np.asarray(arrays["counts"])
        flat = counts.reshape((-1,) + counts.shape[-3:])
        plugin = getattr(self, "plugin", 0)
        if self.star:
            out = star_log_prob(flat, options["beta"], corpus, plugin)
        else:
            out = hmm_log_prob(flat, options["alpha"], options["beta"], corpus, plugin)
        return out.reshape(counts.shape[:-3] + (-1,))



CGS_HMM = _CGSHMM(star=False)
CGS_HMM_STAR = _CGSHMM(star=True)
