"""Validation specs of the finite PDFA sampler (``pdfa``) and the PDIA (``pdia``) for
:mod:`bayesfa.validation.harness` (``bayesfa validate pdfa | pdia [:mutant-X]``).

References (exact, no Monte Carlo):

- ``pdfa``: :func:`bayesfa.models.pdfa.exact_predictive`, the enumeration of every transition
  table of the finite model with ``phi``, ``mu`` and ``pi`` integrated out (fixed
  ``alpha, beta, gamma``).
- ``pdia``: :func:`pdia_exact_predictive`, ``Pr(b | x) = Z(x b) / Z(x)`` where ``Z`` sums,
  over every way the Chinese restaurant franchise can seat the transitions the data visit
  (depth-first over the data: each unvisited transition joins an open table, opens a table
  with an existing state, or opens one with a new state), the product of the seating
  probabilities and of the Dirichlet-multinomial emission predictives. This is independent
  code (plain Python), not the sampler's kernels. The sum is truncated at ``k_max`` states
  besides ``q0``: the dropped branches' prefix probabilities bound the error, and ``k_max``
  grows until the resulting interval for every ``Pr(b | x)`` is narrower than
  ``TRUNCATION_RESOLUTION`` (relative), far below the Monte Carlo error of the check.

Kernel checks, first the exact single-move checks of :mod:`bayesfa.validation.pdia.moves`
(``move-entry`` and ``move-table`` for ``pdia``; ``move-entry`` at fixed ``mu`` and
``move-mu`` for ``pdfa``): one move of the kernel from i.i.d. draws of the exact posterior of
every configuration of several small corpora, detailed balance by exact binomial tests and
stationarity by chi-squared (Kolmogorov-Smirnov for ``mu``). They catch the transition-move
bugs that the predictive and Geweke checks miss on the toy (the ambiguity rule below passed
``validate pdia --seed 1`` before them). Then :func:`geweke` -- Geweke's (2004) joint
distribution test on
``p(x, delta_V, seating | m strings, <= cap letters)``: the *marginal-conditional* side draws
(configuration, data) from the prior by the generative process (transitions seated just in
time, emissions from the Dirichlet-multinomial urn), the *successive-conditional* side
alternates sampler sweeps with fresh data ``x ~ p(x | configuration)`` (the same generative
process continued from the configuration; transitions the new data do not visit are
marginalised out, which is the sampler's own deletion rule). Label-invariant statistics,
two-sided z-tests with ArviZ ESS standard errors on both sides, Bonferroni.

``pdfa`` also runs ``predictive-hyper``: the predictive with ``alpha, beta, gamma`` sampled by
MH under their Gamma(1, 1) priors against :func:`bayesfa.models.pdfa.exact_predictive_hyper`
(the enumeration with the hyperpriors integrated out by quadrature), which checks the
hyperparameter moves. ``pdia`` checks its hyperparameter moves (``alpha, alpha0, beta`` under
Gamma(1, 1), ``d, d0`` under Uniform(0, 1)) three ways:

- ``hyper-conditional`` (:func:`hyper_conditional`): each move alone on a fixed
  configuration against the exact conditional of that hyperparameter, by 1-D quadrature of
  the prior times the Pitman-Yor EPPF (or the Dirichlet-multinomial for ``beta``) written
  here in plain Python; fast, and the check that catches each hyperparameter mutant;
- ``hyper-<name>`` (:func:`hyper_check`): the sampler with only that hyperparameter sampled,
  its predictive of every test string and two posterior moments of the hyperparameter
  against :func:`pdia_exact_hyper`, the enumeration with the hyperparameter integrated out
  by Gauss-Laguerre (Gamma(1, 1)) or Gauss-Legendre (Uniform(0, 1)) quadrature of order 48
  (orders 48 and 64 agree to 1e-8; tests/test_pdia.py checks it against scipy's adaptive
  quadrature of scalar enumerations);
- ``geweke-hyper``: Geweke's test with all five drawn from their priors and moved by the
  sweeps, the hyperparameters among the statistics.

On these small data sets Geweke's test does not separate the transition-move mutants from
the kernel (the proposal-ratio terms matter only when a move changes which transitions are
visited); the predictive checks do. For the hyperparameter mutants, ``hyper-conditional``
and ``hyper-<name>`` do (the latter through the second moment: a chain stuck near a
boundary of the support can keep the mean right).

Status (2026-11-23): ``pdia`` showed a small repeatable bias (``a`` 1.5-3.2 MC standard errors
high, ``aaa`` 1.6-3.7 low over five seeds; |z| 7-10 with ``table_moves=False``). Cause,
found by brute-force detailed balance on "aa", "a": when the entries a move deletes (``O``)
were the only old customers of a table (or of a state) that new customers join, the result
is also reached by other events whose reverse is the same, and the per-event MH ratio
double-counted it; such proposals are now rejected (``_pdfa_kernel._ambiguous``), after
which every string is within 1.9 SE over seeds 0-4 (max |z| 0.8-1.8), also with
the table moves off. ``pdfa``'s ``predictive-hyper``
failed when ``gamma`` was sampled (|z| up to 5): small ``gamma`` drives components of ``mu``
towards 0, where the former ``Dir(eta mu)`` MH proposal's gamma variates underflowed (and,
even in log space, that proposal cannot move there). Fixed by the exact Gibbs step on ``mu``
with auxiliary table counts, drawn in log space (``_pdfa_kernel.move_mu``): max |z| 1.6.

Mutants: ``no-proposal-ratio`` (the MH ratio without the proposal ratio: likelihood ratio
times prior ratio) and ``no-unseat-term`` (the ratio without the term of unseating the
deleted entries ``O``) for both, ``no-discount`` (the PDIA's seating rules without the
discounts ``d, d0``, i.e. the HDP instead of the HPY), ``no-alpha-prior`` (alpha's MH ratio
without its Gamma(1, 1) prior term), ``d-no-jacobian`` (the logit-scale walk of ``d`` without
its Jacobian: an asymmetric proposal in ``d`` left uncorrected), ``no-ambiguity-rule`` (the
historical bug of the Status paragraph: ``_ambiguous`` skipped), ``no-size-ratio`` (the
random scan's ``|V| / |V'|``, ``M / M'`` left out), ``seat-proposal-no-discount`` and
``dish-proposal-no-discount`` (a seat, a dish proposed without ``d``, ``d0`` but scored with
it), ``top-seating-d-for-d0`` (the top-level seating scored with ``d`` where ``d0`` belongs:
the audit's slip of issue 39, invisible wherever ``d = d0``, which is why every move check and
fixed-hyperparameter toy here has ``d != d0`` and ``alpha != alpha0``) for ``pdia``; ``seat-proposal-uniform-mu`` (a seat proposed from ``alpha / |Q| + v_kj``
but scored with ``alpha mu_k + v_kj``), ``mu-customers-not-tables`` and ``mu-prior-gamma`` (the Gibbs step's Dirichlet with the
customers ``v_kj`` instead of the tables, with ``gamma`` instead of ``gamma / |Q|``) and
``log-joint-mu-prior`` (the *recorded* log joint's ``log Dir(mu)`` with ``gamma`` for ``gamma /
|Q|``; the sampling untouched, so only the ``recorded`` check, :func:`pdfa_recompute_trace`,
sees it) for ``pdfa``. The former sampler's MH step on ``mu`` (a ``Dir(eta mu)`` proposal, replaced by
the exact Gibbs step) is no mutant: it is a valid MH step that mixes badly near the boundary
(its code is not in the history; re-implemented from the paper it passed every exact check on
5 of 5 seeds, as a correct kernel must), so an exactness check cannot and should not fail it.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from scipy import stats as sps

from bayesfa.corpus import Corpus
from bayesfa.validation.pdia.franchise import Franchise as _Franchise, walk_seatings  # noqa: F401 (re-exported)
from bayesfa.validation.toys import format_string

ALPHA = 1e-3
TRUNCATION_RESOLUTION = 1e-4
MUTANTS = {"pdfa": {"no-proposal-ratio": 1, "no-unseat-term": 9,
                    "seat-proposal-uniform-mu": 10,
                    "mu-customers-not-tables": 12, "mu-prior-gamma": 13,
                    "log-joint-mu-prior": 15},
           "pdia": {"no-proposal-ratio": 1, "no-discount": 2, "no-alpha-prior": 3,
                    "d-no-jacobian": 4, "no-ambiguity-rule": 5, "no-size-ratio": 6,
                    "seat-proposal-no-discount": 7, "dish-proposal-no-discount": 8,
                    "no-unseat-term": 9, "top-seating-d-for-d0": 14}}


def _check(**kwargs):
    from bayesfa.validation.checks import Check

    return Check(**kwargs)


# -- the PDIA by exact enumeration -----------------------------------------------------------

def _symbols(corpus: Corpus, n_letters: int) -> list[int]:
    return [int(t) for t in corpus.with_alphabet(n_letters).tokens]


def pdia_log_marginals(train: Corpus, tests: Corpus, hyp: dict[str, float], k_max: int):
    """``(Z(x), Z(x b) for each b, dropped mass of Z(x), of each Z(x b))`` (not logs).

    A hyperparameter may be an array (the others scalars): the branches of the enumeration
    do not depend on the values (only on ``k_max``), so every product is taken elementwise
    and each result gains that trailing axis (``Z(x b)``: ``[n_strings, n_values]``)."""
    n_letters = max(train.alphabet_size, tests.alphabet_size)
    n_sym = n_letters + 1
    x = _symbols(train, n_letters)
    test_tokens = [_symbols(tests.subset([i]), n_letters) for i in range(tests.n_strings)]
    beta = hyp["beta"]
    crf = _Franchise(hyp["alpha"], hyp["d"], hyp["alpha0"], hyp["d0"])
    z = [0.0]
    zb = [0.0] * len(test_tokens)
    dropped_x = [0.0]
    dropped_b = [0.0] * len(test_tokens)
    delta: dict = {}
    cnt: dict = {}

    def leaf_x(w):
        z[0] += w
        for i, b in enumerate(test_tokens):
            acc = [0.0]
            drop = [0.0]
            _walk(b, 0, 0, w, crf, delta, cnt, beta, n_sym, k_max,
                  lambda wb: acc.__setitem__(0, acc[0] + wb), drop)
            zb[i] = zb[i] + acc[0]
            dropped_b[i] = dropped_b[i] + drop[0]

    _walk(x, 0, 0, 1.0, crf, delta, cnt, beta, n_sym, k_max, leaf_x, dropped_x)
    zb, dropped_b = np.broadcast_arrays(*zb), np.broadcast_arrays(*dropped_b)
    return z[0], np.array(zb), dropped_x[0], np.array(dropped_b) + dropped_x[0]


def _walk(tokens, pos, q, weight, crf, delta, cnt, beta, n_sym, k_max, leaf, dropped, seat=None):
    """Depth-first sum (see :func:`pdia_log_marginals`): :func:`walk_seatings` with the
    PDIA's emissions, each weighted by its predictive ``(c_qs + beta / S) / (c_q + beta)``
    under the branch's counts ``cnt[q]`` (``S = n_sym`` symbols, the total last; restored on
    return); ``dropped[0]`` accumulates the weight of the branches ``k_max`` cuts off."""
    def emit(q, s, w):
        row = cnt.setdefault(q, [0] * (n_sym + 1))
        w = w * ((row[s] + beta / n_sym) / (row[n_sym] + beta))  # not in place (arrays)
        row[s] += 1
        row[n_sym] += 1
        return w

    def unemit(touched):
        for q_, s_ in touched:
            cnt[q_][s_] -= 1
            cnt[q_][n_sym] -= 1

    def on_cut(w, cut):
        dropped[0] += w * cut

    walk_seatings(tokens, pos, q, weight, crf, delta, k_max, leaf, emit, unemit, on_cut, seat)


def pdia_exact_predictive(train: Corpus, test: Corpus, hyp: dict[str, float],
                          k_start: int = 3, k_limit: int = 12,
                          resolution: float = TRUNCATION_RESOLUTION) -> tuple[np.ndarray, dict]:
    """``log Pr(b | train)`` under the PDIA for each test string, by enumeration truncated at
    the smallest ``k_max >= k_start`` whose error interval is narrower than ``resolution``
    (relative) for every string. Returns ``(log probs, info)``."""
    for k_max in range(k_start, k_limit + 1):
        z, zb, dx, db = pdia_log_marginals(train, test, hyp, k_max)
        est = zb / z
        lower = zb / (z + dx)
        upper = (zb + db) / z
        width = float(np.max((upper - lower) / est))
        if width < resolution:
            return np.log(est), {"k_max": k_max, "relative_interval": width,
                                 "dropped_prior_mass_bound": dx / z}
    raise RuntimeError(f"truncation at {k_limit} states still leaves a relative error of {width}")


#: the PDIA's hyperparameters and their priors (Pfau et al. 2010 and the poster): Gamma(1, 1)
#: on the concentrations and ``beta``, Uniform(0, 1) on the discounts
PDIA_HYPER = ("alpha", "beta", "alpha0", "d", "d0")
_UNIT_PRIOR = ("d", "d0")
HYPER_ORDER = 48


def prior_quadrature(which: str, order: int = HYPER_ORDER) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of ``int f(h) p(h) dh`` for the prior of ``which``: Gauss-Laguerre
    (weight ``e^-h``, the Gamma(1, 1) density) or Gauss-Legendre mapped to (0, 1)."""
    if which in _UNIT_PRIOR:
        x, w = np.polynomial.legendre.leggauss(order)
        return (x + 1.0) / 2.0, w / 2.0
    return np.polynomial.laguerre.laggauss(order)


