"""Validation spec of the smoothed PDIA (``pdia-smoothed``) for
:mod:`bayesfa.validation.harness` (``bayesfa validate pdia-smoothed [:mutant-X]``).

Reference (exact, no Monte Carlo): :func:`exact_predictive`, ``Pr(b | x) = Z(x b) / Z(x)``
where ``Z`` sums, over every way the PDIA's Chinese restaurant franchise can seat the
transitions the data visit (depth-first over the data, as
:func:`bayesfa.validation.pdia.pdfa.pdia_log_marginals`, whose :class:`_Franchise` it
uses), the product of the seating probabilities and the *emission marginal* of the
branch's counts ``c_qs`` with ``pi_q ~ Dir(beta pi0)`` and ``pi0 ~ Dir(beta0 / S)`` both
integrated out (:func:`log_emission_marginal`, by Antoniak's table-count expansion
``Gamma(a + n) / Gamma(a) = sum_t |s(n, t)| a^t``: independent plain Python, not the sampler's
Gibbs step on ``pi0``). Truncation at ``k_max`` states as for the PDIA: a cut branch's weight
is bounded by its seating probability times the emission marginal of its prefix (a longer
emission sequence on the same path is no more probable), and ``k_max`` grows until every
``Pr(b | x)`` is pinned down to ``TRUNCATION_RESOLUTION`` (relative).

Kernel check: Geweke's joint test (:func:`geweke`) with ``beta`` and ``beta0`` *sampled*
(drawn from their Gamma(1, 1) priors on the marginal-conditional side), so that the ``pi0``
Gibbs step and both hyperparameter moves are checked; the transition hyperparameters are
fixed as in the PDIA's test (:func:`bayesfa.validation.pdia.pdfa.geweke`, whose
simulator this one extends).

Kernel checks also: the exact single-move checks of the transition moves
(:mod:`bayesfa.validation.pdia.moves`, ``move-entry``, ``move-table``) with emissions
``Dir(beta pi0)`` at a fixed non-uniform ``pi0``, and of the MH steps on ``beta`` and
``beta0`` (``move-hyper``, :func:`hyper_step_check`: one-step invariance of each
conditional from exact draws).

Mutants: the transition kernel's (``KERNEL_MUTANTS``, shared with ``pdia``),
``counts-not-tables`` (``pi0`` drawn from the emission counts instead of the table
counts: the over-confident back-off of a naive implementation), ``uniform-predictive`` (the
back-off dropped from the predictive: test emissions predicted with ``beta / S``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.validation.pdia.franchise import Franchise as _Franchise, walk_seatings
from bayesfa.validation.pdia.pdfa import (ALPHA, TRUNCATION_RESOLUTION, Simulator, _symbols,
                                            geweke_table)

#: mutants of the transition kernel shared with the PDIA (``_pdfa_kernel`` variants)
KERNEL_MUTANTS = {"no-ambiguity-rule": 5, "no-size-ratio": 6, "seat-proposal-no-discount": 7,
                  "dish-proposal-no-discount": 8, "no-unseat-term": 9}

#: fixed hyperparameters on toys, distinct where the model has two of a kind (``d != d0``,
#: ``alpha != alpha0``, ``beta != beta0``; issue 39)
FIXED = {"alpha": 1.0, "beta": 1.0, "alpha0": 0.6, "d": 0.3, "d0": 0.5, "beta0": 1.5}


def _stirling_first(n_max: int) -> list[list[int]]:
    """Unsigned Stirling numbers of the first kind ``|s(n, t)|``, ``n, t <= n_max``."""
    s = [[0] * (n_max + 1) for _ in range(n_max + 1)]
    s[0][0] = 1
    for n in range(n_max):
        for t in range(1, n + 2):
            s[n + 1][t] = n * s[n][t] + s[n][t - 1]
    return s


def log_emission_marginal(counts: list[list[int]], beta: float, beta0: float) -> float:
    """``log p(emissions | path)`` for the rows ``counts[q][s]`` with ``pi_q ~ Dir(beta pi0)``
    and ``pi0 ~ Dir(beta0 / S)`` integrated out: ``sum_t prod_q [Gamma(beta) / Gamma(beta +
    C_q) prod_s |s(c_qs, t_qs)| beta^t_qs] Gamma(beta0) / Gamma(beta0 + T) prod_s
    Gamma(beta0 / S + t_s) / Gamma(beta0 / S)`` over the table counts ``t`` (``t_s = sum_q
    t_qs``, ``T = sum_s t_s``), summed by convolution over ``q`` per symbol, then over
    symbols."""
    n_sym = len(counts[0]) if counts else 1
    n_max = max([c for row in counts for c in row] + [0])
    st = _stirling_first(n_max)
    out = 0.0
    for row in counts:
        tot = sum(row)
        if tot:
            out += math.lgamma(beta) - math.lgamma(beta + tot)
    b = beta0 / n_sym
    total = [1.0]  # distribution of T weighted by prod_s Gamma(b + t_s) / Gamma(b)
    for s in range(n_sym):
        poly = [1.0]  # sum over q of t_qs: coefficient of t_s
        for row in counts:
            c = row[s]
            if c == 0:
                continue
            term = [0.0] + [st[c][t] * beta ** t for t in range(1, c + 1)]
            poly = np.convolve(poly, term).tolist()
        weighted = [p * math.exp(math.lgamma(b + t) - math.lgamma(b)) for t, p in enumerate(poly)]
        total = np.convolve(total, weighted).tolist()
    z = sum(w * math.exp(math.lgamma(beta0) - math.lgamma(beta0 + t)) for t, w in enumerate(total))
    return out + math.log(z)


def _walk(tokens, pos, q, weight, crf, delta, cnt, k_max, leaf, dropped, emis):
    """Depth-first sum over the transition seatings
    (:func:`bayesfa.validation.pdia.pdfa.walk_seatings`); ``cnt[q]`` the emission counts
    of the branch (restored on return), which weigh nothing on the way; ``leaf(weight)`` at
    the end; ``emis(cnt)`` the emission marginal bounding a cut branch."""
    n_sym = len(cnt[0])

    def emit(q, s, w):
        cnt.setdefault(q, [0] * n_sym)[s] += 1
        return w

    def unemit(touched):
        for q_, s_ in touched:
            cnt[q_][s_] -= 1

    def on_cut(w, cut):
        if cut:
            dropped[0] += w * cut * math.exp(emis(cnt))

    walk_seatings(tokens, pos, q, weight, crf, delta, k_max, leaf, emit, unemit, on_cut)


def log_marginals(train: Corpus, tests: Corpus, hyp: dict[str, float], k_max: int):
    """``(Z(x), Z(x b) for each b, dropped mass of Z(x), of each Z(x b))``."""
    n_letters = max(train.alphabet_size, tests.alphabet_size)
    x = _symbols(train, n_letters)
    test_tokens = [_symbols(tests.subset([i]), n_letters) for i in range(tests.n_strings)]
    crf = _Franchise(hyp["alpha"], hyp["d"], hyp["alpha0"], hyp["d0"])
    cnt = {0: [0] * (n_letters + 1)}
    delta: dict = {}

    memo: dict = {}

    def emis(c):
        # invariant to the order of the rows: memoised on the sorted rows
        key = tuple(sorted(tuple(row) for row in c.values() if any(row)))
        if key not in memo:
            memo[key] = log_emission_marginal([list(r) for r in key] or [[0] * len(c[0])],
                                              hyp["beta"], hyp["beta0"])
        return memo[key]

    z, zb = [0.0], np.zeros(len(test_tokens))
    dropped_x, dropped_b = [0.0], np.zeros(len(test_tokens))

    def leaf_x(w):
        z[0] += w * math.exp(emis(cnt))
        for i, b in enumerate(test_tokens):
            acc, drop = [0.0], [0.0]
            _walk(b, 0, 0, w, crf, delta, cnt, k_max,
                  lambda wb: acc.__setitem__(0, acc[0] + wb * math.exp(emis(cnt))), drop, emis)
            zb[i] += acc[0]
            dropped_b[i] += drop[0]

    _walk(x, 0, 0, 1.0, crf, delta, cnt, k_max, leaf_x, dropped_x, emis)
    return z[0], zb, dropped_x[0], dropped_b + dropped_x[0]


def exact_predictive(train: Corpus, test: Corpus, hyp: dict[str, float], k_start: int = 3,
                     k_limit: int = 12, resolution: float = TRUNCATION_RESOLUTION):
    """``(log Pr(b | train) [n_strings], info)`` under the smoothed PDIA, truncated at the
    smallest ``k_max >= k_start`` pinning every string down to ``resolution`` (relative)."""
    width = math.inf
    for k_max in range(k_start, k_limit + 1):
        z, zb, dx, db = log_marginals(train, test, hyp, k_max)
        est = zb / z
        width = float(np.max(((zb + db) / z - zb / (z + dx)) / est))
        if width < resolution:
            return np.log(est), {"k_max": k_max, "relative_interval": width}
    raise RuntimeError(f"truncation at {k_limit} states still leaves a relative error of {width}")


# -- Geweke -------------------------------------------------------------------------------------

class SmoothedSimulator(Simulator):
    """:class:`bayesfa.validation.pdia.pdfa.Simulator` for the smoothed PDIA: each
    configuration carries ``pi0`` (and ``beta, beta0`` when sampled, drawn from Gamma(1, 1));
    emissions come from ``Dir(beta pi0)``; a sweep is the PDIA's plus the emission moves."""

    def __init__(self, hyp: dict[str, float], sample_emission_hyper: bool, variant: int = 0,
                 **kw):
        super().__init__(1, hyp, variant=0, **kw)
        from bayesfa.samplers.pdia.pdia_smoothed import Emission

        self.hyp_e = dict(hyp)
        self.sample = sample_emission_hyper
        self.emission = Emission(variant)
        self.stats_e = np.zeros(self.emission.off + self.emission.n_stats)

    def _fresh(self, rng):
        st = super()._fresh(rng)
        hyp = self.hyp.copy()
        opts = {"beta0": None if self.sample else self.hyp_e["beta0"], "pi0_moves": 1,
                "hyper_step": 0.5}
        fixed = np.ones(5, dtype=np.int64)
        fixed[1] = 0 if self.sample else 1
        if self.sample:
            hyp[1] = rng.gamma(1.0)
        self.emission.prepare(st, hyp, fixed, opts, rng)
        if self.sample:
            st.ehyp[0] = rng.gamma(1.0)
        from bayesfa.samplers.pdia._pdfa_kernel import log_dirichlet_variate
        from bayesfa.samplers.pdia._smoothed_emission_kernel import fill_lg_base

        s = st.pi0.size
        log_dirichlet_variate(np.full(s, st.ehyp[0] / s), rng, st.lpi0)
        st.pi0[:] = np.exp(st.lpi0)
        st.lg_lim[:] = self.max_tokens  # the data change: any symbol may fill a row
        fill_lg_base(st.lg, hyp[1], st.pi0, st.lg_lim)
        st.hyp = hyp
        return st

    def _emission_weights(self, st, row):
        a = st.lg[0, :-1, -1]  # beta pi0_s
        return (row + a) / (row.sum() + st.lg[0, -1, -1])

    def _after_sweep(self, st, rng):
        self.emission.sweep(st, st.hyp, rng, self.stats_e)

    def statistics(self, st, sym) -> dict[str, float]:
        from bayesfa.samplers.pdia._smoothed_emission_kernel import log_dir_base

        out = super().statistics(st, sym)
        out["log_joint"] += log_dir_base(st.lpi0, st.ehyp[0])
        out["pi0_end"] = float(st.pi0[0])
        out["pi0_a"] = float(st.pi0[1])
        if self.sample:
            out["log_beta"] = math.log(st.hyp[1])
            out["log_beta0"] = math.log(st.ehyp[0])
        return out


