"""The finite Bayesian PDFA sampler (``--method pdfa``) and the front shared with the PDIA.

Pfau, Bartlett & Wood (2010), "Probabilistic deterministic infinite automata", Sect. "A Prior
over PDFAs" (Eq. gen:mu-gen:delta), "PDFA likelihood" (Eq. x:end, emissions integrated out),
"Posterior Inference in the Finite Model" (MH on each ``delta_ij`` with the predictive
Eq. delta:pred with ``D+_j`` as proposal, zero-count transitions deleted; ``mu`` by an exact
Gibbs step with auxiliary table counts (Teh et al. 2006) in log space instead of the paper's
MH with a ``Dir(eta mu-hat)`` proposal, which cannot move near the boundary that small
``gamma`` favours; see ``_pdfa_kernel.move_mu``). ``alpha, beta, gamma`` are sampled by MH
under Gamma(1, 1) priors unless an option fixes them. The kernels are in
:mod:`bayesfa.samplers.pdia._pdfa_kernel` and :mod:`bayesfa.samplers.pdia._crf_kernel`.

Data shapes (the conventions of :mod:`bayesfa.models.pdfa`): *sentences* (default) -- the
end of a string is symbol 0, emitted like a letter (``pi_q ~ Dir(beta / (L+1))``) and leading
back to ``q0``, so the model is a distribution over strings, the empty one included;
*sequence* (``--sequence``) -- the letters of all strings in order are one long sequence
(``pi_q ~ Dir(beta / L)``), and a test set continues it from the state reached at the end
of training.

Prediction averages, over every recorded sample, the probability of each test string with
its emissions folded into the counts as they are read (the Dirichlet-multinomial
predictive) and the transitions the training data never used drawn from the prior
predictive (Monte Carlo over ``--predict-draws`` draws, exact when none is needed): never 0.
``bayesfa predict RUN TEST --map`` uses the single sample of highest log joint (PDIA-MAP).

Checkpoints (``fit(..., workdir=)``, the ``resumable`` contract of :mod:`bayesfa.methods`):
each chain saves its whole state to ``workdir/chain-CCCC.npz`` (atomically) every
``--checkpoint-every`` seconds, checked between blocks of sweeps, and when it finishes; the
same fit run again reuses finished chains and resumes the others where they stopped, and
ends bit-identical to an uninterrupted fit (:func:`run_chain`, :func:`fit_model`).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from bayesfa.automata import PFA
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.forward import log_mean_exp
from bayesfa.methods import (FitResult, add_mcmc_arguments, check_schedule, draws_per_chain,
                             nonnegative_int, positive_float, positive_int)
from bayesfa.samplers.chains import (CHECKPOINT_EVERY, add_checkpoint_argument, chain_path,
                                     check_checkpoint_every, check_generator_state,
                                     corrupt_checkpoint, digest, generator_state,
                                     read_checkpoint, save_checkpoint)
from bayesfa.samplers.plugin import DrawAutomata

FINITE, CRF = 0, 1
#: hyperparameter slots of the kernels' ``hyp`` array, per model (see ``_crf_kernel``)
HYPER_NAMES = {FINITE: ("alpha", "beta", "gamma"), CRF: ("alpha", "beta", "alpha0", "d", "d0")}
HYPER_DEFAULTS = {"alpha": 1.0, "beta": 1.0, "gamma": 1.0, "alpha0": 1.0, "d": 0.5, "d0": 0.5}
_SLOTS = {"alpha": 0, "beta": 1, "gamma": 2, "alpha0": 2, "d": 3, "d0": 4}
MOVE_KINDS = ("entry", "table", "mu")
#: the ``lg`` argument of ``_pdfa_kernel.predict_strings`` for emissions ``Dir(beta / S)``:
#: a 2-D array selects them (only its rank is read)
_PLAIN_LG = np.zeros((2, 1))


class Data(NamedTuple):
    """The training data as the kernels read it."""

    sym: np.ndarray      # int32 [T]
    nf: int              # 1 sentences (symbol 0 = end, back to q0), 0 sequence
    n_symbols: int       # S


def as_symbols(corpus: Corpus, sequence: bool, n_letters: int | None = None) -> Data:
    """Sentences: the corpus tokens (0 ends a string). Sequence: its letters, 0-based."""
    n_letters = corpus.alphabet_size if n_letters is None else n_letters
    if sequence:
        tokens = corpus.tokens
        return Data(np.ascontiguousarray(tokens[tokens != 0] - 1, dtype=np.int32), 0, n_letters)
    return Data(np.ascontiguousarray(corpus.tokens, dtype=np.int32), 1, n_letters + 1)


def hyper_values(model: int, options: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """``(hyp [5], fixed [5])``: a hyperparameter given in the options is fixed at that value,
    the others start at :data:`HYPER_DEFAULTS` and are sampled."""
    hyp = np.zeros(5)
    fixed = np.ones(5, dtype=np.int64)
    for name in HYPER_NAMES[model]:
        value = options.get(name)
        slot = _SLOTS[name]
        if value is None:
            hyp[slot] = HYPER_DEFAULTS[name]
            fixed[slot] = 0
        else:
            hyp[slot] = float(value)
    return hyp, fixed


class ChainState:
    """Every array of one chain (the kernels' chain state, see their module docstrings).

    A checkpoint (:func:`run_chain`) saves every ndarray attribute, those an emission
    plug-in's ``prepare`` adds included, but not the workspace ``_ws``: its path index is
    rebuilt at the start of every sweep (``_pdfa_kernel.build_index``) and the rest is scratch
    invalidated by stamps."""

    def __init__(self, model: int, data: Data, n_cap: int):
        from bayesfa.samplers.pdia._crf_kernel import new_crf

        s = data.n_symbols
        self.model, self.data, self.n_cap = model, data, n_cap
        self.delta = np.full((n_cap, s), -1, dtype=np.int32)
        self.seat = np.full((n_cap, s), -1, dtype=np.int32)
        self.cnt = np.zeros((n_cap, s), dtype=np.int32)
        self.ctot = np.zeros(n_cap, dtype=np.int32)
        self.cnt2 = np.zeros_like(self.cnt)
        self.ctot2 = np.zeros_like(self.ctot)
        self.vis = np.zeros((n_cap, s), dtype=np.int64)
        self.changed = np.zeros(n_cap, dtype=np.bool_)
        big = n_cap * s
        self.newq = np.zeros(big, dtype=np.int32)
        self.news = np.zeros(big, dtype=np.int32)
        self.oq = np.zeros(big, dtype=np.int32)
        self.os = np.zeros(big, dtype=np.int32)
        self.oseat = np.zeros(big, dtype=np.int32)
        (self.nj, self.v, self.mu, self.tabs, self.col_tabs, self.col_T, self.sts,
         self.meta) = new_crf(n_cap, s)
        if model == FINITE:
            self.meta[6] = n_cap  # hi: every state exists
            self.mu[:] = 1.0 / n_cap
        self.lmu = np.log(self.mu) if model == FINITE else np.zeros(n_cap)  # log mu (finite)
        self.lg = np.zeros((2, data.sym.size + 2))
        self._ws = None

    def workspace(self):
        """The path index and scratch of the sweep (``_pdfa_kernel.new_workspace``), made on
        first use and kept: no proposal allocates."""
        if self._ws is None:
            from bayesfa.samplers.pdia._pdfa_kernel import new_workspace

            self._ws = new_workspace(self.data.sym.size, self.n_cap, self.data.n_symbols)
        return self._ws

    def seating(self):
        return (self.nj, self.v, self.mu, self.tabs, self.col_tabs, self.col_T, self.sts, self.meta)


def _init_chain(state: ChainState, hyp: np.ndarray, rng: np.random.Generator, variant: int) -> None:
    """Finite model: start from a draw of the prior along the data (run the empty table over
    the data, drawing every entry it needs from the Polya predictive). PDIA: start from one
    state besides ``q0`` (a prior draw along a large data set would hold thousands)."""
    from bayesfa.samplers.pdia import _pdfa_kernel as K

    st = state
    K.fill_lg(st.lg, hyp[1], st.data.n_symbols)
    _, _, _, ok = K.eval_path(st.model, variant, st.data.sym, st.data.nf, st.delta, st.seat,
                              st.cnt2, st.ctot2, st.vis, st.newq, st.news, *st.seating(), hyp, rng,
                              st.model == CRF)
    if not ok:
        raise InputError(f"the state capacity {st.n_cap} is too small for the first path; "
                         "raise --max-states")
    from bayesfa.samplers.pdia._crf_kernel import end_move

    end_move(st.tabs, st.sts, st.meta)
    st.cnt[:] = st.cnt2
    st.ctot[:] = st.ctot2


def _sweeps(state: ChainState, hyp, fixed, n: int, rng, stats, options, variant: int,
            moves=(-1, -1), emission=None, each=None) -> None:
    """``n`` sweeps, one kernel call each; ``each(1)`` after every sweep (progress: a PDIA
    sweep on a large corpus can take seconds)."""
    from bayesfa.samplers.pdia import _pdfa_kernel as K

    st = state
    for _ in range(n):
        K.sweep(st.model, variant, st.data.sym, st.data.nf, st.delta, st.seat, st.cnt, st.ctot,
                st.cnt2, st.ctot2, st.vis, st.changed, st.newq, st.news, st.oq, st.os, st.oseat,
                *st.seating(), hyp, st.lg, fixed, st.lmu, int(options.get("mu_moves", 5)),
                float(options.get("hyper_step", 0.5)),
                bool(options.get("table_moves", True)), int(moves[0]), int(moves[1]), rng, stats,
                st.workspace())
        if emission is not None:
            emission.sweep(st, hyp, rng, stats)
        if each is not None:
            each(1)


#: the validation mutant that slips only in the recorded log joint (``_pdfa_kernel.log_joint``)
LOG_JOINT_VARIANT = 15
#: the kernels' ``variant`` codes: 0 is the sampler, 1-15 the validation's mutants
#: (:mod:`bayesfa.validation.pdia`); any other code is refused, not run as the sampler
VARIANT_CODES = range(16)


def check_variant(variant) -> int:
    """``variant`` as an int, or ValueError when it is not one of :data:`VARIANT_CODES` (a
    front's ``variant`` of -1 sampled as the production kernel, unseen by every test)."""
    if isinstance(variant, (bool, np.bool_)) or not isinstance(variant, (int, np.integer)) \
            or int(variant) not in VARIANT_CODES:
        raise ValueError(f"unknown kernel variant {variant!r}: 0 (the sampler) or a validation "
                         f"mutant's code {VARIANT_CODES[1]}-{VARIANT_CODES[-1]}")
    return int(variant)


def _record(state: ChainState, hyp, emission=None, variant: int = 0) -> dict[str, Any]:
    """One draw: the instantiated table, counts, seating and hyperparameters (``variant``:
    only :data:`LOG_JOINT_VARIANT` reaches the log joint, which is otherwise the model's)."""
    from bayesfa.samplers.pdia import _pdfa_kernel as K

    st = state
    hi = int(st.meta[6])
    delta = st.delta[:hi].copy()
    seat = st.seat[:hi].copy()
    tdish = np.zeros(0, dtype=np.int32)
    if st.model == CRF:
        used = delta >= 0
        ids, inv = np.unique(seat[used], return_inverse=True)
        seat[used] = inv.astype(np.int32)
        tdish = st.tabs[1, ids].astype(np.int32)
    end = _end_state(st.data, delta)
    lj = K.log_joint(st.model, variant if variant == LOG_JOINT_VARIANT else 0, st.cnt, st.ctot, st.meta, st.v, st.nj, st.mu, st.tabs,
                     st.col_tabs, st.col_T, st.sts, hyp, st.lg, st.data.nf, st.lmu)
    out = {"delta": delta, "seat": seat, "cnt": st.cnt[:hi].copy(), "mu": st.mu.copy(),
           "tdish": tdish, "hyp": hyp.copy(), "end": end, "log_joint": lj,
           "n_states": K.n_states_used(st.ctot, hi),
           "n_tables": int(st.meta[2]) if st.model == CRF else int((delta >= 0).sum())}
    if emission is not None:
        emission.record(st, out)
    return out


def _end_state(data: Data, delta: np.ndarray) -> int:
    if data.nf == 1:
        return 0
    q = 0
    for s in data.sym:
        q = int(delta[q, s])
    return q


def run_chain(model: int, data: Data, n_cap: int, options: dict[str, Any], seed_seq,
              variant: int = 0, on_sweeps=None, emission=None, checkpoint=None,
              checkpoint_every: float = CHECKPOINT_EVERY, fingerprint: str | None = None,
              resume: dict[str, Any] | None = None) -> dict[str, Any]:
    """One chain: prior start, ``burn_in`` sweeps (in blocks of 50), then a draw every
    ``period`` sweeps. ``emission``: a plug-in emission prior (``prepare / sweep / record /
    stack / describe / predict_lg``, see :mod:`bayesfa.samplers.pdia.pdia_smoothed`); ``None``:
    ``Dir(beta / S)``.

    ``checkpoint`` (a path): after each block of sweeps (a burn-in block, or the ``period``
    sweeps and the record of a draw) that ends ``checkpoint_every`` seconds or more after the
    last save, and when the chain ends, the whole chain state is saved there atomically under
    ``fingerprint`` (:func:`_chain_state`: every array of :class:`ChainState`, ``hyp``, the
    ``fixed`` flags, ``stats``, the draws so far, the sweeps done, the numbers of moves frozen
    at the end of burn-in, the Generator's ``bit_generator.state``, the seconds spent).
    ``resume`` (a state read by :func:`_load_chain`) continues such a chain instead of
    starting one: the emission plug-in's ``prepare`` re-creates its attributes, the saved
    arrays overwrite every array, and the Generator's state is restored, so the chain ends bit
    for bit as an uninterrupted one. Neither the interval nor the blocks change the result.
    ``on_sweeps(n)``: after every sweep with ``n`` = 1 (first with the sweeps done before a
    resume).
    """
    rng = np.random.default_rng(seed_seq)
    n_draws = check_schedule(options)
    hyp, fixed = hyper_values(model, options)
    st = ChainState(model, data, n_cap)
    stats = _new_stats(emission)
    burn, period = int(options["burn_in"]), int(options["period"])
    t0 = time.perf_counter()
    if resume is None:
        _init_chain(st, hyp, rng, variant)
        if emission is not None:
            emission.prepare(st, hyp, fixed, options, rng)
        done, draws, moves, seconds_before = 0, [], (-1, -1), 0.0
    else:
        if emission is not None:  # its non-array attributes; the arrays are overwritten
            emission.prepare(st, hyp, fixed, options, rng)
        _restore(st, hyp, fixed, stats, resume, checkpoint)
        rng.bit_generator.state = json.loads(str(resume["rng_state"]))
        done, draws = int(resume["sweeps_done"]), list(resume["draws"])
        moves = tuple(int(m) for m in resume["moves"])
        seconds_before = float(resume["seconds"])
        if on_sweeps and done:
            on_sweeps(done)
    last_save = time.monotonic()

    def save() -> None:
        nonlocal last_save
        save_checkpoint(checkpoint, fingerprint, _chain_state(
            st, hyp, fixed, stats, draws, done, moves, rng,
            seconds_before + time.perf_counter() - t0))
        last_save = time.monotonic()

    def save_if_due() -> None:
        if checkpoint is not None and time.monotonic() - last_save >= checkpoint_every:
            save()

    while done < burn:
        step = min(50, burn - done)
        _sweeps(st, hyp, fixed, step, rng, stats, options, variant, emission=emission,
                each=on_sweeps or None)
        done += step
        save_if_due()
    if moves[0] < 0:
        # PDIA: the number of random-scan moves per sweep, frozen at the end of burn-in
        moves = (max(1, int(st.nj[data.nf:].sum())), max(1, int(st.meta[2])))
    while len(draws) < n_draws:
        before = stats.copy()
        _sweeps(st, hyp, fixed, period, rng, stats, options, variant, moves, emission,
                on_sweeps or None)
        draw = _record(st, hyp, emission, variant)
        draw["stats"] = stats - before  # this draw's sweeps' counts (draw_statistics)
        draws.append(draw)
        done += period
        save_if_due()
    if checkpoint is not None:
        save()  # the finished chain: a rerun reuses it
    seconds = seconds_before + time.perf_counter() - t0
    return {"draws": draws, "stats": stats, "seconds": seconds, "sweeps": burn + n_draws * period}


# -- checkpoints ----------------------------------------------------------------------------

#: The version of a chain checkpoint's layout (part of its fingerprint: a file of another
#: version is another run's, ignored and overwritten).
CHAIN_FORMAT = "bayesfa-pdfa-chain/2"  # 2: each draw's own move counts, "stats" (issue 36)
#: What a checkpoint holds besides the ``st_*`` arrays of :class:`ChainState` and the draws.
_STATE_FIELDS = ("hyp", "fixed", "stats", "moves", "sweeps_done", "draws_done", "seconds",
                 "rng_state", "draw_keys")


def chain_fingerprint(model: int, variant: int, data: Data, n_cap: int,
                      options: dict[str, Any], seed_seq: np.random.SeedSequence,
                      emission=None) -> str:
    """What determines a chain's output, as a string: the data (SHA-256 of the symbols, the
    data shape and alphabet), the model, variant and emission prior, the state capacity, the
    options but those that never change a chain (:data:`bayesfa.rundir.EXECUTION_OPTIONS`,
    such as ``checkpoint_every`` and ``jobs``, and ``chains``: chain ``c`` is the same
    whatever their number), the chain's seed (entropy and spawn key) and
    :data:`CHAIN_FORMAT`."""
    from bayesfa.rundir import EXECUTION_OPTIONS, jsonable

    settings = {k: v for k, v in options.items() if k not in EXECUTION_OPTIONS and k != "chains"}
    plug_in = None if emission is None else [type(emission).__module__,
                                              type(emission).__qualname__,
                                              int(getattr(emission, "variant", 0))]
    return json.dumps(jsonable({
        "format": CHAIN_FORMAT, "data": digest(data.sym), "nf": int(data.nf),
        "n_symbols": int(data.n_symbols), "model": int(model), "variant": int(variant),
        "emission": plug_in, "n_cap": int(n_cap), "options": settings,
        "entropy": str(seed_seq.entropy), "spawn_key": [int(k) for k in seed_seq.spawn_key]}),
        sort_keys=True)


def _chain_state(st: ChainState, hyp, fixed, stats, draws: list[dict[str, Any]], done: int,
                 moves, rng, seconds: float) -> dict[str, Any]:
    """A chain's state as the arrays of its checkpoint: ``st_NAME`` for every ndarray
    attribute of ``st`` (not the workspace), ``hyp``, ``fixed``, ``stats``, ``moves`` (-1
    before the end of burn-in), ``sweeps_done``, ``draws_done``, ``seconds``, ``rng_state``
    (JSON) and the draws (:func:`_pack_draws`)."""
    out: dict[str, Any] = {f"st_{k}": v for k, v in vars(st).items()
                           if isinstance(v, np.ndarray)}
    out.update(hyp=hyp, fixed=fixed, stats=stats, moves=np.array(moves, dtype=np.int64),
               sweeps_done=int(done), draws_done=len(draws), seconds=float(seconds),
               rng_state=generator_state(rng))
    out.update(_pack_draws(draws))
    return out


def _pack_draws(draws: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """The draws of :func:`_record` as few arrays: ``draw_keys``; per key, the numbers of
    every draw (``draws_KEY [n]``), or its arrays concatenated along their first axis
    (``draws_KEY``) with their lengths (``draws_len_KEY [n]``)."""
    keys = list(draws[0]) if draws else []
    out = {"draw_keys": np.array(keys, dtype=np.str_)}
    for k in keys:
        values = [d[k] for d in draws]
        if isinstance(values[0], np.ndarray):
            out[f"draws_{k}"] = np.concatenate(values, axis=0)
            out[f"draws_len_{k}"] = np.array([v.shape[0] for v in values], dtype=np.int64)
        else:
            out[f"draws_{k}"] = np.array(values)
    return out


def _unpack_draws(state: dict[str, np.ndarray], n: int) -> list[dict[str, Any]]:
    """The ``n`` draws packed by :func:`_pack_draws` (numbers as Python numbers, as
    :func:`_record` makes them). KeyError or ValueError when the arrays do not hold them."""
    keys = [str(k) for k in state["draw_keys"]] if n else []
    if n and not keys:
        raise ValueError("draw_keys")
    draws: list[dict[str, Any]] = [{} for _ in range(n)]
    for k in keys:
        values = state[f"draws_{k}"]
        if f"draws_len_{k}" in state:
            lengths = state[f"draws_len_{k}"]
            if lengths.shape != (n,) or lengths.min() < 0 or lengths.sum() != values.shape[0]:
                raise ValueError(k)
            parts = np.split(values, np.cumsum(lengths)[:-1], axis=0)
        else:
            if values.shape != (n,):
                raise ValueError(k)
            parts = values.tolist()
        for d, part in zip(draws, parts):
            d[k] = part
    return draws


def _load_chain(path, fingerprint: str, *, n_draws: int, burn_in: int,
                period: int) -> dict[str, Any] | None:
    """The chain state saved at ``path`` by :func:`run_chain` (finished or not), its draws
    unpacked (``state["draws"]``), or None when it was saved for other data, settings or
    seed. An :class:`InputError` naming the file when it cannot be read or is inconsistent
    (the arrays of :class:`ChainState` are checked against the chain's when it resumes)."""
    state = read_checkpoint(path, fingerprint)
    if state is None:
        return None
    missing = [k for k in _STATE_FIELDS if k not in state]
    if missing:
        raise corrupt_checkpoint(path, f"missing {', '.join(missing)}")
    try:
        d, done = int(state["draws_done"]), int(state["sweeps_done"])
        ok = (0 <= d <= n_draws and state["moves"].shape == (2,)
              and done == (min(max(done, 0), burn_in) if d == 0 else burn_in + d * period)
              and (d == 0 or int(state["moves"].min()) >= 1))
        state["draws"] = _unpack_draws(state, d) if ok else None
    except (KeyError, ValueError, TypeError, IndexError):
        ok = False
    if not ok:
        raise corrupt_checkpoint(path, "its arrays do not match its settings")
    check_generator_state(path, state["rng_state"])
    return state


def _new_stats(emission) -> np.ndarray:
    from bayesfa.samplers.pdia._pdfa_kernel import N_STATS

    return np.zeros(N_STATS + (0 if emission is None else emission.n_stats))


def _saved_arrays(st: ChainState, hyp, fixed, stats, state: dict[str, Any], path) -> list:
    """``(array of the chain, its saved value)`` for every array a checkpoint restores, or
    the :class:`InputError` of a corrupt checkpoint when one is missing or has another shape
    or dtype."""
    pairs = [(v, state.get(f"st_{k}")) for k, v in vars(st).items() if isinstance(v, np.ndarray)]
    pairs += [(hyp, state["hyp"]), (fixed, state["fixed"]), (stats, state["stats"])]
    for mine, saved in pairs:
        if saved is None or saved.shape != mine.shape or saved.dtype != mine.dtype:
            raise corrupt_checkpoint(path, "its arrays do not match its settings")
    return pairs


def _restore(st: ChainState, hyp, fixed, stats, state: dict[str, Any], path) -> None:
    """Overwrite every array of the chain with the saved one (:func:`_saved_arrays`)."""
    for mine, saved in _saved_arrays(st, hyp, fixed, stats, state, path):
        mine[...] = saved


def _check_resumable(model: int, data: Data, n_cap: int, options: dict[str, Any], emission,
                     states: list, paths: list) -> None:
    """Check the arrays of every unfinished saved chain in ``states`` against those of a new
    chain (as :func:`run_chain` makes it before restoring them), so that a damaged file is
    reported before any chain runs."""
    if all(state is None for state in states):
        return
    st = ChainState(model, data, n_cap)
    hyp, fixed = hyper_values(model, options)
    if emission is not None:
        emission.prepare(st, hyp, fixed, options, np.random.default_rng(0))
    stats = _new_stats(emission)
    for state, path in zip(states, paths):
        if state is not None:
            _saved_arrays(st, hyp, fixed, stats, state, path)


def _finished_output(state: dict[str, Any], sweeps: int) -> dict[str, Any]:
    """What :func:`run_chain` returned for a chain whose finished state was saved."""
    return {"draws": state["draws"], "stats": np.array(state["stats"]),
            "seconds": float(state["seconds"]), "sweeps": sweeps}


def _stack(chains: list[dict[str, Any]], model: int, n_symbols: int) -> dict[str, np.ndarray]:
    """Pad the per-draw arrays to common shapes ``[chain, draw, ...]``."""
    n_c, n_d = len(chains), len(chains[0]["draws"])
    rows = max(d["delta"].shape[0] for c in chains for d in c["draws"])
    n_tab = max([d["tdish"].size for c in chains for d in c["draws"]] + [1])
    delta = np.full((n_c, n_d, rows, n_symbols), -1, dtype=np.int32)
    seat = np.full_like(delta, -1)
    cnt = np.zeros_like(delta)
    tdish = np.full((n_c, n_d, n_tab), -1, dtype=np.int32)
    out = {"delta": delta, "seat": seat, "counts": cnt, "tdish": tdish,
           "n_tab": np.zeros((n_c, n_d), dtype=np.int32),
           "hyp": np.zeros((n_c, n_d, 5)), "end_state": np.zeros((n_c, n_d), dtype=np.int32),
           "log_joint": np.zeros((n_c, n_d))}
    if model == FINITE:
        out["mu"] = np.zeros((n_c, n_d, chains[0]["draws"][0]["mu"].size))
    for c, ch in enumerate(chains):
        for d, dr in enumerate(ch["draws"]):
            h = dr["delta"].shape[0]
            delta[c, d, :h] = dr["delta"]
            seat[c, d, :h] = dr["seat"]
            cnt[c, d, :h] = dr["cnt"]
            tdish[c, d, :dr["tdish"].size] = dr["tdish"]
            out["n_tab"][c, d] = dr["tdish"].size
            out["hyp"][c, d] = dr["hyp"]
            out["end_state"][c, d] = dr["end"]
            out["log_joint"][c, d] = dr["log_joint"]
            if model == FINITE:
                out["mu"][c, d] = dr["mu"]
    return out


def draw_statistics(outs: list[dict[str, Any]], model: int, data: Data, period: int,
                    emission=None) -> dict[str, np.ndarray]:
    """The sampler statistics of :data:`bayesfa.rundir.SAMPLE_STATS`, float64 ``[chain, draw]``,
    from each draw's counts of its ``period`` sweeps (``draw["stats"]``, the kernel's
    ``stats`` layout): ``moved``, the fraction of the positions whose state can change (the
    tokens not at a string's start) whose state differs after a sweep's moves, per sweep
    (``_pdfa_kernel.ST_MOVED``); the acceptance rates of the Metropolis-Hastings moves, NaN
    in a draw that tried none: ``accept_entry`` (a transition ``delta_ij``), ``accept_table``
    (PDIA: a table's dish), ``accept_hyper`` (the random walks of the sampled
    hyperparameters, pdia-smoothed's ``beta`` and ``beta0`` included). The Gibbs steps on
    ``mu`` and ``pi0`` are always accepted and have none."""
    from bayesfa.samplers.pdia._pdfa_kernel import ST_ENTRY, ST_HYP, ST_MOVED, ST_TABLE

    counts = np.array([[d["stats"] for d in c["draws"]] for c in outs], dtype=np.float64)
    sym = data.sym
    n_pos = int(np.count_nonzero(sym[:-1] >= data.nf))  # t >= 1 after a letter
    out = {"moved": counts[..., ST_MOVED] / max(1, period * n_pos)}

    def rate(accepted, proposed):
        return np.divide(accepted, proposed, out=np.full(proposed.shape, np.nan),
                         where=proposed > 0)

    out["accept_entry"] = rate(counts[..., ST_ENTRY], counts[..., ST_ENTRY + 1])
    if model == CRF:
        out["accept_table"] = rate(counts[..., ST_TABLE], counts[..., ST_TABLE + 1])
    hyper = [ST_HYP + 2 * k for k in range(5)]
    if emission is not None:  # pdia-smoothed: its beta and beta0 random walks (not pi0's Gibbs)
        hyper += [emission.off + 2, emission.off + 4]
    proposed = sum(counts[..., k + 1] for k in hyper)
    if np.any(proposed > 0):
        out["accept_hyper"] = rate(sum(counts[..., k] for k in hyper), proposed)
    return out


def fit_model(model: int, corpus: Corpus, options: dict[str, Any], seed: int | None,
              progress: bool, n_cap: int, variant: int = 0, name: str = "pdfa",
              emission=None, workdir=None, on_sweeps=None) -> FitResult:
    """Run ``options["chains"]`` chains (``SeedSequence(seed).spawn``) and assemble the result
    (``emission``: see :func:`run_chain`).

    ``workdir``: chain ``c`` keeps its state in ``workdir/chain-CCCC.npz``, saved atomically
    every ``options["checkpoint_every"]`` seconds (default :data:`CHECKPOINT_EVERY`; checked
    between blocks of sweeps) and when it ends (:func:`run_chain`). A later call with the same
    data, settings and seed reuses the finished chains and resumes the others where they
    stopped: the result is bit-identical to an uninterrupted fit. A file saved for other
    data, settings or seed (:func:`chain_fingerprint`) is ignored and overwritten; an
    unreadable or inconsistent one is an :class:`InputError` naming it, raised before any
    sweep. ``on_sweeps(n)`` is called after every sweep with ``n`` = 1 (and once with the
    sweeps a resumed chain had done); the bar with ``progress`` moves with it."""
    if not isinstance(corpus, Corpus):
        raise TypeError("corpus must be a bayesfa.Corpus")
    variant = check_variant(variant)
    if corpus.n_strings < 1:
        raise InputError("the training corpus has no string")
    n_draws = check_schedule(options)
    sequence = bool(options.get("sequence", False))
    data = as_symbols(corpus, sequence)
    if data.sym.size < 1:
        raise InputError("the training sequence has no letter")
    chains = int(options["chains"])
    checkpoint_every = check_checkpoint_every(options.get("checkpoint_every", CHECKPOINT_EVERY))
    children = np.random.SeedSequence(seed).spawn(chains + 1)
    sweeps_per_chain = int(options["burn_in"]) + n_draws * int(options["period"])
    prints = [chain_fingerprint(model, variant, data, n_cap, options, children[c], emission)
              for c in range(chains)]
    paths: list = [None] * chains
    saved: list = [None] * chains
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
        paths = [chain_path(workdir, c) for c in range(chains)]
        saved = [_load_chain(p, f, n_draws=n_draws, burn_in=int(options["burn_in"]),
                             period=int(options["period"])) if p.exists() else None
                 for p, f in zip(paths, prints)]
    outs: list = [None] * chains
    for c, state in enumerate(saved):
        if state is not None and int(state["draws_done"]) == n_draws:
            outs[c] = _finished_output(state, sweeps_per_chain)
            saved[c] = None
    todo = [c for c in range(chains) if outs[c] is None]
    resumed_mid = sum(saved[c] is not None for c in todo)
    _check_resumable(model, data, n_cap, options, emission, saved, paths)
    from bayesfa.samplers.chains import progress_callback

    bar, close = progress_callback(progress, 1, chains * sweeps_per_chain, name)  # and estimate
    if bar is not None and len(todo) < chains:  # finished chains: done
        bar((chains - len(todo)) * sweeps_per_chain)
    callbacks = [f for f in (bar, on_sweeps) if f is not None]

    def report(n: int) -> None:
        for f in callbacks:
            f(n)

    t0 = time.perf_counter()
    try:
        for c in todo:
            outs[c] = run_chain(model, data, n_cap, options, children[c], variant,
                                report if callbacks else None, emission, checkpoint=paths[c],
                                checkpoint_every=checkpoint_every, fingerprint=prints[c],
                                resume=saved[c])
            saved[c] = None
    finally:
        close()
    seconds = time.perf_counter() - t0
    arrays = _stack(outs, model, data.n_symbols)
    arrays["predict_entropy"] = np.array(children[-1].generate_state(4), dtype=np.uint32)
    names = HYPER_NAMES[model]
    trace = {"log_joint": arrays["log_joint"],
             "n_states": np.array([[d["n_states"] for d in c["draws"]] for c in outs], dtype=np.int32),
             "n_tables": np.array([[d["n_tables"] for d in c["draws"]] for c in outs], dtype=np.int32)}
    for name_ in names:
        trace[name_] = arrays["hyp"][:, :, _SLOTS[name_]]
    trace.update(draw_statistics(outs, model, data, int(options["period"]), emission))
    stats = np.sum([c["stats"] for c in outs], axis=0)
    acceptance = {}
    for kind, off in zip(MOVE_KINDS, (0, 2, 4)):
        if stats[off + 1] > 0:
            acceptance[kind] = float(stats[off] / stats[off + 1])
    for name_ in names:
        off = 6 + 2 * _SLOTS[name_]
        if stats[off + 1] > 0:
            acceptance[name_] = float(stats[off] / stats[off + 1])
    sweeps = [c["sweeps"] for c in outs]
    info = {"n_draws_per_chain": int(n_draws), "n_tokens": int(data.sym.size),
            "data_shape": "sequence" if sequence else "sentences",
            "state_capacity": int(n_cap), "capacity_rejections": int(stats[16]),
            "acceptance": acceptance, "seconds": seconds,
            "chain_seconds": [float(c["seconds"]) for c in outs],
            "seconds_per_sweep": float(np.sum([c["seconds"] for c in outs]) / max(1, sum(sweeps))),
            "sampled_hyperparameters": [n for n in names if options.get(n) is None],
            "chains_resumed": int(chains - len(todo)),
            "chains_resumed_mid_chain": int(resumed_mid),
            "checkpoint_every": checkpoint_every}
    if emission is not None:
        emission.describe(outs, stats, arrays, trace, info, options)
    return FitResult(arrays, trace, info)


# -- prediction ---------------------------------------------------------------------------------

def _resample(states: list, anc: np.ndarray) -> list:
    """Particle ``j`` becomes a copy of particle ``anc[j]``, reusing memory: a surviving
    particle keeps its arrays in one of its slots (its own if ``anc[j] == j``), and the other
    slots get copies written into the arrays of the particles that left no offspring (the
    prediction states are megabytes; allocating them anew would dominate the filter)."""
    out: list = [None] * len(states)
    taken = set()
    for j, a in enumerate(anc):  # in place
        if a == j:
            out[j] = states[j]
            taken.add(int(a))
    for j, a in enumerate(anc):  # moved: the first slot of a particle not kept in place
        if out[j] is None and int(a) not in taken:
            out[j] = states[a]
            taken.add(int(a))
    parents = set(int(a) for a in anc)
    spare = [states[i] for i in range(len(states)) if i not in parents]
    for j, a in enumerate(anc):  # copied into the arrays of the particles that died
        if out[j] is None:
            buf = spare.pop()
            for dst, src in zip(buf, states[a]):
                np.copyto(dst, src)
            out[j] = buf
    return out


def _test_data(arrays, options, corpus: Corpus, per_symbol: bool = False) -> tuple[Data, np.ndarray]:
    n_symbols = int(arrays["delta"].shape[-1])
    sequence = bool(options.get("sequence", False))
    n_letters = n_symbols if sequence else n_symbols - 1
    if corpus.alphabet_size > n_letters:
        raise InputError(f"the strings use {corpus.alphabet_size} letters, the model was trained "
                         f"on {n_letters}")
    corpus = corpus.with_alphabet(n_letters)
    data = as_symbols(corpus, sequence, n_letters)
    if sequence:
        lengths = corpus.lengths
    else:
        lengths = np.diff(corpus.offsets)
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if per_symbol:
        # every symbol its own stretch, read in order and kept: sentences still restart at q0
        # (their end symbol leads back to it), each folded into the counts before the next
        offsets = np.arange(data.sym.size + 1, dtype=np.int64)
    return data, offsets


def per_sample_log_prob(model: int, arrays: dict[str, np.ndarray], options: dict[str, Any],
                        corpus: Corpus, draws: list[tuple[int, int]] | None = None,
                        variant: int = 0, per_symbol: bool = False, emission=None,
                        draw_set: int = 0, particles: int = 1,
                        drew: list | None = None) -> np.ndarray:
    """``log Pr(b | sample)`` ``[chain, draw, n_strings]`` (or ``[len(draws), n_strings]``):
    sentences, each string given the training data; sequence, the strings in order, each
    given the training data and the strings before it. ``per_symbol``: ``[..., n_symbols]``,
    the log predictive of every symbol of the test set read in order, each given the training
    data and every test symbol before it (the paper's incremental evaluation; sentences restart
    at ``q0``, their end symbols included; one draw of the unvisited transitions per sample).
    ``draw_set``: which independent set of just-in-time draws of the unvisited transitions
    (set 0 is the one every other call uses; set ``k`` seeds each sample's generator with ``k``
    appended). ``particles`` (``per_symbol`` only): ``K`` readings per sample, draw sets
    ``0..K-1``, as a particle filter (:func:`_particle_filter`): each symbol's predictive is
    the readings' average weighted by the test read so far. ``drew`` (a list, one reading per
    sample only): gets, per sample, whether its reading drew any unvisited transition (if
    none did, the reading is exact: nothing random was read)."""
    from bayesfa.samplers.pdia._pdfa_kernel import predict_strings

    variant = check_variant(variant)
    data, offsets = _test_data(arrays, options, corpus, per_symbol)
    n_c, n_d, rows, s = arrays["delta"].shape
    pairs = draws if draws is not None else [(c, d) for c in range(n_c) for d in range(n_d)]
    longest = int(np.diff(offsets).max()) if offsets.size > 1 else 0
    grow = data.sym.size if data.nf == 0 or per_symbol else longest
    n_cap = rows if model == FINITE else rows + grow + 2
    reps = int(options.get("predict_draws", 10)) if data.nf == 1 else 1
    if per_symbol and data.nf == 1:
        reps = 0  # predict_strings: the strings continue one another, nothing undone
    entropy = [int(x) for x in np.asarray(arrays.get("predict_entropy", [0]))]
    scratch = (np.zeros(n_cap * s, dtype=np.int32), np.zeros(n_cap * s, dtype=np.int32))
    out = np.empty((len(pairs), offsets.size - 1))
    for n, (c, d) in enumerate(pairs):
        hyp = np.ascontiguousarray(arrays["hyp"][c, d])
        lg = _PLAIN_LG if emission is None else emission.predict_lg(arrays, c, d)
        start = int(arrays["end_state"][c, d])
        if particles > 1:
            if not per_symbol:
                raise ValueError("particles need per_symbol")
            # particles are copied when resampled: start from a capacity of the sample's rows
            # plus an eighth of the test (at least PARTICLE_NEW_STATES), the whole test's if
            # a particle runs out (the same result: ids are handed out lowest first)
            small = rows + max(PARTICLE_NEW_STATES, grow // 8) + 2
            caps = [n_cap] if model == FINITE else sorted({min(n_cap, small), n_cap})
            for cap in caps:
                try:
                    out[n] = _particle_filter(model, variant, data,
                                              _sample_state(model, data.nf, arrays, c, d, cap,
                                                            data.sym.size),
                                              start, hyp, lg, entropy + [c, d], particles,
                                              scratch)
                    break
                except ValueError as err:
                    if "state capacity" not in str(err) or cap == caps[-1]:
                        raise
            continue
        state = _sample_state(model, data.nf, arrays, c, d, n_cap)
        rng = np.random.default_rng(entropy + [c, d] + ([draw_set] if draw_set else []))
        predict_strings(model, variant, data.sym, offsets, data.nf, start, *state, hyp, lg,
                        reps, rng, *scratch, out[n])
        if drew is not None:  # a draw instantiates an entry (the reading undoes nothing)
            drew.append(bool((data.nf == 1 and not per_symbol)  # undone: not known
                             or not np.array_equal(state[0][:rows], arrays["delta"][c, d])
                             or (state[0][rows:] != -1).any()))
    if draws is None:
        return out.reshape(n_c, n_d, -1)
    return out


def _sample_state(model: int, nf: int, arrays, c: int, d: int, n_cap: int,
                  grow: int | None = None) -> list[np.ndarray]:
    """Recorded sample ``(c, d)`` as the working arrays ``_pdfa_kernel.predict_strings`` reads
    and updates, in its argument order: ``delta, seat, cnt, ctot`` and the seating arrays of
    :func:`bayesfa.samplers.pdia._crf_kernel.new_crf` (``n_cap`` states). ``grow``: a reading
    of at most ``grow`` symbols, which opens at most one table per symbol (one unvisited
    entry drawn), so the table pool is the sample's table ids plus ``grow`` (the particle
    filters' states, copied on resampling: on Alice 0.9 MB instead of 1.8 MB a particle);
    ``None`` (and the finite model, whose seats are states): one table id per entry."""
    from bayesfa.samplers.pdia._crf_kernel import new_crf, rebuild

    rows, s = arrays["delta"].shape[2:]
    n_tables = None
    if grow is not None and model == CRF:
        n_tables = min(n_cap * s, int(np.asarray(arrays["tdish"]).shape[-1]) + int(grow) + 2)
        if int(arrays["seat"][c, d].max(initial=-1)) >= int(arrays["tdish"].shape[-1]):
            raise AssertionError("a seat outside the sample's table ids")
    nj, v, mu, tabs, col_tabs, col_T, sts, meta = new_crf(n_cap, s, n_tables)
    delta = np.full((n_cap, s), -1, dtype=np.int32)
    seat = np.full((n_cap, s), -1, dtype=np.int32)
    cnt = np.zeros((n_cap, s), dtype=np.int32)
    delta[:rows] = arrays["delta"][c, d]
    seat[:rows] = arrays["seat"][c, d]
    cnt[:rows] = arrays["counts"][c, d]
    ctot = cnt.sum(axis=1).astype(np.int32)
    if model == FINITE:
        mu[:] = arrays["mu"][c, d]
    rebuild(model, nf, delta[:rows], seat[:rows], arrays["tdish"][c, d],
            int(arrays["n_tab"][c, d]), nj, v, tabs, col_tabs, col_T, sts, meta)
    return [delta, seat, cnt, ctot, nj, v, mu, tabs, col_tabs, col_T, sts, meta]


#: the test symbols :func:`_particle_filter` reads between two resampling checks
RESAMPLE_EVERY = 10
#: new states a particle of :func:`_particle_filter` has room for at first (at least)
PARTICLE_NEW_STATES = 64


def _particle_filter(model, variant, data: Data, state, start: int, hyp, lg, entropy,
                     n_particles: int, scratch) -> np.ndarray:
    """``[n_symbols]`` ``log p(x_t | x_<t, sample)`` of the test symbols read in order, the
    unvisited transitions integrated out by sequential Monte Carlo: particle ``k`` reads the
    test with its own just-in-time draws (generator ``entropy + [k]``, none appended for
    ``k = 0``: the single reading's), each symbol's predictive is the particles' average
    weighted by the probability each gave the test symbols before it, and every
    :data:`RESAMPLE_EVERY` symbols the particles are resampled (systematic) when their
    effective number falls below half. The sum of the output is the log of the filter's
    estimate of ``p(test | sample)``, which is unbiased (Del Moral 2004), as one reading's is,
    but far less variable on a long test (measured: ``benchmarks/pdia_map_draws.py``)."""
    from scipy.special import logsumexp

    from bayesfa.samplers.pdia._pdfa_kernel import predict_strings

    n = data.sym.size
    bounds = np.unique(np.concatenate([np.arange(0, n, RESAMPLE_EVERY), [n]]))
    rngs = [np.random.default_rng(entropy + ([k] if k else [])) for k in range(n_particles)]
    resampler = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy,
                                                                           spawn_key=(1,))))
    states = [state] + [[a.copy() for a in state] for _ in range(n_particles - 1)]
    qs = [start] * n_particles
    logw = np.full(n_particles, -np.log(n_particles))
    out = np.empty(n)
    width = int(np.diff(bounds).max()) if bounds.size > 1 else 0
    lp = np.empty((n_particles, width))
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        m = hi - lo
        offs = np.arange(m + 1, dtype=np.int64)
        for k in range(n_particles):
            qs[k] = predict_strings(model, variant, data.sym[lo:hi], offs, data.nf, qs[k],
                                    *states[k], hyp, lg, 0, rngs[k], *scratch, lp[k, :m])
        chunk = lp[:, :m]
        before = np.empty_like(chunk)  # each particle's log weight before symbol t
        before[:, 0] = logw
        before[:, 1:] = logw[:, None] + np.cumsum(chunk[:, :-1], axis=1)
        out[lo:hi] = logsumexp(before + chunk, axis=0) - logsumexp(before, axis=0)
        logw = before[:, -1] + chunk[:, -1]
        logw -= logsumexp(logw)
        w = np.exp(logw)
        if hi < n and 1.0 / np.sum(w * w) < n_particles / 2:
            u = (resampler.random() + np.arange(n_particles)) / n_particles
            anc = np.minimum(np.searchsorted(np.cumsum(w), u), n_particles - 1)
            states = _resample(states, anc)
            qs = [qs[a] for a in anc]
            logw = np.full(n_particles, -np.log(n_particles))
    return out


#: the default of :func:`perplexity_log_prob` (no ``draw_sets``): independent replicates of
#: the estimate at each number of particles, the target Monte Carlo standard error of
#: the per-symbol log loss (nats), the first number of particles, and the cap on particles
#: (also capped so that one filter's particles fit in :data:`MIXTURE_MEMORY` bytes)
MIXTURE_REPLICATES = 4
MIXTURE_TOLERANCE = 0.002
MIXTURE_FIRST = 32
MIXTURE_MAX_PARTICLES = 4096
MIXTURE_MEMORY = 1 << 30
#: the default's pilot: each sample's filter of :data:`MIXTURE_PILOT` particles; a sample
#: whose pilot estimate is more than :data:`MIXTURE_MARGIN` nats below the best sample's
#: gets filters of :data:`MIXTURE_LOW` particles instead of the doubling ones (its share of
#: the mixture is then below ``exp(-MIXTURE_MARGIN)`` of the best's, up to the pilot's error)
MIXTURE_PILOT = 16
MIXTURE_MARGIN = 30.0
MIXTURE_LOW = 1
#: the default's ``details["estimator"]``
ESTIMATOR = "per-sample particle filters, adapted proposal"
#: ``--draw-sets K``'s filters: the adapted proposal (the default's) or blind draws
PROPOSALS = ("adapted", "prior")


def _mixture_filter(model, variant, data: Data, arrays, pairs, emission, entropy,
                    n_particles: int, key: tuple, counted: np.ndarray, cap: int,
                    adapted: bool = True) -> float:
    """``log`` of one unbiased estimate of ``(1/S) sum_s p(test | sample s)`` (the counted
    symbols' probabilities; every symbol is read and folded in): a particle filter over the
    pairs (sample, just-in-time draws of its unvisited transitions). The particles start on
    the ``S`` samples by systematic sampling from the uniform distribution (each sample gets
    ``n_particles / S`` in expectation), each reads the test with its own generator, and every
    :data:`RESAMPLE_EVERY` symbols the particles are resampled (systematic) when their
    effective number falls below half, so the particles move to the samples *and* draws that
    predict the test read so far (the posterior mixture's sequential weights). Unbiased
    (Del Moral 2004) like :func:`_particle_filter`, which it extends across samples; ``key``
    names the independent generators (``SeedSequence(entropy, spawn_key=(2,) + key)``).
    ``adapted`` (the default): an unvisited transition's destination is drawn from its prior
    predictive times the predictive of the next test symbol there, the fully adapted proposal
    of ``_pdfa_kernel.predict_weights`` (still unbiased; far less variable than the blind
    draw from the prior, ``adapted=False``)."""
    from scipy.special import logsumexp

    from bayesfa.samplers.pdia._pdfa_kernel import predict_weights

    n, s = data.sym.size, int(arrays["delta"].shape[-1])
    kids = np.random.SeedSequence(entropy, spawn_key=(2,) + tuple(key)).spawn(n_particles + 1)
    resampler = np.random.default_rng(kids[0])
    rngs = [np.random.default_rng(k) for k in kids[1:]]
    n_s = len(pairs)
    which = np.floor((resampler.random() + np.arange(n_particles)) * n_s
                     / n_particles).astype(np.int64)
    hyps, lgs, first, states = {}, {}, {}, []
    for j, w in enumerate(which):
        w = int(w)
        if w not in first:
            c, d = pairs[w]
            first[w] = j
            states.append(_sample_state(model, data.nf, arrays, c, d, cap, data.sym.size))
            hyps[w] = np.ascontiguousarray(arrays["hyp"][c, d])
            lgs[w] = _PLAIN_LG if emission is None else emission.predict_lg(arrays, c, d)
        else:
            states.append([a.copy() for a in states[first[w]]])
    qs = [int(arrays["end_state"][pairs[int(w)]]) for w in which]
    prepaid = [False] * n_particles  # the next symbol's emission is in the weight already
    scratch = (np.zeros(cap * s, dtype=np.int32), np.zeros(cap * s, dtype=np.int32))
    bounds = np.unique(np.concatenate([np.arange(0, n, RESAMPLE_EVERY), [n]]))
    logw = np.full(n_particles, -np.log(n_particles))
    lp = np.empty((n_particles, RESAMPLE_EVERY))
    total = 0.0
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        m = hi - lo
        for k in range(n_particles):
            w = int(which[k])
            qs[k], prepaid[k] = predict_weights(model, variant, data.sym, lo, hi, counted,
                                                data.nf, qs[k], prepaid[k], adapted,
                                                *states[k], hyps[w], lgs[w], rngs[k],
                                                *scratch, lp[k, :m])
        new = logw + lp[:, :m].sum(axis=1)
        norm = float(logsumexp(new))  # the weights before it summed to 1
        total += norm
        logw = new - norm
        w_ = np.exp(logw)
        if hi < n and 1.0 / np.sum(w_ * w_) < n_particles / 2:
            u = (resampler.random() + np.arange(n_particles)) / n_particles
            anc = np.minimum(np.searchsorted(np.cumsum(w_), u), n_particles - 1)
            states = _resample(states, anc)
            qs = [qs[a] for a in anc]
            prepaid = [prepaid[a] for a in anc]
            which = which[anc]
            logw = np.full(n_particles, -np.log(n_particles))
    return total


class _SampleFilters:
    """What the estimators of ``log p(test | train)`` share: each sample's single reading
    (``totals``, exact for a sample whose reading drew nothing, ``drew[i]`` says) and
    :meth:`run`, sample ``i``'s own particle filter (:func:`_mixture_filter` on that sample
    alone, adapted proposal by default), which starts with room for a few new states and
    retries with the whole test's if a particle runs out (the same value: ids are handed out
    lowest first)."""

    def __init__(self, model, arrays, options, corpus: Corpus, draws, variant, emission,
                 letters_only: bool):
        sequence = bool(options.get("sequence", False))
        keep = (np.asarray(corpus.tokens) != 0 if letters_only and not sequence
                else slice(None))
        self.drew: list = []
        lp = per_sample_log_prob(model, arrays, options, corpus, draws=draws, variant=variant,
                                 per_symbol=True, emission=emission, drew=self.drew)
        lp = lp.reshape(-1, lp.shape[-1])[:, keep]
        self.per = max(int(lp.shape[1]), 1)  # the counted symbols
        self.totals = lp.sum(axis=1)
        n_c, n_d, rows, _ = arrays["delta"].shape
        self.pairs = (draws if draws is not None
                      else [(c, d) for c in range(n_c) for d in range(n_d)])
        self.model, self.arrays, self.variant, self.emission = model, arrays, variant, emission
        self.data, _ = _test_data(arrays, options, corpus, True)
        self.counted = np.ones(self.data.sym.size, dtype=bool)
        if letters_only and not sequence:
            self.counted = np.asarray(corpus.tokens) != 0
        grow = self.data.sym.size
        self.n_cap = rows if model == FINITE else rows + grow + 2
        self.small = (self.n_cap if model == FINITE else
                      min(self.n_cap, rows + max(PARTICLE_NEW_STATES, grow // 8) + 2))
        self.entropy = [int(x) for x in np.asarray(arrays.get("predict_entropy", [0]))]

    def particle_bytes(self) -> int:
        """Bytes of one particle (the first sample's state at the first capacity tried)."""
        c, d = self.pairs[0]
        return sum(a.nbytes for a in _sample_state(self.model, self.data.nf, self.arrays, c, d,
                                                   self.small, self.data.sym.size))

    def run(self, i: int, n_p: int, key: tuple, adapted: bool = True) -> float:
        """``log`` of sample ``i``'s filter of ``n_p`` particles (generators ``key + (i,)``)."""
        for cap in sorted({self.small, self.n_cap}):
            try:
                return _mixture_filter(self.model, self.variant, self.data, self.arrays,
                                       [self.pairs[i]], self.emission, self.entropy, n_p,
                                       key + (i,), self.counted, cap, adapted)
            except ValueError as err:  # a particle ran out of room: the whole test's
                if "state capacity" not in str(err) or cap == self.n_cap:
                    raise
        raise AssertionError("unreachable")


def mixture_log_prob(model: int, arrays, options, corpus: Corpus, *, draws=None, variant=0,
                     emission=None, letters_only: bool = False,
                     mc_tolerance: float = MIXTURE_TOLERANCE,
                     max_particles: int = MIXTURE_MAX_PARTICLES) -> tuple[float, dict]:
    """The default of :func:`perplexity_log_prob`: ``log p(test | train)`` of the joint
    posterior mixture of the run's samples (``draws``: of those samples only), the unvisited
    transitions integrated out, with its Monte Carlo standard error; ``(value, details)``.

    If no sample's reading of the test draws an unvisited transition, nothing is random: the
    value is the exact ``log mean_s p(test | sample s)`` (the single reading's, bit for bit).
    Otherwise ``p(test | train) = mean_s p(test | sample s)`` is estimated term by term,
    stratified by sample: a sample whose reading draws nothing enters exactly; every other
    sample gets its own particle filter (:func:`_mixture_filter` on that sample alone) with
    the fully adapted proposal (``_pdfa_kernel.predict_weights``: an unvisited transition's
    destination drawn from its prior predictive times the predictive of the next test symbol
    there), which estimates ``p(test | sample s)`` without bias. The samples differ by
    hundreds of nats on a long test, so the mixture is a few samples' affair: a pilot filter
    of :data:`MIXTURE_PILOT` particles per sample (its own generators) picks the samples
    within :data:`MIXTURE_MARGIN` nats of the best, which get ``N`` particles, ``N`` doubling
    from :data:`MIXTURE_FIRST` (a sample that falls more than the margin below the best at a
    level is dropped from the doubling); the others get :data:`MIXTURE_LOW` (fresh filters,
    so the choice biases nothing: given the choice, every term is still unbiased).
    :data:`MIXTURE_REPLICATES` independent replicates at each ``N``; the value is the log of
    the replicates' mean (itself unbiased for the mixture), its standard error the
    replicates' sd of ``log`` over ``sqrt(R)`` (delta method). It stops when both that
    standard error and the change from ``N / 2`` to ``N`` are at most ``mc_tolerance`` nats
    per counted symbol (the change is needed: the filter's log is biased low by more than
    its spread at small ``N``, measured on Alice), or at the cap (``max_particles``, and
    :data:`MIXTURE_MEMORY` bytes of one filter's particles) with ``details["converged"] =
    False``. Each estimate's log is biased low (Jensen): an unconverged value is, in
    expectation, a perplexity too high, and
    ``P(value > log p + a) <= exp(-a)`` for any ``a`` (Markov's inequality)."""
    f = _SampleFilters(model, arrays, options, corpus, draws, variant, emission, letters_only)
    pairs, totals, drew, per = f.pairs, f.totals, f.drew, f.per
    details = {"quantity": "log p(test | train), joint posterior mixture of "
                           f"{len(pairs)} sample{'s' if len(pairs) != 1 else ''}",
               "estimator": "exact (no unvisited transition read)", "particles": 1,
               "replicates": 1, "se": 0.0, "se_per_symbol": 0.0, "converged": True,
               "tolerance": float(mc_tolerance), "levels": []}
    if not any(drew):
        return float(log_mean_exp(totals, axis=0)), details
    limit = int(min(max_particles, max(1, MIXTURE_MEMORY // f.particle_bytes())))
    n_s, reps = len(pairs), MIXTURE_REPLICATES
    one_filter = f.run

    drawn = [i for i in range(n_s) if drew[i]]
    # the pilot (its own generators): which samples can matter to the mixture
    pilot = {i: one_filter(i, min(MIXTURE_PILOT, limit), (0, 0)) for i in drawn}
    exact_best = max([totals[i] for i in range(n_s) if not drew[i]], default=-np.inf)
    best = max([exact_best] + list(pilot.values()))
    live = [i for i in drawn if pilot[i] >= best - MIXTURE_MARGIN]
    # replicate r: every sample once, exact, or a fresh filter: (N, r) for a followed sample,
    # (0, r + 1) (generators used once per sample) for one dropped, by the pilot or at a
    # level, for lying more than MIXTURE_MARGIN below the best (the choice depends on other
    # generators only, so every term stays unbiased given it)
    fixed = [[totals[i] for i in range(n_s) if not drew[i]] for _ in range(reps)]

    def drop(gone: list) -> None:
        for r in range(reps):
            fixed[r] += [one_filter(i, min(MIXTURE_LOW, limit), (0, r + 1)) for i in gone]

    drop([i for i in drawn if i not in live])
    n_p, prev = min(MIXTURE_FIRST, limit), None
    while True:
        runs = np.array([[one_filter(i, n_p, (n_p, r)) for i in live]
                         for r in range(reps)]).reshape(reps, len(live))
        vals = np.array([float(log_mean_exp(np.concatenate([fixed[r], runs[r]]), axis=0))
                         for r in range(reps)])
        value = float(log_mean_exp(vals, axis=0))
        se = float(np.std(vals, ddof=1) / np.sqrt(reps))
        change = abs(value - prev) if prev is not None else np.inf
        details["levels"].append({"particles": n_p, "log_prob": value, "se": se,
                                  "samples_followed": len(live)})
        # the change from N / 2 at most the tolerance too: the replicates' spread alone
        # misses the filter's bias (its log is biased low, by more than its sd at small N)
        done = se / per <= mc_tolerance and change / per <= mc_tolerance
        if done or n_p >= limit:
            break
        if len(live) > 1:  # follow on only the samples within the margin of the best
            mean = log_mean_exp(runs, axis=0)
            keep = mean >= max(mean.max(), exact_best) - MIXTURE_MARGIN
            drop([i for i, k in zip(live, keep) if not k])
            live = [i for i, k in zip(live, keep) if k]
        prev, n_p = value, min(2 * n_p, limit)
    details.update(estimator=ESTIMATOR, particles=n_p, replicates=reps, se=se,
                   se_per_symbol=se / per, change_per_symbol=float(change / per),
                   converged=bool(done), cap=limit, samples_exact=n_s - len(drawn),
                   samples_followed=len(live), pilot_particles=min(MIXTURE_PILOT, limit),
                   margin=MIXTURE_MARGIN)
    return value, details


def predict(model: int, arrays, options, corpus: Corpus, map: bool = False,
            variant: int = 0, emission=None) -> np.ndarray:
    """Posterior predictive log probability of each string (module docstring); ``map``: the
    sample of highest log joint only."""
    if map:
        lj = np.asarray(arrays["log_joint"])
        c, d = np.unravel_index(int(np.argmax(lj)), lj.shape)
        lp = per_sample_log_prob(model, arrays, options, corpus, draws=[(int(c), int(d))],
                                 variant=variant, emission=emission)
    else:
        lp = per_sample_log_prob(model, arrays, options, corpus, variant=variant,
                                 emission=emission)
        lp = lp.reshape(-1, lp.shape[-1])
    if options.get("sequence", False):
        # strings continue one another: the mixture's sequential conditionals
        cum = log_mean_exp(np.cumsum(lp, axis=1), axis=0)
        return np.diff(np.concatenate([[0.0], cum]))
    return log_mean_exp(lp, axis=0)


def perplexity_log_prob(model: int, arrays, options, corpus: Corpus, *, continuation: bool,
                        map: bool = False, per_symbol: bool = False, variant: int = 0,
                        emission=None, letters_only: bool = False, draw_sets: int | None = None,
                        mc_tolerance: float = MIXTURE_TOLERANCE,
                        max_particles: int = MIXTURE_MAX_PARTICLES,
                        details: dict | None = None, proposal: str | None = None) -> float:
    """The test's log probability under the conventions of Pfau, Bartlett & Wood (2010),
    Sect. 4 (the hook of :mod:`bayesfa.methods`): the test data integrated into the model as
    they are read ("in the standard Bayesian way"), every sentence from ``q0``
    (``continuation=False``) or the test sequence continuing from the state reached at the end
    of training (``continuation=True``, a ``--sequence`` run), the transitions a sample has
    not instantiated drawn from the prior predictive as the test needs them.

    **Default** (no ``per_symbol``, no ``draw_sets``): ``log p(test | train)`` of the joint
    (Bayesian) posterior mixture, ``log mean_s p(test | sample s)``, i.e. the product of the
    mixture's sequential conditionals with the samples reweighted by the test read so far,
    the unvisited transitions integrated out by per-sample particle filters with the fully
    adapted proposal (:func:`mixture_log_prob`) with particles doubled until its Monte Carlo
    standard error and its change are at most ``mc_tolerance`` nats per symbol (or the cap
    ``max_particles`` is reached). ``details`` (a dict): filled with what was estimated and how (``quantity``,
    ``estimator``, ``particles``, ``replicates``, ``se`` in nats, ``se_per_symbol``,
    ``converged``, ...). ``map``: the sample of highest log joint alone (PDIA-MAP), the same
    estimator.

    ``draw_sets=K`` (``--draw-sets K``): a fixed estimator, each sample's ``p(test |
    sample)`` from a particle filter of ``K`` particles of its own (no particle moves between
    samples), mixed by log-mean-exp of the per-sample totals; no standard error is estimated
    (``details["se"]`` is ``None``). ``proposal`` (``--proposal``): ``"adapted"`` (the
    default) the default estimator's filters (:func:`_mixture_filter`, fully adapted
    proposal; a sample whose reading draws nothing enters exactly); ``"prior"`` the earlier
    blind filters (:func:`_particle_filter`, destinations drawn from the prior predictive),
    where ``K = 1`` reads the test once per sample (``draw_set`` 0, the earlier default, bit
    for bit). Each estimates ``p(test | sample)`` without bias, but its log is biased low
    (Jensen), the blind filter's far more: on the 400-sweep Alice run of
    ``tests/test_perplexity_default.py`` ``--draw-sets 300 --proposal prior`` is 0.08 in
    perplexity above the default, the adapted ``--draw-sets 300`` 0.03 above it (the default
    agrees with a converged run of four times its precision to 0.0006; benchmarks/RESULTS.md).

    ``per_symbol``: the authors' estimator (GitHub ``dpfau/pdia``,
    ``src/edu/columbia/stat/wood/pdia/PDIA.java``, ``ppTest`` / ``scoreTest``: each sample
    reads the test sentences from ``q0`` with its counts updated as it goes, and the
    per-symbol probabilities are averaged over samples with equal weights),
    ``sum_t log mean_k p_k(x_t | x_<t)`` over the ``samples x K`` readings (``K = draw_sets``,
    default 1). It is *not* an estimator of ``log p(test | train)``: as the readings grow it
    converges to ``sum_t log E[p(x_t | x_<t)]``, each symbol's predictive averaged over the
    posterior and the draws without reweighting by the test read before it (0.11 nats above
    the exact ``log p(test | train)`` on the toy of
    ``tests/test_pdia.py::test_draw_sets_particle_filter_reaches_the_exact_predictive``).
    ``letters_only``: the same pass, the predictions of the sentence ends left out of the
    total (every symbol is still read and folded in; the paper's AIW figures count letters
    only, ``benchmarks/RESULTS.md``); no effect on a sequence, which has no end symbols.
    """
    sequence = bool(options.get("sequence", False))
    if continuation != sequence:
        raise InputError("the run was fitted on " + ("one long sequence" if sequence else
                         "sentences") + ", but the test is read as " +
                         ("a continuation" if continuation else "sentences"))
    draws = None
    if map:
        lj = np.asarray(arrays["log_joint"])
        draws = [tuple(int(i) for i in np.unravel_index(int(np.argmax(lj)), lj.shape))]
    if draw_sets is not None and int(draw_sets) < 1:
        raise InputError(f"--draw-sets must be at least 1, got {draw_sets}")
    if not mc_tolerance > 0:
        raise InputError(f"--mc-tolerance must be positive, got {mc_tolerance}")
    if int(max_particles) < 1:
        raise InputError(f"--max-particles must be at least 1, got {max_particles}")
    if proposal is not None:
        if proposal not in PROPOSALS:
            raise InputError(f"--proposal must be one of {', '.join(PROPOSALS)}, got "
                             f"{proposal!r}")
        if draw_sets is None or per_symbol:
            raise InputError("--proposal applies to --draw-sets without --per-symbol (the "
                             "default estimator's filters are adapted; --per-symbol's "
                             "readings draw from the prior)")
    proposal = proposal or PROPOSALS[0]
    info = details if details is not None else {}
    if draw_sets is None and not per_symbol:
        value, got = mixture_log_prob(model, arrays, options, corpus, draws=draws,
                                      variant=variant, emission=emission,
                                      letters_only=letters_only, mc_tolerance=mc_tolerance,
                                      max_particles=int(max_particles))
        if map:
            got["quantity"] = "log p(test | train) under the sample of highest log joint (MAP)"
        if letters_only and not sequence:
            got["quantity"] += ", letters only (the ends' predictions left out)"
        info.update(got)
        return value
    k_sets = 1 if draw_sets is None else int(draw_sets)
    n_s = int(np.prod(arrays["delta"].shape[:2]))
    info.update(quantity=("sum_t log E[p(x_t | x_<t)], the authors' per-symbol average"
                          if per_symbol else "log p(test | train), joint posterior mixture")
                + (" under the sample of highest log joint (MAP)" if map else
                   f" of {n_s} sample{'s' if n_s != 1 else ''}"),
                estimator=(f"equal-weight average of {k_sets} reading{'s' if k_sets != 1 else ''}"
                           " per sample" if per_symbol else
                           f"per-sample particle filters of {k_sets} particle"
                           f"{'s' if k_sets != 1 else ''}, "
                           + ("adapted proposal" if proposal == "adapted" else
                              "blind draws from the prior")),
                particles=k_sets, replicates=1, se=None, se_per_symbol=None, converged=None)
    if letters_only and not sequence:
        info["quantity"] += ", letters only (the ends' predictions left out)"
    keep = (np.asarray(corpus.tokens) != 0 if letters_only and not sequence else slice(None))
    if not per_symbol and proposal == "adapted":  # each sample's own adapted filter
        f = _SampleFilters(model, arrays, options, corpus, draws, variant, emission,
                           letters_only)
        totals = [f.run(i, k_sets, (k_sets, 0, 0)) if f.drew[i] else f.totals[i]
                  for i in range(len(f.pairs))]  # (generators apart from the default's)
        return float(log_mean_exp(np.array(totals), axis=0))
    if not per_symbol:  # each sample's total, from a blind particle filter when K > 1
        lp = per_sample_log_prob(model, arrays, options, corpus, draws=draws, variant=variant,
                                 per_symbol=True, emission=emission, particles=k_sets)
        lp = lp.reshape(-1, lp.shape[-1])[:, keep]  # the symbols read, in order (as_symbols)
        return float(log_mean_exp(lp.sum(axis=1), axis=0))
    per_set = []  # per draw set, each symbol's log-mean over the samples
    for k in range(k_sets):
        lp = per_sample_log_prob(model, arrays, options, corpus, draws=draws, variant=variant,
                                 per_symbol=True, emission=emission, draw_set=k)
        per_set.append(log_mean_exp(lp.reshape(-1, lp.shape[-1])[:, keep], axis=0))
    # every set has the same number of samples: the mean of the sets' means
    return float(log_mean_exp(np.array(per_set), axis=0).sum())


# -- the plug-in automaton (bayesfa export, Run.sample / Run.decode) -----------------------------

def plugin_pfa(model: int, arrays, options, c: int, d: int, variant: int = 0,
               emission=None) -> PFA:
    """The plug-in automaton of recorded sample ``(c, d)``: the PFA whose parameters are the
    posterior means of the emissions and transitions given the sample (its transition table,
    seating, emission counts and hyperparameters). States ``0..rows-1`` are the sample's
    (``q0`` first, the start); the PDIA adds a last *fresh* state standing for every state
    the sample does not use.

    - Emissions (Pfau, Bartlett & Wood 2010, Eq. x:end integrated over ``pi_q``, the
      Dirichlet-multinomial predictive): ``pi~_qs = (c_qs + a_s) / (c_q + beta)`` with
      ``a_s = beta / S`` (``pi_q ~ Dir(beta / S)``) or ``beta pi0_s`` (pdia-smoothed); the
      fresh state has ``c = 0``. The end symbol 0 is the stop probability.
    - Transitions: a visited ``delta_qs`` is where it points; an unvisited one (the paper's
      deleted zero-count transitions) goes to state ``k`` with its prior predictive given the
      rest, ``E[1{delta_qs = k} | sample]``: Eq. delta:pred, ``(alpha mu_k + v_ks) / (alpha +
      D+_s)``, for the finite PDFA, and for the PDIA the Chinese restaurant franchise's
      (module docstring of :mod:`bayesfa.samplers.pdia._crf_kernel`: an open table of
      restaurant ``s`` ``(n_t - d) / (alpha + n_s)``, a new table ``(alpha + d T_s) / (alpha
      + n_s)`` shared over the dishes ``(m_k - d0) / (alpha0 + M)`` and a fresh state
      ``(alpha0 + d0 K) / (alpha0 + M)``); the fresh state's own transitions are all unvisited.

    All unused states look alike under these means, so lumping them into the one fresh state
    is exact for the plug-in. It differs from :func:`predict` with ``map=True`` as a plug-in
    does from a predictive: that one folds a test string's emissions into the counts as it
    reads it and remembers an unvisited transition once drawn. Sentences only (a
    ``--sequence`` run models one long sequence, not a distribution over strings)."""
    from bayesfa.samplers.pdia._crf_kernel import (H_ALPHA, H_ALPHA0, H_BETA, H_D, H_D0,
                                                   M_DISHES, M_HI, M_TABLES, S_M, T_DISH, T_N)

    variant = check_variant(variant)
    if options.get("sequence", False):
        raise InputError("a run fitted with --sequence models one long sequence, not a "
                         "distribution over strings: it has no automaton to export")
    from bayesfa.memory import available_memory, format_bytes

    rows, n_sym = (int(x) for x in arrays["delta"].shape[2:])
    need = 3 * 8 * n_sym * (rows + 1) ** 2  # the dense [S, Q, Q] tables: go, trans, the PFA's
    if need > available_memory():
        raise InputError(f"the plug-in automaton of this run ({rows} state rows, {n_sym} "
                         f"symbols) needs {format_bytes(need)} as a dense PFA, more than the "
                         f"{format_bytes(available_memory())} available")
    delta, _, cnt, ctot, nj, v, mu, tabs, col_tabs, col_T, sts, meta = _sample_state(
        model, 1, arrays, c, d, rows)
    hyp = np.asarray(arrays["hyp"][c, d], dtype=np.float64)
    if emission is None:
        beta = float(hyp[H_BETA])
        pseudo = np.full(n_sym, beta / n_sym)
    else:
        lg = emission.predict_lg(arrays, c, d)
        pseudo, beta = lg[0, :n_sym, -1], float(lg[0, n_sym, -1])
    fresh = model == CRF
    q = rows + int(fresh)
    pi = np.empty((q, n_sym))
    pi[:rows] = (cnt + pseudo) / (ctot[:, None] + beta)
    if fresh:
        pi[rows] = pseudo / beta
    alpha = float(hyp[H_ALPHA])
    pred = np.zeros((n_sym, q))  # [s, k]: where an unvisited entry of column s goes
    for s in range(1, n_sym):
        n = int(nj[s])
        if model == FINITE:
            pred[s, :rows] = (alpha * mu[:rows] + v[:rows, s]) / (alpha + n)
            continue
        disc = 0.0 if variant == 2 else float(hyp[H_D])
        disc0 = 0.0 if variant == 2 else float(hyp[H_D0])
        open_ = col_tabs[s, :col_T[s]]
        np.add.at(pred[s], tabs[T_DISH, open_], (tabs[T_N, open_] - disc) / (alpha + n))
        new_table = (alpha + disc * col_T[s]) / (alpha + n) if n > 0 else 1.0
        big_m = int(meta[M_TABLES])
        if big_m > 0:
            m = sts[S_M, 1:min(rows, int(meta[M_HI]))].astype(np.float64)
            pred[s, 1:1 + m.size] += np.where(m > 0, new_table * (m - disc0), 0.0) / (
                float(hyp[H_ALPHA0]) + big_m)
            pred[s, rows] += new_table * (float(hyp[H_ALPHA0]) + disc0 * int(meta[M_DISHES])) / (
                float(hyp[H_ALPHA0]) + big_m)
        else:
            pred[s, rows] += new_table
    go = np.zeros((n_sym, q, q))  # [s, from, to]
    for s in range(1, n_sym):
        go[s] = pred[s]
        seen = np.flatnonzero(delta[:rows, s] >= 0)
        go[s, seen] = 0.0
        go[s, seen, delta[seen, s]] = 1.0
    trans = pi.T[1:, :, None] * go[1:]
    init = np.zeros(q)
    init[0] = 1.0
    return PFA(init, trans, pi[:, 0].copy())


class PlugInAutomata(DrawAutomata):
    """The export hook of the PDFA / PDIA fronts (:class:`~bayesfa.samplers.plugin.DrawAutomata`):
    :func:`plugin_pfa` of a recorded sample; ``which="map"`` the sample of highest log joint
    (the one ``predict --map`` uses). The PDIA's states come and go from sample to sample, so
    it has no posterior-mean automaton; the finite PDFA's states are fixed, and its mean is the
    PFA of the mean plug-in parameters."""

    trim = True
    #: the predictive (:func:`predict`) is not the mixture of the samples' plug-ins
    predictive_is_mixture = False

    def draw_grid(self, arrays) -> tuple[int, int]:
        return tuple(np.shape(arrays["log_joint"]))

    def draw_pfa(self, arrays, options, chain: int, k: int) -> PFA:
        emission = self._emission() if hasattr(self, "_emission") else None
        return plugin_pfa(self.model, arrays, options, chain, k, self.variant, emission)

    def automaton(self, arrays, options, which: str = "map", log_joint=None) -> PFA:
        """:meth:`DrawAutomata.automaton`, the MAP sample by the arrays' own ``log_joint``."""
        return super().automaton(arrays, options, which, arrays["log_joint"])


def chain_bytes(n_tokens: int, n_symbols: int, n_cap: int) -> int:
    """Bytes of one chain's arrays: :class:`ChainState` with its CRF seating (``new_crf``,
    which the finite model allocates too), its workspace (``_pdfa_kernel.new_workspace``) and
    the token array, for ``n_tokens`` tokens, ``n_symbols`` columns and ``n_cap`` states; the
    same for both models. Exact (``tests/test_pdia.py`` sums the arrays)."""
    tc = n_cap * n_symbols  # one table id per entry
    per_entry = (4 * 4 + 8 + 4 * 5  # delta, seat, cnt, cnt2; vis; newq, news, oq, os, oseat
                 + 4 + 4 * 7 + 4  # the seating: v, tabs, col_tabs
                 + 4 * 2 + 4 * 3 + 8)  # the workspace: we, its [3, tc] and [tc] scratch
    per_state = (4 * 2 + 1 + 8 + 8  # ctot, ctot2, changed; mu; lmu
                 + 4 * 4  # the seating's sts
                 + 4 * 4 + 8 * 2 + 8 * 2)  # the workspace's [4, n], [2, n] int64, [2, n] float
    tokens = 4 * 7 * max(n_tokens, 1) + 8 * 2 * (n_tokens + 2) + 4 * n_tokens  # index, lg, sym
    constant = 4 * 2 * n_symbols + 8 * 8 + 8 * 4  # nj, col_T; meta; the workspace's counters
    return int(tc * per_entry + n_cap * per_state + tokens + constant)


def draw_bytes(model: int, n_symbols: int, n_cap: int) -> int:
    """Bytes of one stored draw in the fit's arrays (:func:`_stack`) at its largest: every
    state a row (``delta``, ``seat``, ``counts``), every entry a table (``tdish``, the PDIA's),
    ``hyp``, ``n_tab``, ``end_state``, ``log_joint``, and the finite model's ``mu``."""
    tables = n_cap * n_symbols if model == CRF else 1
    mu = 8 * n_cap if model == FINITE else 0
    return int(4 * 3 * n_cap * n_symbols + 4 * tables + 8 * 5 + 4 + 4 + 8 + mu)


def memory_bytes(model: int, corpus: Corpus, options: dict[str, Any], n_cap: int) -> int:
    """Peak bytes of fit and predict: one chain's arrays (:func:`chain_bytes`) plus the stored
    draws of every chain (:func:`draw_bytes`). Sentences' sizes (the end symbol a column, every
    token on the path): an upper bound for ``--sequence``, which has neither."""
    n_draws = max(1, draws_per_chain(options))
    s = corpus.alphabet_size + 1
    return (chain_bytes(corpus.n_tokens, s, n_cap)
            + options["chains"] * n_draws * draw_bytes(model, s, n_cap))


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--beta", type=positive_float, default=None,
                        help="total mass of the emission prior pi_q ~ Dir(beta/|Sigma|) (end "
                             "symbol included for sentences); fixed if given, else sampled under "
                             "Gamma(1, 1) from 1.0")
    parser.add_argument("--alpha", type=positive_float, default=None,
                        help="concentration of phi_j; fixed if given, else sampled under "
                             "Gamma(1, 1) from 1.0")
    parser.add_argument("--sequence", action="store_true",
                        help="read the training strings as one long sequence (no end symbol); "
                             "a test set continues it from the state reached at the end")
    parser.add_argument("--predict-draws", type=positive_int, default=10,
                        help="draws of the unvisited transitions a test string needs, averaged "
                             "per sample (exact when it needs none); default 10")
    parser.add_argument("--hyper-step", type=positive_float, default=0.5,
                        help="scale of the random-walk proposals of the hyperparameters; "
                             "default 0.5")


class _PDFA(PlugInAutomata):
    """The ``pdfa`` entry of :data:`bayesfa.methods.REGISTRY`."""

    name = "pdfa"
    model = FINITE
    resumable = True  # fit(..., workdir=) keeps chain states there (finished or not)
    summary = ("finite Bayesian PDFA, MH on each transition, emissions integrated out "
               "(Pfau, Bartlett & Wood 2010)")
    validation = "bayesfa.validation.pdia.pdfa:PDFA"
    variant = 0

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_mcmc_arguments(parser, states=10, beta=None, iterations=1000, burn_in=500, period=10,
                           parallel_chains=False)
        add_common_arguments(parser)
        parser.add_argument("--gamma", type=positive_float, default=None,
                            help="total mass of mu ~ Dir(gamma/|Q|); fixed if given, else "
                                 "sampled under Gamma(1, 1) from 1.0")
        parser.add_argument("--mu-moves", type=nonnegative_int, default=5,
                            help="Gibbs steps on mu (auxiliary table counts) per sweep; "
                                 "default 5")
        add_checkpoint_argument(parser)

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool,
            workdir=None) -> FitResult:
        """The chains of :func:`fit_model`; ``workdir``: their checkpoints (resumable)."""
        return fit_model(FINITE, corpus, options, seed, progress, int(options["states"]) + 1,
                         self.variant, self.name, workdir=workdir)

    def predict_log_prob(self, arrays, options, corpus, map: bool = False) -> np.ndarray:
        return predict(FINITE, arrays, options, corpus, map=map, variant=self.variant)

    def perplexity_log_prob(self, arrays, options, corpus, *, continuation: bool,
                            map: bool = False, per_symbol: bool = False,
                            letters_only: bool = False, draw_sets: int | None = None,
                            mc_tolerance: float = MIXTURE_TOLERANCE,
                            max_particles: int = MIXTURE_MAX_PARTICLES,
                            details: dict | None = None, proposal: str | None = None) -> float:
        """:func:`perplexity_log_prob` (its docstring: the default, ``draw_sets``,
        ``proposal``, ``per_symbol`` and ``details``)."""
        return perplexity_log_prob(FINITE, arrays, options, corpus, continuation=continuation,
                                   map=map, per_symbol=per_symbol, variant=self.variant,
                                   letters_only=letters_only, draw_sets=draw_sets,
                                   mc_tolerance=mc_tolerance, max_particles=max_particles,
                                   details=details, proposal=proposal)

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        return memory_bytes(FINITE, corpus, options, int(options["states"]) + 1)


METHOD = _PDFA()