def hyper_statistics(which: str):
    """``{label: f}``: the functions of ``h = which`` whose posterior means
    :func:`hyper_check` compares: ``h`` itself, and a bounded one that a chain stuck at a
    boundary of the prior's support moves even when its mean of ``h`` does not (``h (1 - h)``
    for a discount, ``h / (1 + h)`` for a concentration)."""
    if which in _UNIT_PRIOR:
        return {f"E[{which}]": lambda h: h, f"E[{which}(1-{which})]": lambda h: h * (1.0 - h)}
    return {f"E[{which}]": lambda h: h, f"E[{which}/(1+{which})]": lambda h: h / (1.0 + h)}


def pdia_exact_hyper(train: Corpus, test: Corpus, hyp: dict[str, float], which: str,
                     order: int = HYPER_ORDER) -> tuple[np.ndarray, dict[str, float]]:
    """``(log Pr(b | x) for each test string, {label: E[f(h) | x]} for`` :func:`hyper_statistics`
    ``)`` under the PDIA with ``h = hyp[which]``
    integrated out against its prior (Gamma(1, 1) or Uniform(0, 1)), the other hyperparameters
    fixed at ``hyp``: ``Pr(b | x) = int Z_h(x b) p(h) dh / int Z_h(x) p(h) dh`` by
    :func:`prior_quadrature` of order ``order``, ``Z_h`` by the enumeration of
    :func:`pdia_log_marginals` evaluated at every node at once. Not truncated: the data visit
    at most ``letters(x) + longest b`` transitions, so ``k_max`` at that count cuts nothing
    (checked: the dropped mass is 0)."""
    x, w = prior_quadrature(which, order)
    longest = int(test.lengths.max()) if test.n_strings else 0
    z, zb, dx, db = pdia_log_marginals(train, test, {**hyp, which: x}, train.n_letters + longest)
    if np.any(dx) or np.any(db):
        raise RuntimeError("the enumeration was truncated")
    z, zb = np.broadcast_to(z, x.shape), np.broadcast_to(zb, (test.n_strings,) + x.shape)
    den = float(z @ w)
    means = {label: float((z * f(x)) @ w / den) for label, f in hyper_statistics(which).items()}
    return np.log(zb @ w / den), means


