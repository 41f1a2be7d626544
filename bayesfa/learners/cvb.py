"""Collapsed variational Bayes for fully connected PFAs: CVB0, GCVB0 and CVB2
(Shibata & Yoshinaka 2013, Sect. 2.4-2.5, 4.2 and the appendix).

All three fit a mean-field ``q(z) = prod_t q_t(z_t)`` to the collapsed posterior
``Pr(z | alpha)`` of the model of Eq. 2/4 and predict with the plug-in of Eq. 10,
``xi~_iaj = (E_q[C_iaj] + prior_iaj) / (E_q[C_i] + N A beta)`` (with the prior of Eq. 2:
``N beta`` on the end transition, as :func:`bayesfa.samplers.pfa.cgs_pfa.plugin_xi`).

- **CVB0** (Sect. 2.4): coordinate updates of Eq. 12 with the 0th-order expectations of
  Eq. 14-16, each ``q_t`` in ``O(N^2)`` (``O(N)`` per ``q_t(k)``) by keeping ``E_q[C_k]`` and
  ``E_q[C_jak]`` up to date; ``O(N^2 T)`` per iteration. Stops when no ``q_t(k)`` moved by more
  than ``tol`` in an iteration (the paper notes CVB0 need not converge).
- **GCVB0** (Sect. 2.5, 4.2): minimises ``D0(q)`` (below Eq. 16) plus the penalty
  ``sum_t (1 - sum_k q_t(k))^2`` with scipy's L-BFGS-B over ``x``, ``q_t(k) = x_t(k)^2 /
  sum_i x_t(i)^2``, ``x >= 1e-7``, ``factr = 1e7`` (``ftol = factr * eps``; ``tol`` sets it).
  The gradient is Eq. 17 with the chain rule. An iteration is one L-BFGS-B iteration (the
  paper's footnote 10 counts evaluations instead: the trace keeps both).
- **CVB2** (appendix): Eq. 12 with the second-order expansion
  ``E[log(X + c)] ~ log(E X + c) - V X / (2 (E X + c)^2)`` (Teh et al. 2006b; the paper's
  Eq. 13 drops the 1/2), with the exact variances under ``q`` (see
  :mod:`bayesfa.learners._cvb_kernel` for why this costs ``O(N^2)`` per position here).

``D0`` is reported with its constants, ``D0 = -sum log Gamma(E_q[C] + prior)/Gamma(prior) +
sum_i log Gamma(E_q[C_i] + N A beta)/Gamma(N A beta) + E_q[log q]``, so that at a point mass
``q`` it equals ``-log Pr(alpha, z)`` of Eq. 4.

All three are resumable at the iteration level (``--checkpoint-every``, the shared
machinery of :mod:`bayesfa.samplers.chains`): the variational parameters (CVB0 / CVB2: ``q``
and the sums the sweeps maintain; GCVB0: L-BFGS-B's whole state, ``x`` and its last
correction pairs, :class:`_LBFGSB`), the iteration count and the trace so far are saved
atomically after an iteration, and a rerun of the same fit continues from there bit for bit.
``--holdout`` (default 0) leaves a slice of the strings out of the fit (the slice CGS-PFA
holds out for the seed) and records their log predictive under Eq. 10's plug-in after every
iteration (``heldout_log_pred``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import ESTIMATE_SECONDS, FitResult, fraction, positive_float, positive_int
from bayesfa.samplers.chains import (CHECKPOINT_EVERY, add_checkpoint_argument, chain_path,
                                     check_checkpoint_every, check_numbers, corrupt_checkpoint,
                                     digest, free_positions, n_free_positions,
                                     read_checkpoint, save_checkpoint)
from bayesfa.samplers.pfa.cgs_pfa import (HOLDOUT_MAX, holdout_split, plugin_log_prob,
                                          plugin_xi, prior_matrix)
from bayesfa.samplers.plugin import DrawAutomata

_REFRESH = 16  # recompute the maintained sums from q every this many iterations
LOWER_BOUND = 1e-7  # Sect. 4.2, footnote 8
FACTR = 1e7  # Sect. 4.2
GCVB0_TOL = FACTR * np.finfo(float).eps  # scipy's ftol for factr = 1e7
CVB_TOL = 1e-6
LBFGS_HISTORY = 10  # scipy's default number of correction pairs (maxcor)


class VBResult(NamedTuple):
    """A fitted mean-field posterior.

    expected_counts : float64 ``[N+1, A, N+1]``, ``E_q[C_iaj]`` (Eq. 10 needs only these).
    q : float64 ``[T+1, N+1]``, the factors ``q_t`` (point masses on 0 at fixed positions).
    trace : name -> float64 ``[iterations]``: ``d0``, ``log_lik`` (training log likelihood
        under ``xi~`` of Eq. 10), ``n_edges`` (cells with ``E_q[C_iaj] > 1``, Fig. 8c),
        ``neg_entropy`` (``E_q[log q]``, the part of ``D0`` Fig. 8a's thin lines leave out),
        ``change`` (CVB0/CVB2: largest move of a ``q_t(k)``), ``n_evaluations`` (GCVB0).
    info : JSON-able facts (iterations run, converged, seconds, ...).
    """

    expected_counts: np.ndarray
    q: np.ndarray
    trace: dict[str, np.ndarray]
    info: dict[str, Any]


# -- pieces ------------------------------------------------------------------------------------
def check_arguments(corpus: Corpus, n_states, beta, iterations, tol) -> None:
    """The fits' arguments (:func:`bayesfa.samplers.chains.check_numbers`)."""
    check_numbers(corpus, (("n_states", n_states, 1), ("iterations", iterations, 1)),
                  {"beta": beta, "tol": tol})


#: :func:`initial_q` draws the free rows in blocks of this many (the same stream as one draw):
#: drawn at once, the ``[M, N]`` draw beside ``q`` doubled a fit's peak (issue 39, measured
#: with ``tracemalloc``: 8.3 MB against ``q``'s 4.3 MB at 48,000 tokens and N = 10).
INIT_BLOCK = 1 << 10


def initial_q(tokens: np.ndarray, n_states: int, rng: np.random.Generator) -> np.ndarray:
    """Random start ``[T+1, N+1]``: each free ``q_t`` uniform on the simplex (Dirichlet(1)),
    point masses on state 0 elsewhere; drawn :data:`INIT_BLOCK` rows at a time."""
    q = np.zeros((tokens.size + 1, n_states + 1))
    q[:, 0] = 1.0
    free = free_positions(tokens)
    q[free, 0] = 0.0
    ones = np.ones(n_states)
    for a in range(0, free.size, INIT_BLOCK):
        rows = free[a:a + INIT_BLOCK]
        q[rows, 1:] = rng.dirichlet(ones, size=rows.size)
    return q


def check_q0(q0, tokens: np.ndarray, n_states: int) -> np.ndarray | None:
    """A given start ``q0`` as float64, or an :class:`InputError` unless it is a ``q`` of
    these tokens (the training part, after any hold-out split) and ``n_states``: shape ``[T+1,
    N+1]``, finite, each free row (:func:`free_positions`) a distribution over states ``1..N``
    (sums 1 within 1e-9), every other row the point mass on state 0 (:func:`initial_q`). A
    ``q0`` of another corpus had the kernels index past its rows."""
    if q0 is None:
        return None
    q = np.array(q0, dtype=np.float64)
    want = (tokens.size + 1, n_states + 1)
    if q.shape != want:
        raise InputError(f"q0 has shape {q.shape}; {tokens.size} tokens (after any hold-out "
                         f"split) and {n_states} states need {want}")
    free = np.zeros(want[0], dtype=bool)
    free[free_positions(tokens)] = True
    fixed = np.zeros(want[1])
    fixed[0] = 1.0
    if not (np.isfinite(q).all() and (q >= 0).all() and (q[free, 0] == 0).all()
            and np.allclose(q[free].sum(axis=1), 1.0, rtol=0, atol=1e-9)
            and (q[~free] == fixed).all()):
        raise InputError("q0 is not a start of this corpus: each free position's row must be "
                         "a distribution over states 1..N, every other row state 0 alone")
    return q


def _allowed(n_states: int, n_symbols: int, beta: float):
    prior = prior_matrix(n_states, n_symbols, beta)
    return prior, prior > 0


def d0_value(ec: np.ndarray, eci: np.ndarray, q: np.ndarray, positions: np.ndarray,
             beta: float, neg_entropy: float | None = None) -> float:
    """``D0(q)`` of Sect. 2.5 with its constants (module docstring) from ``E_q[C]``;
    ``neg_entropy``, ``E_q[log q]``, is computed from ``q`` unless given."""
    from scipy.special import gammaln

    from bayesfa.learners import _cvb_kernel as kernel

    n_states, n_symbols = ec.shape[0] - 1, ec.shape[1]
    prior, allowed = _allowed(n_states, n_symbols, beta)
    nab = n_states * n_symbols * beta
    cells = gammaln(ec[allowed] + prior[allowed]) - gammaln(prior[allowed])
    states = gammaln(eci + nab) - gammaln(nab)
    if neg_entropy is None:
        neg_entropy = kernel.neg_entropy(positions, q)
    return float(-cells.sum() + states.sum() + neg_entropy)


def expected_counts(tokens: np.ndarray, q: np.ndarray, n_symbols: int):
    """``(E_q[C_iaj] [N+1, A, N+1], E_q[C_i] [N+1])`` of ``q``."""
    from bayesfa.learners import _cvb_kernel as kernel

    n1 = q.shape[1]
    ec = np.zeros((n1, n_symbols, n1))
    eci = np.zeros(n1)
    kernel.expected_counts(tokens, q, ec, eci)
    return ec, eci


def predict_log_prob(expected: np.ndarray, beta: float, corpus: Corpus) -> np.ndarray:
    """``log Pr(b | xi~)`` with ``xi~`` of Eq. 10 from ``E_q[C]`` ``[N+1, A, N+1]``; ``[n_strings]``."""
    return plugin_log_prob(np.asarray(expected)[None], beta, corpus)[0]


#: With ``progress``, a long iteration is run in chunks of free positions lasting about this
#: many seconds each, so that the bar moves within an iteration (the sweeps visit the same
#: positions in the same order: the result is bit-identical to one call).
PROGRESS_SECONDS = 1.0


def _say(bar, text: str) -> None:
    """One line to standard error without breaking the bar."""
    if bar is not None:
        bar.write(text, file=sys.stderr)
    else:
        print(text, file=sys.stderr, flush=True)


def estimate_message(name: str, seconds_per_iteration: float, iterations: int,
                     measured: str) -> str | None:
    """``"name: estimated N s for M iterations ..."`` when ``seconds_per_iteration *
    iterations`` exceeds :data:`ESTIMATE_SECONDS`, else None."""
    total = seconds_per_iteration * iterations
    if not total > ESTIMATE_SECONDS:
        return None
    return (f"{name}: estimated roughly {total:.0f} s for {iterations} iteration"
            f"{'s' if iterations != 1 else ''} at most ({seconds_per_iteration:.3g} s each, "
            f"timed on {measured}); it may stop earlier on convergence")


#: A whole iteration costs about this many times the pass that recomputes the sums from ``q``
#: (:func:`_timed_start`); measured on the first 2000 strings of PAutomaC 24 at N = 50 and
#: 200: a CVB0 sweep took 10x and 5x ``expected_counts``, a CVB2 sweep 25x and 39x
#: ``cvb2_sums``; the lower ends are used (GCVB0: one evaluation, counts and gradient, is
#: taken as a CVB0 sweep).
ITERATION_PER_PASS = {"cvb0": 5.0, "cvb2": 25.0, "gcvb0": 5.0}


def _timed_start(kind: str, tokens: np.ndarray, n_states: int, sums: tuple) -> tuple[float, int]:
    """Seconds of one pass recomputing the sums over all ``T`` positions, and the longest
    prefix timed: passes over growing prefixes (16, 64, 256, ... positions) until two differ
    by 0.2 s, the time extrapolated linearly from the last two (a pass has a fixed cost, the
    zeroing of the sums, which is large for large N).

    The passes run on a uniform ``q`` of the prefix and write into ``sums`` (the fit's own
    arrays, which the first iteration recomputes from scratch): the fit's result is unchanged.
    """
    from bayesfa.learners import _cvb_kernel as kernel

    big_t = tokens.size
    previous = None
    k = min(big_t, 16)
    while True:
        part = tokens[:k]
        q = np.zeros((k + 1, n_states + 1))
        q[:, 0] = 1.0
        free = free_positions(part)
        free = free[free <= k]
        q[free, 0] = 0.0
        q[free, 1:] = 1.0 / n_states
        s0 = time.perf_counter()
        if kind == "cvb2":
            kernel.cvb2_sums(part, q, *sums)
        else:
            kernel.expected_counts(part, q, *sums)
        took = time.perf_counter() - s0
        if k >= big_t:
            return took, k
        if previous is not None and took - previous[1] >= 0.2:
            slope = (took - previous[1]) / (k - previous[0])
            return took + slope * (big_t - k), k
        previous = (k, took)
        k = min(big_t, 4 * k)


def _announce(kind: str, tokens: np.ndarray, n_states: int, iterations: int, sums: tuple,
              rec: "_Recorder") -> None:
    """With a progress bar: the estimate of :func:`_timed_start` (when long)."""
    if rec.bar is None or tokens.size == 0:
        return
    per_pass, k = _timed_start(kind, tokens, n_states, sums)
    per_iteration = per_pass * (1.0 + ITERATION_PER_PASS[kind])
    rec.say(estimate_message(kind, per_iteration, iterations,
                             f"the first {k} of {tokens.size} positions of a pass over the data"))


class _Recorder:
    """Per-iteration trace values, a progress bar and the ``on_iteration`` hook.

    The bar counts iterations; :meth:`advance` moves it by a fraction of one within an
    iteration (chunked sweeps), :meth:`record` completes the iteration."""

    def __init__(self, corpus, beta, positions, progress, name, total, on_iteration, held=None):
        self.corpus, self.beta, self.positions, self.held = corpus, beta, positions, held
        self.rows: dict[str, list] = {"d0": [], "log_lik": [], "n_edges": [], "neg_entropy": []}
        if held is not None:
            self.rows["heldout_log_pred"] = []
        self.on_iteration = on_iteration
        self.name, self.total = name, total
        self.bar = None
        self.partial = 0.0
        if progress:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="it", desc=name, leave=False, dynamic_ncols=True,
                            file=sys.stderr, mininterval=0.5,
                            bar_format="{l_bar}{bar}| {n:.2f}/{total} [{elapsed}<{remaining}, "
                                       "{rate_fmt}{postfix}]")

    def advance(self, fraction: float) -> None:
        if self.bar is not None and fraction > 0:
            self.partial = min(1.0, self.partial + fraction)
            done = len(self.rows["d0"])
            self.bar.n = min(done + self.partial, self.total)  # rounding must not pass it
            self.bar.update(0)

    def stage(self, what: str) -> None:
        """Name the stage under way next to the bar (shown at once)."""
        if self.bar is not None:
            self.bar.set_description_str(f"{self.name} ({what})", refresh=True)

    def say(self, text: str | None) -> None:
        if text is not None and self.bar is not None:
            _say(self.bar, text)

    def record(self, ec, eci, q, d0=None, **extra):
        from bayesfa.learners import _cvb_kernel as kernel

        neg_entropy = kernel.neg_entropy(self.positions, q)
        if d0 is None:
            d0 = d0_value(ec, eci, q, self.positions, self.beta, neg_entropy)
        self.rows["d0"].append(d0)
        self.rows["neg_entropy"].append(neg_entropy)
        self.rows["log_lik"].append(float(predict_log_prob(ec, self.beta, self.corpus).sum()))
        self.rows["n_edges"].append(int(np.count_nonzero(ec > 1.0)))
        if self.held is not None:
            self.rows["heldout_log_pred"].append(float(predict_log_prob(ec, self.beta, self.held).sum()))
        for key, value in extra.items():
            self.rows.setdefault(key, []).append(value)
        if self.bar is not None:
            self.bar.n = min(len(self.rows["d0"]), self.total) - 1  # whole again
            self.bar.update(1)
            self.partial = 0.0
            self.bar.set_postfix(d0=f"{d0:.6g}")
        if self.on_iteration is not None:
            self.on_iteration(len(self.rows["d0"]), ec, q)

    def restore(self, rows: dict[str, np.ndarray]) -> None:
        """The trace of the iterations a resumed fit already ran (``on_iteration`` is not
        called again for them); the bar starts after them."""
        self.rows = {k: np.asarray(v, dtype=np.float64).tolist() for k, v in rows.items()}
        if self.bar is not None:
            self.bar.n = min(len(self.rows["d0"]), self.total)
            self.bar.refresh()

    def close(self):
        if self.bar is not None:
            self.bar.close()

    def trace(self) -> dict[str, np.ndarray]:
        return {k: np.asarray(v, dtype=np.float64) for k, v in self.rows.items()}


