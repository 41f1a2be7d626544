"""Validation specs of CGS-SG, CGS-HMM and CGS-HMM(*) for :mod:`bayesfa.validation.harness`.

``bayesfa validate cgs-sg | cgs-hmm | cgs-hmm-star`` runs, on a toy of
:mod:`bayesfa.validation.toys`:

``predictive``
    the method's posterior predictive (Eq. 6 with its plug-in ``xi~``) of the test strings
    against the exact limit of that estimator under the method's own model,
    ``sum Pr(z[, G] | alpha) Pr(b | xi~(z, G))``, by enumeration of every train path ``z``
    (grouped by count vector) and, for CGS-SG, with ``G`` summed out exactly given the
    out-degrees. The references (:mod:`bayesfa.validation.pfa.variants_reference`) share no
    code with the estimators: their plug-ins are written again from Eq. 20, the CGS-HMM(*)
    formula and Sect. 3, with their own forward pass. HMM paths are weighted by the collapsed
    HMM joint (:func:`hmm_log_joint`, the Dirichlet-multinomial form of
    :func:`bayesfa.models.hmm.exact_log_marginal`), SG paths and graphs by Eq. 18. The HMM
    setting has ``alpha != beta`` (0.25 and 1.0), so that a swap of the two is visible.
``geweke``
    Geweke's (2004) joint distribution test of the production kernel on ``Pr(alpha, z[, G] |
    lengths)``: the successive-conditional chain alternates kernel sweeps with a Gibbs sweep
    of the letters under the same model (:func:`hmm_letter_sweep`, :func:`sg_letter_sweep`);
    the marginal-conditional side is exact enumeration of every ``(alpha, z)`` (for CGS-SG
    with ``G`` summed out exactly by a convolution over the out-degrees, :func:`sg_graph_sum`,
    which also gives the exact law of ``|G|``). Test functions: those of
    :func:`bayesfa.validation.pfa.kernel_tests._statistics` plus the model's own log joint (and
    ``|G|`` for CGS-SG); two-sided z-tests with ArviZ-ESS standard errors, Bonferroni-split.
``site-exact`` (both), ``graph-move`` (CGS-SG)
    the exact one-step transition of the single-site update of ``z_t`` against the exact
    posterior (row = exact conditional, detailed balance, stationarity; no Monte Carlo), and
    the stationarity of the update of ``G`` (chi-square on the out-degrees from exact draws):
    :mod:`bayesfa.validation.pfa.variants_kernel`.

Every statistical check has false-alarm rate ``alpha`` (default 1e-3). Mutants
(``NAME:mutant-VARIANT``, :data:`MUTANTS`) run deliberately wrong kernels or plug-ins through
the same checks and must fail: compile-time-constant ``variant`` switches of the kernels'
single source (:mod:`bayesfa.samplers.pfa._cgs_hmm_kernel`, ``_cgs_sg_kernel``) and
``plugin`` switches of :func:`bayesfa.samplers.pfa.cgs_hmm.hmm_xi` / ``star_log_prob``.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from numba import njit
from scipy import stats as sps
from scipy.special import gammaln, logsumexp

from bayesfa.corpus import Corpus
from bayesfa.validation.pfa.kernel_tests import gated_letter_sweep
from bayesfa.validation.pfa.reference import all_paths, batch_counts
from bayesfa.validation.pfa.variants_reference import (  # noqa: F401 (re-exported)
    _classes, _dir_mult, edge_mask, hmm_log_joint, sg_log_joint)

ALPHA = 1e-3
_BUDGET = {"iterations": 40_200, "burn_in": 200, "period": 2, "chains": 4, "jobs": 1}
GEWEKE_LENGTHS = (0, 1, 2, 2, 3)


# -- the collapsed joints, vectorised over count arrays [..., N+1, A, N+1] ------------------

def sg_graph_sum(c: np.ndarray, beta: float) -> tuple[float, np.ndarray]:
    """``(log sum_{G >= G_min} Pr(G, alpha, z), Pr(|G| = k | alpha, z) for k = 0..E)`` for one
    count array ``C`` ``[N+1, A, N+1]``: Eq. 18 depends on ``G`` through the out-degrees
    ``v_i`` only, so the sum is a product over states of polynomials in the degree
    (``binom(F_i, v_i - m_i)`` graphs per degree, ``m_i`` edges of ``G_min``, ``F_i`` others),
    convolved, then weighted by ``Pr(v = k) / binom(E, k)``."""
    c = np.asarray(c, dtype=np.float64)
    n_states, n_symbols = c.shape[0] - 1, c.shape[1]
    mask = edge_mask(n_states, n_symbols)
    per_state = int(mask[0].sum())
    n_full = per_state * (n_states + 1)
    log_poly = np.array([0.0])  # log coefficients, degree 0
    for i in range(n_states + 1):
        m = int((c[i] > 0).sum())
        f = per_state - m
        ci = c[i].sum()
        v = np.arange(m, per_state + 1)
        lb = gammaln(f + 1.0) - gammaln(v - m + 1.0) - gammaln(f - (v - m) + 1.0)
        safe = np.maximum(v, 1) * beta
        lf = np.where(v > 0, gammaln(safe) - gammaln(ci + safe), 0.0)
        terms = np.full(per_state + 1, -np.inf)
        terms[m:] = lb + lf
        # log-space convolution
        out = np.full(log_poly.size + per_state, -np.inf)
        for d, lt in enumerate(terms):
            if np.isfinite(lt):
                out[d:d + log_poly.size] = np.logaddexp(out[d:d + log_poly.size], log_poly + lt)
        log_poly = out
    k = np.arange(n_full + 1)
    log_binom = gammaln(n_full + 1.0) - gammaln(k + 1.0) - gammaln(n_full - k + 1.0)
    log_w = log_poly - log_binom - math.log(n_full + 1.0)
    cells = float(np.where(c > 0, gammaln(c + beta) - gammaln(beta), 0.0).sum())
    total = logsumexp(log_w)
    return cells + float(total), np.exp(log_w - total)


# -- posterior over the train paths, grouped by count vector --------------------------------

def hmm_collapsed_predictive(counts: np.ndarray, alpha: float, beta: float, test: Corpus) -> np.ndarray:
    """``log Pr(b | alpha, z)`` ``[S, n_strings]`` under the collapsed HMM (Polya urn, ``eta``
    and ``theta`` integrated out given the counts ``C`` ``[S, N+1, A, N+1]`` of ``z``):
    ``sum_{z_b} Pr(alpha b, z z_b) / Pr(alpha, z)``, every path ``z_b`` of ``b`` enumerated.
    Averaged over ``z ~ Pr(z | alpha)`` it is the exact posterior predictive ``Pr(b | alpha)``
    (Rao-Blackwellised, unlike the plug-in of Eq. 20)."""
    counts = np.asarray(counts, dtype=np.float64)
    n_states, n_symbols = counts.shape[-3] - 1, counts.shape[-2]
    base = hmm_log_joint(counts, alpha, beta)
    out = np.empty((counts.shape[0], test.n_strings))
    for s in range(test.n_strings):
        b = Corpus.from_strings([test.string(s)], n_symbols - 1)
        paths = all_paths(b.tokens, n_states)
        cb = batch_counts(b.tokens, paths, n_states, n_symbols).astype(np.float64)  # [P, ...]
        terms = np.stack([hmm_log_joint(counts + c1, alpha, beta) for c1 in cb])  # [P, S]
        out[:, s] = logsumexp(terms, axis=0) - base
    return out


# -- Geweke: letter sweeps under each model -----------------------------------------------

@njit(cache=True)
def hmm_letter_sweep(tokens, z, n_states, n_symbols, rng, alpha):
    """Gibbs sweep of the letters under the collapsed HMM: ``a_t | rest`` proportional to
    ``C^{-t}_{z_t a} + alpha`` over the non-end letters (moves and totals do not change)."""
    emit = np.zeros((n_states + 1, n_symbols, 1))
    for t in range(tokens.shape[0]):
        emit[z[t], tokens[t], 0] += 1
    gated_letter_sweep(tokens, z, emit, np.ones(emit.shape, dtype=np.bool_), rng, alpha, False)


@njit(cache=True)
def sg_letter_sweep(tokens, z, c, gr, rng, beta):
    """Gibbs sweep of the letters under Eq. 18 at fixed ``z`` and ``G``: ``a_t | rest``
    proportional to ``[(z_t, a, z_{t+1}) in G] (C^{-t}_{z_t a z_{t+1}} + beta)``. ``c`` int32
    ``[N+1, A, N+1]`` is kept equal to the counts (the caller refreshes the rest)."""
    gated_letter_sweep(tokens, z, c, gr, rng, beta, True)


def _z_test_rows(exact: dict[str, tuple[float, float]], chains: dict[str, np.ndarray], alpha: float):
    from bayesfa.validation.diagnostics import ess_mean

    crit = float(sps.norm.isf(alpha / (2 * len(exact))))
    rows = []
    for name, (mean, sd) in exact.items():
        x = chains[name]
        est = float(x.mean())
        if sd <= 1e-12 * max(1.0, abs(mean)):
            se, zscore = 0.0, (0.0 if abs(est - mean) < 1e-9 * max(1.0, abs(mean)) else math.inf)
        else:
            ess = ess_mean(x)
            se = float(np.std(x, ddof=1) / math.sqrt(ess)) if ess > 0 else math.nan
            zscore = (est - mean) / se if se > 0 else (0.0 if abs(est - mean) < 1e-9 else math.inf)
        rows.append({"statistic": name, "exact": mean, "successive": est, "mcse": se, "z": zscore,
                     "pass": bool(abs(zscore) <= crit)})
    return rows, crit


def _configs(lengths, n_states: int, beta: float):
    """Every ``(alpha, z)`` with string lengths ``lengths`` over 2 letters:
    ``(tokens [P, T], z [P, T+1], counts [P, N+1, A, N+1])``."""
    from bayesfa.validation.pfa.kernel_tests import geweke_exact

    ta, zz, _ = geweke_exact(lengths, n_states, beta)
    n_symbols = 3
    k = (n_states + 1) * n_symbols * (n_states + 1)
    cells = (zz[:, :-1] * n_symbols + ta) * (n_states + 1) + zz[:, 1:]
    n = ta.shape[0]
    c = np.bincount((cells + k * np.arange(n)[:, None]).ravel(), minlength=n * k)
    return ta, zz, c.reshape(n, n_states + 1, n_symbols, n_states + 1)


def _moments(values: np.ndarray, prob: np.ndarray) -> tuple[float, float]:
    mean = float(prob @ values)
    return mean, float(np.sqrt(max(prob @ (values - mean) ** 2, 0.0)))


def geweke_hmm(variant: int = 0, *, lengths=GEWEKE_LENGTHS, n_states: int = 2, alpha_h: float = 0.5,
               beta: float = 0.5, n_chains: int = 4, n_iterations: int = 5_000, seed: int = 0,
               alpha: float = ALPHA, label: str = "cgs-hmm kernel"):
    """Geweke's joint test of the CGS-HMM kernel (``variant`` 0) or a mutant (module docstring);
    ``alpha_h``, ``beta``: the model's hyperparameters; ``alpha``: the false-alarm rate."""
    from bayesfa.samplers.pfa import _cgs_hmm_kernel as kernel
    from bayesfa.samplers.pfa.cgs_hmm import free_positions, new_state
    from bayesfa.validation.pfa.kernel_tests import _statistics

    t0 = time.perf_counter()
    n_symbols = 3
    ta, zz, c = _configs(lengths, n_states, beta)
    lj = hmm_log_joint(c, alpha_h, beta)
    prob = np.exp(lj - logsumexp(lj))
    stats = _statistics(ta, zz, beta, n_states, n_symbols)
    stats["hmm_log_joint"] = lj
    exact = {k: _moments(v, prob) for k, v in stats.items()}
    rng = np.random.default_rng(seed)
    starts = rng.choice(prob.size, size=n_chains, p=prob)
    positions = free_positions(ta[0])
    rec_t = np.empty((n_chains, n_iterations, ta.shape[1]), dtype=np.int32)
    rec_z = np.empty((n_chains, n_iterations, zz.shape[1]), dtype=np.int32)
    for ch, s in enumerate(starts):
        tokens = ta[s].astype(np.int32)
        z = zz[s].astype(np.int32)
        state = new_state(n_states, n_symbols)
        for it in range(n_iterations):
            kernel.fill_counts(tokens, z, *state)
            kernel.sweeps(1, positions, tokens, z, *state, rng, alpha_h, beta, variant)
            hmm_letter_sweep(tokens, z, n_states, n_symbols, rng, alpha_h)
            rec_t[ch, it] = tokens
            rec_z[ch, it] = z
    flat_t = rec_t.reshape(-1, ta.shape[1])
    flat_z = rec_z.reshape(-1, zz.shape[1])
    got = _statistics(flat_t, flat_z, beta, n_states, n_symbols)
    got["hmm_log_joint"] = hmm_log_joint(batch_counts_tokens(flat_t, flat_z, n_states, n_symbols),
                                         alpha_h, beta)
    chains = {k: v.reshape(n_chains, n_iterations) for k, v in got.items()}
    rows, crit = _z_test_rows(exact, chains, alpha)
    return _check(name="geweke", passed=all(r["pass"] for r in rows),
                  description=(f"{label}: Geweke joint test on Pr(alpha, z | lengths {list(lengths)}) "
                               f"of the collapsed HMM, N={n_states}, alpha={alpha_h}, beta={beta}; "
                               f"successive-conditional chain vs exact enumeration"),
                  alpha=alpha, columns=["statistic", "exact", "successive", "mcse", "z", "pass"],
                  rows=rows, summary={"n_chains": n_chains, "n_iterations": n_iterations,
                                      "critical_z": crit, "n_configurations": int(prob.size),
                                      "seconds": time.perf_counter() - t0},
                  notes=[f"false-alarm rate {alpha:g} (two-sided z-tests, Bonferroni over "
                         f"{len(rows)} statistics; MC standard errors from ArviZ ESS)"])