# -- specs -------------------------------------------------------------------------------------

#: the finite PDFA's fixed hyperparameters on toys: distinct, and none 1 (issue 39: a slip that puts
#: one where another belongs, or drops a factor alpha, is invisible where they are equal or 1)
_FIXED_PDFA = {"alpha": 1.3, "beta": 0.7, "gamma": 1.6}
#: the PDIA's fixed hyperparameters on toys: ``d != d0``, ``alpha != alpha0`` (issue 39: a slip
#: that swaps the two levels' values is invisible where they are equal)
_FIXED_PDIA = {"alpha": 1.0, "beta": 1.0, "alpha0": 0.6, "d": 0.3, "d0": 0.5}


class _Spec:
    family = ""
    model = 0
    fixed: dict[str, float] = {}
    validation_budget: dict[str, Any] = {}

    def __init__(self, variant: int = 0, variant_name: str = ""):
        self.variant = variant
        self.variant_name = variant_name

    def mutant_names(self):
        return list(MUTANTS[self.family])

    def mutant(self, variant: str):
        from bayesfa.methods import get_method

        base = get_method(self.family)
        code = MUTANTS[self.family][variant]
        spec = type(self)(code, variant)
        from bayesfa.validation.harness import carry_spec

        method = type(base)()
        method.variant = code
        return carry_spec(method, spec, f"{self.family}:mutant-{variant}")

    def per_sample_log_prob(self, arrays, options, test):
        from bayesfa.samplers.pdia.pdfa import per_sample_log_prob

        return per_sample_log_prob(self.model, arrays, options, test, variant=self.variant)

    def kernel_checks(self, toy, *, seed: int = 0, alpha: float = ALPHA):
        return [geweke(self.family, self.variant, seed=seed, alpha=alpha)]


class PDFASpec(_Spec):
    family = "pdfa"
    model = 0
    fixed = _FIXED_PDFA
    validation_budget = {"iterations": 10_100, "burn_in": 100, "period": 2, "chains": 4,
                         "predict_draws": 4, **_FIXED_PDFA}

    def recompute_trace(self, arrays, trace, options, train):
        return pdfa_recompute_trace(arrays, trace, options, train)

    def check_names(self):
        return ["predictive", "move-entry", "move-mu", "geweke", "predictive-hyper"]

    def exact_reference(self, toy, test, options):
        from bayesfa.models.pdfa import exact_predictive, exact_predictive_hyper

        n = options.get("states", toy.n_states)
        a, b, g = options.get("alpha"), options.get("beta"), options.get("gamma")
        if None in (a, b, g):
            ref = exact_predictive_hyper(toy.train, test, n, alpha=a, beta=b, gamma=g)
            fn = "exact_predictive_hyper (Gamma(1, 1) on the hyperparameters left free)"
        else:
            ref = exact_predictive(toy.train, test, n, a, b, g)
            fn = "exact_predictive"
        return {"reference": ref, "exact": ref,
                "kind": f"exact posterior predictive of the finite PDFA (|Q|={n + 1}, alpha={a}, "
                        f"beta={b}, gamma={g}), bayesfa.models.pdfa.{fn}"}

    def kernel_checks(self, toy, *, seed: int = 0, alpha: float = ALPHA):
        """The exact single-move checks of the entry and ``mu`` moves
        (:mod:`bayesfa.validation.pdia.moves`: ``move-entry``, ``move-mu``), Geweke, and the
        predictive with alpha, beta, gamma sampled under their Gamma(1, 1) priors against the
        exact enumeration with the hyperpriors integrated out."""
        from bayesfa.validation.harness import compare
        from bayesfa.validation.pdia.moves import pdfa_move_checks

        name = self.family if self.variant == 0 else f"{self.family}:mutant-{self.variant_name}"
        hyper = compare(name, toy, seed + 1, alpha=alpha,
                        options={"alpha": None, "beta": None, "gamma": None})
        check = hyper.checks[0]
        check.name = "predictive-hyper"
        check.description += " (alpha, beta, gamma sampled by MH under Gamma(1, 1))"
        return (pdfa_move_checks(self.variant, seed=seed, alpha=alpha, label=name)
                + [geweke(self.family, self.variant, seed=seed, alpha=alpha), check])