def _chunked_sweep(sweep, positions: np.ndarray, rec: _Recorder, state: dict, first: bool):
    """``sweep(chunk)`` over consecutive chunks of ``positions`` (in order) lasting about
    :data:`PROGRESS_SECONDS` each, moving the bar after each; returns the largest change.
    ``state["chunk"]`` carries the chunk size from one iteration to the next. In the first
    iteration (``first``), once :data:`PROGRESS_SECONDS` have passed, the time per position
    gives the estimate of :func:`estimate_message` (printed once)."""
    m = positions.size
    change = 0.0
    start = 0
    t_first = time.perf_counter()
    while start < m:
        chunk = max(1, min(m - start, state["chunk"]))
        s0 = time.perf_counter()
        change = max(change, sweep(positions[start:start + chunk]))
        took = time.perf_counter() - s0
        start += chunk
        rec.advance(chunk / m)
        # next chunk: about PROGRESS_SECONDS (at most doubling)
        state["chunk"] = max(1, min(2 * chunk, int(chunk * PROGRESS_SECONDS / max(took, 1e-9))))
        if first and not state["estimated"] and start < m and time.perf_counter() - t_first > PROGRESS_SECONDS:
            state["estimated"] = True
            per_position = (time.perf_counter() - t_first) / start
            rec.say(estimate_message(rec.name, per_position * m, rec.total,
                                     f"{start} of {m} positions of the first iteration"))
    return change


