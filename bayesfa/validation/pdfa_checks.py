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

Kernel checks: :func:`geweke` -- Geweke's (2004) joint distribution test on
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
hyperparameter moves. The PDIA's hyperparameter moves (``alpha, alpha0, beta`` under
Gamma(1, 1), ``d, d0`` under Uniform(0, 1)) have no exact reference yet.

On these small data sets Geweke's test does not separate the mutants from the kernel (the
proposal-ratio terms matter only when a move changes which transitions are visited); the
predictive checks do.

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
times prior ratio) for both, ``no-discount`` (the PDIA's seating rules without the discounts
``d, d0``, i.e. the HDP instead of the HPY) for ``pdia``.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from scipy import stats as sps

from bayesfa.corpus import Corpus

ALPHA = 1e-3
TRUNCATION_RESOLUTION = 1e-4
MUTANTS = {"pdfa": {"no-proposal-ratio": 1}, "pdia": {"no-proposal-ratio": 1, "no-discount": 2}}


def _check(**kwargs):
    from bayesfa.validation.checks import Check

    return Check(**kwargs)


# -- the PDIA by exact enumeration -----------------------------------------------------------

class _Franchise:
    """A Pitman-Yor Chinese restaurant franchise with a non-atomic base (plain Python)."""

    def __init__(self, alpha, d, alpha0, d0):
        self.alpha, self.d, self.alpha0, self.d0 = alpha, d, alpha0, d0
        self.tables: dict[int, list[list[int]]] = {}   # column -> [[n, dish], ...]
        self.m: dict[int, int] = {}                     # dish -> tables

    def options(self, j: int, k_max: int):
        """``[(prob, kind, arg)]`` for a new customer of column ``j``; kind ``"join"`` (table
        index), ``"old"`` (existing dish), ``"new"`` (a new state); plus the probability of
        the new-state branches cut off by ``k_max`` states."""
        tabs = self.tables.get(j, [])
        n = sum(t[0] for t in tabs)
        out = []
        for idx, (nt, _) in enumerate(tabs):
            out.append(((nt - self.d) / (self.alpha + n), "join", idx))
        p_new_table = (self.alpha + self.d * len(tabs)) / (self.alpha + n) if n else 1.0
        big_m = sum(self.m.values())
        n_dish = len(self.m)
        for k, mk in self.m.items():
            out.append((p_new_table * (mk - self.d0) / (self.alpha0 + big_m), "old", k))
        p_new_dish = p_new_table * ((self.alpha0 + self.d0 * n_dish) / (self.alpha0 + big_m)
                                    if big_m else 1.0)
        if n_dish < k_max:
            out.append((p_new_dish, "new", n_dish + 1))
            return out, 0.0
        return out, p_new_dish

    def seat(self, j, kind, arg):
        """Seat; returns ``(dish, undo)``."""
        tabs = self.tables.setdefault(j, [])
        if kind == "join":
            tabs[arg][0] += 1
            return tabs[arg][1], ("join", j, arg)
        k = arg
        tabs.append([1, k])
        self.m[k] = self.m.get(k, 0) + 1
        return k, ("table", j, k)

    def unseat(self, undo):
        kind, j, arg = undo
        if kind == "join":
            self.tables[j][arg][0] -= 1
            return
        self.tables[j].pop()
        self.m[arg] -= 1
        if self.m[arg] == 0:
            del self.m[arg]


def _symbols(corpus: Corpus, n_letters: int) -> list[int]:
    return [int(t) for t in corpus.with_alphabet(n_letters).tokens]


def pdia_log_marginals(train: Corpus, tests: Corpus, hyp: dict[str, float], k_max: int):
    """``(log Z(x), log Z(x b) for each b, dropped mass of Z(x), of each Z(x b))``."""
    n_letters = max(train.alphabet_size, tests.alphabet_size)
    n_sym = n_letters + 1
    x = _symbols(train, n_letters)
    test_tokens = [_symbols(tests.subset([i]), n_letters) for i in range(tests.n_strings)]
    beta = hyp["beta"]
    crf = _Franchise(hyp["alpha"], hyp["d"], hyp["alpha0"], hyp["d0"])
    z = [0.0]
    zb = np.zeros(len(test_tokens))
    dropped_x = [0.0]
    dropped_b = np.zeros(len(test_tokens))
    delta: dict = {}
    cnt: dict = {}

    def leaf_x(w):
        z[0] += w
        for i, b in enumerate(test_tokens):
            acc = [0.0]
            drop = [0.0]
            _walk(b, 0, 0, w, crf, delta, cnt, beta, n_sym, k_max,
                  lambda wb: acc.__setitem__(0, acc[0] + wb), drop)
            zb[i] += acc[0]
            dropped_b[i] += drop[0]

    _walk(x, 0, 0, 1.0, crf, delta, cnt, beta, n_sym, k_max, leaf_x, dropped_x)
    return z[0], zb, dropped_x[0], dropped_b + dropped_x[0]


