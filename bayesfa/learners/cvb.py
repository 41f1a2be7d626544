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
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Callable, NamedTuple

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import FitResult, positive_float, positive_int
from bayesfa.samplers.pfa.cgs_pfa import plugin_log_prob, prior_matrix
from bayesfa.samplers.chains import check_numbers, free_positions

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


def initial_q(tokens: np.ndarray, n_states: int, rng: np.random.Generator) -> np.ndarray:
    """Random start ``[T+1, N+1]``: each free ``q_t`` uniform on the simplex (Dirichlet(1)),
    point masses on state 0 elsewhere."""
    q = np.zeros((tokens.size + 1, n_states + 1))
    q[:, 0] = 1.0
    free = free_positions(tokens)
    q[free, 0] = 0.0
    q[free, 1:] = rng.dirichlet(np.ones(n_states), size=free.size)
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
#: With ``progress``, an estimate of the whole fit is printed when it exceeds this many seconds.
ESTIMATE_SECONDS = 10.0


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

    def __init__(self, corpus, beta, positions, progress, name, total, on_iteration):
        self.corpus, self.beta, self.positions = corpus, beta, positions
        self.rows: dict[str, list] = {"d0": [], "log_lik": [], "n_edges": [], "neg_entropy": []}
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
        for key, value in extra.items():
            self.rows.setdefault(key, []).append(value)
        if self.bar is not None:
            self.bar.n = min(len(self.rows["d0"]), self.total) - 1  # whole again
            self.bar.update(1)
            self.partial = 0.0
            self.bar.set_postfix(d0=f"{d0:.6g}")
        if self.on_iteration is not None:
            self.on_iteration(len(self.rows["d0"]), ec, q)

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


# -- CVB0 and CVB2 -----------------------------------------------------------------------------
def _coordinate_fit(kind: str, corpus: Corpus, n_states: int, beta: float, iterations: int,
                    tol: float, seed: int | None, progress: bool,
                    on_iteration: OnIteration | None, q0: np.ndarray | None,
                    variant: int = 0) -> VBResult:
    from bayesfa.learners import _cvb_kernel as kernel

    tol = CVB_TOL if tol is None else tol
    check_arguments(corpus, n_states, beta, iterations, tol)
    tokens = corpus.tokens
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
    rec = _Recorder(corpus, beta, positions, progress, kind, iterations, on_iteration)
    try:
        _announce(kind, tokens, n_states, iterations, sums, rec)
        rec.stage("random start")
        rng = np.random.default_rng(np.random.SeedSequence(seed))
        q = initial_q(tokens, n_states, rng) if q0 is None else np.array(q0, dtype=np.float64)
    except BaseException:
        rec.close()
        raise
    converged = False
    chunking = {"chunk": 16, "estimated": False}
    t0 = time.perf_counter()
    sweep_seconds = 0.0
    try:
        for it in range(iterations):
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
    finally:
        rec.close()
    kernel.expected_counts(tokens, q, ec, eci)
    seconds = time.perf_counter() - t0
    n_it = len(rec.rows["d0"])
    info = {"method": kind, "iterations_run": n_it, "converged": converged, "tol": float(tol),
            "n_free_positions": int(positions.size), "n_tokens": int(tokens.size),
            "seconds": seconds, "sweep_seconds": sweep_seconds,
            "ns_per_unit": sweep_seconds * 1e9 / max(1, n_it * n_states ** 2 * tokens.size),
            "unit": "N^2 T", "final_d0": rec.rows["d0"][-1]}
    return VBResult(ec, q, rec.trace(), info)