OnIteration = Callable[[int, np.ndarray, np.ndarray], None]


def _split(corpus: Corpus, holdout: float, root: np.random.SeedSequence):
    """``(fitted, held)``: the strings the fit sees and the held-out slice (None without one),
    the slice CGS-PFA holds out for the same seed
    (:func:`bayesfa.samplers.pfa.cgs_pfa.holdout_split`; ``holdout`` = 0 keeps every string)."""
    kept, held_idx = holdout_split(corpus.n_strings, float(holdout), root)
    if not held_idx.size:
        return corpus, None
    return corpus.subset(kept), corpus.subset(held_idx)


# -- iteration-level checkpoints ---------------------------------------------------------------

#: The version of a variational fit's checkpoint layout (part of its fingerprint).
_CHECKPOINT_FORMAT = "bayesfa-cvb-fit/1"
_COUNTERS = ("iterations_done", "converged", "seconds", "sweep_seconds")


def _fingerprint(kind: str, variant: int, tokens: np.ndarray, n_symbols: int, held,
                 n_states: int, beta: float, iterations: int, tol: float,
                 root: np.random.SeedSequence, q0) -> str:
    """What determines a variational fit's result, as a string (the data by SHA-256): the
    method and variant, the fitted tokens, the held-out slice, ``N``, ``beta``, the largest
    number of iterations, ``tol`` and the seed (or the given start ``q0``); not the checkpoint
    interval."""
    return json.dumps({"format": _CHECKPOINT_FORMAT, "method": kind, "variant": int(variant),
                       "tokens": digest(tokens), "n_symbols": int(n_symbols),
                       "heldout": None if held is None else [digest(held.tokens), digest(held.offsets)],
                       "n_states": int(n_states), "beta": float(beta), "iterations": int(iterations),
                       "tol": float(tol), "entropy": str(root.entropy),
                       "spawn_key": list(root.spawn_key),
                       "q0": None if q0 is None else digest(np.asarray(q0, dtype=np.float64))},
                      sort_keys=True)