class PDIASpec(_Spec):
    family = "pdia"
    model = 1
    fixed = _FIXED_PDIA

    def recompute_trace(self, arrays, trace, options, train):
        return pdia_recompute_trace(arrays, trace, options, train)
    validation_budget = {"iterations": 10_100, "burn_in": 100, "period": 2, "chains": 4,
                         "predict_draws": 4, **_FIXED_PDIA}

    def check_names(self):
        return (["predictive", "move-entry", "move-table", "geweke", "geweke-hyper",
                 "hyper-conditional"] + [f"hyper-{h}" for h in PDIA_HYPER])

    def exact_reference(self, toy, test, options):
        hyp = {k: options[k] for k in PDIA_HYPER}
        free = [k for k, v in hyp.items() if v is None]
        what = ", ".join(f"{k}={v}" for k, v in hyp.items() if v is not None)
        if len(free) == 1:
            ref, _ = pdia_exact_hyper(toy.train, test, hyp, free[0])
            prior = "Uniform(0, 1)" if free[0] in _UNIT_PRIOR else "Gamma(1, 1)"
            return {"reference": ref, "exact": ref,
                    "kind": f"exact PDIA posterior predictive ({what}; {free[0]} ~ {prior} "
                            f"integrated out by quadrature of order {HYPER_ORDER}) by "
                            f"enumeration of the CRF seatings, not truncated"}
        if free:
            return {"reference": None, "exact": None,
                    "kind": f"unavailable (exact reference with one free hyperparameter at a "
                            f"time; free: {', '.join(free)})"}
        ref, info = pdia_exact_predictive(toy.train, test, hyp)
        return {"reference": ref, "exact": ref,
                "kind": f"exact PDIA posterior predictive ({what}) by enumeration of the CRF "
                        f"seatings, truncated at {info['k_max']} states (relative error "
                        f"< {info['relative_interval']:.1e})"}

    def kernel_checks(self, toy, *, seed: int = 0, alpha: float = ALPHA):
        """Geweke with the hyperparameters fixed and with all five sampled under their
        priors (``geweke-hyper``); each hyperparameter move alone on a fixed configuration
        against its exact conditional (:func:`hyper_conditional`); for each hyperparameter
        alone, the predictive and its posterior moments against :func:`pdia_exact_hyper`
        (:func:`hyper_check`, ``hyper-<name>``); first the exact single-move checks of the
        entry and table moves (:mod:`bayesfa.validation.pdia.moves`: ``move-entry``,
        ``move-table``)."""
        from bayesfa.validation.pdia.moves import pdia_move_checks

        label = "pdia" if self.variant == 0 else f"pdia:mutant-{self.variant_name}"
        return (pdia_move_checks(self.variant, seed=seed, alpha=alpha, label=label)
                + [geweke(self.family, self.variant, seed=seed, alpha=alpha),
                 geweke(self.family, self.variant, seed=seed, alpha=alpha, free=PDIA_HYPER),
                 hyper_conditional(self.variant, seed=seed, alpha=alpha)]
                + [hyper_check(which, self.variant, toy, seed=seed + 1, alpha=alpha)
                   for which in PDIA_HYPER])


PDFA = PDFASpec()
PDIA = PDIASpec()


# -- the PDIA's hyperparameter moves against quadrature -----------------------------------------

def _log_eppf(sizes, conc: float, disc: float) -> float:
    """log EPPF of a Pitman-Yor partition with group sizes ``sizes`` (plain Python)."""
    sizes = [int(n) for n in sizes if n > 0]
    out = sum(math.log(conc + i * disc) for i in range(1, len(sizes)))
    out += sum(math.log(l - disc) for n in sizes for l in range(1, n))
    return out - sum(math.log(conc + i) for i in range(1, sum(sizes)))


def hyper_conditional(variant: int = 0, *, n_moves: int = 20_000, seed: int = 0,
                      alpha: float = ALPHA, sweeps: int = 30):
    """Each PDIA hyperparameter move alone on a fixed configuration (a chain state after
    ``sweeps`` sweeps on toy ``tiny`` with the validation values): ``n_moves`` MH moves of one
    hyperparameter, the others fixed, against the exact conditional by 1-D quadrature of its
    prior times, for ``alpha, alpha0, d, d0``, the Pitman-Yor EPPF of the franchise's table
    sizes and, for ``beta``, the Dirichlet-multinomial of the emission counts (both computed
    here in plain Python from the configuration, not by the kernel). The moments of
    :func:`hyper_statistics` by z-tests with ArviZ-ESS standard errors, Bonferroni; no path
    evaluation, so it is fast."""
    from scipy import integrate, special

    from bayesfa.samplers.pdia import _pdfa_kernel as K
    from bayesfa.samplers.pdia import pdfa as P
    from bayesfa.samplers.pdia._crf_kernel import S_M, T_N
    from bayesfa.samplers.pdia.pdfa import _SLOTS
    from bayesfa.validation.toys import get_toy

    t0 = time.perf_counter()
    toy = get_toy("tiny")
    data = P.as_symbols(toy.train, False)
    hyp0, fixed = P.hyper_values(P.CRF, _FIXED_PDIA)
    st = P.ChainState(P.CRF, data, 2 * data.sym.size + 2)
    rng = np.random.default_rng(seed)
    P._init_chain(st, hyp0, rng, 0)
    stats = np.zeros(K.N_STATS)
    P._sweeps(st, hyp0, fixed, sweeps, rng, stats, {}, 0)
    hi, n_sym = int(st.meta[6]), data.n_symbols
    columns = [[int(st.tabs[T_N, st.col_tabs[j, p]]) for p in range(st.col_T[j])]
               for j in range(n_sym)]
    top = [int(m) for m in st.sts[S_M] if m > 0]
    counts = st.cnt[:hi][st.ctot[:hi] > 0]

    def log_target(which, h):
        v = {**_FIXED_PDIA, which: h}
        prior = 0.0 if which in _UNIT_PRIOR else -h
        if which == "beta":
            a = h / n_sym
            return prior + float(np.sum(special.gammaln(counts + a) - special.gammaln(a))
                                 + np.sum(special.gammaln(h) - special.gammaln(h + counts.sum(1))))
        return prior + sum(_log_eppf(c, v["alpha"], v["d"]) for c in columns if c) + _log_eppf(
            top, v["alpha0"], v["d0"])

    series = []
    for which in PDIA_HYPER:
        slot = _SLOTS[which]
        hyp = hyp0.copy()
        draws = np.empty(n_moves)
        for n in range(n_moves):
            K.move_hyper(slot, 0.5, 1, variant, hyp, st.cnt, st.ctot, hi, st.v, st.nj, st.mu,
                         st.lmu, st.tabs, st.col_tabs, st.col_T, st.sts, 1, st.lg, n_sym, rng,
                         stats)
            draws[n] = hyp[slot]
        K.fill_lg(st.lg, hyp0[1], n_sym)  # the beta move refills lg
        upper = 1.0 if which in _UNIT_PRIOR else np.inf
        shift = max(log_target(which, h) for h in np.linspace(0.01, 0.99 if upper == 1 else 20, 99))

        def moment(f, which=which, shift=shift, upper=upper):
            return integrate.quad(lambda h: f(h) * math.exp(log_target(which, h) - shift), 0,
                                  upper, limit=200, epsrel=1e-10)[0]

        norm = moment(lambda h: 1.0)
        x = draws.reshape(4, -1)
        series += [(f"{label} | config", f(x), moment(f) / norm)
                   for label, f in hyper_statistics(which).items()]
    label = "pdia" if variant == 0 else f"pdia variant {variant}"
    return _moment_check(
        "hyper-conditional", series, alpha, t0,
        f"{label}: each hyperparameter's MH move alone ({n_moves} moves, in 4 blocks as "
        f"chains) on a fixed configuration ({int(st.meta[2])} tables, {int(st.meta[3])} states; "
        f"toy 'tiny') vs its exact conditional by quadrature (prior x EPPF, or x "
        f"Dirichlet-multinomial for beta)")


HYPER_BUDGET = {"iterations": 4_100, "burn_in": 100, "period": 2, "chains": 4, "predict_draws": 4}