def _walk(tokens, pos, q, weight, crf, delta, cnt, beta, n_sym, k_max, leaf, dropped):
    """Depth-first sum (see :func:`pdia_log_marginals`); emission counts restored on return."""
    touched = []
    while pos < len(tokens):
        s = tokens[pos]
        row = cnt.setdefault(q, [0] * (n_sym + 1))
        weight *= (row[s] + beta / n_sym) / (row[n_sym] + beta)
        row[s] += 1
        row[n_sym] += 1
        touched.append((q, s))
        pos += 1
        if s == 0:
            q = 0
            continue
        if (q, s) in delta:
            q = delta[(q, s)]
            continue
        opts, cut = crf.options(s, k_max)
        dropped[0] += weight * cut
        for prob, kind, arg in opts:
            k, undo = crf.seat(s, kind, arg)
            delta[(q, s)] = k
            _walk(tokens, pos, k, weight * prob, crf, delta, cnt, beta, n_sym, k_max, leaf,
                  dropped)
            del delta[(q, s)]
            crf.unseat(undo)
        break
    else:
        leaf(weight)
    for q_, s_ in touched:
        cnt[q_][s_] -= 1
        cnt[q_][n_sym] -= 1


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


# -- specs -------------------------------------------------------------------------------------

_FIXED_PDFA = {"alpha": 1.0, "beta": 1.0, "gamma": 1.0}
_FIXED_PDIA = {"alpha": 1.0, "beta": 1.0, "alpha0": 1.0, "d": 0.3, "d0": 0.3}


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
        method = type(base)()
        method.variant = code
        method.name = f"{self.family}:mutant-{variant}"
        method.validation = None
        # the harness reads the hooks off the mutant itself
        for attr in ("validation_budget", "exact_reference", "per_sample_log_prob",
                     "kernel_checks"):
            setattr(method, attr, getattr(spec, attr))
        return method

    def per_sample_log_prob(self, arrays, options, test):
        from bayesfa.samplers.pdfa import per_sample_log_prob

        return per_sample_log_prob(self.model, arrays, options, test, variant=self.variant)

    def kernel_checks(self, toy, *, seed: int = 0, alpha: float = ALPHA):
        return [geweke(self.family, self.variant, seed=seed, alpha=alpha)]


class PDFASpec(_Spec):
    family = "pdfa"
    model = 0
    fixed = _FIXED_PDFA
    validation_budget = {"iterations": 10_100, "burn_in": 100, "period": 2, "chains": 4,
                         "predict_draws": 4, **_FIXED_PDFA}

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
        """Geweke, and the predictive with alpha, beta, gamma sampled under their Gamma(1, 1)
        priors against the exact enumeration with the hyperpriors integrated out."""
        from bayesfa.validation.harness import compare

        name = self.family if self.variant == 0 else f"{self.family}:mutant-{self.variant_name}"
        hyper = compare(name, toy, seed + 1, alpha=alpha,
                        options={"alpha": None, "beta": None, "gamma": None})
        check = hyper.checks[0]
        check.name = "predictive-hyper"
        check.description += " (alpha, beta, gamma sampled by MH under Gamma(1, 1))"
        return [geweke(self.family, self.variant, seed=seed, alpha=alpha), check]


class PDIASpec(_Spec):
    family = "pdia"
    model = 1
    fixed = _FIXED_PDIA
    validation_budget = {"iterations": 10_100, "burn_in": 100, "period": 2, "chains": 4,
                         "predict_draws": 4, **_FIXED_PDIA}

    def exact_reference(self, toy, test, options):
        hyp = {k: options[k] for k in ("alpha", "beta", "alpha0", "d", "d0")}
        ref, info = pdia_exact_predictive(toy.train, test, hyp)
        what = ", ".join(f"{k}={v}" for k, v in hyp.items())
        return {"reference": ref, "exact": ref,
                "kind": f"exact PDIA posterior predictive ({what}) by enumeration of the CRF "
                        f"seatings, truncated at {info['k_max']} states (relative error "
                        f"< {info['relative_interval']:.1e})"}


PDFA = PDFASpec()
PDIA = PDIASpec()