class _Checkpoint:
    """The state file of one variational fit (``chain-0000.npz`` in the fit's workdir, written
    by :func:`bayesfa.samplers.chains.save_checkpoint`): saved after the first iteration that
    ends ``every`` seconds or more after the last save, and when the fit ends."""

    def __init__(self, workdir, fingerprint: str, every: float):
        Path(workdir).mkdir(parents=True, exist_ok=True)
        self.path = chain_path(workdir, 0)
        self.fingerprint, self.every = fingerprint, every
        self.last = time.monotonic()

    def load(self, arrays: dict[str, tuple], rows: tuple[str, ...], iterations: int) -> dict | None:
        """The state saved for this fit, or None (no file, or another fit's: ignored, and
        replaced at the next save). ``arrays``: name -> ``(shape, dtype)`` of the state
        arrays; ``rows``: the trace's names. A file whose arrays disagree with these or with
        its own iteration count is an :class:`InputError` naming it."""
        if not self.path.exists():
            return None
        saved = read_checkpoint(self.path, self.fingerprint,
                                tuple(arrays) + tuple(f"trace_{k}" for k in rows) + _COUNTERS)
        if saved is None:
            return None
        n = saved["iterations_done"]
        ok = (n.shape == () and n.dtype.kind == "i" and 1 <= int(n) <= iterations
              and all(saved[k].shape == () for k in _COUNTERS)
              and all(saved[k].shape == tuple(shape) and saved[k].dtype == dtype
                      for k, (shape, dtype) in arrays.items())
              and all(saved[f"trace_{k}"].shape == (int(n),) for k in rows))
        if not ok:
            raise corrupt_checkpoint(self.path, "its arrays do not match its settings")
        return saved

    def due(self) -> bool:
        return time.monotonic() - self.last >= self.every

    def save(self, arrays: dict[str, np.ndarray], rows: dict[str, list], **counters) -> None:
        save_checkpoint(self.path, self.fingerprint,
                        {**arrays, **{f"trace_{k}": np.asarray(v, dtype=np.float64)
                                      for k, v in rows.items()}, **counters})
        self.last = time.monotonic()


# -- CVB0 and CVB2 -----------------------------------------------------------------------------
def _coordinate_fit(kind: str, corpus: Corpus, n_states: int, beta: float, iterations: int,
                    tol: float, seed: int | None, progress: bool,
                    on_iteration: OnIteration | None, q0: np.ndarray | None,
                    variant: int = 0, holdout: float = 0.0, checkpoint_dir=None,
                    checkpoint_every: float = CHECKPOINT_EVERY) -> VBResult:
    from bayesfa.learners import _cvb_kernel as kernel

    tol = CVB_TOL if tol is None else tol
    check_arguments(corpus, n_states, beta, iterations, tol)
    checkpoint_every = check_checkpoint_every(checkpoint_every)
    root = np.random.SeedSequence(seed)
    corpus, held = _split(corpus, holdout, root)
    tokens = corpus.tokens
    q0 = check_q0(q0, tokens, n_states)
    n_symbols = corpus.alphabet_size + 1
    positions = free_positions(tokens)
    n1 = n_states + 1
    ec = np.zeros((n1, n_symbols, n1))
    eci = np.zeros(n1)
    sums = (ec, eci)
    if kind == "cvb2":
        e2 = np.zeros_like(ec)
        f2 = np.zeros_like(ec)
        d1 = np.zeros((n1, n_symbols))
        qq = np.zeros(n1)
        sums = (ec, e2, f2, d1, eci, qq)
    book = None
    if checkpoint_dir is not None:
        book = _Checkpoint(checkpoint_dir, _fingerprint(kind, variant, tokens, n_symbols, held,
                                                        n_states, beta, iterations, tol, root, q0),
                           checkpoint_every)
    rec = _Recorder(corpus, beta, positions, progress, kind, iterations, on_iteration, held)
    rows = tuple(rec.rows) + ("change",)
    try:
        saved = None if book is None else book.load(
            {"q": ((tokens.size + 1, n1), np.float64),
             **{f"sum_{i}": (a.shape, a.dtype) for i, a in enumerate(sums)}}, rows, iterations)
        if saved is None:
            _announce(kind, tokens, n_states, iterations, sums, rec)
            rec.stage("random start")
            rng = np.random.default_rng(root)
            q = initial_q(tokens, n_states, rng) if q0 is None else q0.copy()
        else:  # the state after the saved iteration: q and the sums the sweeps maintain
            q = np.array(saved["q"])
            for i, a in enumerate(sums):
                a[...] = saved[f"sum_{i}"]
            rec.restore({k: saved[f"trace_{k}"] for k in rows})
            rec.say(f"{kind}: resuming after iteration {len(rec.rows['d0'])} of {iterations}")
    except BaseException:
        rec.close()
        raise
    start = 0 if saved is None else int(saved["iterations_done"])
    converged = False if saved is None else bool(saved["converged"])
    seconds_before = 0.0 if saved is None else float(saved["seconds"])
    sweep_seconds = 0.0 if saved is None else float(saved["sweep_seconds"])
    chunking = {"chunk": 16, "estimated": start > 0}
    t0 = time.perf_counter()

    def save() -> None:
        book.save({"q": q, **{f"sum_{i}": a for i, a in enumerate(sums)}}, rec.rows,
                  iterations_done=len(rec.rows["d0"]), converged=converged,
                  seconds=seconds_before + time.perf_counter() - t0, sweep_seconds=sweep_seconds)

    try:
        for it in range(start, iterations if not converged else start):
            s0 = time.perf_counter()
            if it % _REFRESH == 0:
                rec.stage("recomputing the sums")
            if kind == "cvb0":
                if it % _REFRESH == 0:
                    kernel.expected_counts(tokens, q, ec, eci)
                if variant:  # a validation mutant (_cvb_kernel.MUTATIONS)
                    def sweep(p):
                        return kernel.cvb0_sweep(p, tokens, q, ec, eci, float(beta), variant)
                else:
                    def sweep(p):
                        return kernel.cvb0_sweep(p, tokens, q, ec, eci, float(beta))
            else:
                if it % _REFRESH == 0:
                    kernel.cvb2_sums(tokens, q, *sums)
                if variant:
                    def sweep(p):
                        return kernel.cvb2_sweep(p, tokens, q, *sums, float(beta), variant)
                else:
                    def sweep(p):
                        return kernel.cvb2_sweep(p, tokens, q, *sums, float(beta))
            if rec.bar is None:
                change = sweep(positions)
            else:
                rec.stage("sweep")
                change = _chunked_sweep(sweep, positions, rec, chunking, it == 0)
                rec.stage("recording")
            sweep_seconds += time.perf_counter() - s0
            rec.record(ec, eci, q, change=change)
            if it == 0 and not chunking["estimated"]:
                chunking["estimated"] = True
                rec.say(estimate_message(kind, time.perf_counter() - t0, iterations,
                                         "the first iteration"))
            if change < tol:
                converged = True
                break
            if book is not None and book.due():
                save()
        if book is not None:
            save()  # the fit's end: a rerun of the same fit reuses it
    finally:
        rec.close()
    kernel.expected_counts(tokens, q, ec, eci)
    seconds = seconds_before + time.perf_counter() - t0
    n_it = len(rec.rows["d0"])
    info = {"method": kind, "iterations_run": n_it, "converged": converged, "tol": float(tol),
            "n_free_positions": int(positions.size), "n_tokens": int(tokens.size),
            "seconds": seconds, "sweep_seconds": sweep_seconds,
            "ns_per_unit": sweep_seconds * 1e9 / max(1, n_it * n_states ** 2 * tokens.size),
            "unit": "N^2 T", "final_d0": float(rec.rows["d0"][-1]),
            "iterations_resumed": start, **_holdout_info(holdout, held)}
    if book is not None:
        info["checkpoint_every"] = checkpoint_every
    return VBResult(ec, q, rec.trace(), info)