def hyper_check(which: str, variant: int = 0, toy="tiny", *, seed: int = 1,
                alpha: float = ALPHA, budget: dict[str, Any] | None = None, test=None):
    """``pdia`` (``variant``: a mutant) with only ``which`` sampled (its MH move, under its
    prior), the other hyperparameters fixed at the validation values, against
    :func:`pdia_exact_hyper`: the posterior predictive of every test string and the
    posterior mean of ``which``. Two-sided z-tests with ArviZ-ESS standard errors, Bonferroni
    over the quantities; a quantity the same in every sample must match to 1e-9. The
    moments of :func:`hyper_statistics` are what separates the hyperparameter mutants."""
    from bayesfa.samplers.pdia.pdfa import CRF, per_sample_log_prob
    from bayesfa.samplers.pdia.pdia import _PDIA
    from bayesfa.validation.harness import budget_options
    from bayesfa.validation.toys import all_strings, get_toy

    t0 = time.perf_counter()
    toy = get_toy(toy) if isinstance(toy, str) else toy
    test = all_strings() if test is None else test
    method = _PDIA()
    method.variant = variant
    opts = budget_options("pdia", toy, method, {**HYPER_BUDGET, **(budget or {}), which: None})
    fit = method.fit(toy.train, opts, seed, False)
    hyp = {k: opts[k] for k in PDIA_HYPER}
    ref, means = pdia_exact_hyper(toy.train, test, hyp, which)
    probs = np.exp(per_sample_log_prob(CRF, fit.arrays, opts, test, variant=variant))
    h = np.asarray(fit.trace[which], dtype=np.float64)
    series = ([(f"Pr({format_string(test.string(i))})", probs[:, :, i], float(np.exp(ref[i])))
               for i in range(test.n_strings)]
              + [(label, f(h), means[label]) for label, f in hyper_statistics(which).items()])
    label = "pdia" if variant == 0 else f"pdia variant {variant}"
    prior = "Uniform(0, 1)" if which in _UNIT_PRIOR else "Gamma(1, 1)"
    fixed = ", ".join(f"{k}={v}" for k, v in hyp.items() if v is not None)
    return _moment_check(
        f"hyper-{which}", series, alpha, t0,
        f"{label} with only {which} sampled (MH under {prior}; {fixed}) on toy {toy.name!r}: "
        f"predictive of {test.n_strings} strings and moments of {which} | x vs the enumeration "
        f"with {which} integrated out by quadrature (pdia_exact_hyper); {opts['chains']} "
        f"chains x {opts['iterations']} sweeps")


def _moment_check(name: str, series, alpha: float, t0: float, description: str):
    """A check of Monte Carlo means against exact values: ``series`` lists ``(label, draws
    [chain, draw], exact)``; two-sided z-tests with ArviZ-ESS standard errors, Bonferroni
    over the series; a series the same in every draw must match to 1e-9 (relative)."""
    from bayesfa.validation.diagnostics import ess_mean

    crit = float(sps.norm.isf(alpha / (2 * len(series))))
    rows = []
    for label, x, exact in series:
        est = float(x.mean())
        sd = float(np.std(x, ddof=1))
        if sd <= 1e-12 * abs(est):
            se, z = 0.0, (0.0 if abs(est - exact) <= 1e-9 * abs(exact) else math.inf)
        else:
            se = sd / math.sqrt(ess_mean(x))
            z = (est - exact) / se
        rows.append({"quantity": label, "estimate": est, "exact": exact, "mcse": se, "z": z,
                     "pass": bool(abs(z) <= crit)})
    return _check(
        name=name, passed=all(r["pass"] for r in rows), description=description, alpha=alpha,
        columns=["quantity", "estimate", "exact", "mcse", "z", "pass"], rows=rows,
        summary={"critical_z": crit, "max_abs_z": max(abs(r["z"]) for r in rows),
                 "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g} (two-sided z-tests, Bonferroni over {len(rows)} "
               f"quantities; MC standard errors from ArviZ ESS)"])


# -- Geweke's joint distribution test -----------------------------------------------------------

def geweke(family: str, variant: int = 0, *, n_strings: int = 3, cap: int = 5,
           n_forward: int = 10_000, n_chains: int = 4, n_iterations: int = 1_500,
           seed: int = 0, alpha: float = ALPHA, free: tuple[str, ...] = ()):
    """Geweke's joint test (module docstring) of ``pdfa`` (N=2) or ``pdia``; the
    hyperparameters in ``free`` are drawn from their priors on the marginal-conditional side,
    moved by their MH moves on the successive-conditional side, and are statistics (check
    ``geweke-hyper``)."""
    hyp = dict(_FIXED_PDFA if family == "pdfa" else _FIXED_PDIA)
    model = 0 if family == "pdfa" else 1
    rng = np.random.default_rng(seed)
    sim = Simulator(model, hyp, n_letters=2, n_states=2, n_strings=n_strings, cap=cap,
                    variant=variant, free=free)
    label = family if variant == 0 else f"{family} variant {variant}"
    given = "; ".join(part for part in (
        ", ".join(f"{k}={v}" for k, v in hyp.items() if k not in free),
        f"{', '.join(free)} from their priors" if free else "") if part)
    check = geweke_table(sim, rng, n_forward, n_chains, n_iterations, alpha,
                         f"{label}: Geweke joint test, {n_strings} strings of <= {cap} letters "
                         f"in all over 2 letters, {given}")
    if free:
        check.name = "geweke-hyper"
    return check


def geweke_table(sim: "Simulator", rng, n_forward: int, n_chains: int, n_iterations: int,
                 alpha: float, description: str):
    """Run both sides of Geweke's test on ``sim`` and compare every statistic (z-tests,
    ArviZ ESS standard errors, Bonferroni); ``description`` heads the check."""
    from bayesfa.validation.diagnostics import ess_mean

    t0 = time.perf_counter()
    fwd = sim.forward(n_forward, rng)
    succ = sim.successive(n_chains, n_iterations, rng)
    names = list(fwd)
    crit = float(sps.norm.isf(alpha / (2 * len(names))))
    rows = []
    for name in names:
        a = fwd[name]
        b = succ[name]
        se_a = float(np.std(a, ddof=1) / math.sqrt(a.size))
        ess = ess_mean(b)
        se_b = float(np.std(b, ddof=1) / math.sqrt(ess)) if ess > 0 else math.nan
        se = math.sqrt(se_a ** 2 + se_b ** 2)
        z = (float(b.mean()) - float(a.mean())) / se if se > 0 else 0.0
        rows.append({"statistic": name, "forward": float(a.mean()), "successive": float(b.mean()),
                     "mcse": se, "z": z, "pass": bool(abs(z) <= crit)})
    return _check(
        name="geweke", passed=all(r["pass"] for r in rows),
        description=(f"{description}; {n_forward} prior draws vs {n_chains} "
                     f"successive-conditional chains x {n_iterations}"),
        alpha=alpha, columns=["statistic", "forward", "successive", "mcse", "z", "pass"],
        rows=rows, summary={"critical_z": crit, "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g} (two-sided z-tests, Bonferroni over {len(names)} "
               f"statistics; MC standard errors from ArviZ ESS)"])