def geweke(variant: int = 0, *, sample_emission_hyper: bool = True, n_strings: int = 3,
           cap: int = 5, n_forward: int = 10_000, n_chains: int = 4, n_iterations: int = 1_500,
           seed: int = 0, alpha: float = ALPHA):
    """Geweke's joint test (module docstring)."""
    rng = np.random.default_rng(seed)
    hyp = dict(FIXED)
    sim = SmoothedSimulator(hyp, sample_emission_hyper, variant, n_letters=2, n_states=2,
                            n_strings=n_strings, cap=cap)
    what = ("beta, beta0 ~ Gamma(1, 1) sampled" if sample_emission_hyper else
            f"beta={hyp['beta']}, beta0={hyp['beta0']}")
    return geweke_table(sim, rng, n_forward, n_chains, n_iterations, alpha,
                        f"pdia-smoothed{'' if variant == 0 else f' variant {variant}'}: "
                        f"Geweke joint test, {n_strings} strings of <= {cap} letters over 2 "
                        f"letters, {what}, transitions alpha={hyp['alpha']:g} "
                        f"alpha0={hyp['alpha0']:g} d={hyp['d']:g} d0={hyp['d0']:g}")


# -- the emission hyperparameters' steps, one at a time ---------------------------------------

#: the fixed emission state of :func:`hyper_step_check`: three symbols, a skewed ``pi0`` and
#: counts with zero, one and several of a symbol in a row
HYPER_PI0 = (0.7, 0.25, 0.05)
HYPER_COUNTS = ((3, 1, 0), (0, 2, 1), (5, 0, 0))
#: independent exact starts and MH steps from each; the step scale of the random walk
HYPER_STARTS, HYPER_STEPS, HYPER_STEP = 20_000, 3, 1.0