def _holdout_info(holdout: float, held: Corpus | None) -> dict[str, Any]:
    return {"holdout": float(holdout), "holdout_strings": 0 if held is None else int(held.n_strings)}


def fit_cvb0(corpus: Corpus, n_states: int, beta: float, iterations: int = 200,
             tol: float | None = None, seed: int | None = None, progress: bool = False,
             on_iteration: OnIteration | None = None, q0: np.ndarray | None = None,
             variant: int = 0, *, holdout: float = 0.0, checkpoint_dir=None,
             checkpoint_every: float = CHECKPOINT_EVERY) -> VBResult:
    """CVB0 (Sect. 2.4, Eq. 12 with Eq. 14-16) from a random ``q`` (``seed``) or ``q0``.

    Runs up to ``iterations`` sweeps over the free positions in order; stops early once the
    largest change of a ``q_t(k)`` in a sweep is below ``tol`` (default 1e-6).
    ``on_iteration(i, E_q[C], q)`` is called after every iteration (arrays are live: copy).
    ``variant`` != 0: a deliberately wrong update (validation only,
    :data:`bayesfa.learners._cvb_kernel.MUTATIONS`).

    ``holdout``: the fraction of the strings left out of the fit (module docstring; the trace
    gains ``heldout_log_pred``). ``checkpoint_dir``: the fit's state is saved there
    (``chain-0000.npz``, atomically) after the first iteration ending ``checkpoint_every``
    seconds or more after the last save and at the end; a later call with the same data,
    settings and seed continues from it, bit-identical to an uninterrupted fit (a file of
    another fit is ignored, a damaged one an :class:`InputError` naming it).
    """
    return _coordinate_fit("cvb0", corpus, n_states, beta, iterations, tol, seed, progress,
                           on_iteration, q0, variant, holdout, checkpoint_dir, checkpoint_every)


def fit_cvb2(corpus: Corpus, n_states: int, beta: float, iterations: int = 200,
             tol: float | None = None, seed: int | None = None, progress: bool = False,
             on_iteration: OnIteration | None = None, q0: np.ndarray | None = None,
             variant: int = 0, *, holdout: float = 0.0, checkpoint_dir=None,
             checkpoint_every: float = CHECKPOINT_EVERY) -> VBResult:
    """CVB2 (appendix): as :func:`fit_cvb0` with the second-order update."""
    return _coordinate_fit("cvb2", corpus, n_states, beta, iterations, tol, seed, progress,
                           on_iteration, q0, variant, holdout, checkpoint_dir, checkpoint_every)


# -- GCVB0 -------------------------------------------------------------------------------------
class D0Objective:
    """``F(x) = D0(q(x)) + sum_t (1 - sum_k q_t(k))^2`` and its gradient (Sect. 2.5, 4.2).

    ``x`` is flat ``[M * N]`` (free position major). Calling it returns ``(F, dF/dx)`` as
    scipy's ``jac=True`` wants; the last evaluation's ``D0``, penalty and ``E_q[C]`` are kept.
    """

    def __init__(self, corpus: Corpus, n_states: int, beta: float, variant: int = 0):
        self.variant = variant  # != 0: a wrong gradient (validation only)
        self.tokens = corpus.tokens
        self.positions = free_positions(self.tokens)
        self.n_states, self.beta = n_states, float(beta)
        self.n_symbols = corpus.alphabet_size + 1
        n1 = n_states + 1
        self.q = np.zeros((self.tokens.size + 1, n1))
        self.q[:, 0] = 1.0
        self.ec = np.zeros((n1, self.n_symbols, n1))
        self.eci = np.zeros(n1)
        self.prior, self.allowed = _allowed(n_states, self.n_symbols, beta)
        self.n_evaluations = 0
        self.last_x: np.ndarray | None = None
        self.last_d0 = np.nan
        self.last_penalty = np.nan

    def x_from_q(self, q: np.ndarray) -> np.ndarray:
        return np.sqrt(np.maximum(q[self.positions, 1:], 0.0)).ravel()

    def __call__(self, x_flat: np.ndarray):
        from scipy.special import digamma

        from bayesfa.learners import _cvb_kernel as kernel

        x = np.ascontiguousarray(x_flat, dtype=np.float64).reshape(self.positions.size, self.n_states)
        penalty = kernel.q_from_x(x, self.positions, self.q)
        kernel.expected_counts(self.tokens, self.q, self.ec, self.eci)
        d0 = d0_value(self.ec, self.eci, self.q, self.positions, self.beta)
        psi = np.zeros_like(self.ec)
        psi[self.allowed] = digamma(self.ec[self.allowed] + self.prior[self.allowed])
        nab = self.n_states * self.n_symbols * self.beta
        psi_state = digamma(self.eci + nab)
        grad = np.empty_like(x)
        if self.variant:
            kernel.d0_grad_x(self.positions, self.tokens, self.q, x, psi, psi_state, grad,
                             self.variant)
        else:
            kernel.d0_grad_x(self.positions, self.tokens, self.q, x, psi, psi_state, grad)
        self.n_evaluations += 1
        self.last_x = x.ravel().copy()
        self.last_d0, self.last_penalty = d0, penalty
        return d0 + penalty, grad.ravel()