def batch_counts_tokens(tokens: np.ndarray, z: np.ndarray, n_states: int, n_symbols: int) -> np.ndarray:
    """``C`` ``[P, N+1, A, N+1]`` of pairs ``(tokens[p], z[p])`` (tokens varying per row)."""
    tokens = np.asarray(tokens, dtype=np.int64)
    z = np.asarray(z, dtype=np.int64)
    n = tokens.shape[0]
    k = (n_states + 1) * n_symbols * (n_states + 1)
    cells = (z[:, :-1] * n_symbols + tokens) * (n_states + 1) + z[:, 1:]
    c = np.bincount((cells + k * np.arange(n)[:, None]).ravel(), minlength=n * k)
    return c.reshape(n, n_states + 1, n_symbols, n_states + 1)


def geweke_sg(variant: int = 0, *, lengths=GEWEKE_LENGTHS, n_states: int = 2, beta: float = 0.5,
              n_chains: int = 4, n_iterations: int = 5_000, interval: int = 3, seed: int = 0,
              alpha: float = ALPHA, label: str = "cgs-sg kernel"):
    """Geweke's joint test of the CGS-SG kernel on ``Pr(alpha, z, G | lengths)`` (Eq. 18),
    ``G`` updated every ``interval`` positions inside the sweep (module docstring)."""
    from bayesfa.samplers.pfa import _cgs_sg_kernel as kernel
    from bayesfa.samplers.pfa.cgs_hmm import free_positions
    from bayesfa.samplers.pfa.cgs_sg import new_state
    from bayesfa.validation.pfa.kernel_tests import _statistics

    t0 = time.perf_counter()
    n_symbols = 3
    ta, zz, c = _configs(lengths, n_states, beta)
    flat = np.ascontiguousarray(c.reshape(c.shape[0], -1).astype(np.int16))
    _, first, inverse = np.unique(flat, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    sums = [sg_graph_sum(c[f], beta) for f in first]
    lj_class = np.array([s[0] for s in sums])
    size_law = np.array([s[1] for s in sums])  # [U, E+1]
    k = np.arange(size_law.shape[1])
    lj = lj_class[inverse]
    prob = np.exp(lj - logsumexp(lj))
    stats = _statistics(ta, zz, beta, n_states, n_symbols)
    exact = {name: _moments(v, prob) for name, v in stats.items()}
    # |G|: E and sd under the joint, from the exact conditional law of |G| given (alpha, z)
    m1 = (size_law @ k)[inverse]
    m2 = (size_law @ (k * k))[inverse]
    mean = float(prob @ m1)
    exact["graph_edges"] = (mean, float(np.sqrt(max(prob @ m2 - mean ** 2, 0.0))))
    # starts: (alpha, z) exact, then G from its exact conditional by a few graph updates
    rng = np.random.default_rng(seed)
    starts = rng.choice(prob.size, size=n_chains, p=prob)
    positions = free_positions(ta[0])
    rec_t = np.empty((n_chains, n_iterations, ta.shape[1]), dtype=np.int32)
    rec_z = np.empty((n_chains, n_iterations, zz.shape[1]), dtype=np.int32)
    rec_g = np.empty((n_chains, n_iterations))
    g = np.zeros(n_states + 1)
    for ch, s in enumerate(starts):
        tokens = ta[s].astype(np.int32)
        z = zz[s].astype(np.int32)
        st = new_state(n_states, n_symbols)
        cc, ct, ci, gr, grt, v, meta = st
        kernel.fill_counts(tokens, z, cc, ct, ci)
        kernel.set_graph(gr, grt, v, meta, True)
        for _ in range(20):  # G | alpha, z: burn in the graph at the exact (alpha, z)
            kernel.update_graph(cc, ci, gr, grt, v, meta, rng, beta, variant)
        for it in range(n_iterations):
            kernel.sweeps(1, positions, tokens, z, *st, rng, beta, interval, variant)
            sg_letter_sweep(tokens, z, cc, gr, rng, beta)
            kernel.fill_counts(tokens, z, cc, ct, ci)
            rec_t[ch, it] = tokens
            rec_z[ch, it] = z
            rec_g[ch, it] = meta[0]
    got = _statistics(rec_t.reshape(-1, ta.shape[1]), rec_z.reshape(-1, zz.shape[1]), beta,
                      n_states, n_symbols)
    chains = {name: v.reshape(n_chains, n_iterations) for name, v in got.items()}
    chains["graph_edges"] = rec_g
    rows, crit = _z_test_rows(exact, chains, alpha)
    return _check(name="geweke", passed=all(r["pass"] for r in rows),
                  description=(f"{label}: Geweke joint test on Pr(alpha, z, G | lengths "
                               f"{list(lengths)}) of Eq. 18, N={n_states}, beta={beta}, G updated "
                               f"every {interval} positions; successive-conditional chain vs exact "
                               f"enumeration (G summed out by degree convolution)"),
                  alpha=alpha, columns=["statistic", "exact", "successive", "mcse", "z", "pass"],
                  rows=rows, summary={"n_chains": n_chains, "n_iterations": n_iterations,
                                      "critical_z": crit, "n_configurations": int(prob.size),
                                      "n_count_classes": int(first.size),
                                      "seconds": time.perf_counter() - t0},
                  notes=[f"false-alarm rate {alpha:g} (two-sided z-tests, Bonferroni over "
                         f"{len(rows)} statistics; MC standard errors from ArviZ ESS)"])


def _check(**kwargs):
    from bayesfa.validation.checks import Check

    return Check(**kwargs)


# -- the specs -------------------------------------------------------------------------------

#: The HMM setting of ``validate``: ``alpha != beta``, so that swapping them changes Eq. 20.
HMM_ALPHA, HMM_BETA = 0.25, 1.0

#: Mutants per method kind: name -> (kernel ``variant`` code, ``plugin`` code, what it does).
#: The kernel codes are those of ``_cgs_hmm_kernel`` / ``_cgs_sg_kernel``, the plug-in codes
#: those of :mod:`bayesfa.samplers.pfa.cgs_hmm`.
_HMM_KERNEL_MUTANTS = {
    "no-correction": (1, 0, "g_k^HMM without delta(z_{t-1} = k = z_{t+1}) (Sect. 4.4)"),
    "all-visits": (2, 0, "move denominator C_k + N beta instead of C_k - C_k0 + N beta"),
    "stale-emission": (3, 0, "C_{k a_t} instead of C^{-t}_{k a_t} (z_t's own emission counted)"),
    "end-move-factor": (4, 0, "a_t = 0: g_k also divided by C_k - C_k0 + N beta"),
}
MUTANTS: dict[str, dict[str, tuple[int, int, str]]] = {
    "hmm": dict(_HMM_KERNEL_MUTANTS, **{
        "unnormalised-eq20": (0, 1, "Eq. 20 as printed: theta~ over C_i + N beta (rows sum < 1)"),
        "alpha-beta-swapped": (0, 2, "Eq. 20 with alpha and beta swapped"),
    }),
    "hmm-star": dict(_HMM_KERNEL_MUTANTS, **{
        "literal-star": (0, 3, "CGS-HMM(*) as printed: beta, not N beta, on the end edge"),
    }),
    "sg": {
        "no-correction": (1, 0, "g_k without the delta of the self-loop read twice (Sect. 3)"),
        "no-state-factor": (2, 0, "update of G with the prior ratio only (no Gamma factor of Eq. 18)"),
        "vp-for-vk": (3, 0, "g_k's denominator C_k + v_{z_{t-1}} beta instead of C_k + v_k beta"),
        "stale-total": (4, 0, "g_k's denominator with C_k instead of C^{-t}_k"),
        "size-ratio-flipped": (5, 0, "update of G with (E - k) / (k + 1) for (k + 1) / (E - k)"),
    },
}


class _Spec:
    """Validation hooks of one method (``kind`` ``"hmm"``, ``"hmm-star"`` or ``"sg"``),
    kernel ``variant`` (0: the production kernel) and ``plugin`` (0: the method's plug-in)."""

    def __init__(self, kind: str, variant: int = 0, variant_name: str | None = None,
                 plugin: int = 0):
        self.kind = kind
        self.variant = variant
        self.plugin = plugin
        self.variant_name = variant_name
        if kind == "sg":
            budget = dict(_BUDGET, beta=0.5)
        else:
            budget = dict(_BUDGET, alpha=HMM_ALPHA, beta=HMM_BETA)
        self.validation_budget = budget

    @property
    def base_name(self) -> str:
        return {"hmm": "cgs-hmm", "hmm-star": "cgs-hmm-star", "sg": "cgs-sg"}[self.kind]

    @property
    def label(self) -> str:
        base = f"{self.base_name} kernel"
        if self.variant_name is None:
            return base
        what = "kernel" if self.variant else "plug-in (the kernel is the production one)"
        return f"mutant {self.variant_name!r} ({what}) of the {base}"

    def _mutants(self) -> dict[str, tuple[int, int, str]]:
        return MUTANTS[self.kind]

    def exact_reference(self, toy, test: Corpus, options: dict[str, Any]) -> dict[str, Any]:
        from bayesfa.validation.pfa import variants_reference as ref_mod

        n_states = options.get("states", toy.n_states)
        beta = options["beta"]
        if self.kind == "sg":
            ref = ref_mod.sg_predictive(toy.train, test, n_states, beta)
            kind = (f"exact plug-in limit sum_(z,G) Pr(z,G|alpha) Pr(b|xi~(z,G)) of Eq. 18 "
                    f"(beta={beta}), every z enumerated, G summed out given the degrees "
                    f"(variants_reference.sg_predictive: own plug-in, sum over b's paths)")
        else:
            star = self.kind == "hmm-star"
            ref = ref_mod.hmm_predictive(toy.train, test, n_states, options["alpha"], beta, star)
            kind = (f"exact plug-in limit sum_z Pr_HMM(z|alpha) Pr(b|xi~(z)) "
                    f"({'CGS-HMM(*) plug-in' if star else 'Eq. 20'}; alpha={options['alpha']}, "
                    f"beta={beta}), every z enumerated (variants_reference: own plug-in and "
                    f"forward pass)")
        return {"reference": ref, "exact": None, "kind": kind}

    def per_sample_log_prob(self, arrays, options, test):
        return self._method().per_sample_log_prob(arrays, options, test)

    def _method(self):
        if self.kind == "sg":
            from bayesfa.samplers.pfa.cgs_sg import _CGSSG

            return _CGSSG(self.variant)
        from bayesfa.samplers.pfa.cgs_hmm import _CGSHMM

        return _CGSHMM(self.kind == "hmm-star", self.variant, plugin=self.plugin)

    def kernel_checks(self, toy, *, seed: int = 0, alpha: float = ALPHA) -> list:
        from bayesfa.validation.pfa import variants_kernel as vk

        if self.kind == "sg":
            return [geweke_sg(self.variant, seed=seed, alpha=alpha, label=self.label),
                    vk.sg_site_check(self.variant, seed=seed, alpha=alpha, label=self.label),
                    vk.sg_graph_check(self.variant, seed=seed, alpha=alpha, label=self.label)]
        return [geweke_hmm(self.variant, alpha_h=HMM_ALPHA, beta=HMM_BETA, seed=seed, alpha=alpha,
                           label=self.label),
                vk.hmm_site_check(self.variant, alpha_h=HMM_ALPHA, beta=HMM_BETA, alpha=alpha,
                                  label=self.label)]

    def check_names(self) -> list[str]:
        """The names of the checks :meth:`kernel_checks` adds to ``predictive`` (``recorded``
        is added by the harness), in order, without running them."""
        return ["predictive", "geweke", "site-exact"] + (["graph-move"] if self.kind == "sg" else [])

    def mutant_names(self) -> list[str]:
        return list(self._mutants())

    def recompute_trace(self, arrays, trace, options, train):
        """The ``recorded`` check's recomputations (:mod:`bayesfa.validation.recorded`) from
        the recorded counts (and, for CGS-SG, graph): the log joint by
        :func:`~bayesfa.validation.pfa.variants_reference.hmm_log_joint` (the collapsed HMM of
        Sect. 4.4) or :func:`~bayesfa.validation.pfa.variants_reference.sg_log_joint` (Eq. 18),
        the states, pairs and edges in use, the graph's size, the determinacy; rows: the
        counts are those of a path through the data, and (CGS-SG) the graph holds every used
        edge and only edges of the fully connected NFA."""
        from bayesfa.validation.pfa import variants_reference as ref_mod
        from bayesfa.validation.pfa.reference import counts_consistency, counts_trace
        from bayesfa.validation.recorded import Recomputed

        counts = np.asarray(arrays["counts"])
        extra = [counts_consistency(counts, train.tokens)]
        if self.kind != "sg":
            lj = ref_mod.hmm_log_joint(counts, options["alpha"], options["beta"])
            return counts_trace(counts, trace, options, lj,
                                "collapsed HMM joint (variants_reference.hmm_log_joint)"), extra
        graph = np.asarray(arrays["graph"]).astype(bool)
        lj = ref_mod.sg_log_joint(counts, graph, options["beta"])
        out = counts_trace(counts, trace, options, lj, "Eq. 18 (variants_reference.sg_log_joint)")
        kept = slice(None) if counts.shape[1] == np.shape(trace["n_pairs"])[1] else None
        if kept is None:  # the draws' counts thinned: align as counts_trace does
            from bayesfa.samplers.pfa.cgs_pfa import kept_draw_indices

            kept = kept_draw_indices(np.shape(trace["n_pairs"])[1], options.get("max_draws"))
        pairs = (counts > 0).any(axis=-1).sum(axis=(-2, -1))
        edges = (counts > 0).sum(axis=(-3, -2, -1))
        out["n_pairs"] = Recomputed(pairs, np.asarray(trace["n_pairs"])[:, kept], 0.0,
                                    "pairs (i, a) with some C_iaj > 0")
        out["n_graph_edges"] = Recomputed(graph.sum(axis=(-3, -2, -1)),
                                          np.asarray(trace["n_graph_edges"])[:, kept], 0.0,
                                          "edges of the recorded graph G")
        out["determinacy"] = Recomputed(edges / np.maximum(pairs, 1),
                                        np.asarray(trace["determinacy"])[:, kept], 1e-12,
                                        "n_edges / max(n_pairs, 1)")
        mask = ref_mod.edge_mask(counts.shape[-3] - 1, counts.shape[-2])
        bad = ((counts > 0) & ~graph).any(axis=(-3, -2, -1)) | (graph & ~mask).any(axis=(-3, -2, -1))
        extra.append({"quantity": "graph (the recorded state)", "draws": int(bad.size),
                      "max_diff": float(bad.sum()), "tolerance": 0.0, "pass": not bool(bad.any()),
                      "how": "G holds every edge with C_iaj > 0 and only NFA edges (draws "
                             "breaking it: max_diff)"})
        return out, extra

    def mutant(self, variant: str):
        code, plugin, _ = self._mutants()[variant]
        return _Mutant(_Spec(self.kind, code, variant, plugin), f"{self.base_name}:mutant-{variant}")


class _Mutant:
    """A mutant as a method that carries its own hooks (no ``validation`` path)."""

    def __init__(self, spec: _Spec, name: str):
        self._spec = spec
        self._method = spec._method()
        self.name = name
        self.summary = (f"{spec.base_name} with a deliberately wrong kernel or plug-in "
                        f"({spec._mutants()[spec.variant_name][2]}); for validation only")

    def __getattr__(self, item):
        if item == "validation":
            raise AttributeError(item)
        for obj in (self.__dict__["_spec"], self.__dict__["_method"]):
            if hasattr(obj, item):
                return getattr(obj, item)
        raise AttributeError(item)


CGS_SG = _Spec("sg")
CGS_HMM = _Spec("hmm")
CGS_HMM_STAR = _Spec("hmm-star")