def fit_cvb0(corpus: Corpus, n_states: int, beta: float, iterations: int = 200,
             tol: float | None = None, seed: int | None = None, progress: bool = False,
             on_iteration: OnIteration | None = None, q0: np.ndarray | None = None,
             variant: int = 0) -> VBResult:
    """CVB0 (Sect. 2.4, Eq. 12 with Eq. 14-16) from a random ``q`` (``seed``) or ``q0``.

    Runs up to ``iterations`` sweeps over the free positions in order; stops early once the
    largest change of a ``q_t(k)`` in a sweep is below ``tol`` (default 1e-6).
    ``on_iteration(i, E_q[C], q)`` is called after every iteration (arrays are live: copy).
    ``variant`` != 0: a deliberately wrong update (validation only,
    :data:`bayesfa.learners._cvb_kernel.MUTATIONS`).
    """
    return _coordinate_fit("cvb0", corpus, n_states, beta, iterations, tol, seed, progress,
                           on_iteration, q0, variant)


def fit_cvb2(corpus: Corpus, n_states: int, beta: float, iterations: int = 200,
             tol: float | None = None, seed: int | None = None, progress: bool = False,
             on_iteration: OnIteration | None = None, q0: np.ndarray | None = None,
             variant: int = 0) -> VBResult:
    """CVB2 (appendix): as :func:`fit_cvb0` with the second-order update."""
    return _coordinate_fit("cvb2", corpus, n_states, beta, iterations, tol, seed, progress,
                           on_iteration, q0, variant)


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