class _LBFGSB:
    """L-BFGS-B as ``scipy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B")`` runs it
    with lower bounds only: the loop of scipy's ``_minimize_lbfgsb`` around its kernel
    ``setulb`` (scipy >= 1.15), the same kernel calls with the same arguments in the same
    order, so the same iterates bit for bit, and the cache of the last evaluation that
    scipy's ``ScalarFunction`` keeps. Unlike ``minimize``, the whole optimiser state (the
    kernel's work arrays, holding the last ``m`` correction pairs, ``x``, ``f``, ``g`` and the
    counters) is in :attr:`state`, so that a fit saved after an iteration continues bit for
    bit (Byrd, Lu, Nocedal & Zhu 1995; the factr / pgtol stopping tests of the kernel)."""

    ARRAYS = ("x", "g", "wa", "iwa", "task", "ln_task", "lsave", "isave", "dsave", "cache_x",
              "cache_g")
    NUMBERS = ("f", "cache_f", "n_iterations", "nfev", "finished")
    MAXLS = 20  # scipy's default line-search steps

    @staticmethod
    def kernel():
        """scipy's ``setulb`` of the C port of L-BFGS-B (scipy >= 1.15), or None."""
        import scipy

        try:
            version = tuple(int(v) for v in scipy.__version__.split(".")[:2])
            from scipy.optimize import _lbfgsb
        except (ImportError, ValueError):
            return None
        return getattr(_lbfgsb, "setulb", None) if version >= (1, 15) else None

    def __init__(self, setulb, fg, n: int, lower: float, m: int, ftol: float):
        """The optimiser of ``fg`` (``x -> (f, g)``) over ``n`` variables ``>= lower``, with
        ``m`` correction pairs and scipy's ``ftol``; :meth:`start` or :meth:`restore` next."""
        self.setulb, self.fg, self.m = setulb, fg, m
        self.factr = ftol / np.finfo(float).eps
        self.low, self.up = np.full(n, lower), np.zeros(n)
        self.nbd = np.ones(n, dtype=np.int32)  # a lower bound only
        self.state = {"x": np.zeros(n), "g": np.zeros(n), "wa": np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m),
                      "iwa": np.zeros(3 * n, dtype=np.int32), "task": np.zeros(2, dtype=np.int32),
                      "ln_task": np.zeros(2, dtype=np.int32), "lsave": np.zeros(4, dtype=np.int32),
                      "isave": np.zeros(44, dtype=np.int32), "dsave": np.zeros(29), "f": 0.0,
                      "n_iterations": 0, "nfev": 0, "finished": False,
                      "cache_x": np.full(n, np.nan), "cache_f": np.nan, "cache_g": np.zeros(n)}

    def start(self, x0: np.ndarray) -> None:
        self.state["x"] = np.array(x0, dtype=np.float64)
        self._evaluate(self.state["x"])  # scipy's ScalarFunction evaluates at x0 when made

    def _evaluate(self, x: np.ndarray):
        s = self.state
        if not np.array_equal(x, s["cache_x"]):
            s["cache_x"] = x.copy()
            f, g = self.fg(x.copy())
            s["cache_f"], s["cache_g"] = float(f), np.atleast_1d(np.asarray(g, dtype=np.float64))
            s["nfev"] += 1
        return s["cache_f"], s["cache_g"]

    def restore(self, saved: dict) -> None:
        """The state saved from :attr:`state` (every name of :data:`ARRAYS` and :data:`NUMBERS`)."""
        self.state = {k: np.array(saved[k]) for k in self.ARRAYS}
        self.state.update(f=float(saved["f"]), cache_f=float(saved["cache_f"]),
                          n_iterations=int(saved["n_iterations"]), nfev=int(saved["nfev"]),
                          finished=bool(saved["finished"]))

    def run(self, maxiter: int, maxfun: int, callback, after_iteration) -> None:
        """Until the kernel stops; ``callback(x, f)`` at every new iterate (scipy's
        ``callback``), then ``after_iteration()`` (the state is complete there)."""
        s = self.state
        while not s["finished"]:
            g = s["g"].astype(np.float64)
            self.setulb(self.m, s["x"], self.low, self.up, self.nbd, s["f"], g, self.factr, 0.0,
                        s["wa"], s["iwa"], s["task"], s["lsave"], s["isave"], s["dsave"],
                        self.MAXLS, s["ln_task"])
            s["g"] = g
            task = s["task"]
            if task[0] == 3:  # FG: f and g at x
                s["f"], s["g"] = self._evaluate(s["x"])
            elif task[0] == 1:  # NEW_X
                s["n_iterations"] += 1
                callback(s["x"], s["f"])
                if s["n_iterations"] >= maxiter:
                    task[0], task[1] = 5, 504
                elif s["nfev"] > maxfun:
                    task[0], task[1] = 5, 502
                after_iteration()
            else:
                s["finished"] = True

    def result(self) -> tuple[np.ndarray, int, bool, str]:
        """``(x, iterations, success, message)`` as ``minimize`` reports them."""
        from scipy.optimize import _lbfgsb_py

        s = self.state
        task = s["task"]
        message = (f"{_lbfgsb_py.status_messages.get(int(task[0]), task[0])}: "
                   f"{_lbfgsb_py.task_messages.get(int(task[1]), task[1])}")
        return s["x"], int(s["n_iterations"]), int(task[0]) == 4, message


