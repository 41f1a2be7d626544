"""HPYP-smoothed n-grams (``--method hpyp --order K``): the hierarchical Pitman-Yor language
model of Teh (2006), "A hierarchical Bayesian language model based on Pitman-Yor processes",
the baseline of Pfau, Bartlett & Wood (2010), Table 1 ("bigram" = order 2 = one symbol of
context, ..., "6-gram" = order 6).

Model (Teh 2006, Sect. 3, Eq. 7): ``G_u ~ PY(d_|u|, theta_|u|, G_pi(u))`` for every context
``u`` of at most ``K - 1`` symbols, ``pi(u)`` dropping the earliest symbol, ``G_empty ~
PY(d_0, theta_0, G0)`` with ``G0`` uniform over the ``S`` symbols. Inference (Sect. 4 and the
tech. report's App. C): Gibbs sampling of the seating arrangements (every customer unseated
and seated again, :mod:`bayesfa.samplers.ngram._hpyp_kernel`), the per-depth ``d_m ~ Beta(1, 1)``
and ``theta_m ~ Gamma(1, 1)`` by the paper's auxiliary variables, unless ``--discount`` /
``--concentration`` fix them. The paper's budget is the default: 100 sweeps of burn-in, then
1,000 samples averaged.

Data shapes (the conventions of :mod:`bayesfa.samplers.pdia.pdfa`): *sentences* (default) -- the
end of a string is a symbol (``S = L + 1``), so the model is a distribution over strings, and
every string starts in the context "after an end" (the context never reaches into the
previous string, like the PDIA's reset to ``q0``); *sequence* (``--sequence``) -- the letters
of all strings are one long sequence (``S = L``), and a test set continues it.

Prediction ("integrating the test data into the model in the standard Bayesian way", PDIA
paper Sect. 4): for each recorded sample, the test symbols are predicted one at a time by
Eq. 10 and then seated (no resampling); for sentences each string is scored given the
training data only (its seatings are undone after it), for a sequence the strings continue
one another. The per-sample values are averaged in probability (the sequence: the mixture's
sequential conditionals, as the PDIA does).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any, NamedTuple

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.forward import log_mean_exp
from bayesfa.methods import (ESTIMATE_SECONDS, FitResult, add_jobs_argument, draws_per_chain,
                             fraction, nonnegative_int, positive_float, positive_int)
from bayesfa.samplers.chains import (CHECKPOINT_EVERY, ChainBook, ChainLoop,
                                     add_checkpoint_argument, check_checkpoint_every,
                                     check_generator_state, corrupt_checkpoint, digest,
                                     generator_state, read_checkpoint, save_checkpoint)
from bayesfa.samplers.pdia.pdfa import as_symbols
from bayesfa.samplers.pfa.cgs_pfa import HOLDOUT_MAX, holdout_split

#: Beta(a, b) prior of the discounts, Gamma(shape, rate) of the concentrations (Teh 2006)
PRIOR = np.array([1.0, 1.0, 1.0, 1.0])
START_DISCOUNT, START_CONCENTRATION = 0.5, 1.0


# -- the data and the context tree ------------------------------------------------------------

def flat_symbols(corpus: Corpus, sequence: bool, n_letters: int | None = None
                 ) -> tuple[np.ndarray, int, np.ndarray]:
    """``(F, S, first)``: the symbols as one array ``F`` (sentences: a leading end symbol 0,
    then the tokens, 0 ending each string; sequence: the letters, 0-based), the number of
    symbols ``S``, and the index in ``F`` of the first predicted symbol (1 or 0)."""
    data = as_symbols(corpus, sequence, n_letters)
    if sequence:
        if data.sym.size == 0 and n_letters is None:
            raise InputError("no letters to learn from (the training strings are all empty)")
        return data.sym, data.n_symbols, 0
    return np.concatenate([[0], data.sym]).astype(np.int32), data.n_symbols, 1


def flat_size(corpus: Corpus, sequence: bool) -> int:
    """The size of :func:`flat_symbols`' ``F`` without making it: the tokens and the leading
    end symbol (sentences), or the letters (sequence)."""
    return corpus.n_letters if sequence else corpus.n_tokens + 1


def trie_capacity(n_strings: int, total_length: int, compress: bool) -> int:
    """The most nodes :func:`~bayesfa.samplers.ngram._hpyp_kernel.build_trie` makes from
    ``n_strings`` sorted strings of ``total_length`` symbols in all, so the size its arrays
    are given. Every prefix a node: the root and at most one node a symbol, reached when no
    two strings share a first symbol. Path compression: the root, the first string's node,
    and for each further string its own node and at most one split of an edge, reached when
    each string splits the edge to the one before it (``2 * n_strings``; the root alone for
    no strings)."""
    if compress:
        return max(2 * n_strings, 1)
    return total_length + 1


def suffix_array(r: np.ndarray) -> np.ndarray:
    """The suffixes of ``r`` in lexicographic order (a shorter prefix first), by prefix
    doubling with numpy's lexsort."""
    n = r.size
    rank = r.astype(np.int64)
    k = 1
    while True:
        second = np.full(n, -1, dtype=np.int64)
        second[:n - k] = rank[k:] if k < n else second[:0]
        sa = np.lexsort((second, rank))
        a, b = rank[sa], second[sa]
        step = np.empty(n, dtype=bool)
        step[:1] = True
        step[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
        rank = np.empty(n, dtype=np.int64)
        rank[sa] = np.cumsum(step) - 1
        if rank.max() == n - 1 or k >= n:
            return sa
        k *= 2


def context_tree(F: np.ndarray, first: int, sentences: bool, max_len: int | None,
                 compress: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The context tree of the symbols ``F[first:]``: ``(parent, depth, tok_node)``.

    The context of ``F[p]`` is ``F[p-1], F[p-2], ...`` read backwards, up to and including
    the previous end symbol (sentences) or to the start (sequence), cut at ``max_len``
    symbols (``None``: unbounded). ``compress``: path compression (only branching contexts
    and contexts of data are nodes, the sequence memoizer's tree); else every suffix of a
    context is a node (the n-gram tree). ``depth`` is a node's context length;
    ``tok_node[i]`` the node of the context of ``F[first + i]``."""
    from bayesfa.samplers.ngram._hpyp_kernel import build_trie, lcp_kasai

    n = F.size
    pos = np.arange(first, n)
    if sentences:
        zeros = np.where(F == 0, np.arange(n), -1)
        last0 = np.maximum.accumulate(zeros)
        lens = pos - last0[np.maximum(pos - 1, 0)]
    else:
        lens = pos.copy()
    if max_len is not None:
        lens = np.minimum(lens, max_len)
    r = np.ascontiguousarray(F[::-1])
    sa = suffix_array(r)
    lcp = lcp_kasai(r, sa)
    rank = np.empty(n, dtype=np.int64)
    rank[sa] = np.arange(n)
    start = n - pos  # the context of F[p] is the suffix of r at n - p (empty for p = 0)
    key = np.where(start < n, rank[np.minimum(start, n - 1)], -1)
    order = np.argsort(key, kind="stable")
    ranks = key[order]
    lens_sorted = lens[order]
    lcps = np.zeros(pos.size, dtype=np.int64)
    if pos.size > 1:
        valid = ranks >= 0
        idx = ranks[valid] + 1
        pad = np.concatenate([lcp, [0]])
        mins = np.minimum.reduceat(pad, idx)[:-1] if idx.size > 1 else np.zeros(0, np.int64)
        lv = np.zeros(int(valid.sum()), dtype=np.int64)
        lv[1:] = mins
        lcps[valid] = lv
        lcps = np.minimum(lcps, np.minimum(lens_sorted, np.concatenate([[0], lens_sorted[:-1]])))
    max_nodes = trie_capacity(pos.size, int(lens.sum()), compress)
    parent, depth, _, node_of = build_trie(lens_sorted.astype(np.int64), lcps, compress,
                                           max_nodes)
    tok_node = np.empty(pos.size, dtype=np.int64)
    tok_node[order] = node_of
    return parent, depth, tok_node


def depth_order(depth: np.ndarray) -> np.ndarray:
    """Nodes deepest first (children before parents)."""
    return np.argsort(-depth, kind="stable")


def mixture_log_prob(lp: np.ndarray, sequence: bool) -> np.ndarray:
    """Average ``[n_samples, n_strings]`` per-sample log probabilities in probability: each
    string alone (sentences) or, for strings continuing one another, the mixture's sequential
    conditionals (what :func:`bayesfa.samplers.pdia.pdfa.predict` does)."""
    if sequence:
        cum = log_mean_exp(np.cumsum(lp, axis=1), axis=0)
        return np.diff(np.concatenate([[0.0], cum]))
    return log_mean_exp(lp, axis=0)


def test_offsets(test: Corpus, sequence: bool) -> np.ndarray:
    """Where each test string's predicted symbols start in the test part of ``F``."""
    sizes = test.lengths if sequence else np.diff(test.offsets)
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


# -- HPYP -------------------------------------------------------------------------------------

def _per_depth(value: float | None, order: int, start: float) -> tuple[np.ndarray, np.ndarray]:
    fixed = np.full(order, value is not None)
    return np.full(order, start if value is None else float(value)), fixed


def _train_tree(corpus: Corpus, options: dict[str, Any]):
    sequence = bool(options.get("sequence", False))
    F, n_sym, first = flat_symbols(corpus, sequence)
    order = int(options["order"])
    parent, depth, tok_node = context_tree(F, first, not sequence, order - 1, compress=False)
    return F, n_sym, first, parent, depth, tok_node


def _slots(parent, tok_node, tok_sym, n_nodes, n_sym):
    """Room per slot ``(u, w)``: the data customers whose path passes through ``u``."""
    cap = np.zeros((n_nodes, n_sym), dtype=np.int64)
    nodes = tok_node.copy()
    while True:
        live = nodes >= 0
        if not live.any():
            break
        np.add.at(cap, (nodes[live], tok_sym[live]), 1)
        nodes[live] = parent[nodes[live]]
    return cap


#: The version of an HPYP chain checkpoint's layout (part of its fingerprint).
_CHAIN_FORMAT = "bayesfa-hpyp-chain/2"  # 2: each draw's customers moved, out_moved (issue 36)
_STATE = ("c", "t", "cs", "ts", "sizes", "disc", "conc")
_OUTS = ("out_t", "out_disc", "out_conc", "out_lj", "out_moved")
_COUNTERS = ("sweeps_done", "draws_done", "seconds", "rng_state")


class _Chain(NamedTuple):
    """One HPYP chain's arrays: its state (:data:`_STATE`, the kernel's chain state) and its
    draws (:data:`_OUTS`, views into the fit's ``[chain, draw, ...]`` outputs)."""

    c: np.ndarray
    t: np.ndarray
    cs: np.ndarray
    ts: np.ndarray
    sizes: np.ndarray
    disc: np.ndarray
    conc: np.ndarray
    out_t: np.ndarray
    out_disc: np.ndarray
    out_conc: np.ndarray
    out_lj: np.ndarray
    out_moved: np.ndarray


def _chain_fingerprint(F: np.ndarray, n_sym: int, settings: dict, seed_seq) -> str:
    """What determines an HPYP chain's draws, as a string (the data by SHA-256): the symbols,
    the settings (order, shape, schedule, fixed ``d`` / ``theta``, variant) and the chain's
    seed; not the checkpoint interval."""
    return json.dumps({"format": _CHAIN_FORMAT, "symbols": digest(F), "n_symbols": int(n_sym),
                       "settings": settings, "entropy": str(seed_seq.entropy),
                       "spawn_key": list(seed_seq.spawn_key)}, sort_keys=True)


def _load_chain(path, fingerprint: str, arrays: _Chain, burn_in: int, period: int) -> dict | None:
    """The chain state saved at ``path`` (finished or not) when it is this chain's, else None;
    an :class:`InputError` naming the file when its arrays disagree with ``arrays`` (a chain's
    templates) or with its own counters."""
    saved = read_checkpoint(path, fingerprint, _STATE + _OUTS + _COUNTERS)
    if saved is None:
        return None
    n_draws = arrays.out_t.shape[0]
    ok = all(saved[k].shape == () for k in _COUNTERS) and all(
        saved[k].dtype.kind == "i" for k in ("sweeps_done", "draws_done"))
    if ok:
        done, d = int(saved["sweeps_done"]), int(saved["draws_done"])
        ok = (0 <= d <= n_draws and 0 <= done
              and done == (min(done, burn_in) if d == 0 else burn_in + d * period)
              and all(saved[k].shape == getattr(arrays, k).shape
                      and saved[k].dtype == getattr(arrays, k).dtype for k in _STATE)
              and all(saved[k].shape == (d,) + getattr(arrays, k).shape[1:]
                      and saved[k].dtype == getattr(arrays, k).dtype for k in _OUTS))
    if not ok:
        raise corrupt_checkpoint(path, "its arrays do not match its settings")
    check_generator_state(path, saved["rng_state"])
    return saved


def _run_chain(tree: tuple, arrays: _Chain, rng, fixed: tuple, base: float, burn_in: int,
               period: int, variant: int, *, resume=None, checkpoint=None, fingerprint=None,
               checkpoint_every: float = CHECKPOINT_EVERY, bar=None, estimate=None,
               seating=None) -> float:
    """One chain of :func:`~bayesfa.samplers.ngram._hpyp_kernel.run_chain`, as
    :func:`~bayesfa.samplers.ngram._hpyp_kernel.seat_data` then
    :func:`~bayesfa.samplers.ngram._hpyp_kernel.run_sweeps` in the blocks of the shared
    :class:`bayesfa.samplers.chains.ChainLoop` (``burn_in`` sweeps, then the draws, ``period``
    sweeps apart; the sweeps of ``--iterations`` after the last draw change no output and are
    not run): two calls when nothing is watched, else one sweep (burn-in) or one draw per
    call (the same kernel calls in the same order on the same Generator: bit-identical
    draws; the test suite compares), so that ``bar`` moves after each and the chain's state
    (:class:`_Chain`, the Generator's state, the sweeps and draws done) is saved to
    ``checkpoint`` after the first block ending ``checkpoint_every`` seconds or more after the
    last save, and at the end. ``resume`` (:func:`_load_chain`) continues a saved chain.
    ``estimate(seconds_seating, seconds_per_sweep)`` is called once, after the first block of
    a fresh chain. ``seating`` (int32 ``[n_draws, P]``, validation fits): each draw's table
    sizes ``sizes`` are copied there (one draw per call then; the same draws). Returns the
    chain's seconds (before a resume included)."""
    from bayesfa.samplers.ngram import _hpyp_kernel as k

    tok_node, tok_sym, parent, depth, off, slot_node, slot_sym = tree
    a = arrays
    state = (a.c, a.t, a.cs, a.ts, a.sizes, off, a.disc, a.conc)
    outs = (a.out_t, a.out_disc, a.out_conc, a.out_lj, a.out_moved)
    loop = ChainLoop(rng, resume)
    seated = 0.0
    if resume is None:
        t0 = time.perf_counter()
        k.seat_data(rng, tok_node, tok_sym, parent, depth, *state, base, variant)
        seated = time.perf_counter() - t0
    else:
        for name in _STATE:
            getattr(a, name)[...] = resume[name]
        for name in _OUTS:
            getattr(a, name)[:loop.d] = resume[name]
    first = [resume is None and estimate is not None]

    def run(stop: int, draw: int) -> None:
        s0 = time.perf_counter()
        start = loop.done
        k.run_sweeps(rng, tok_node, tok_sym, parent, depth, *state, *fixed, PRIOR, base, start,
                     stop, burn_in, period, variant, *outs, slot_node, slot_sym, draw)
        if first[0]:
            first[0] = False
            estimate(seated, (time.perf_counter() - s0) / max(1, stop - start))

    def save() -> None:
        save_checkpoint(checkpoint, fingerprint, {
            **{name: getattr(a, name) for name in _STATE},
            **{name: getattr(a, name)[:loop.d] for name in _OUTS},
            "sweeps_done": loop.done, "draws_done": loop.d, "rng_state": generator_state(rng),
            "seconds": loop.seconds()})

    n_draws = a.out_t.shape[0]
    watched = bar is not None or checkpoint is not None or seating is not None

    def draws(d: int, e: int) -> None:
        run(burn_in + e * period, d)
        if seating is not None:  # one draw per call (per_block 1)
            seating[d] = a.sizes

    seconds = loop.run(lambda n: run(loop.done + n, 0), draws,
                       burn_in=burn_in, period=period, n_draws=n_draws,
                       block=1 if watched else max(1, burn_in), per_block=1 if watched else n_draws,
                       save=None if checkpoint is None else save,
                       checkpoint_every=checkpoint_every,
                       on_sweeps=None if bar is None else bar.update)
    if checkpoint is not None:
        save()
    return seconds + seated


def sample_hpyp(corpus: Corpus, order: int, *, iterations: int = 1100, burn_in: int = 100,
                period: int = 1, chains: int = 1, seed: int = 0, sequence: bool = False,
                discount: float | None = None, concentration: float | None = None,
                variant: int = 0, progress: bool = False, holdout: float = 0.0,
                checkpoint_dir=None, checkpoint_every: float = CHECKPOINT_EVERY,
                record_seating: bool = False) -> FitResult:
    """Run the HPYP Gibbs sampler (module docstring); the arrays :func:`predict_log_prob`
    needs, the trace (log joint, per-depth ``d``, ``theta``) and timings.

    ``record_seating`` (validation fits: ``bayesfa validate``'s ``recorded`` check, the
    option ``record_seating`` of :meth:`_HPYP.fit`; not a CLI option, no checkpoints): the
    arrays also keep each draw's seating, ``seating`` int32 ``[chain, draw, P]`` (the
    kernel's ``sizes``: slot ``i``'s table sizes at ``slot_off[i]`` onwards, ``tables``
    of them), ``slot_off``, ``slot_node`` (the slots' restaurants) and ``node_depth``. The
    draws are the same as without it.

    ``progress``: a tqdm bar on standard error moving after every burn-in sweep and every
    draw, and, after the first sweep, ``"hpyp: estimated N s for M sweeps"`` when that
    exceeds :data:`ESTIMATE_SECONDS` (the draws are the same). The sweeps of
    ``iterations`` after the last draw change no output and are not run.

    ``holdout`` (sentences only): the fraction of the strings left out of sampling (the slice
    CGS-PFA holds out for the seed, :func:`bayesfa.samplers.pfa.cgs_pfa.holdout_split`); the
    trace gains ``heldout_log_pred``, each draw's log predictive of those strings (Eq. 10,
    each string given the training data, as :func:`per_sample_log_prob` scores).
    ``checkpoint_dir``: each chain keeps its state in ``chain-CCCC.npz`` there (atomically,
    every ``checkpoint_every`` seconds and at its end), and a later call with the same data,
    settings and seed reuses finished chains and resumes the others bit-identically; a file
    of another run is ignored (and replaced), a damaged one an :class:`InputError` naming it."""
    checkpoint_every = check_checkpoint_every(checkpoint_every)
    if record_seating and checkpoint_dir is not None:
        raise InputError("record_seating is for validation fits, which keep no checkpoints")
    root = np.random.SeedSequence(seed)
    kept, held_idx = holdout_split(corpus.n_strings, float(holdout), root)
    held = None
    if held_idx.size:
        if sequence:
            raise InputError("--holdout needs sentences: with --sequence the strings are one "
                             "sequence (use --holdout 0)")
        held = corpus.subset(held_idx)
        corpus = corpus.subset(kept)
    options = {"order": order, "sequence": sequence}
    F, n_sym, first, parent, depth, tok_node = _train_tree(corpus, options)

    tok_sym = F[first:].astype(np.int64)
    n_nodes = parent.size
    cap = _slots(parent, tok_node, tok_sym, n_nodes, n_sym)
    off = np.zeros(n_nodes * n_sym + 1, dtype=np.int64)
    np.cumsum(cap.reshape(-1), out=off[1:])
    off = np.ascontiguousarray(off[:-1].reshape(n_nodes, n_sym))
    slot_node, slot_sym = np.nonzero(cap)
    # a representative data token per slot, to find the node again in a larger tree
    rep_tok, rep_up = _representatives(parent, tok_node, slot_node)
    n_draws = (iterations - burn_in) // period
    if n_draws < 1:
        raise InputError(f"--iterations {iterations} with --burn-in {burn_in} and --period "
                         f"{period} keeps no sample")
    children = root.spawn(chains + 1)
    tables = np.zeros((chains, n_draws, slot_node.size), dtype=np.int32)
    disc_out = np.zeros((chains, n_draws, order))
    conc_out = np.zeros((chains, n_draws, order))
    lj = np.zeros((chains, n_draws))
    moves = np.zeros((chains, n_draws), dtype=np.int64)
    seating = (np.zeros((chains, n_draws, int(cap.sum()) + 1), dtype=np.int32)
               if record_seating else None)
    tree = (tok_node, tok_sym, parent, depth, off, slot_node, slot_sym)
    settings = {"order": int(order), "sequence": bool(sequence), "iterations": int(iterations),
                "burn_in": int(burn_in), "period": int(period), "variant": int(variant),
                "discount": None if discount is None else float(discount),
                "concentration": None if concentration is None else float(concentration)}

    def chain_arrays(ch: int) -> _Chain:
        disc, _ = _per_depth(discount, order, START_DISCOUNT)
        conc, _ = _per_depth(concentration, order, START_CONCENTRATION)
        z = np.zeros((n_nodes, n_sym), dtype=np.int32)
        return _Chain(z, z.copy(), np.zeros(n_nodes, dtype=np.int32),
                      np.zeros(n_nodes, dtype=np.int32),
                      np.zeros(int(cap.sum()) + 1, dtype=np.int32), disc, conc,
                      tables[ch], disc_out[ch], conc_out[ch], lj[ch], moves[ch])

    fixed = (_per_depth(discount, order, START_DISCOUNT)[1],
             _per_depth(concentration, order, START_CONCENTRATION)[1])
    prints = [_chain_fingerprint(F, n_sym, settings, children[ch]) for ch in range(chains)]
    template = chain_arrays(0)  # shapes and types only
    sweeps = burn_in + n_draws * period  # the sweeps a chain runs (ChainLoop)
    book = ChainBook.open(checkpoint_dir, prints,
                          lambda path, fp: _load_chain(path, fp, template, burn_in, period),
                          lambda st: st if int(st["draws_done"]) == n_draws else None)
    secs = [0.0] * chains
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=chains * iterations, unit="sweep", desc="hpyp", leave=False,
                   dynamic_ncols=True, file=sys.stderr, mininterval=0.5)

    def estimate(seated: float, per_sweep: float) -> None:
        total = len(todo) * (seated + sweeps * per_sweep)
        if bar is not None and total > ESTIMATE_SECONDS:
            bar.write(f"hpyp: estimated {total:.0f} s for {len(todo)} chain"
                      f"{'s' if len(todo) != 1 else ''} of {iterations} sweeps (seating "
                      f"{seated:.3g} s, first sweep {per_sweep:.3g} s)", file=sys.stderr)

    for ch, st in enumerate(book.outs):
        if st is not None:  # saved finished: its draws are kept
            arrays_ch = chain_arrays(ch)
            for name in _OUTS:
                getattr(arrays_ch, name)[...] = st[name]
            secs[ch] = float(st["seconds"])
            if bar is not None:
                bar.update(iterations)
    todo = book.todo()
    try:
        for ch in todo:
            secs[ch] = _run_chain(tree, chain_arrays(ch), np.random.default_rng(children[ch]),
                                  fixed, 1.0 / n_sym, burn_in, period, variant,
                                  resume=book.saved[ch], checkpoint=book.paths[ch],
                                  fingerprint=prints[ch], checkpoint_every=checkpoint_every,
                                  bar=bar, estimate=estimate if ch == todo[0] else None,
                                  seating=None if seating is None else seating[ch])
            if bar is not None:
                bar.update(iterations - sweeps)  # sweeps after the last draw: not run
    finally:
        if bar is not None:
            bar.close()
    arrays = {"tokens": F, "n_symbols": np.array(n_sym), "tables": tables, "slot_tok": rep_tok, "slot_up": rep_up,
              "slot_sym": slot_sym.astype(np.int32), "disc": disc_out, "conc": conc_out,
              "log_joint": lj,
              "predict_entropy": np.array(children[-1].generate_state(4), dtype=np.uint32)}
    if seating is not None:
        arrays |= {"seating": seating, "slot_off": off[slot_node, slot_sym],
                   "slot_node": slot_node.astype(np.int64), "node_depth": depth.astype(np.int64)}
    # the sampler statistic moved: the fraction of the data customers reseated at another table
    # of their restaurant (_hpyp_kernel.sweep), per sweep, over each draw's period sweeps
    trace = {"log_joint": lj, "moved": moves / float(max(1, period * tok_node.size))}
    for k in range(order):
        trace[f"d_{k}"] = disc_out[:, :, k]
        trace[f"theta_{k}"] = conc_out[:, :, k]
    if held is not None:
        trace["heldout_log_pred"] = per_sample_log_prob(arrays, options, held).sum(axis=2)
    info = {"n_draws_per_chain": int(n_draws), "n_nodes": int(n_nodes),
            "n_states": int(n_nodes),  # contexts (restaurants), Table 1's "states"
            "n_slots": int(slot_node.size), "n_symbols": int(n_sym),
            "seconds_per_chain": secs, "seconds_per_sweep": float(np.mean(secs)) / sweeps,
            "holdout": float(holdout), "holdout_strings": int(held_idx.size),
            "chains_resumed": int(chains - len(todo)),
            "chains_resumed_mid_chain": int(book.resumed_mid_chain(todo))}
    if checkpoint_dir is not None:
        info["checkpoint_every"] = checkpoint_every
    return FitResult(arrays, trace, info)


def _representatives(parent, tok_node, slot_node):
    """For each slot's node: a data token whose context path passes through it and how many
    levels above that token's deepest node it is."""
    n_nodes = parent.size
    rep_tok = np.full(n_nodes, -1, dtype=np.int64)
    rep_up = np.zeros(n_nodes, dtype=np.int64)
    nodes = tok_node.copy()
    tok = np.arange(tok_node.size)
    up = 0
    while nodes.size:
        fresh = rep_tok[nodes] < 0
        # the first token reaching a node wins (np.unique keeps first occurrences)
        uniq, first = np.unique(nodes[fresh], return_index=True)
        rep_tok[uniq] = tok[fresh][first]
        rep_up[uniq] = up
        keep = parent[nodes] >= 0
        nodes, tok = parent[nodes][keep], tok[keep]
        up += 1
    return rep_tok[slot_node], rep_up[slot_node].astype(np.int32)


def _scoring_tree(arrays: dict[str, np.ndarray], options: dict[str, Any], test: Corpus):
    """The context tree of the training symbols followed by ``test``'s, and the recorded
    tables' slots on it: ``(F, n_train, parent, depth, tok_node, tok_sym, nodes, sym)``
    (:func:`per_sample_log_prob`, :func:`sample_strings`)."""
    sequence = bool(options.get("sequence", False))
    order = int(options["order"])
    train_F = np.asarray(arrays["tokens"], dtype=np.int32)
    first = 0 if sequence else 1
    n_train = train_F.size - first
    n_sym = int(arrays["n_symbols"])
    test_F, _, _ = flat_symbols(test, sequence, n_sym - (0 if sequence else 1))
    test_F = test_F[1:] if not sequence else test_F
    if test_F.size and int(test_F.max()) >= n_sym:
        raise InputError(f"the test data use letters outside the training alphabet of "
                         f"{n_sym - (0 if sequence else 1)}")
    F = np.concatenate([train_F, test_F]).astype(np.int32)
    parent, depth, tok_node = context_tree(F, first, not sequence, order - 1, compress=False)
    tok_sym = F[first:].astype(np.int64)
    nodes = tok_node[np.asarray(arrays["slot_tok"], dtype=np.int64)]
    up = np.asarray(arrays["slot_up"])
    for k in range(int(np.max(up, initial=0))):
        nodes[up > k] = parent[nodes[up > k]]
    sym = np.asarray(arrays["slot_sym"], dtype=np.int64)
    return F, n_train, parent, depth, tok_node, tok_sym, nodes, sym


def per_sample_log_prob(arrays: dict[str, np.ndarray], options: dict[str, Any], test: Corpus,
                        carry: bool = False, per_token: bool = False) -> np.ndarray:
    """``log Pr(test string | sample)`` ``[chain, draw, n_strings]`` (module docstring);
    ``carry``: every string given the training data *and the test strings before it* (the
    test data integrated as read, for ``bayesfa perplexity``), also for sentences;
    ``per_token`` (with ``carry``): one value per predicted test symbol instead of per
    string, ``[chain, draw, n_symbols]``. No validation mutant changes it (they change the
    sampler's moves and record, :mod:`bayesfa.validation.ngram.hpyp`)."""
    from bayesfa.samplers.ngram._hpyp_kernel import node_levels, score_samples

    sequence = bool(options.get("sequence", False))
    n_sym = int(arrays["n_symbols"])
    F, n_train, parent, depth, tok_node, tok_sym, nodes, sym = _scoring_tree(arrays, options,
                                                                             test)
    tables = np.asarray(arrays["tables"])
    n_c, n_d = tables.shape[:2]
    offsets = test_offsets(test, sequence)
    if per_token:
        offsets = np.arange(offsets[-1] + 1, dtype=np.int64)
        carry = True
    dord = depth_order(depth)
    path_len = int(node_levels(parent).max()) + 1
    entropy = [int(x) for x in np.asarray(arrays["predict_entropy"])]
    out = np.empty((n_c, n_d, offsets.size - 1))
    for ch in range(n_c):
        score_samples(np.random.default_rng(entropy + [ch]), np.ascontiguousarray(tables[ch]),
                      nodes, sym, np.ascontiguousarray(arrays["disc"][ch], dtype=np.float64),
                      np.ascontiguousarray(arrays["conc"][ch], dtype=np.float64), parent, depth,
                      dord, tok_node, tok_sym, n_train, offsets, not (sequence or carry), n_sym,
                      path_len, out[ch])
    return out


def node_bytes(n_nodes: int, n_sym: int) -> int:
    """:meth:`_HPYP.estimate_memory`'s restaurants: 32 bytes a node and symbol, twice what a
    chain holds there (``c`` and ``t`` int32, the context tree's ``[nodes, S]`` int64 table;
    ``tests/test_hpyp.py::test_node_bytes_is_twice_a_chains_arrays_a_node_and_symbol``)."""
    return int(n_nodes) * int(n_sym) * (4 * 4 + 8 * 2)


def predict_log_prob(arrays, options, test: Corpus) -> np.ndarray:
    """``log p(string | train)`` of each test string, averaged over the samples in
    probability, ``[n_strings]``: sentences each given the training data only (the quantity
    every method predicts alike), a sequence's strings continuing one another (module
    docstring). Not :func:`perplexity_log_prob`, which reads sentences as one growing test
    set (:func:`quantity`)."""
    lp = per_sample_log_prob(arrays, options, test)
    return mixture_log_prob(lp.reshape(-1, lp.shape[-1]), bool(options.get("sequence", False)))


def quantity(sequence: bool, per_symbol: bool = False) -> str:
    """What :func:`perplexity_log_prob` (and the memoizer's) returns, and how it relates to
    the sum of :func:`predict_log_prob` (``bayesfa perplexity`` prints it; the ``quantity``
    of :meth:`bayesfa.Run.perplexity`)."""
    if per_symbol:
        return ("sum_t log mean_k p_k(x_t | x_<t), the authors' per-symbol average over the "
                "samples (it converges to sum_t log E[p(x_t | x_<t)], not to "
                "log p(test | train)); compare it only with runs of the same quantity")
    if sequence:
        return ("log p(test | train), the test letters continuing the training sequence: the "
                "same quantity as the sum of `bayesfa predict` (comparable across methods)")
    return ("log p(test | train), the test strings integrated as they are read (string s "
            "given the training data and test strings 1..s-1): not the sum of `bayesfa "
            "predict` (each string given the training data only, the quantity to compare "
            "across methods); compare this one only with runs of the same quantity")


def perplexity_log_prob(arrays, options, test: Corpus, continuation: bool,
                        per_symbol: bool = False, details: dict | None = None) -> float:
    """``log p(test | train)`` with the test strings integrated into the model as they are
    read (the ``perplexity_log_prob`` hook of :mod:`bayesfa.methods`): the log mean over the
    samples of each sample's total; ``per_symbol``: the sum over the test symbols of each
    symbol's predictive averaged over the samples (the PDIA authors' estimator). On
    sentences this is not the sum of :func:`predict_log_prob`, which gives each string the
    training data only; ``details`` (a dict) receives the ``quantity`` (:func:`quantity`)
    and the ``estimator``."""
    check_shape(options, continuation)
    if details is not None:
        n_chains, n_draws = np.shape(arrays["tables"])[:2]
        mean = f"the {n_chains * n_draws} samples of {n_chains} chain(s)"
        details.update(quantity=quantity(continuation, per_symbol),
                       estimator=(f"each symbol's predictive averaged over {mean} with equal "
                                  f"weights" if per_symbol else
                                  f"log mean over {mean} of each sample's probability of the "
                                  f"whole test set, its test customers seated as read"))
    if per_symbol:
        lp = per_sample_log_prob(arrays, options, test, per_token=True)
        return float(log_mean_exp(lp.reshape(-1, lp.shape[-1]), axis=0).sum())
    lp = per_sample_log_prob(arrays, options, test, carry=True)
    return float(log_mean_exp(lp.reshape(-1, lp.shape[-1]).sum(axis=1), axis=0))



# -- drawing strings from the predictive (Run.sample) --------------------------------------------

class ContextPredictive:
    """The predictive of the next symbol after any context (Teh 2006, Eq. 10, the kernel's
    :func:`~bayesfa.samplers.ngram._hpyp_kernel.predictive`) under a seating of the training
    data: what ``bayesfa sample`` draws strings from, symbol by symbol from the context "after
    an end" until the end symbol (the drawn symbols are not seated: each is drawn from the
    predictive given the context and the training data). A context the training data never
    had is a restaurant without customers, whose predictive is its parent's (Eq. 10 with
    ``c_u = 0``): the longest suffix of the context that is a node of the training tree (an
    uncompressed one: every suffix of a training context is a node) gives it exactly.
    Sentences only.

    ``F``, ``parent``, ``depth``, ``tok_node``: the training symbols and their context tree
    (:func:`context_tree`, sentences, ``first = 1``); ``width``: the longest context (None:
    unbounded); ``seating(k)`` -> ``(nd, nth, c, t, cs, ts)`` of seating ``k`` of
    ``n_samples``, drawn uniformly for each string. :meth:`of_hpyp`: the recorded samples of
    an HPYP run."""

    def __init__(self, F, parent, depth, tok_node, n_sym: int, width: int | None, seating,
                 n_samples: int):
        from bayesfa.samplers.ngram._hpyp_kernel import node_levels

        self.parent, self.depth, self.n_sym, self.width = parent, depth, int(n_sym), width
        self.seating, self.n_samples = seating, int(n_samples)
        self.node = {}  # context (oldest symbol first) -> node of the training tree
        for i in range(tok_node.size):
            p, u = i + 1, int(tok_node[i])
            while u >= 0 and tuple(F[p - depth[u]:p]) not in self.node:
                self.node[tuple(int(x) for x in F[p - depth[u]:p])] = u
                u = int(parent[u])
        self.path = np.empty(int(node_levels(parent).max()) + 2, dtype=np.int64)
        self.pp = np.empty(self.path.size)

    @classmethod
    def of_hpyp(cls, arrays: dict[str, np.ndarray], options: dict[str, Any]) -> "ContextPredictive":
        """Every recorded sample of an HPYP run (its tables and ``d``, ``theta``)."""
        from bayesfa.samplers.ngram._hpyp_kernel import fill_customers, set_node_params

        if options.get("sequence", False):
            raise InputError("a run fitted with --sequence models one long sequence, not a "
                             "distribution over strings: it has no strings to sample")
        n_sym = int(arrays["n_symbols"])
        F, n_train, parent, depth, tok_node, tok_sym, nodes, sym = _scoring_tree(
            arrays, options, Corpus.from_strings([], n_sym - 1))
        tables = np.asarray(arrays["tables"])
        dord = depth_order(depth)

        def seating(k: int):
            ch, d = divmod(int(k), tables.shape[1])
            n = parent.size
            c = np.zeros((n, n_sym), dtype=np.int32)
            t = np.zeros((n, n_sym), dtype=np.int32)
            cs, ts = np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.int32)
            t[nodes, sym] = tables[ch, d]
            fill_customers(parent, dord, tok_node, tok_sym, n_train, c, t, cs, ts)
            nd, nth = np.empty(n), np.empty(n)
            set_node_params(depth, np.asarray(arrays["disc"][ch, d], dtype=np.float64),
                            np.asarray(arrays["conc"][ch, d], dtype=np.float64), nd, nth)
            return nd, nth, c, t, cs, ts

        return cls(F, parent, depth, tok_node, n_sym, int(options["order"]) - 1, seating,
                   tables.shape[0] * tables.shape[1])

    def next_probs(self, seating, context: list[int]) -> np.ndarray:
        """``p(w | context)`` for every symbol ``w`` (0 the end), ``[S]``."""
        from bayesfa.samplers.ngram._hpyp_kernel import predictive

        if self.width is None:
            key = tuple(context)
        else:
            key = tuple(context[-self.width:]) if self.width else ()
        while key not in self.node:
            key = key[1:]
        u = self.node[key]
        return np.array([predictive(u, w, self.parent, *seating, 1.0 / self.n_sym, self.path,
                                    self.pp) for w in range(self.n_sym)])

    def log_prob(self, corpus: Corpus) -> np.ndarray:
        """``log`` of the probability :meth:`draw` gives each string of ``corpus``: the mean
        over the samples of the product of :meth:`next_probs` along it, end included."""
        out = np.empty((self.n_samples, corpus.n_strings))
        for k in range(self.n_samples):
            seat = self.seating(k)
            for i in range(corpus.n_strings):
                context, lp = [0], 0.0
                for w in [int(x) + 1 for x in corpus.string(i)] + [0]:
                    lp += math.log(self.next_probs(seat, context)[w])
                    context.append(w)
                out[k, i] = lp
        return log_mean_exp(out, axis=0)

    def draw(self, n: int, rng: np.random.Generator, max_length: int = 100_000) -> list[list[int]]:
        """``n`` strings (letters ``0..L-1``): for each, a recorded sample drawn uniformly,
        then symbols from :meth:`next_probs` until the end symbol."""
        which = rng.integers(self.n_samples, size=int(n))
        strings: list = [None] * int(n)
        for k in np.unique(which):
            seat = self.seating(int(k))
            for i in np.flatnonzero(which == k):
                context, letters = [0], []
                while True:
                    p = self.next_probs(seat, context)
                    w = int(np.searchsorted(np.cumsum(p), rng.random() * p.sum(), side="right"))
                    w = min(w, self.n_sym - 1)
                    if w == 0:
                        break
                    letters.append(w - 1)
                    context.append(w)
                    if len(letters) > max_length:
                        raise InputError(f"a sampled string exceeds {max_length} symbols")
                strings[i] = letters
        return strings


def check_shape(options: dict[str, Any], continuation: bool) -> None:
    """A run fitted on sentences scores sentences, one fitted with ``--sequence`` a
    continuation."""
    if bool(options.get("sequence", False)) != bool(continuation):
        raise InputError("the run was fitted on " + ("one sequence (--sequence)" if
                         options.get("sequence") else "sentences") + ", the perplexity asks "
                         "for " + ("a continuation" if continuation else "sentences"))


def _order(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 12:
        raise argparse.ArgumentTypeError(f"must be an order from 1 (unigram) to 12, got {text}")
    return value


def add_sequence_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sequence", action="store_true",
                        help="read the training strings as one long sequence (no end symbol); "
                             "a test set continues it")


class _HPYP:
    """The ``hpyp`` entry of :data:`bayesfa.methods.REGISTRY`."""

    name = "hpyp"
    summary = ("HPYP-smoothed n-gram (hierarchical Pitman-Yor language model), Gibbs-sampled "
               "seatings and per-depth d, theta (Teh 2006)")
    validation = "bayesfa.validation.ngram.hpyp:HPYP"
    variant = 0
    resumable = True  # fit(..., workdir=) keeps chain states there (finished or not)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--order", type=_order, default=3,
                            help="n-gram order K: K - 1 symbols of context (2 = bigram); "
                                 "default 3")
        parser.add_argument("--iterations", type=positive_int, default=1100,
                            help="Gibbs sweeps per chain, burn-in included; default 1100 "
                                 "(the PDIA paper: 100 burn-in + 1,000 samples)")
        parser.add_argument("--burn-in", type=nonnegative_int, default=100,
                            help="sweeps discarded at the start; default 100")
        parser.add_argument("--period", type=positive_int, default=1,
                            help="keep one sample every PERIOD sweeps after burn-in; default 1")
        parser.add_argument("--chains", type=positive_int, default=1,
                            help="independent chains; default 1")
        add_jobs_argument(parser, "the chains run one after the other in this process")
        parser.add_argument("--discount", type=fraction, default=None,
                            help="one discount d for every depth, fixed; default: sampled per "
                                 "depth under Beta(1, 1) from 0.5")
        parser.add_argument("--concentration", type=positive_float, default=None,
                            help="one concentration theta for every depth, fixed; default: "
                                 "sampled per depth under Gamma(1, 1) from 1.0")
        add_sequence_argument(parser)
        parser.add_argument("--holdout", type=fraction, default=0.0, metavar="FRACTION",
                            help=f"fraction of the training strings (at most {HOLDOUT_MAX}) left "
                                 f"out of sampling, chosen from the seed (sentences only); each "
                                 f"draw records their log predictive (heldout_log_pred) for "
                                 f"diagnose; default 0")
        add_checkpoint_argument(parser)

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool,
            workdir=None) -> FitResult:
        """The chains of :func:`sample_hpyp`; ``workdir``: their checkpoints (resumable)."""
        return sample_hpyp(corpus, int(options["order"]), iterations=int(options["iterations"]),
                           burn_in=int(options["burn_in"]), period=int(options["period"]),
                           chains=int(options["chains"]), seed=seed,
                           sequence=bool(options.get("sequence", False)),
                           discount=options.get("discount"),
                           concentration=options.get("concentration"),
                           variant=self.variant, progress=progress,
                           holdout=float(options.get("holdout", 0.0)), checkpoint_dir=workdir,
                           checkpoint_every=options.get("checkpoint_every", CHECKPOINT_EVERY),
                           record_seating=bool(options.get("record_seating", False)))

    def predict_log_prob(self, arrays, options, corpus) -> np.ndarray:
        return predict_log_prob(arrays, options, corpus)

    def perplexity_log_prob(self, arrays, options, corpus, *, continuation: bool,
                            per_symbol: bool = False, details: dict | None = None) -> float:
        return perplexity_log_prob(arrays, options, corpus, continuation, per_symbol, details)

    def sample_strings(self, arrays, options, n: int, rng: np.random.Generator) -> list:
        """``n`` strings from the predictive (:class:`ContextPredictive`)."""
        return ContextPredictive.of_hpyp(arrays, options).draw(n, rng)

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        """Peak bytes of a fit (:mod:`bayesfa.methods`): the restaurants' ``[nodes, S]``
        tables (:func:`node_bytes`, the nodes bounded from above),
        ``24 order + 152`` bytes a symbol of the data (the context tree's construction and the
        chain's per-token arrays: ``tracemalloc`` measured 186, 208 and 241-248 bytes a symbol
        at orders 2, 3 and 5 where the tables are small), and the stored draws. At least a
        fit's traced peak
        (``tests/test_hpyp.py::test_memory_estimate_covers_a_fits_traced_peak``; over a grid of
        2-20 letters, 200-8,000 strings and orders 2-5, ``benchmarks/memory_traced.py``,
        ``benchmarks/results/memory-traced/hpyp.json``: 1.06-1.17, up to 3.7 where the node
        bound is loose, 20 letters at order 5). Issue 39: with ``8 order + 128`` bytes a symbol
        it was 0.68-0.86 of the peak on most of those fits."""
        order = int(options["order"])
        n_tok = corpus.n_tokens + 1  # at least flat_size: F's symbols, each a context
        n_sym = corpus.alphabet_size + 1
        # the trie's nodes: contexts of at most order - 1 symbols, each a node, so no more
        # than the capacity of one node a symbol nor the number of such strings over n_sym
        n_nodes = min(trie_capacity(n_tok, (order - 1) * n_tok, False),
                      sum(n_sym ** k for k in range(order)))
        n_slots = min(order * n_tok, n_nodes * n_sym)
        n_draws = max(1, draws_per_chain(options))
        state = node_bytes(n_nodes, n_sym) + (24 * order + 152) * n_tok
        return int(state + options["chains"] * n_draws * (4 * n_slots + 16 * order + 8))


METHOD = _HPYP()