def fit_gcvb0(corpus: Corpus, n_states: int, beta: float, iterations: int = 200,
              tol: float | None = None, seed: int | None = None, progress: bool = False,
              on_iteration: OnIteration | None = None, q0: np.ndarray | None = None,
              variant: int = 0) -> VBResult:
    """GCVB0 (Sect. 2.5, 4.2): L-BFGS-B (scipy) on ``D0 + penalty`` over ``x`` from a random
    ``q`` (``seed``) or ``q0``; at most ``iterations`` L-BFGS-B iterations, converged when
    scipy's ``ftol`` test (``tol``, default ``factr = 1e7`` times machine epsilon) holds.

    The trace records, per L-BFGS-B iteration (accepted point), ``d0`` (never increases),
    ``objective`` (``D0 + penalty``), ``n_evaluations`` (cumulative, the paper's iteration)."""
    from scipy.optimize import Bounds, minimize

    tol = GCVB0_TOL if tol is None else tol
    check_arguments(corpus, n_states, beta, iterations, tol)
    fun = D0Objective(corpus, n_states, beta, variant)
    # the bar counts the starting point too (recorded as iteration 0)
    rec = _Recorder(corpus, beta, fun.positions, progress, "gcvb0", iterations + 1, on_iteration)
    try:
        _announce("gcvb0", corpus.tokens, n_states, iterations, (fun.ec, fun.eci), rec)
        rec.stage("random start")
        rng = np.random.default_rng(np.random.SeedSequence(seed))
        q_init = initial_q(corpus.tokens, n_states, rng) if q0 is None else np.asarray(q0, dtype=np.float64)
        x0 = np.maximum(fun.x_from_q(q_init), LOWER_BOUND)
        rec.stage("L-BFGS-B")
    except BaseException:
        rec.close()
        raise

    def callback(intermediate_result):
        x = intermediate_result.x
        if fun.last_x is None or not np.array_equal(x, fun.last_x):
            fun(x)  # rarely needed: the accepted point is normally the last one evaluated
        rec.record(fun.ec, fun.eci, fun.q, d0=fun.last_d0, objective=float(intermediate_result.fun),
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
    try:
        # Record the starting point as iteration 0.
        fun(x0)
        rec.record(fun.ec, fun.eci, fun.q, d0=fun.last_d0, objective=fun.last_d0 + fun.last_penalty,
                   n_evaluations=fun.n_evaluations)
        # An L-BFGS-B iteration costs about one evaluation (more on line-search retries).
        rec.say(estimate_message("gcvb0", time.perf_counter() - t0, iterations,
                                 "the first evaluation"))
        if x0.size:
            res = minimize(evaluate, x0, jac=True, method="L-BFGS-B",
                           bounds=Bounds(np.full(x0.size, LOWER_BOUND), np.full(x0.size, np.inf)),
                           callback=callback,
                           options={"maxiter": iterations, "maxfun": 20 * iterations + 20,
                                    "ftol": tol, "gtol": 0.0, "maxcor": LBFGS_HISTORY})
        else:  # only empty strings: q is fixed
            from scipy.optimize import OptimizeResult

            res = OptimizeResult(x=x0, success=True, nit=0, message="no free position")
    finally:
        rec.close()
    if fun.last_x is None or not np.array_equal(res.x, fun.last_x):
        fun(res.x)
    seconds = time.perf_counter() - t0
    converged = bool(res.success) and "ITERATIONS" not in str(res.message).upper()
    info = {"method": "gcvb0", "iterations_run": int(res.nit), "n_evaluations": int(fun.n_evaluations),
            "converged": converged, "message": str(res.message), "tol": float(tol),
            "n_free_positions": int(fun.positions.size), "n_tokens": int(corpus.tokens.size),
            "seconds": seconds,
            "ns_per_unit": seconds * 1e9 / max(1, fun.n_evaluations * n_states ** 2 * corpus.tokens.size),
            "unit": "N^2 T (per evaluation, recording included)", "final_d0": float(fun.last_d0)}
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
        n_vars = free_positions(corpus.tokens).size * options["states"]
        # x0, x, gradient, scipy's copies, the bounds, L-BFGS-B's workspace (2 m n + 5 n)
        need += 8 * n_vars * (2 * LBFGS_HISTORY + 5 + 8)
    need += 8 * 2 * n1 * n_symbols * n1 + forward_bytes(1, n1, corpus)  # xi~ and the forward pass
    need += 8 * 8 * options.get("iterations", 1)  # the trace
    return int(need)


class _VBMethod:
    """A registry entry of :data:`bayesfa.methods.REGISTRY` for one of the variational fits.

    ``validation``: its spec (:mod:`bayesfa.validation.learners.cvb`); ``variant`` != 0 (set
    on a copy by that spec): a mutant of :data:`bayesfa.learners._cvb_kernel.MUTATIONS`."""

    variant = 0

    def __init__(self, name: str, summary: str, fit, default_tol: float, tol_help: str,
                 gcvb0: bool = False):
        self.name, self.summary = name, summary
        self._fit, self._default_tol, self._tol_help, self._gcvb0 = fit, default_tol, tol_help, gcvb0
        self.validation = f"bayesfa.validation.learners.cvb:{name.upper()}"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--states", type=positive_int, default=10,
                            help="number of states N (besides the initial state 0); default 10")
        parser.add_argument("--beta", type=positive_float, default=0.1,
                            help="Dirichlet hyperparameter beta > 0; default 0.1")
        parser.add_argument("--iterations", type=positive_int, default=200,
                            help="largest number of iterations; default 200")
        parser.add_argument("--tol", type=positive_float, default=self._default_tol,
                            help=self._tol_help)

    @staticmethod
    def _check_options(options: dict[str, Any]) -> None:
        for key in ("states", "iterations"):
            if key in options and options[key] < 1:
                raise InputError(f"--{key} must be an integer >= 1, got {options[key]}")
        for key in ("beta", "tol"):
            if key in options and not (np.isfinite(options[key]) and options[key] > 0):
                raise InputError(f"--{key} must be a positive number, got {options[key]}")

    def fit(self, corpus: Corpus, options: dict[str, Any], seed: int, progress: bool) -> FitResult:
        self._check_options(options)
        res = self._fit(corpus, n_states=options["states"], beta=options["beta"],
                        iterations=options["iterations"], tol=options.get("tol", self._default_tol),
                        seed=seed, progress=progress,
                        **({"variant": self.variant} if self.variant else {}))
        trace = {k: v[None, :] for k, v in res.trace.items()}  # one "chain"
        return FitResult({"expected_counts": res.expected_counts}, trace, res.info)

    def predict_log_prob(self, arrays: dict[str, np.ndarray], options: dict[str, Any],
                         corpus: Corpus) -> np.ndarray:
        return predict_log_prob(arrays["expected_counts"], options["beta"], corpus)

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