class Simulator:
    """The generative process of the PDFA / PDIA for Geweke's test: ``m`` strings over
    ``n_letters`` letters with at most ``cap`` letters in all (larger data sets are redrawn,
    i.e. everything is conditioned on that event), hyperparameters fixed except those in
    ``free``: :meth:`_fresh` draws them from their priors (Gamma(1, 1), discounts
    Uniform(0, 1)) into ``self.hyp``, which then holds the current chain's values (the
    sweeps move them in place; one chain or draw at a time). Data and statistics always
    follow the true model; only the sweeps use ``variant``."""

    def __init__(self, model: int, hyp: dict[str, float], *, n_letters: int, n_states: int,
                 n_strings: int, cap: int, variant: int = 0, free: tuple[str, ...] = ()):
        from bayesfa.samplers.pdia.pdfa import _SLOTS, Data, hyper_values

        self.model, self.variant = model, variant
        self.n_letters, self.n_strings, self.cap = n_letters, n_strings, cap
        self.hyp, _ = hyper_values(model, hyp)
        self.free = {name: _SLOTS[name] for name in free}
        self.fixed = np.ones(5, dtype=np.int64)
        self.fixed[list(self.free.values())] = 0
        self.n_cap = n_states + 1 if model == 0 else 2 * cap + 2
        self.max_tokens = cap + n_strings
        self.dummy = Data(np.zeros(self.max_tokens, dtype=np.int32), 1, n_letters + 1)

    def _fresh(self, rng):
        from bayesfa.samplers.pdia._pdfa_kernel import fill_lg, log_dirichlet_variate
        from bayesfa.samplers.pdia.pdfa import ChainState

        st = ChainState(self.model, self.dummy, self.n_cap)
        for name, slot in self.free.items():
            self.hyp[slot] = rng.random() if name in _UNIT_PRIOR else rng.exponential()
        st.hyp = self.hyp  # the same array: the chain's hyperparameters
        fill_lg(st.lg, self.hyp[1], self.n_letters + 1)
        if self.model == 0:
            log_dirichlet_variate(np.full(self.n_cap, self.hyp[2] / self.n_cap), rng, st.lmu)
            st.mu[:] = np.exp(st.lmu)
        return st

    def _generate(self, st, rng, retry: bool = True) -> np.ndarray | None:
        """New data from the configuration of ``st`` (entries drawn just in time), then the
        entries the data do not visit are dropped and the counts set. Returns the tokens;
        ``None`` when more than ``cap`` letters came out and not ``retry``."""
        from bayesfa.samplers.pdia import _crf_kernel as C
        from bayesfa.samplers.pdia import _pdfa_kernel as K

        n_sym = self.n_letters + 1
        while True:
            cnt = np.zeros((self.n_cap, n_sym), dtype=np.int64)
            tokens = []
            new = []
            letters = 0
            ok = True
            for _ in range(self.n_strings):
                q = 0
                while True:
                    w = self._emission_weights(st, cnt[q])
                    s = int(min(np.searchsorted(np.cumsum(w), rng.random() * w.sum(),
                                                side="right"), n_sym - 1))
                    cnt[q, s] += 1
                    tokens.append(s)
                    if s == 0:
                        break
                    letters += 1
                    if letters > self.cap:
                        ok = False
                        break
                    if st.delta[q, s] < 0:
                        seat = C.sample_seat(self.model, rng, s, *self._seating(st), self.hyp, 0)
                        if seat < 0:
                            raise RuntimeError("state capacity")
                        C.add(self.model, s, seat, *self._seating(st), self.hyp, 0)
                        st.delta[q, s] = C.seat_dish(self.model, seat, st.tabs)
                        st.seat[q, s] = seat
                        new.append((q, s))
                    q = int(st.delta[q, s])
                if not ok:
                    break
            if ok:
                break
            if not retry:
                return None
            for q, s in reversed(new):
                C.rem(self.model, s, st.seat[q, s], *self._seating(st), self.hyp, 0)
                st.delta[q, s] = -1
                st.seat[q, s] = -1
            C.end_move(st.tabs, st.sts, st.meta)
        sym = np.array(tokens, dtype=np.int32)
        # drop what the new data do not visit, set the counts
        K.eval_path(self.model, 0, sym, 1, st.delta, st.seat, st.cnt2, st.ctot2,
                    st.vis, st.newq, st.news, *st.seating(), self.hyp, rng)
        n_o = K._collect_old(st.delta, st.seat, st.vis, st.meta[7], st.meta[6], 1, st.oq, st.os,
                             st.oseat)
        for o in range(n_o):
            C.rem(self.model, st.os[o], st.oseat[o], *self._seating(st), self.hyp, 0)
            st.delta[st.oq[o], st.os[o]] = -1
            st.seat[st.oq[o], st.os[o]] = -1
        C.end_move(st.tabs, st.sts, st.meta)
        st.cnt[:] = st.cnt2
        st.ctot[:] = st.ctot2
        return sym

    def _emission_weights(self, st, row):
        """The emission predictive of a state with counts ``row`` (``Dir(beta / S)``)."""
        beta = self.hyp[1]
        return (row + beta / row.size) / (row.sum() + beta)

    def _after_sweep(self, st, rng):
        """Moves of a sweep beyond the kernel's (none here; see pdia_smoothed_checks)."""

    @staticmethod
    def _seating(st):
        return (st.nj, st.v, st.mu, st.tabs, st.col_tabs, st.col_T, st.sts, st.meta)

    def statistics(self, st, sym) -> dict[str, float]:
        from bayesfa.samplers.pdia import _pdfa_kernel as K

        hi = int(st.meta[6])
        out = {"log_joint": K.log_joint(self.model, 0, st.cnt, st.ctot, st.meta, st.v,
                                        st.nj, st.mu, st.tabs, st.col_tabs, st.col_T, st.sts,
                                        self.hyp, st.lg, 1, st.lmu),
               "states_used": float(K.n_states_used(st.ctot, hi)),
               "letters": float((sym != 0).sum()),
               "transitions": float(st.nj[1:].sum()),
               "returns_to_q0": float((st.delta[:, 1:] == 0).sum())}
        if self.model == 1:  # q0 is never a target in the PDIA (non-atomic base)
            out["tables"] = float(st.meta[2])
            del out["returns_to_q0"]
        for name, slot in self.free.items():
            out[name] = float(self.hyp[slot])
        return out

    def forward(self, n: int, rng) -> dict[str, np.ndarray]:
        rows = []
        for _ in range(n):
            while True:  # (mu, x) jointly conditioned on <= cap letters: redraw both
                st = self._fresh(rng)
                sym = self._generate(st, rng, retry=False)
                if sym is not None:
                    break
            rows.append(self.statistics(st, sym))
        return {k: np.array([r[k] for r in rows]) for k in rows[0]}

    def successive(self, n_chains: int, n_iterations: int, rng) -> dict[str, np.ndarray]:
        from bayesfa.samplers.pdia import _pdfa_kernel as K

        out: dict[str, list] = {}
        moves = self.cap + self.n_strings
        stats = np.zeros(K.N_STATS)
        for _ in range(n_chains):
            while True:
                st = self._fresh(rng)
                sym = self._generate(st, rng, retry=False)
                if sym is not None:
                    break
            chain = []
            for _ in range(n_iterations):
                K.sweep(self.model, self.variant, sym, 1, st.delta, st.seat, st.cnt, st.ctot,
                        st.cnt2, st.ctot2, st.vis, st.changed, st.newq, st.news, st.oq, st.os,
                        st.oseat, *st.seating(), self.hyp, st.lg, self.fixed, st.lmu, 5, 0.5,
                        True, moves, moves, rng, stats)
                self._after_sweep(st, rng)
                sym = self._generate(st, rng)
                chain.append(self.statistics(st, sym))
            for k in chain[0]:
                out.setdefault(k, []).append([r[k] for r in chain])
        return {k: np.array(v) for k, v in out.items()}