def log_hyper_conditional(name: str, x: np.ndarray, pi0=HYPER_PI0,
                          counts=HYPER_COUNTS) -> np.ndarray:
    """``log p(x | rest)`` up to a constant, written from the densities with scipy (not the
    kernel's code): the Gamma(1, 1) prior times ``prod_q DirMult(c_q | beta pi0)`` for
    ``beta``, times ``Dir(pi0 | beta0 / S)`` for ``beta0``."""
    from scipy import special
    from scipy.stats import dirichlet

    pi0, x = np.asarray(pi0, dtype=np.float64), np.asarray(x, dtype=np.float64)
    n_sym = pi0.size
    if name == "beta0":
        return -x + np.array([dirichlet.logpdf(pi0, np.full(n_sym, b / n_sym)) for b in x])
    out = -x.copy()
    a = np.outer(x, pi0)
    for row in np.asarray(counts, dtype=np.float64):
        out += (special.gammaln(x) - special.gammaln(x + row.sum())
                + np.sum(special.gammaln(a + row) - special.gammaln(a), axis=1))
    return out


def hyper_step_check(variant: int = 0, *, seed: int = 0, alpha: float = ALPHA,
                     label: str = "pdia-smoothed", n_starts: int = HYPER_STARTS):
    """The check ``move-hyper``: each MH step of the emission kernel on ``beta`` and on
    ``beta0`` (the other moves off) leaves its conditional invariant. ``n_starts``
    independent exact draws of the conditional (:func:`log_hyper_conditional`, inverse CDF
    on a grid of 40,001 points of ``log x`` from 1e-4 to 60; a density still above 1e-6 of
    its peak at either end is an error, not a check), ``HYPER_STEPS`` steps from each, then a Kolmogorov-Smirnov
    test of the ends against the conditional (``alpha / 2`` per hyperparameter). Catches a
    wrong target, a dropped Jacobian or an inverted acceptance, which the Geweke test at
    seed 0 did not (issue 39)."""
    import time

    from scipy.stats import kstest

    from bayesfa.samplers.pdia._pdfa_kernel import N_STATS
    from bayesfa.samplers.pdia._smoothed_emission_kernel import (N_STATS as N_EMISSION,
                                                                 emission_moves)
    from bayesfa.validation.checks import Check, log_p_margin

    t0 = time.perf_counter()
    rng = np.random.default_rng([seed, 39, 2])
    pi0 = np.array(HYPER_PI0)
    cnt = np.array(HYPER_COUNTS, dtype=np.int32)
    ctot = cnt.sum(axis=1).astype(np.int32)
    lim = np.append(cnt.sum(axis=0), ctot.sum()).astype(np.int64)
    lg = np.zeros((1, pi0.size + 1, int(ctot.sum()) + 3))
    u = np.linspace(math.log(1e-4), math.log(60.0), 40_001)
    rows = []
    for k, name in enumerate(("beta", "beta0")):
        log_density = log_hyper_conditional(name, np.exp(u)) + u  # the density of log x
        dens = np.exp(log_density - log_density.max())
        if not (dens[0] < 1e-6 and dens[-1] < 1e-6):  # the grid must hold the density
            raise RuntimeError(f"{name}'s conditional is above 1e-6 of its peak at the grid's "
                               f"ends ({dens[0]:.1e}, {dens[-1]:.1e})")
        cdf = np.concatenate([[0.0], np.cumsum((dens[1:] + dens[:-1]) / 2 * np.diff(u))])
        cdf /= cdf[-1]
        starts = np.exp(np.interp(rng.random(n_starts), cdf, u))
        stats = np.zeros(N_STATS + N_EMISSION)
        ends = np.empty_like(starts)
        for i, x in enumerate(starts):
            hyp = np.array([1.0, x if name == "beta" else 1.3, 1.0, 0.5, 0.5])
            ehyp = np.array([x if name == "beta0" else 1.1])
            for _ in range(HYPER_STEPS):
                emission_moves(cnt, ctot, cnt.shape[0], hyp, ehyp, pi0.copy(), np.log(pi0), lg,
                               lim, 0, name == "beta", name == "beta0", HYPER_STEP, variant,
                               rng, stats, N_STATS)
            ends[i] = hyp[1] if name == "beta" else ehyp[0]
        p = float(kstest(np.log(ends), lambda v: np.interp(v, u, cdf)).pvalue)
        rows.append({"hyperparameter": name, "starts": n_starts, "steps": HYPER_STEPS,
                     "accepted": float(stats[N_STATS + 2 + 2 * k] / (HYPER_STEPS * n_starts)),
                     "ks_p": p, "p_value": p, "threshold": alpha / 2, "pass": p > alpha / 2})
    return Check(
        name="move-hyper", passed=all(r["pass"] for r in rows),
        description=(f"{label}: the MH steps on beta and beta0, {HYPER_STEPS} from each of "
                     f"{n_starts} i.i.d. draws of their exact conditional (scipy densities, "
                     f"inverse CDF on a grid) at a fixed pi0 and counts, Kolmogorov-Smirnov "
                     f"against that conditional"),
        alpha=alpha, columns=["hyperparameter", "starts", "steps", "accepted", "ks_p", "pass"],
        rows=rows, summary={"min_ks_p": min(r["ks_p"] for r in rows),
                            "margin": max(log_p_margin(r["ks_p"], alpha / 2) for r in rows),
                            "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate <= {alpha:g}: {alpha / 2:g} per hyperparameter"])