# -- Geweke's joint distribution test -----------------------------------------------------------

def geweke(family: str, variant: int = 0, *, n_strings: int = 3, cap: int = 5,
           n_forward: int = 10_000, n_chains: int = 4, n_iterations: int = 1_500,
           seed: int = 0, alpha: float = ALPHA):
    """Geweke's joint test (module docstring) of ``pdfa`` (N=2) or ``pdia``."""
    from bayesfa.validation.diagnostics import ess_mean

    t0 = time.perf_counter()
    hyp = dict(_FIXED_PDFA if family == "pdfa" else _FIXED_PDIA)
    model = 0 if family == "pdfa" else 1
    rng = np.random.default_rng(seed)
    sim = Simulator(model, hyp, n_letters=2, n_states=2, n_strings=n_strings, cap=cap,
                       variant=variant)
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
    label = family if variant == 0 else f"{family} variant {variant}"
    return _check(
        name="geweke", passed=all(r["pass"] for r in rows),
        description=(f"{label}: Geweke joint test, {n_strings} strings of <= {cap} letters in "
                     f"all over 2 letters, {', '.join(f'{k}={v}' for k, v in hyp.items())}; "
                     f"{n_forward} prior draws vs {n_chains} successive-conditional chains x "
                     f"{n_iterations}"),
        alpha=alpha, columns=["statistic", "forward", "successive", "mcse", "z", "pass"],
        rows=rows, summary={"critical_z": crit, "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate {alpha:g} (two-sided z-tests, Bonferroni over {len(names)} "
               f"statistics; MC standard errors from ArviZ ESS)"])


class Simulator:
    """The generative process of the PDFA / PDIA for Geweke's test: ``m`` strings over
    ``n_letters`` letters with at most ``cap`` letters in all (larger data sets are redrawn,
    i.e. everything is conditioned on that event), hyperparameters fixed. Data and
    statistics always follow the true model; only the sweeps use ``variant``."""

    def __init__(self, model: int, hyp: dict[str, float], *, n_letters: int, n_states: int,
                 n_strings: int, cap: int, variant: int = 0):
        from bayesfa.samplers.pdfa import Data, hyper_values

        self.model, self.variant = model, variant
        self.n_letters, self.n_strings, self.cap = n_letters, n_strings, cap
        self.hyp, _ = hyper_values(model, hyp)
        self.fixed = np.ones(5, dtype=np.int64)
        self.n_cap = n_states + 1 if model == 0 else 2 * cap + 2
        self.max_tokens = cap + n_strings
        self.dummy = Data(np.zeros(self.max_tokens, dtype=np.int32), 1, n_letters + 1)

    def _fresh(self, rng):
        from bayesfa.samplers._pdfa_kernel import fill_lg, log_dirichlet_variate
        from bayesfa.samplers.pdfa import ChainState

        st = ChainState(self.model, self.dummy, self.n_cap)
        fill_lg(st.lg, self.hyp[1], self.n_letters + 1)
        if self.model == 0:
            log_dirichlet_variate(np.full(self.n_cap, self.hyp[2] / self.n_cap), rng, st.lmu)
            st.mu[:] = np.exp(st.lmu)
        return st

    def _generate(self, st, rng, retry: bool = True) -> np.ndarray | None:
        """New data from the configuration of ``st`` (entries drawn just in time), then the
        entries the data do not visit are dropped and the counts set. Returns the tokens;
        ``None`` when more than ``cap`` letters came out and not ``retry``."""
        from bayesfa.samplers import _crf_kernel as C
        from bayesfa.samplers import _pdfa_kernel as K

        n_sym = self.n_letters + 1
        beta = self.hyp[1]
        while True:
            cnt = np.zeros((self.n_cap, n_sym), dtype=np.int64)
            tokens = []
            new = []
            letters = 0
            ok = True
            for _ in range(self.n_strings):
                q = 0
                while True:
                    w = (cnt[q] + beta / n_sym) / (cnt[q].sum() + beta)
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

    @staticmethod
    def _seating(st):
        return (st.nj, st.v, st.mu, st.tabs, st.col_tabs, st.col_T, st.sts, st.meta)

    def statistics(self, st, sym) -> dict[str, float]:
        from bayesfa.samplers import _pdfa_kernel as K

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
        from bayesfa.samplers import _pdfa_kernel as K

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
                sym = self._generate(st, rng)
                chain.append(self.statistics(st, sym))
            for k in chain[0]:
                out.setdefault(k, []).append([r[k] for r in chain])
        return {k: np.array(v) for k, v in out.items()}