# -- the recorded check of the PDIA ---------------------------------------------------------------

#: slots of the recorded ``hyp [chain, draw, 5]``, as the PDIA front documents them
#: (``alpha, beta, gamma | alpha0, d, d0``; the PDIA's ``alpha0`` sits in ``gamma``'s slot)
_PDIA_HYP_SLOTS = {"alpha": 0, "beta": 1, "alpha0": 2, "d": 3, "d0": 4}


def _emission_log_marginal(counts: np.ndarray, beta: float, b: np.ndarray) -> float:
    """``sum_rows log [Gamma(beta) / Gamma(beta + n) prod_s Gamma(b_s + c_s) / Gamma(b_s)]``:
    each used row's emission counts under its Dirichlet(``b``), ``sum(b) = beta`` (an empty
    row adds 0)."""
    out = 0.0
    for row in counts:
        n = int(row.sum())
        if n == 0:
            continue
        out += math.lgamma(beta) - math.lgamma(beta + n)
        out += sum(math.lgamma(b[s] + c) - math.lgamma(b[s]) for s, c in enumerate(row) if c > 0)
    return out


def pdia_draw_log_joint(delta, seat, counts, tdish, n_tab, hyp,
                        lpi0=None) -> tuple[float, int, int]:
    """``(log p(x, configuration | hyperparameters), states emitting, tables)`` of one
    recorded PDIA draw, from the paper's formulas in plain Python (not the kernel): the
    Dirichlet-multinomial of each state's emissions (Eq. x:end, ``beta / S`` per symbol), the
    Pitman-Yor EPPF (:func:`_log_eppf`) of each column's tables (their sizes: the instantiated
    entries ``(q, s)`` seated there; ``alpha, d``) and of the top level (the tables per dish;
    ``alpha0, d0``). ``delta``, ``seat``, ``counts`` ``[rows, S]``; ``tdish [>= n_tab]``.
    ``lpi0`` (the smoothed PDIA): ``log pi0`` ``[S]``, the pseudo-counts ``beta pi0_s`` in
    place of ``beta / S``."""
    h = {k: float(hyp[i]) for k, i in _PDIA_HYP_SLOTS.items()}
    counts = np.asarray(counts, dtype=np.int64)
    n_sym = counts.shape[1]
    b = (np.full(n_sym, h["beta"] / n_sym) if lpi0 is None
         else h["beta"] * np.exp(np.asarray(lpi0, dtype=np.float64)))
    out = _emission_log_marginal(counts, h["beta"], b)
    used = np.asarray(delta) >= 0
    for s in range(n_sym):
        tables = np.asarray(seat)[used[:, s], s]
        out += _log_eppf(np.bincount(tables).tolist(), h["alpha"], h["d"]) if tables.size else 0.0
    dishes = np.asarray(tdish)[:int(n_tab)]
    if dishes.size:
        out += _log_eppf(np.bincount(dishes).tolist(), h["alpha0"], h["d0"])
    return out, int((counts.sum(axis=1) > 0).sum()), int(n_tab)


def pdia_recompute_trace(arrays, trace, options, train):
    """The ``recorded`` check's recomputations (:mod:`bayesfa.validation.recorded`) for the
    PDIA: the log joint by :func:`pdia_draw_log_joint`, the states emitting and the tables,
    the hyperparameters from the recorded ones; row: each draw's emission counts are the
    data's (every symbol's total; the end marker's: the number of strings). With ``lpi0`` in
    the arrays (the smoothed PDIA), the emissions back off to ``pi0``, the log joint gains
    ``log Dir(pi0 | beta0 / S)`` and the trace's ``beta0`` and ``pi0_entropy`` (nats) are
    recomputed from the recorded ``beta0`` and ``log pi0``."""
    from scipy.special import gammaln

    from bayesfa.validation.recorded import Recomputed

    smoothed = "lpi0" in arrays
    shape = np.shape(arrays["log_joint"])
    lj = np.empty(shape)
    states = np.empty(shape, dtype=np.int64)
    tables = np.empty(shape, dtype=np.int64)
    for c in range(shape[0]):
        for d in range(shape[1]):
            lj[c, d], states[c, d], tables[c, d] = pdia_draw_log_joint(
                arrays["delta"][c, d], arrays["seat"][c, d], arrays["counts"][c, d],
                arrays["tdish"][c, d], arrays["n_tab"][c, d], arrays["hyp"][c, d],
                arrays["lpi0"][c, d] if smoothed else None)
    out = {}
    if smoothed:  # log Dir(pi0 | beta0 / S), written from the density
        lpi0, beta0 = np.asarray(arrays["lpi0"]), np.asarray(arrays["beta0"], dtype=np.float64)
        n_sym = lpi0.shape[-1]
        lj += (gammaln(beta0) - n_sym * gammaln(beta0 / n_sym)
               + (beta0 / n_sym - 1.0) * lpi0.sum(axis=-1))
        p0 = np.exp(lpi0)
        out["pi0_entropy"] = Recomputed(-(p0 * np.where(p0 > 0, lpi0, 0.0)).sum(axis=-1),
                                        trace["pi0_entropy"], 1e-9, "-sum pi0 log pi0")
        out["beta0"] = Recomputed(beta0, trace["beta0"], 0.0, "the recorded beta0")
    out |= {"log_joint": Recomputed(lj, trace["log_joint"], 1e-9,
                                   "emission Dirichlet-multinomials + Pitman-Yor EPPFs of the "
                                   "columns and the top level (pdfa.pdia_draw_log_joint)"),
           "n_states": Recomputed(states, trace["n_states"], 0.0, "states with emissions"),
           "n_tables": Recomputed(tables, trace["n_tables"], 0.0, "tables of the franchise")}
    hyp = np.asarray(arrays["hyp"])
    for name, slot in _PDIA_HYP_SLOTS.items():
        if name in trace:
            out[name] = Recomputed(hyp[:, :, slot], trace[name], 0.0,
                                   f"the recorded hyperparameters' {name} (slot {slot})")
    return out, walk_rows(arrays, options, train)


# -- the recorded check of the finite PDFA ------------------------------------------------------

