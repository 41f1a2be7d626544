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

The chain loop shared with CGS-SG (:func:`run_chain`, :func:`sample_chains`) holds out
``--holdout`` of the strings (the slice CGS-PFA holds out for the seed,
:func:`bayesfa.samplers.pfa.cgs_pfa.holdout_split`), records their log predictive under each
draw's plug-in (``heldout_log_pred``), and saves each chain's whole state (``z``, the kernel's
counts, the Generator's state, the draws so far) atomically every ``--checkpoint-every``
seconds and at its end; a rerun of the same fit resumes bit-identically (a file of another
run is ignored, a damaged one an error naming it).

Reference: C. Shibata and R. Yoshinaka, "A comparison of collapsed Bayesian methods for
probabilistic finite automata", Machine Learning 96, 2014, Sect. 4.4, Eq. 20, Fig. 10, Table 2.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any, Callable, NamedTuple

import numpy as np

from bayesfa.automata import PFA
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.forward import forward_log_prob, log_mean_exp_by_strings, xi_to_pfa
from bayesfa.methods import (FitResult, add_mcmc_arguments, draws_per_chain, fraction,
                             positive_float)
from bayesfa.samplers.plugin import DrawAutomata
from bayesfa.samplers.chains import (CHECKPOINT_EVERY, ChainBook, ChainLoop,
                                     add_checkpoint_argument, block_sweeps, check_chain_arguments,
                                     check_checkpoint_every, check_generator_state,
                                     corrupt_checkpoint, digest, free_positions, generator_state,
                                     n_free_positions,
                                     map_chains, progress_callback, random_path, read_checkpoint,
                                     save_checkpoint)

_XI_CHUNK_BYTES = 1 << 26  # xi~ built for at most 64 MiB of samples at a time


class HMMResult(NamedTuple):
    """Samples of CGS-HMM: counts int32 ``[chain, draw, N+1, A, N+1]`` (``C_iaj``), log_joint
    float64 ``[chain, draw]`` (collapsed HMM), n_states / n_edges int32 ``[chain, draw]``,
    z int32 ``[chain, T+1]`` (last path, over the strings sampled), info, heldout_log_pred
    float64 ``[chain, draw]`` (the held-out strings' log predictive under each draw's
    plug-in; None without a held-out slice), moved float64 ``[chain, draw]`` (the fraction of
    the free positions whose state changed, per sweep, over each draw's sweeps: the sampler
    statistic of :data:`bayesfa.rundir.SAMPLE_STATS`)."""

    counts: np.ndarray
    log_joint: np.ndarray
    n_states: np.ndarray
    n_edges: np.ndarray
    z: np.ndarray
    info: dict[str, Any]
    heldout_log_pred: np.ndarray | None = None
    moved: np.ndarray | None = None


# -- shared by the samplers of issue 7 (the chain loop's pieces: bayesfa.samplers.chains) -----

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


def path_bytes(corpus: Corpus) -> int:
    """Bytes of a CGS-HMM or CGS-SG chain's per-token arrays (:func:`run_chain`): ``z``
    (int32 ``[T + 1]``), the free positions (int64, one a letter:
    :func:`bayesfa.samplers.chains.free_positions`) and one sweep's uniforms (float64, one a
    free position: ``rng.random(M)`` in the kernels)."""
    return 4 * (corpus.n_tokens + 1) + 16 * corpus.n_letters


def draw_bytes(kind, n_states: int, n_symbols: int) -> int:
    """Bytes :func:`run_chain` holds for each draw of a chain of ``kind`` (:class:`_HMMKind`
    or :class:`bayesfa.samplers.pfa.cgs_sg._SGKind`): one draw of its outs
    (``kind.new_outs``) and its held-out log predictive (float64)."""
    return sum(x.nbytes for x in kind.new_outs(1, n_states, n_symbols)) + 8


def stored_bytes(corpus: Corpus, options: dict[str, Any], per_draw: int, state: int) -> int:
    """Peak bytes of a sampler that stores ``per_draw`` bytes a draw (:func:`draw_bytes`) and a
    path ``z`` a chain, and keeps ``state`` bytes of chain state, and of Eq. 6 over its draws
    (64 MiB chunks of float64 ``xi``, the forward pass and the ``[S, n_strings]`` table, over
    blocks of strings when it would exceed the forward budget: :func:`bayesfa.memory.eq6_bytes`)."""
    from bayesfa.memory import eq6_bytes

    n, a, chains = options["states"], corpus.alphabet_size + 1, options["chains"]
    draws = draws_per_chain(options)
    jobs = min(options.get("jobs", 1), chains)
    # a chain's draws and its z (int32 [T + 1]), returned together and stacked with the others'
    chain = draws * per_draw + 4 * (corpus.n_tokens + 1)
    stored = chains * chain
    fit = 2 * stored + state * max(1, jobs) + (jobs > 1) * jobs * 2 * chain
    samples = chains * draws
    size = (n + 1) * a * (n + 1) * 8
    k = min(samples, max(1, _XI_CHUNK_BYTES // size))
    # Eq. 6 over blocks of strings (DrawMixture.predict_log_prob)
    predict = stored + eq6_bytes(max(1, samples), k, size, n + 1, corpus)
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
    counts = np.asarray(counts)  # summed in float64, never copied (Eq. 6's memory model)
    n_states, n_symbols = counts.shape[-3] - 1, counts.shape[-2]
    if plugin == ALPHA_BETA_SWAPPED:
        alpha, beta = beta, alpha
    emit = counts.sum(axis=-1, dtype=np.float64)        # C_ia  [..., N+1, A]
    move = counts[..., 1:, 1:].sum(axis=-2, dtype=np.float64)  # C_ij  [..., N+1, N]
    eta = (emit + alpha) / (emit.sum(axis=-1, keepdims=True) + n_symbols * alpha)
    if plugin == UNNORMALISED_EQ20:
        theta = (move + beta) / (emit.sum(axis=-1, keepdims=True) + n_states * beta)
    else:
        theta = (move + beta) / (move.sum(axis=-1, keepdims=True) + n_states * beta)
    xi = np.zeros(counts.shape)
    xi[..., 0, 0] = eta[..., 0]
    np.multiply(eta[..., 1:, None], theta[..., None, :], out=xi[..., 1:, 1:])
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


def new_state(n_states: int, n_symbols: int):
    """Zeroed ``(et, mv, mvt, ci, cm)`` of the kernel's chain state."""
    q = n_states + 1
    return (np.zeros((n_symbols, q)), np.zeros((q, q)), np.zeros((q, q)), np.zeros(q), np.zeros(q))


# -- the resumable chain of CGS-HMM and CGS-SG ------------------------------------------------

#: Sweeps are run in blocks of about this many (N x free positions) units between two
#: checkpoint checks and progress reports; the block size never changes the result (each
#: sweep draws its own uniforms, and CGS-SG's graph-update counter lives in its state).
_BLOCK_UNITS = 25_000_000
#: The version of a chain checkpoint's layout (part of its fingerprint).
_CHAIN_FORMAT = "bayesfa-cgs-hmm-sg-chain/2"  # 2: each draw's positions moved (issue 36)
_COMMON_FIELDS = ("z", "heldout", "seconds", "sweeps_done", "draws_done", "rng_state")


class _HMMKind(NamedTuple):
    """How a CGS-HMM chain is built, swept and recorded (:func:`run_chain`): its kernel's
    parameters after the Generator, and the plug-in of its held-out log predictive
    (``star``: CGS-HMM(*)'s, else Eq. 20's; ``plugin`` != 0 a wrong one, validation only)."""

    alpha: float
    beta: float
    variant: int
    star: bool = False
    plugin: int = 0
    new_state = staticmethod(new_state)

    def kernel(self):
        from bayesfa.samplers.pfa import _cgs_hmm_kernel

        return _cgs_hmm_kernel

    def params(self) -> tuple:
        return float(self.alpha), float(self.beta), int(self.variant)

    def init(self, kernel, tokens, z, state) -> None:
        kernel.fill_counts(tokens, z, *state)

    @staticmethod
    def new_outs(n_draws: int, n_states: int, n_symbols: int) -> tuple:
        """``(counts, log_joint, n_states, n_edges, moves)`` of ``n_draws`` draws (``moves``
        int64, the positions moved in each draw's sweeps: the last out of every kind)."""
        return (np.zeros((n_draws, n_states + 1, n_symbols, n_states + 1), dtype=np.int32),
                np.zeros(n_draws), np.zeros(n_draws, dtype=np.int32), np.zeros(n_draws, dtype=np.int32),
                np.zeros(n_draws, dtype=np.int64))

    def heldout(self, outs: tuple, held: Corpus) -> np.ndarray:
        """``sum_b log Pr(b | xi~(s))`` over the held-out strings, per draw (the plug-in of
        the method: Eq. 20, or CGS-HMM(*)'s)."""
        if self.star:
            return star_log_prob(outs[0], self.beta, held, self.plugin).sum(axis=1)
        return hmm_log_prob(outs[0], self.alpha, self.beta, held, self.plugin).sum(axis=1)


def run_chain(kind, tokens, n_symbols, n_states, burn_in, period, n_draws, seed_seq, held=None,
              checkpoint=None, checkpoint_every: float = CHECKPOINT_EVERY, fingerprint=None,
              resume=None, on_sweeps=None):
    """One chain of CGS-HMM or CGS-SG (``kind``: :class:`_HMMKind` or
    :class:`bayesfa.samplers.pfa.cgs_sg._SGKind`): a uniformly random ``z`` (Algorithm 1,
    line 1), ``burn_in`` sweeps, then ``n_draws`` draws ``period`` sweeps apart, in blocks
    (:data:`_BLOCK_UNITS`) that never change the result.

    ``held`` (a :class:`bayesfa.samplers.pfa.cgs_pfa._Held`): each draw records the log
    predictive of those strings under its plug-in (``heldout``; NaN without). ``checkpoint``
    (a path): the chain's whole state (``z``, the kernel's counts and, for CGS-SG, its graph
    arrays, the Generator's state, the draws so far) is saved there atomically after the first
    block ending ``checkpoint_every`` seconds or more after the last save, and when the chain
    ends. ``resume`` (read by :func:`load_chain`) continues such a chain: it ends bit for bit
    as an uninterrupted one. ``on_sweeps(n)``: called after each block of ``n`` sweeps (a draw
    of more than a block's sweeps is made in blocks too, so that progress and Ctrl-C are never
    ``period`` sweeps apart).

    Returns ``(*outs, heldout, z, seconds)`` (``outs``: ``kind.new_outs``, whose last is the
    positions moved in each draw's ``period`` sweeps, int64)."""
    kernel = kind.kernel()
    rng = np.random.default_rng(seed_seq)
    positions = free_positions(tokens)
    outs = kind.new_outs(n_draws, n_states, n_symbols)
    heldout = np.full(n_draws, np.nan)
    state = kind.new_state(n_states, n_symbols)
    loop = ChainLoop(rng, resume)
    if resume is None:
        z = random_path(tokens, n_states, rng)
        kind.init(kernel, tokens, z, state)
    else:
        z = np.array(resume["z"], dtype=np.int32)
        for i, a in enumerate(state):
            a[...] = resume[f"state_{i}"]
        for i, o in enumerate(outs):
            o[:loop.d] = resume[f"out_{i}"]
        heldout[:loop.d] = resume["heldout"]
    args = (positions, tokens, z, *state, rng, *kind.params())
    held_corpus = None if held is None else held.corpus()

    def save() -> None:
        d = loop.d
        save_checkpoint(checkpoint, fingerprint, {
            "z": z, **{f"state_{i}": a for i, a in enumerate(state)},
            **{f"out_{i}": o[:d] for i, o in enumerate(outs)}, "heldout": heldout[:d],
            "seconds": loop.seconds(), "sweeps_done": loop.done, "draws_done": d,
            "rng_state": generator_state(rng)})

    block = block_sweeps(_BLOCK_UNITS, n_states, positions.size)
    early = [0]  # sweeps of the current draw block already reported (period > block)

    def draws(d, e):
        made = tuple(o[d:e] for o in outs)
        if period > block:
            # one draw is more than a block: its first period - 1 sweeps in blocks (progress
            # and Ctrl-C land between kernel calls), then its last sweep and the record; the
            # same sweeps in the same order as sample_draws(period)
            for k in range(d, e):
                left, moved = period - 1, 0
                while left > 0:
                    step = min(block, left)
                    moved += kernel.sweeps(step, *args)
                    left -= step
                    if on_sweeps is not None:
                        on_sweeps(step)
                        early[0] += step
                kernel.sample_draws(1, *args, *(o[k:k + 1] for o in outs))
                outs[-1][k] += moved  # the draw's first period - 1 sweeps
        else:
            kernel.sample_draws(period, *args, *made)
        if held_corpus is not None:
            heldout[d:e] = kind.heldout(made, held_corpus)

    def reported(n):  # ChainLoop's count of a block, less what draws() reported already
        n, early[0] = n - early[0], 0
        if n:
            on_sweeps(n)

    seconds = loop.run(lambda n: kernel.sweeps(n, *args), draws, burn_in=burn_in, period=period,
                       n_draws=n_draws, block=block, per_block=max(1, block // period),
                       save=None if checkpoint is None else save,
                       checkpoint_every=checkpoint_every,
                       on_sweeps=None if on_sweeps is None else reported)
    if checkpoint is not None:
        save()
    return (*outs, heldout, z, seconds)


def load_chain(path, fingerprint: str, kind, *, n_states: int, n_symbols: int, n_draws: int,
               z_size: int, burn_in: int, period: int) -> dict | None:
    """The chain state saved at ``path`` by :func:`run_chain` (finished or not), or None when
    it was saved under another fingerprint (other data, settings, seed or format). An
    :class:`InputError` naming the file when it is unreadable or its arrays disagree with its
    settings (:func:`bayesfa.samplers.chains.corrupt_checkpoint`)."""
    templ_state = kind.new_state(n_states, n_symbols)
    templ_outs = kind.new_outs(0, n_states, n_symbols)
    fields = (_COMMON_FIELDS + tuple(f"state_{i}" for i in range(len(templ_state)))
              + tuple(f"out_{i}" for i in range(len(templ_outs))))
    saved = read_checkpoint(path, fingerprint, fields)
    if saved is None:
        return None
    d, done, z = int(saved["draws_done"]), int(saved["sweeps_done"]), saved["z"]
    ok = (0 <= d <= n_draws and 0 <= done
          and done == (min(done, burn_in) if d == 0 else burn_in + d * period)
          and z.shape == (z_size,) and z.dtype == np.int32
          and (z.size == 0 or (int(z.min()) >= 0 and int(z.max()) <= n_states))
          and saved["heldout"].shape == (d,)
          and all(saved[f"state_{i}"].shape == a.shape and saved[f"state_{i}"].dtype == a.dtype
                  for i, a in enumerate(templ_state))
          and all(saved[f"out_{i}"].shape == (d,) + o.shape[1:] and saved[f"out_{i}"].dtype == o.dtype
                  for i, o in enumerate(templ_outs)))
    if not ok:
        raise corrupt_checkpoint(path, "its arrays do not match its settings")
    check_generator_state(path, saved["rng_state"])
    return saved


def _chain_fingerprint(kind, tokens, n_symbols, n_states, burn_in, period, n_draws,
                       seed_seq: np.random.SeedSequence, held) -> str:
    """What determines a chain's output, as a string (the data by SHA-256): the sampler and
    its parameters (``kind``), the training tokens, the held-out slice, the schedule and the
    chain's seed; not ``jobs`` nor the checkpoint interval."""
    return json.dumps({"format": _CHAIN_FORMAT, "kind": type(kind).__name__,
                       "params": {k: (v if isinstance(v, str) else float(v)) for k, v in kind._asdict().items()},
                       "tokens": digest(tokens),
                       "heldout": None if held is None else [digest(held.tokens), digest(held.offsets)],
                       "n_symbols": int(n_symbols), "n_states": int(n_states), "burn_in": int(burn_in),
                       "period": int(period), "n_draws": int(n_draws),
                       "entropy": str(seed_seq.entropy), "spawn_key": list(seed_seq.spawn_key)},
                      sort_keys=True)


def sample_chains(kind, corpus: Corpus, n_states: int, burn_in: int, period: int, n_draws: int,
                  chains: int, seed, jobs: int, holdout: float = 0.0, checkpoint_dir=None,
                  checkpoint_every: float = CHECKPOINT_EVERY, on_sweeps=None):
    """The chains of CGS-HMM or CGS-SG (``kind``, :func:`run_chain`) on ``corpus`` (arguments
    checked by the caller). Chain ``c`` uses the ``c``-th child of
    ``np.random.SeedSequence(seed)``; ``holdout``: the fraction of the strings left out of
    sampling (:func:`bayesfa.samplers.pfa.cgs_pfa.holdout_split`, the same slice as CGS-PFA
    holds out for that seed). With ``checkpoint_dir``, each chain keeps its state in
    ``chain-CCCC.npz`` there, and a later call with the same data, settings and seed reuses
    finished chains and resumes the others bit-identically; a file of another run is ignored
    (and replaced), a damaged one an :class:`InputError` naming it. ``on_sweeps(n)``: after
    every block of sweeps, only with the chains in this process (``jobs == 1``).

    Returns ``(stacked, info)``: the chains' ``(*outs, heldout, z, seconds)`` stacked along
    a first ``chain`` axis, and the run's facts (``heldout`` is None without a slice)."""
    from bayesfa.samplers.pfa.cgs_pfa import seed_chains

    checkpoint_every = check_checkpoint_every(checkpoint_every)
    jobs = min(jobs, chains)
    if on_sweeps is not None and jobs > 1:
        raise ValueError("on_sweeps is called only when the chains run in this process (jobs=1)")
    children, corpus, held, held_idx = seed_chains(corpus, seed, chains, holdout)
    tokens, n_symbols = corpus.tokens, corpus.alphabet_size + 1
    prints = [_chain_fingerprint(kind, tokens, n_symbols, n_states, burn_in, period, n_draws, s, held)
              for s in children]
    n_outs = len(kind.new_outs(0, n_states, n_symbols))

    def load(path, fingerprint):
        return load_chain(path, fingerprint, kind, n_states=n_states, n_symbols=n_symbols,
                          n_draws=n_draws, z_size=tokens.size + 1, burn_in=burn_in, period=period)

    def finished(st):
        if int(st["draws_done"]) != n_draws:
            return None
        return (*(st[f"out_{i}"] for i in range(n_outs)), st["heldout"],
                np.array(st["z"], dtype=np.int32), float(st["seconds"]))

    book = ChainBook.open(checkpoint_dir, prints, load, finished)
    todo = book.todo()
    t0 = time.perf_counter()
    done = map_chains(run_chain, [(kind, tokens, n_symbols, n_states, burn_in, period, n_draws,
                                   children[c], held, book.paths[c], checkpoint_every, prints[c],
                                   book.saved[c], on_sweeps) for c in todo], jobs)
    outs = book.outs
    for c, out in zip(todo, done):
        outs[c] = out
    stacked = [np.stack(x) for x in zip(*outs)]
    secs = stacked[-1]
    sweeps = burn_in + n_draws * period
    n_free = n_free_positions(tokens)
    info = {"n_draws_per_chain": int(n_draws), "n_free_positions": n_free,
            "n_tokens": int(tokens.size), "jobs": int(jobs), "seconds": time.perf_counter() - t0,
            "chain_seconds": [float(s) for s in secs],
            "ns_per_state_token": float(np.mean(secs) * 1e9 / max(1, sweeps * n_states * n_free)),
            "holdout": float(holdout), "holdout_strings": int(held_idx.size),
            "chains_resumed": int(chains - len(todo)),
            "chains_resumed_mid_chain": int(book.resumed_mid_chain(todo)),
            "checkpoint_every": checkpoint_every}
    if held is None:
        stacked[-3] = None
    return stacked, info


def moved_fraction(moves: np.ndarray, period: int, n_positions: int) -> np.ndarray:
    """The sampler statistic ``moved`` (:data:`bayesfa.rundir.SAMPLE_STATS`), float64: each
    draw's positions moved (``moves``, summed over its ``period`` sweeps) over ``period *
    n_positions``, the fraction of the free positions whose state changed, per sweep; 0 when
    there is no free position."""
    return np.asarray(moves, dtype=np.float64) / float(max(1, period * n_positions))


def add_holdout_argument(parser: argparse.ArgumentParser) -> None:
    """``--holdout FRACTION`` as CGS-PFA has it (:data:`bayesfa.samplers.pfa.cgs_pfa.HOLDOUT`)."""
    from bayesfa.samplers.pfa.cgs_pfa import HOLDOUT, HOLDOUT_MAX

    parser.add_argument("--holdout", type=fraction, default=HOLDOUT, metavar="FRACTION",
                        help=f"fraction of the training strings (at most {HOLDOUT_MAX}) left out "
                             f"of sampling, chosen from the seed; each draw records their log "
                             f"predictive (heldout_log_pred) for diagnose; 0 disables; default "
                             f"{HOLDOUT}")


def sample_cgs_hmm(corpus: Corpus, n_states: int, alpha: float, beta: float, iterations: int,
                   burn_in: int, period: int, chains: int, seed: int | None, jobs: int = 1,
                   variant: int = 0, *, holdout: float = 0.0, star: bool = False, plugin: int = 0,
                   checkpoint_dir=None, checkpoint_every: float = CHECKPOINT_EVERY,
                   on_sweeps=None) -> HMMResult:
    """Run CGS-HMM on ``corpus``: chain ``c`` uses the ``c``-th child of
    ``np.random.SeedSequence(seed)`` (the result does not depend on ``jobs``); each starts
    from a uniformly random ``z``, runs ``burn_in`` sweeps and records ``C_iaj`` every
    ``period`` sweeps, ``(iterations - burn_in) // period`` draws. ``variant`` != 0 runs a
    deliberately wrong kernel (validation only).

    ``holdout``, ``checkpoint_dir``, ``checkpoint_every``, ``on_sweeps``: as
    :func:`sample_chains` (held-out strings not sampled, each draw's ``heldout_log_pred``
    under the plug-in of ``star`` / ``plugin``, see :class:`_HMMKind`; mid-chain checkpoints
    and bit-identical resume)."""
    n_draws = check_chain_arguments(corpus, n_states, beta, iterations, burn_in, period, chains,
                                    jobs, alpha=alpha)
    kind = _HMMKind(float(alpha), float(beta), int(variant), bool(star), int(plugin))
    stacked, info = sample_chains(kind, corpus, n_states, burn_in, period, n_draws, chains, seed,
                                  jobs, holdout, checkpoint_dir, checkpoint_every, on_sweeps)
    counts, log_joint, used, edges, moves, heldout, z, _ = stacked
    if variant:
        info["mutant_variant"] = int(variant)
    return HMMResult(counts, log_joint, used, edges, z, info, heldout,
                     moved_fraction(moves, period, info["n_free_positions"]))



class DrawMixture:
    """``predict_log_prob`` of a registry entry from its ``per_sample_log_prob``
    (``[chain, draw, n_strings]``) and ``draw_grid`` (``(chains, draws)``): Eq. 6, the mean of
    ``Pr(b | xi~(s))`` over every draw of every chain."""

    def predict_log_prob(self, arrays: dict[str, np.ndarray], options: dict[str, Any],
                         corpus: Corpus) -> np.ndarray:
        """Eq. 6: the mean of ``Pr(b | xi~(s))`` over every draw of every chain, over blocks
        of strings when the ``[draws, strings]`` table would exceed the forward budget
        (:func:`bayesfa.forward.log_mean_exp_by_strings`)."""
        def log_prob(part):
            logp = self.per_sample_log_prob(arrays, options, part)
            return logp.reshape(-1, logp.shape[-1])

        return log_mean_exp_by_strings(log_prob, int(np.prod(self.draw_grid(arrays))), corpus)


class ChainFront(DrawMixture, DrawAutomata):
    """What the registry entries of CGS-HMM and CGS-SG share around :func:`sample_chains`:
    their options, declared once in this order (the MCMC ones, the method's own in
    :meth:`add_own_arguments`, ``--holdout``, ``--checkpoint-every``), and ``fit`` with its
    progress bar and checkpoints around the method's sampler (:meth:`sample`); the plug-in
    automaton of a stored draw (:class:`~bayesfa.samplers.plugin.DrawAutomata`) from the
    method's :meth:`draw_xi`, the ``xi~`` its ``per_sample_log_prob`` scores."""

    def draw_grid(self, arrays: dict[str, np.ndarray]) -> tuple[int, int]:
        return tuple(np.shape(arrays["counts"])[:2])

    def draw_xi(self, arrays, options, chain: int, k: int) -> np.ndarray:
        raise NotImplementedError

    def draw_pfa(self, arrays, options, chain: int, k: int) -> PFA:
        return PFA.from_xi(self.draw_xi(arrays, options, chain, k))

    resumable = True  # fit(..., workdir=) keeps chain states there (finished or not)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_mcmc_arguments(parser, states=10, beta=0.1, iterations=1000, burn_in=500, period=10)
        self.add_own_arguments(parser)
        add_holdout_argument(parser)
        add_checkpoint_argument(parser)

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool,
            workdir=None) -> FitResult:
        """The chains of :meth:`sample`; ``workdir``: their checkpoints (resumable)."""
        chains, jobs = options["chains"], options.get("jobs", 1)
        n_draws = draws_per_chain(options)
        on_sweeps, close = progress_callback(progress, min(jobs, chains),
                                             chains * (options["burn_in"] + n_draws * options["period"]),
                                             self.name)
        try:
            return self.sample(corpus, options, seed, jobs, holdout=options.get("holdout", 0.0),
                               checkpoint_dir=workdir,
                               checkpoint_every=options.get("checkpoint_every", CHECKPOINT_EVERY),
                               on_sweeps=on_sweeps)
        finally:
            close()


class _CGSHMM(ChainFront):
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

    def add_own_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--alpha", type=positive_float, default=0.1,
                            help="Dirichlet hyperparameter alpha of the emissions eta (beta is "
                                 "that of the transitions theta); default 0.1 (the paper's)")

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        """Stored ``C_iaj`` (int32) and the trace per draw (:func:`draw_bytes`), the chain
        state (float64 counts of :meth:`_HMMKind.new_state`, :func:`path_bytes`), and Eq. 6
        over every draw (:func:`stored_bytes`)."""
        n, a = options["states"], corpus.alphabet_size + 1
        state = 8 * (a * (n + 1) + 2 * (n + 1) ** 2 + 2 * (n + 1)) + path_bytes(corpus)
        return stored_bytes(corpus, options, draw_bytes(_HMMKind, n, a), state)

    def sample(self, corpus: Corpus, options: dict[str, Any], seed: int, jobs: int,
               **chain_options) -> FitResult:
        """:func:`sample_cgs_hmm` with ``options`` (``chain_options``: :meth:`ChainFront.fit`'s)."""
        res = sample_cgs_hmm(corpus, options["states"], options["alpha"], options["beta"],
                             options["iterations"], options["burn_in"], options["period"],
                             options["chains"], seed, jobs, self.variant, star=self.star,
                             plugin=getattr(self, "plugin", 0), **chain_options)
        trace = {"log_joint": res.log_joint, "n_states": res.n_states, "n_edges": res.n_edges,
                 "moved": res.moved}
        if res.heldout_log_pred is not None:
            trace["heldout_log_pred"] = res.heldout_log_pred
        return FitResult({"counts": res.counts}, trace, res.info)

    def per_sample_log_prob(self, arrays: dict[str, np.ndarray], options: dict[str, Any],
                            corpus: Corpus) -> np.ndarray:
        """``log Pr(b | xi~(s))`` ``[chain, draw, n_strings]``."""
        counts = np.asarray(arrays["counts"])
        flat = counts.reshape((-1,) + counts.shape[-3:])
        plugin = self.plugin
        if self.star:
            out = star_log_prob(flat, options["beta"], corpus, plugin)
        else:
            out = hmm_log_prob(flat, options["alpha"], options["beta"], corpus, plugin)
        return out.reshape(counts.shape[:-3] + (-1,))

    def draw_xi(self, arrays, options, chain: int, k: int) -> np.ndarray:
        """``xi~`` of stored draw ``(chain, k)``: CGS-HMM(*)'s, the CGS-PFA plug-in
        (:func:`~bayesfa.samplers.pfa.cgs_pfa.plugin_xi`), or Eq. 20 (:func:`hmm_xi`), as
        :meth:`per_sample_log_prob` scores them."""
        counts = np.asarray(arrays["counts"][chain, k])
        plugin = self.plugin
        if self.star:
            if plugin == LITERAL_STAR:
                raise InputError("the literal CGS-HMM(*) plug-in is not a PFA (validation only)")
            from bayesfa.samplers.pfa.cgs_pfa import plugin_xi

            return plugin_xi(counts, options["beta"])
        return hmm_xi(counts, options["alpha"], options["beta"], plugin)



CGS_HMM = _CGSHMM(star=False)
CGS_HMM_STAR = _CGSHMM(star=True)