def fit_gcvb0(corpus: Corpus, n_states: int, beta: float, iterations: int = 200,
              tol: float | None = None, seed: int | None = None, progress: bool = False,
              on_iteration: OnIteration | None = None, q0: np.ndarray | None = None,
              variant: int = 0, *, holdout: float = 0.0, checkpoint_dir=None,
              checkpoint_every: float = CHECKPOINT_EVERY) -> VBResult:
    """GCVB0 (Sect. 2.5, 4.2): L-BFGS-B (scipy) on ``D0 + penalty`` over ``x`` from a random
    ``q`` (``seed``) or ``q0``; at most ``iterations`` L-BFGS-B iterations, converged when
    scipy's ``ftol`` test (``tol``, default ``factr = 1e7`` times machine epsilon) holds.
    The objective's evaluations are capped at ``20 (iterations + 1)`` (``info["max_evaluations"]``:
    scipy's 20 line-search steps an iteration, and the start's), checked at each new iterate.

    The trace records, per L-BFGS-B iteration (accepted point), ``d0`` (never increases),
    ``objective`` (``D0 + penalty``), ``n_evaluations`` (cumulative, the paper's iteration).
    ``holdout``, ``checkpoint_dir``, ``checkpoint_every``: as :func:`fit_cvb0`; the state
    saved is L-BFGS-B's whole state (:class:`_LBFGSB`: ``x``, the last correction pairs,
    the counters) with the trace. Checkpoints need scipy >= 1.15 (its C L-BFGS-B keeps its
    state in arrays); with an older scipy the fit runs through ``scipy.optimize.minimize``,
    the same iterates, and saves none (``info["checkpoints"]`` says so)."""
    tol = GCVB0_TOL if tol is None else tol
    check_arguments(corpus, n_states, beta, iterations, tol)
    checkpoint_every = check_checkpoint_every(checkpoint_every)
    root = np.random.SeedSequence(seed)
    corpus, held = _split(corpus, holdout, root)
    q0 = check_q0(q0, corpus.tokens, n_states)
    fun = D0Objective(corpus, n_states, beta, variant)
    setulb = _LBFGSB.kernel()
    book = None
    if checkpoint_dir is not None and setulb is not None:
        book = _Checkpoint(checkpoint_dir,
                           _fingerprint("gcvb0", variant, corpus.tokens, fun.n_symbols, held,
                                        n_states, beta, iterations, tol, root, q0),
                           checkpoint_every)
    # the bar counts the starting point too (recorded as iteration 0)
    rec = _Recorder(corpus, beta, fun.positions, progress, "gcvb0", iterations + 1, on_iteration,
                    held)
    rows = tuple(rec.rows) + ("objective", "n_evaluations")
    n_vars = fun.positions.size * n_states
    saved = None
    try:
        if book is not None and n_vars:
            m = LBFGS_HISTORY
            saved = book.load(
                {"x": ((n_vars,), np.float64), "g": ((n_vars,), np.float64),
                 "wa": ((2 * m * n_vars + 5 * n_vars + 11 * m * m + 8 * m,), np.float64),
                 "iwa": ((3 * n_vars,), np.int32), "task": ((2,), np.int32),
                 "ln_task": ((2,), np.int32), "lsave": ((4,), np.int32), "isave": ((44,), np.int32),
                 "dsave": ((29,), np.float64), "cache_x": ((n_vars,), np.float64),
                 "cache_g": ((n_vars,), np.float64), "fun_x": ((n_vars,), np.float64),
                 "f": ((), np.float64), "cache_f": ((), np.float64), "n_iterations": ((), np.int64),
                 "nfev": ((), np.int64), "finished": ((), np.bool_), "n_evaluations": ((), np.int64)},
                rows, iterations + 1)
        if saved is None:
            _announce("gcvb0", corpus.tokens, n_states, iterations, (fun.ec, fun.eci), rec)
            rec.stage("random start")
            rng = np.random.default_rng(root)
            q_init = initial_q(corpus.tokens, n_states, rng) if q0 is None else q0
            x0 = np.maximum(fun.x_from_q(q_init), LOWER_BOUND)
        else:
            x0 = None
            rec.restore({k: saved[f"trace_{k}"] for k in rows})
            rec.say(f"gcvb0: resuming after iteration {len(rec.rows['d0']) - 1} of {iterations}")
        rec.stage("L-BFGS-B")
    except BaseException:
        rec.close()
        raise

    def record(x, f):
        if fun.last_x is None or not np.array_equal(x, fun.last_x):
            fun(x)  # rarely needed: the accepted point is normally the last one evaluated
        rec.record(fun.ec, fun.eci, fun.q, d0=fun.last_d0, objective=float(f),
                   n_evaluations=fun.n_evaluations)

    shown = [0.0]

    def evaluate(x):
        """``fun`` that, with ``progress``, shows the evaluation count every half second (an
        L-BFGS-B iteration may take several evaluations)."""
        out = fun(x)
        if rec.bar is not None and time.perf_counter() - shown[0] > 0.5:
            shown[0] = time.perf_counter()
            rec.bar.set_postfix(d0=f"{fun.last_d0:.6g}", evaluations=fun.n_evaluations)
        return out

    t0 = time.perf_counter()
    seconds_before = 0.0 if saved is None else float(saved["seconds"])
    options = {"maxiter": iterations, "maxfun": 20 * iterations + 20}
    try:
        if saved is None:
            # Record the starting point as iteration 0.
            fun(x0)
            rec.record(fun.ec, fun.eci, fun.q, d0=fun.last_d0,
                       objective=fun.last_d0 + fun.last_penalty, n_evaluations=fun.n_evaluations)
            # An L-BFGS-B iteration costs about one evaluation (more on line-search retries).
            rec.say(estimate_message("gcvb0", time.perf_counter() - t0, iterations,
                                     "the first evaluation"))
        if not n_vars:  # only empty strings: q is fixed
            x, nit, success, message = x0, 0, True, "no free position"
        elif setulb is None:
            from scipy.optimize import Bounds, minimize

            def on_iterate(intermediate_result):
                """scipy >= 1.11 passes the result to a parameter of this name; older
                versions pass only ``x``: then ``f`` is the objective's value at ``x``
                (the same expression ``fun`` returned to scipy, so the same float)."""
                x = np.asarray(getattr(intermediate_result, "x", intermediate_result))
                f = getattr(intermediate_result, "fun", None)
                if f is None:
                    if fun.last_x is None or not np.array_equal(x.ravel(), fun.last_x):
                        fun(x)
                    f = fun.last_d0 + fun.last_penalty
                record(x, f)

            res = minimize(evaluate, x0, jac=True, method="L-BFGS-B",
                           bounds=Bounds(np.full(x0.size, LOWER_BOUND), np.full(x0.size, np.inf)),
                           callback=on_iterate,
                           options={**options, "ftol": tol, "gtol": 0.0, "maxcor": LBFGS_HISTORY})
            x, nit, success, message = res.x, int(res.nit), bool(res.success), str(res.message)
        else:
            opt = _LBFGSB(setulb, evaluate, n_vars, LOWER_BOUND, LBFGS_HISTORY, tol)
            if saved is None:
                opt.start(x0)
            else:  # L-BFGS-B's state, and the objective's arrays at its last evaluation
                opt.restore(saved)
                fun(np.array(saved["fun_x"]))
                fun.n_evaluations = int(saved["n_evaluations"])

            def save() -> None:
                book.save({**{k: opt.state[k] for k in _LBFGSB.ARRAYS}, "fun_x": fun.last_x},
                          rec.rows, **{k: opt.state[k] for k in _LBFGSB.NUMBERS},
                          n_evaluations=fun.n_evaluations, iterations_done=len(rec.rows["d0"]),
                          converged=False, sweep_seconds=0.0,
                          seconds=seconds_before + time.perf_counter() - t0)

            def after_iteration() -> None:
                if book is not None and book.due():
                    save()

            opt.run(options["maxiter"], options["maxfun"], record, after_iteration)
            if book is not None:
                save()  # the fit's end: a rerun of the same fit reuses it
            x, nit, success, message = opt.result()
    finally:
        rec.close()
    if fun.last_x is None or not np.array_equal(x, fun.last_x):
        fun(x)
    seconds = seconds_before + time.perf_counter() - t0
    converged = bool(success) and "ITERATIONS" not in str(message).upper()
    info = {"method": "gcvb0", "iterations_run": nit, "n_evaluations": int(fun.n_evaluations),
            "converged": converged, "message": message, "tol": float(tol),
            "max_evaluations": options["maxfun"], "n_free_positions": int(fun.positions.size),
            "n_tokens": int(corpus.tokens.size),
            "seconds": seconds,
            "ns_per_unit": seconds * 1e9 / max(1, fun.n_evaluations * n_states ** 2 * corpus.tokens.size),
            "unit": "N^2 T (per evaluation, recording included)", "final_d0": float(fun.last_d0),
            "iterations_resumed": 0 if saved is None else len(saved["trace_d0"]) - 1,
            **_holdout_info(holdout, held)}
    if checkpoint_dir is not None:
        info["checkpoint_every"] = checkpoint_every
        if setulb is None:
            info["checkpoints"] = "none: they need scipy >= 1.15"
    return VBResult(fun.ec.copy(), fun.q.copy(), rec.trace(), info)