def walk_data(delta, train: Corpus, sequence: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(emission counts [rows, S], visited [rows, S])`` of the data walked through the
    recorded transitions ``delta [rows, S]`` from ``q0`` (plain Python, not the kernel's
    ``eval_path``): sentences, symbol 0 (the end) is emitted and leads back to ``q0``; a
    sequence, the letters ``1..L`` as symbols ``0..L-1``, one walk. ``visited`` marks the
    entries ``(q, s)`` the walk takes (the end excluded): the ones that must be instantiated.
    A walk that reaches an entry ``delta`` leaves at -1 stops: its counts are then partial
    and ``visited`` holds that entry, so the consistency rows fail."""
    delta = np.asarray(delta)
    counts = np.zeros(delta.shape, dtype=np.int64)
    visited = np.zeros(delta.shape, dtype=bool)
    nf = 0 if sequence else 1
    q = 0
    for tok in np.asarray(train.tokens, dtype=np.int64):
        if sequence:
            if tok == 0:
                continue
            tok -= 1
        counts[q, tok] += 1
        if tok < nf:
            q = 0
            continue
        visited[q, tok] = True
        q = int(delta[q, tok])
        if q < 0:
            break
    return counts, visited


def walk_rows(arrays, options, train: Corpus) -> list[dict[str, Any]]:
    """Rows of the ``recorded`` check on the recorded state of a PDFA or PDIA draw: the
    emission counts are the data's walk through the recorded transitions
    (:func:`walk_data`), and the instantiated entries (``delta >= 0``) are exactly the
    entries that walk visits (the kernel's invariant: zero-count transitions deleted)."""
    sequence = bool(options.get("sequence", False))
    counts = np.asarray(arrays["counts"])
    delta = np.asarray(arrays["delta"])
    bad_counts = np.zeros(counts.shape[:2], dtype=bool)
    bad_delta = np.zeros(counts.shape[:2], dtype=bool)
    for c in range(counts.shape[0]):
        for d in range(counts.shape[1]):
            walked, visited = walk_data(delta[c, d], train, sequence)
            bad_counts[c, d] = not np.array_equal(walked, counts[c, d])
            bad_delta[c, d] = not np.array_equal(visited, delta[c, d] >= 0)
    return [{"quantity": "counts (the recorded state)", "draws": int(bad_counts.size),
             "max_diff": float(bad_counts.sum()), "tolerance": 0.0,
             "pass": not bool(bad_counts.any()),
             "how": "each state's emission counts = the data walked through the recorded "
                    "delta from q0 (draws breaking it)"},
            {"quantity": "delta (the recorded state)", "draws": int(bad_delta.size),
             "max_diff": float(bad_delta.sum()), "tolerance": 0.0,
             "pass": not bool(bad_delta.any()),
             "how": "the instantiated entries (delta >= 0) = the entries that walk visits "
                    "(draws breaking it)"}]


#: slots of the finite PDFA's recorded ``hyp [chain, draw, 5]`` (``alpha, beta, gamma``)
_PDFA_HYP_SLOTS = {"alpha": 0, "beta": 1, "gamma": 2}


def pdfa_draw_log_joint(delta, counts, mu, hyp, nf: int = 1) -> float:
    """``log p(x, delta_V, mu | alpha, beta, gamma)`` of one recorded finite-PDFA draw, from
    the paper's formulas in plain Python (not the kernel): the Dirichlet-multinomial of each
    state's emissions (Eq. x:end, ``beta / S`` per symbol), the Polya urn of each column ``j
    >= nf`` over the instantiated entries (Eq. delta:pred with ``D+_j``: ``Gamma(alpha) /
    Gamma(alpha + n_j) prod_k Gamma(alpha mu_k + v_kj) / Gamma(alpha mu_k)``, ``v_kj`` the
    entries of column ``j`` that lead to ``k``) and ``log Dir(mu | gamma / |Q|)`` (Eq. gen:mu,
    ``|Q|`` = the recorded ``mu``'s length)."""
    h = {k: float(hyp[i]) for k, i in _PDFA_HYP_SLOTS.items()}
    counts = np.asarray(counts, dtype=np.int64)
    delta = np.asarray(delta, dtype=np.int64)
    mu = np.asarray(mu, dtype=np.float64)
    n_sym, n_q = counts.shape[1], mu.size
    out = _emission_log_marginal(counts, h["beta"], np.full(n_sym, h["beta"] / n_sym))
    for j in range(nf, n_sym):
        targets = delta[delta[:, j] >= 0, j]
        if targets.size == 0:
            continue
        out += math.lgamma(h["alpha"]) - math.lgamma(h["alpha"] + targets.size)
        for k, v in zip(*np.unique(targets, return_counts=True)):
            out += math.lgamma(h["alpha"] * mu[k] + v) - math.lgamma(h["alpha"] * mu[k])
    g = h["gamma"]
    with np.errstate(divide="ignore"):
        out += (math.lgamma(g) - n_q * math.lgamma(g / n_q)
                + (g / n_q - 1.0) * float(np.log(mu).sum()))
    return out


def pdfa_recompute_trace(arrays, trace, options, train):
    """The ``recorded`` check's recomputations (:mod:`bayesfa.validation.recorded`) for the
    finite PDFA: the log joint by :func:`pdfa_draw_log_joint` (tolerance 1e-9; a ``mu``
    recorded as 0 after underflow would show as a failure: the toys' ``gamma`` keeps it
    away), the states emitting, the instantiated entries (the trace's ``n_tables``: the
    finite model seats each entry at its target state), the hyperparameters from the
    recorded ``hyp``; rows: the recorded counts and ``delta`` against the data's walk."""
    from bayesfa.validation.recorded import Recomputed

    nf = 0 if options.get("sequence", False) else 1
    shape = np.shape(arrays["log_joint"])
    lj = np.empty(shape)
    states = np.empty(shape, dtype=np.int64)
    entries = np.empty(shape, dtype=np.int64)
    for c in range(shape[0]):
        for d in range(shape[1]):
            delta, counts = np.asarray(arrays["delta"][c, d]), np.asarray(arrays["counts"][c, d])
            lj[c, d] = pdfa_draw_log_joint(delta, counts, arrays["mu"][c, d],
                                           arrays["hyp"][c, d], nf)
            states[c, d] = int((counts.sum(axis=1) > 0).sum())
            entries[c, d] = int((delta[:, nf:] >= 0).sum())
    out = {"log_joint": Recomputed(lj, trace["log_joint"], 1e-9,
                                   "emission Dirichlet-multinomials + each column's Polya urn + "
                                   "log Dir(mu | gamma / |Q|) (pdfa.pdfa_draw_log_joint)"),
           "n_states": Recomputed(states, trace["n_states"], 0.0, "states with emissions"),
           "n_tables": Recomputed(entries, trace["n_tables"], 0.0,
                                  "instantiated entries (delta >= 0, letters only)")}
    hyp = np.asarray(arrays["hyp"])
    for name, slot in _PDFA_HYP_SLOTS.items():
        if name in trace:
            out[name] = Recomputed(hyp[:, :, slot], trace[name], 0.0,
                                   f"the recorded hyperparameters' {name} (slot {slot})")
    return out, walk_rows(arrays, options, train)