# -- the spec -----------------------------------------------------------------------------------

class SmoothedSpec:
    """``bayesfa validate pdia-smoothed``: the predictive against :func:`exact_predictive`
    (hyperparameters fixed), Geweke with ``beta, beta0`` sampled, two mutants."""

    validation_budget: dict[str, Any] = {"iterations": 10_100, "burn_in": 100, "period": 2,
                                         "chains": 4, "predict_draws": 4, **FIXED}

    def __init__(self, variant: int = 0, variant_name: str = "", kernel_variant: int = 0):
        self.variant, self.variant_name = variant, variant_name
        self.kernel_variant = kernel_variant

    def check_names(self):
        return ["predictive", "move-entry", "move-table", "move-hyper", "geweke"]

    def mutant_names(self):
        from bayesfa.samplers.pdia.pdia_smoothed import EMISSION_MUTANTS

        return list(EMISSION_MUTANTS) + list(KERNEL_MUTANTS)

    def mutant(self, variant: str):
        from bayesfa.samplers.pdia.pdia_smoothed import EMISSION_MUTANTS, _PDIASmoothed
        from bayesfa.validation.harness import carry_spec

        method = _PDIASmoothed()
        if variant in KERNEL_MUTANTS:
            code = KERNEL_MUTANTS[variant]
            spec = type(self)(0, variant, kernel_variant=code)
            method.variant = code
        else:
            code = EMISSION_MUTANTS[variant]
            spec = type(self)(code, variant)
            method.emission_variant = code
        return carry_spec(method, spec, f"pdia-smoothed:mutant-{variant}")

    def recompute_trace(self, arrays, trace, options, train):
        """The ``recorded`` check (:func:`bayesfa.validation.pdia.pdfa.pdia_recompute_trace`,
        with the emissions backing off to the recorded ``pi0``)."""
        from bayesfa.validation.pdia.pdfa import pdia_recompute_trace

        return pdia_recompute_trace(arrays, trace, options, train)

    def exact_reference(self, toy, test, options):
        hyp = {k: options[k] for k in FIXED}
        ref, info = exact_predictive(toy.train, test, hyp)
        what = ", ".join(f"{k}={v}" for k, v in hyp.items())
        return {"reference": ref, "exact": ref,
                "kind": f"exact smoothed-PDIA posterior predictive ({what}) by enumeration of "
                        f"the CRF seatings with the emission marginal (pi_q, pi0 integrated "
                        f"out), truncated at {info['k_max']} states (relative error "
                        f"< {info['relative_interval']:.1e})"}

    def per_sample_log_prob(self, arrays, options, test):
        from bayesfa.samplers.pdia.pdfa import CRF, per_sample_log_prob
        from bayesfa.samplers.pdia.pdia_smoothed import Emission

        return per_sample_log_prob(CRF, arrays, options, test, emission=Emission(self.variant),
                                   variant=self.kernel_variant)

    def kernel_checks(self, toy, *, seed: int = 0, alpha: float = ALPHA):
        """The exact single-move checks of the transition moves at a fixed non-uniform
        ``pi0`` (:func:`bayesfa.validation.pdia.moves.pdia_move_checks`, the kernel's 3-D
        ``lg``), the emission hyperparameters' steps (:func:`hyper_step_check`), then
        Geweke."""
        from bayesfa.validation.pdia.moves import pdia_move_checks

        label = ("pdia-smoothed" if not self.variant_name
                 else f"pdia-smoothed:mutant-{self.variant_name}")
        return (pdia_move_checks(self.kernel_variant, seed=seed, alpha=alpha, label=label,
                                 smoothed=True)
                + [hyper_step_check(self.variant, seed=seed, alpha=alpha, label=label),
                   geweke(self.variant, seed=seed, alpha=alpha)])


PDIA_SMOOTHED = SmoothedSpec()