# -- registry entries --------------------------------------------------------------------------
def _memory(corpus: Corpus, options: dict[str, Any], gcvb0: bool) -> int:
    from bayesfa.memory import forward_bytes

    n1 = options["states"] + 1
    n_symbols = corpus.alphabet_size + 1
    big_t = corpus.n_tokens
    need = 8 * (big_t + 1) * n1  # q
    need += 8 * 6 * n1 * n_symbols * n1  # the sums and their digamma / prior copies
    if gcvb0:
        n_vars = n_free_positions(corpus.tokens) * options["states"]
        # L-BFGS-B's workspace wa (2 m n + 5 n) and, n each, what coexists with it in _LBFGSB
        # and the objective: x0, x, g, the two bounds, the cache's x and g, the loop's copy of
        # g, the objective's copy of x, its gradient and last_x, the recorder's iterate, and
        # the int32 nbd and iwa (4 n int32, 2 n float64): 14
        need += 8 * n_vars * (2 * LBFGS_HISTORY + 5 + 14)
    need += 8 * 2 * n1 * n_symbols * n1 + forward_bytes(1, n1, corpus)  # xi~ and the forward pass
    need += 8 * 8 * options.get("iterations", 1)  # the trace
    # a fit's objects of fixed size (the recorder, the kernels' small arrays): the traced peak
    # of N = 2 on 300 strings exceeded this estimate's other terms by 11-50 KB
    # (tests/test_cvb.py::test_memory_estimate_covers_a_fits_traced_peak; issue 39)
    need += 65536
    return int(need)


class _VBMethod(DrawAutomata):
    """A registry entry of :data:`bayesfa.methods.REGISTRY` for one of the variational fits;
    its one plug-in automaton (:class:`~bayesfa.samplers.plugin.DrawAutomata`, ``map`` and
    ``mean`` alike) is ``xi~`` of Eq. 10 from the final iterate's ``E_q[C]``.

    ``validation``: its spec (:mod:`bayesfa.validation.learners.cvb`); ``variant`` != 0 (set
    on a copy by that spec): a mutant of :data:`bayesfa.learners._cvb_kernel.MUTATIONS`."""

    variant = 0

    def __init__(self, name: str, summary: str, fit, default_tol: float, tol_help: str,
                 gcvb0: bool = False):
        self.name, self.summary = name, summary
        self._fit, self._default_tol, self._tol_help, self._gcvb0 = fit, default_tol, tol_help, gcvb0
        self.validation = f"bayesfa.validation.learners.cvb:{name.upper()}"

    resumable = True  # fit(..., workdir=) keeps the fit's state there after iterations

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--states", type=positive_int, default=10,
                            help="number of states N (besides the initial state 0); default 10")
        parser.add_argument("--beta", type=positive_float, default=0.1,
                            help="Dirichlet hyperparameter beta > 0; default 0.1")
        parser.add_argument("--iterations", type=positive_int, default=200,
                            help="largest number of iterations; default 200")
        parser.add_argument("--tol", type=positive_float, default=self._default_tol,
                            help=self._tol_help)
        parser.add_argument("--holdout", type=fraction, default=0.0, metavar="FRACTION",
                            help=f"fraction of the training strings (at most {HOLDOUT_MAX}) left "
                                 f"out of the fit, chosen from the seed; each iteration records "
                                 f"their log predictive (heldout_log_pred) for diagnose; default 0")
        add_checkpoint_argument(parser)

    @staticmethod
    def _check_options(options: dict[str, Any]) -> None:
        for key in ("states", "iterations"):
            if key in options and options[key] < 1:
                raise InputError(f"--{key} must be an integer >= 1, got {options[key]}")
        for key in ("beta", "tol"):
            if key in options and not (np.isfinite(options[key]) and options[key] > 0):
                raise InputError(f"--{key} must be a positive number, got {options[key]}")

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool,
            workdir=None) -> FitResult:
        """The fit; ``workdir``: its iteration-level checkpoints (resumable)."""
        self._check_options(options)
        extra = {"variant": self.variant} if self.variant else {}
        res = self._fit(corpus, n_states=options["states"], beta=options["beta"],
                        iterations=options["iterations"], tol=options.get("tol", self._default_tol),
                        seed=seed, progress=progress, holdout=options.get("holdout", 0.0),
                        checkpoint_dir=workdir,
                        checkpoint_every=options.get("checkpoint_every", CHECKPOINT_EVERY), **extra)
        trace = {k: v[None, :] for k, v in res.trace.items()}  # one "chain"
        return FitResult({"expected_counts": res.expected_counts}, trace, res.info)

    def predict_log_prob(self, arrays: dict[str, np.ndarray], options: dict[str, Any],
                         corpus: Corpus) -> np.ndarray:
        return predict_log_prob(arrays["expected_counts"], options["beta"], corpus)

    def draw_grid(self, arrays: dict[str, np.ndarray]) -> tuple[int, int]:
        return 1, 1

    def draw_pfa(self, arrays, options, chain: int, k: int):
        """``xi~`` of Eq. 10 (:func:`~bayesfa.samplers.pfa.cgs_pfa.plugin_xi`, the code of
        :func:`predict_log_prob`) from the final ``E_q[C]``, as a PFA."""
        from bayesfa.automata import PFA

        return PFA.from_xi(plugin_xi(np.asarray(arrays["expected_counts"]), options["beta"]))

    def estimate_memory(self, corpus: Corpus, options: dict[str, Any]) -> int:
        self._check_options(options)
        return _memory(corpus, options, self._gcvb0)


CVB0 = _VBMethod(
    "cvb0", "collapsed variational Bayes, 0th order (Shibata & Yoshinaka 2013, Sect. 2.4, Eq. 12-16)",
    fit_cvb0, CVB_TOL,
    f"stop when no q_t(k) moves by more than TOL in an iteration; default {CVB_TOL:g}")
GCVB0 = _VBMethod(
    "gcvb0", "L-BFGS-B on the 0th-order objective D0 (Shibata & Yoshinaka 2013, Sect. 2.5, 4.2)",
    fit_gcvb0, GCVB0_TOL,
    f"L-BFGS-B's relative objective tolerance ftol = factr * eps; default {GCVB0_TOL:.3g} "
    "(factr = 1e7, Sect. 4.2)", gcvb0=True)
CVB2 = _VBMethod(
    "cvb2", "collapsed variational Bayes, 2nd order (Shibata & Yoshinaka 2013, appendix)",
    fit_cvb2, CVB_TOL,
    f"stop when no q_t(k) moves by more than TOL in an iteration; default {CVB_TOL:g}")
