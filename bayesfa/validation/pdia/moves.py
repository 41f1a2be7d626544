"""Exact single-move checks of the PDFA / PDIA transition moves and of the PDFA's ``mu`` move
(``bayesfa validate pdfa | pdia | pdia-smoothed``, checks ``move-entry``, ``move-table``,
``move-mu``).

Target. On a corpus small enough to enumerate every configuration, the exact posterior ``pi``
of each configuration is computed here, in plain Python, from the model's definition (Pfau,
Bartlett & Wood 2010): the prior of the instantiated transitions (the PDIA's Pitman-Yor
franchise, Eq. crf:low/crf:high with discounts, seated by
:func:`bayesfa.validation.pdia.pdfa.walk_seatings`; the finite PDFA's Polya urn given ``mu``,
Eq. delta:pred) times the collapsed emission likelihood (Eq. x:end; for ``pdia-smoothed``
with the pseudo-counts ``beta pi0_s`` of a fixed ``pi0``). PDIA configurations are taken up
to relabelling of states and tables (:func:`canonical`). Nothing here calls the kernel's
likelihood or seating code; the kernel is only *run*.

Test. ``n`` starting configurations are drawn i.i.d. from ``pi``; each is built as a chain
state (``_crf_kernel.rebuild``), one move of the kernel is applied (the sweep with a single
entry move or a single table move for the PDIA; for the finite PDFA ``move_entry`` on an entry
``(i, j)`` picked uniformly among all ``|Q| x |letters|`` pairs -- a no-op when it is not
instantiated -- at fixed ``mu``), and the configuration reached is read. The pairs ``(x, y)``
are then i.i.d. draws of ``pi(x) K(x, y)``, so

- *detailed balance* (``pi(x) K(x, y) = pi(y) K(y, x)``): given ``m = n(x->y) + n(y->x)``,
  ``n(x->y) ~ Binomial(m, 1/2)`` exactly; an exact two-sided binomial test per unordered
  pair, Bonferroni over the pairs with ``m > 0``;
- *stationarity* (``pi K = pi``): the configurations reached are i.i.d. ``pi``; Pearson's
  chi-squared against ``n pi`` (configurations with ``n pi < 5`` pooled).

Each corpus's two tests share ``alpha / rows`` equally, so a check's false-alarm rate is at
most ``alpha`` (the binomial tests are exact; the chi-squared is asymptotic with every
expected count >= 5). The ``z`` reported for detailed balance is the normal quantile of the
smallest pair p-value (``isf(p / 2)``), its critical value ``isf(alpha_DB / (2 P))``.

``move-mu`` (``pdfa``): on a fixed transition table with ``|Q| = 2``, the exact conditional
``p(mu | delta) ∝ Dir(mu | gamma / |Q|) prod_j Polya(v_.j | alpha mu)`` (Eq. gen:mu and
Eq. delta:end, the posterior of ``mu`` in Sect. "Posterior Inference in the Finite Model") is
tabulated on a fine logit grid (plain Python/NumPy); ``n`` starts ``mu ~ p(mu | delta)`` by
inversion, one kernel ``move_mu`` each; under stationarity ``F(mu')`` is i.i.d. uniform, tested
by Kolmogorov-Smirnov (exact for continuous ``F``; the grid's error is < 1e-6 in ``F``).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from scipy import stats as sps

from bayesfa.validation.checks import log_p_margin

ALPHA = 1e-3


def _check(**kwargs):
    from bayesfa.validation.checks import Check

    return Check(**kwargs)


# -- configurations and their exact posterior ---------------------------------------------------

def canonical(get, tokens) -> tuple:
    """A PDIA configuration up to the labels of states and tables: ``(state, letter, target,
    table)`` of each visited entry in the order the data first visit it, states and tables (per
    column) renumbered in order of first appearance. ``get(q, s) -> (target, table)``."""
    states, tables, key, seen, q = {0: 0}, {}, [], set(), 0
    for s in tokens:
        if s == 0:
            q = 0
            continue
        k, t = get(q, s)
        if (q, s) not in seen:
            seen.add((q, s))
            states.setdefault(k, len(states))
            tab = tables.setdefault(s, {})
            tab.setdefault(t, len(tab))
            key.append((states[q], s, states[k], tab[t]))
        q = k
    return tuple(key)


def _counts(tokens, delta) -> dict:
    """Emission counts ``{state: {symbol: n}}`` of the path of ``delta`` over ``tokens``."""
    cnt: dict = {}
    q = 0
    for s in tokens:
        row = cnt.setdefault(q, {})
        row[s] = row.get(s, 0) + 1
        q = 0 if s == 0 else delta[(q, s)]
    return cnt


def log_dirmult(cnt: dict, beta: float, base) -> float:
    """Eq. x:end with pseudo-counts ``beta base_s``: ``sum_q lgamma(beta) - lgamma(beta + C_q)
    + sum_s lgamma(beta base_s + c_qs) - lgamma(beta base_s)``."""
    out = 0.0
    for row in cnt.values():
        out += math.lgamma(beta) - math.lgamma(beta + sum(row.values()))
        for s, c in row.items():
            a = beta * base[s]
            out += math.lgamma(a + c) - math.lgamma(a)
    return out


def pdia_configurations(tokens, hyp: dict[str, float], n_sym: int, base=None):
    """``[(key, pi, representative)]`` for every PDIA configuration of ``tokens`` (canonical
    key, exact posterior probability, and one labelled instance: ``delta`` dict, ``seat`` dict
    of per-column table indices, ``tables`` dict column -> dishes). ``base``: the emission base
    (``None``: uniform ``1 / n_sym``, the PDIA; else ``pi0``, the smoothed PDIA)."""
    from bayesfa.validation.pdia.franchise import Franchise as _Franchise, walk_seatings

    base = [1.0 / n_sym] * n_sym if base is None else list(base)
    crf = _Franchise(hyp["alpha"], hyp["d"], hyp["alpha0"], hyp["d0"])
    out: dict = {}
    delta: dict = {}
    seat: dict = {}
    cut = [0.0]

    def leaf(w):
        key = canonical(lambda a, b: (delta[(a, b)], seat[(a, b)]), tokens)
        lw = math.log(w) + log_dirmult(_counts(tokens, delta), hyp["beta"], base)
        if key in out:
            out[key][0] = np.logaddexp(out[key][0], lw)
        else:
            out[key] = [lw, {"delta": dict(delta), "seat": dict(seat),
                             "tables": {j: [d for _, d in t] for j, t in crf.tables.items()}}]

    walk_seatings(tokens, 0, 0, 1.0, crf, delta, len(tokens) + 1, leaf, lambda q, s, w: w,
                  lambda touched: None, lambda w, c: cut.__setitem__(0, cut[0] + w * c), seat)
    if cut[0] != 0.0:
        raise RuntimeError("the enumeration was truncated")
    return _normalise(out)


def pdfa_configurations(tokens, hyp: dict[str, float], mu, n_sym: int):
    """``[(key, pi, delta)]`` for every transition table of the finite PDFA over the entries
    the data visit, given ``mu`` (``|Q| = len(mu)`` states, labels fixed): prior by the Polya
    urn of each column (Eq. delta:pred, ``(alpha mu_k + v_kj) / (alpha + D+_j)``) in order of
    first visit, times Eq. x:end with ``Dir(beta / S)``. Key: the sorted ``((q, s), k)``."""
    n_q = len(mu)
    base = [1.0 / n_sym] * n_sym
    alpha = hyp["alpha"]
    out: dict = {}

    def walk(pos, q, lw, delta, v, nj):
        while pos < len(tokens):
            s = tokens[pos]
            pos += 1
            if s == 0:
                q = 0
                continue
            if (q, s) in delta:
                q = delta[(q, s)]
                continue
            for k in range(n_q):
                p = (alpha * mu[k] + v.get((k, s), 0)) / (alpha + nj.get(s, 0))
                delta[(q, s)] = k
                v[(k, s)] = v.get((k, s), 0) + 1
                nj[s] = nj.get(s, 0) + 1
                walk(pos, k, lw + math.log(p), delta, v, nj)
                del delta[(q, s)]
                v[(k, s)] -= 1
                nj[s] -= 1
            return
        key = tuple(sorted(delta.items()))
        out[key] = [lw + log_dirmult(_counts(tokens, delta), hyp["beta"], base), dict(delta)]

    walk(0, 0, 0.0, {}, {}, {})
    return _normalise(out)


def _normalise(out: dict):
    keys = sorted(out)
    lw = np.array([out[k][0] for k in keys])
    p = np.exp(lw - lw.max())
    p /= p.sum()
    return [(k, float(pk), out[k][1]) for k, pk in zip(keys, p)]


# -- chain states built from a configuration ----------------------------------------------------

class _Case:
    """A corpus, hyperparameters and what a move kernel needs: the chain state of each
    configuration (built once, restored before every move)."""

    def __init__(self, model: int, strings, n_letters: int, hyp: dict[str, float], *,
                 mu=None, pi0=None):
        from bayesfa.corpus import Corpus
        from bayesfa.samplers.pdia import pdfa as P

        self.model, self.strings, self.hyp_d = model, strings, dict(hyp)
        corpus = Corpus.from_strings(strings, n_letters)
        self.data = P.as_symbols(corpus, False)
        self.tokens = [int(t) for t in self.data.sym]
        self.n_sym = self.data.n_symbols
        self.pi0 = None if pi0 is None else np.asarray(pi0, dtype=np.float64)
        if model == P.CRF:
            self.confs = pdia_configurations(self.tokens, hyp, self.n_sym, self.pi0)
            self.n_cap = 2 * len(self.tokens) + 4
        else:
            self.mu = np.asarray(mu, dtype=np.float64)
            self.confs = pdfa_configurations(self.tokens, hyp, list(self.mu), self.n_sym)
            self.n_cap = len(mu)
        self.pi = np.array([c[1] for c in self.confs])
        self.index = {c[0]: n for n, c in enumerate(self.confs)}
        self.hyp, _ = P.hyper_values(model, {k: v for k, v in hyp.items()
                                             if k in P.HYPER_NAMES[model]})
        self._states: dict[int, Any] = {}

    def describe(self) -> str:
        hyp = " ".join(f"{k}={v:g}" for k, v in self.hyp_d.items())
        extra = ""
        if self.model == 0:
            extra = " mu=" + "/".join(f"{m:g}" for m in self.mu)
        if self.pi0 is not None:
            extra = " pi0=" + "/".join(f"{m:g}" for m in self.pi0)
        return f"{self.strings} {hyp}{extra}"

    def state(self, n: int):
        """The chain state (a ``pdfa.ChainState``) of configuration ``n`` (cached)."""
        if n not in self._states:
            self._states[n] = self._build(self.confs[n][2])
        return self._states[n]

    def _build(self, rep):
        from bayesfa.samplers.pdia import _pdfa_kernel as K
        from bayesfa.samplers.pdia import pdfa as P
        from bayesfa.samplers.pdia._crf_kernel import rebuild

        st = P.ChainState(self.model, self.data, self.n_cap)
        if self.model == P.CRF:
            delta_d = rep["delta"]
            ids, tdish, n_tab = {}, [], 0
            for j in sorted(rep["tables"]):
                for idx, dish in enumerate(rep["tables"][j]):
                    ids[(j, idx)] = n_tab
                    tdish.append(dish)
                    n_tab += 1
            rows = 1 + max([0] + list(delta_d.values()))
            for (q, s), k in delta_d.items():
                st.delta[q, s] = k
                st.seat[q, s] = ids[(s, rep["seat"][(q, s)])]
            rebuild(1, 1, st.delta[:rows], st.seat[:rows], np.array(tdish, dtype=np.int32),
                    n_tab, st.nj, st.v, st.tabs, st.col_tabs, st.col_T, st.sts, st.meta)
        else:
            st.mu[:] = self.mu
            st.lmu[:] = np.log(self.mu)
            for (q, s), k in rep.items():
                st.delta[q, s] = k
                st.seat[q, s] = k
                st.v[k, s] += 1
                st.nj[s] += 1
        q = 0
        for s in self.tokens:
            st.cnt[q, s] += 1
            st.ctot[q] += 1
            q = 0 if s == 0 else int(st.delta[q, s])
        st.cnt2[:] = st.cnt
        st.ctot2[:] = st.ctot
        if self.pi0 is None:
            K.fill_lg(st.lg, self.hyp[1], self.n_sym)
        else:
            from bayesfa.samplers.pdia._smoothed_emission_kernel import fill_lg_base

            st.lg = np.zeros((1, self.n_sym + 1, len(self.tokens) + 3))
            lim = np.full(self.n_sym + 1, len(self.tokens), dtype=np.int64)
            fill_lg_base(st.lg, self.hyp[1], self.pi0, lim)
        st.workspace()
        return st

    def key(self, st) -> tuple:
        if self.model == 0:
            return tuple(sorted(((q, s), int(st.delta[q, s])) for q in range(self.n_cap)
                                for s in range(1, self.n_sym) if st.delta[q, s] >= 0))
        return canonical(lambda a, b: (int(st.delta[a, b]), int(st.seat[a, b])), self.tokens)


_ARRAYS = ("delta", "seat", "cnt", "ctot", "cnt2", "ctot2", "vis", "changed", "nj", "v", "mu",
           "tabs", "col_tabs", "col_T", "sts", "meta", "lmu")


def run_moves(case: _Case, kind: str, n: int, rng, variant: int = 0) -> np.ndarray:
    """``[n, 2]`` (start, end) configuration indices: ``n`` starts i.i.d. from ``pi``, one
    move of ``kind`` (``"entry"`` or ``"table"``) each, by the kernel with ``variant``."""
    from bayesfa.samplers.pdia import _pdfa_kernel as K

    starts = rng.choice(len(case.pi), size=n, p=case.pi)
    starts.sort()
    krng = np.random.default_rng(rng.integers(2 ** 63))
    fixed = np.ones(5, dtype=np.int64)
    stats = np.zeros(K.N_STATS)
    out = np.empty((n, 2), dtype=np.int64)
    out[:, 0] = starts
    memo: dict = {}
    n_pairs = (case.n_cap * (case.n_sym - 1))
    work = None
    last = -1
    clean = K.new_workspace(case.data.sym.size, case.n_cap, case.n_sym)
    for r in range(n):
        x = int(starts[r])
        tmpl = case.state(x)
        if x != last:
            from bayesfa.samplers.pdia import pdfa as P

            work = P.ChainState(case.model, case.data, case.n_cap)
            work.lg = tmpl.lg
            keep = {a: getattr(tmpl, a) for a in _ARRAYS}
            last = x
        for a in _ARRAYS:
            np.copyto(getattr(work, a), keep[a])
        st = work
        ws = st.workspace()
        for w, w0 in zip(ws, clean):  # rows >= hi of the path index must be clean (the kernel
            np.copyto(w, w0)          # never lowers hi, a restored state does)
        if case.model == 1:
            K.sweep(1, variant, st.data.sym, 1, st.delta, st.seat, st.cnt, st.ctot, st.cnt2,
                    st.ctot2, st.vis, st.changed, st.newq, st.news, st.oq, st.os, st.oseat,
                    *st.seating(), case.hyp, st.lg, fixed, st.lmu, 0, 0.5, kind == "table",
                    1 if kind == "entry" else 0, 1 if kind == "table" else 0, krng, stats, ws)
        else:
            u = int(krng.integers(0, n_pairs))
            i, j = u // (case.n_sym - 1), 1 + u % (case.n_sym - 1)
            if st.delta[i, j] >= 0:
                K.build_index(st.data.sym, 1, st.delta, int(st.meta[6]), st.cnt, st.ctot,
                              st.cnt2, st.ctot2, st.lg, ws)
                K.move_entry(i, j, 0, variant, st.data.sym, 1, st.delta, st.seat, st.cnt,
                             st.ctot, st.cnt2, st.ctot2, st.changed, st.newq, st.news, st.oq,
                             st.os, st.oseat, *st.seating(), case.hyp, st.lg, False, krng,
                             stats, ws)
        raw = (st.delta.tobytes(), st.seat.tobytes())
        y = memo.get(raw)
        if y is None:
            k = case.key(st)
            if k not in case.index:
                raise RuntimeError(f"the move reached a configuration outside the "
                                   f"enumeration: {k}")
            y = memo[raw] = case.index[k]
        out[r, 1] = y
    return out


def balance_tests(pi: np.ndarray, pairs: np.ndarray, alpha: float) -> dict[str, Any]:
    """Detailed balance and stationarity (module docstring) of i.i.d. ``(x, y)`` draws of
    ``pi(x) K(x, y)``, each test at ``alpha / 2``."""
    m = len(pi)
    counts = np.zeros((m, m), dtype=np.int64)
    np.add.at(counts, (pairs[:, 0], pairs[:, 1]), 1)
    p_min, worst, n_pairs = 1.0, None, 0
    for x in range(m):
        for y in range(x + 1, m):
            a, b = int(counts[x, y]), int(counts[y, x])
            if a + b == 0:
                continue
            n_pairs += 1
            p = sps.binomtest(a, a + b, 0.5).pvalue
            if p < p_min:
                p_min, worst = p, (x, y, a, b)
    n = pairs.shape[0]
    reached = counts.sum(axis=0)
    exp = n * pi
    order = np.argsort(exp)
    # pool the configurations with the smallest expectations until every cell has >= 5
    obs_c, exp_c, acc_o, acc_e = [], [], 0.0, 0.0
    for i in order:
        acc_o += reached[i]
        acc_e += exp[i]
        if acc_e >= 5:
            obs_c.append(acc_o)
            exp_c.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0:
        obs_c[-1] += acc_o
        exp_c[-1] += acc_e
    obs_c, exp_c = np.array(obs_c), np.array(exp_c)
    chi2 = float(((obs_c - exp_c) ** 2 / exp_c).sum())
    df = len(obs_c) - 1
    p_chi = float(sps.chi2.sf(chi2, df)) if df > 0 else 1.0
    a_db = alpha / 2
    crit = float(sps.norm.isf(a_db / (2 * max(n_pairs, 1))))
    z = float(sps.norm.isf(p_min / 2)) if p_min < 1 else 0.0
    moved = int(n - np.trace(counts))
    return {"pairs": n_pairs, "db_z": z, "db_crit": crit,
            "db_pass": bool(p_min * max(n_pairs, 1) > a_db), "worst": worst,
            "chi2": chi2, "df": df, "chi2_p": p_chi, "chi2_pass": bool(p_chi > alpha / 2),
            "moved": moved}


def move_check(cases, kind: str, label: str, *, n: int, seed: int = 0, alpha: float = ALPHA,
               variant: int = 0, name: str | None = None):
    """One :class:`Check` of move ``kind`` on every case (a row each, at ``alpha / rows``)."""
    t0 = time.perf_counter()
    rng = np.random.default_rng([seed, 21, {"entry": 0, "table": 1}[kind]])
    rows = []
    a_row = alpha / len(cases)
    for case in cases:
        res = balance_tests(case.pi, run_moves(case, kind, n, rng, variant), a_row)
        rows.append({"corpus": case.describe(), "configs": len(case.pi), "moves": n,
                     "moved": res["moved"], "db_max_z": res["db_z"], "db_crit": res["db_crit"],
                     "chi2": res["chi2"], "df": res["df"], "chi2_p": res["chi2_p"],
                     "pass": res["db_pass"] and res["chi2_pass"]})
    what = {"entry": "entry moves (MH on one delta_ij)",
            "table": "table-dish moves (MH on one table's dish)"}[kind]
    return _check(
        name=name or f"move-{kind}", passed=all(r["pass"] for r in rows),
        description=(f"{label}: {what}, one move from each of {n} i.i.d. draws of the exact "
                     f"posterior of every configuration (enumerated in plain Python), detailed "
                     f"balance (exact binomial per pair) and stationarity (chi-squared)"),
        alpha=alpha, columns=["corpus", "configs", "moves", "moved", "db_max_z", "db_crit",
                              "chi2", "df", "chi2_p", "pass"], rows=rows,
        summary={"max_z": max(r["db_max_z"] for r in rows),
                 "max_db_z": max(r["db_max_z"] for r in rows),
                 "min_chi2_p": min(r["chi2_p"] for r in rows),
                 # statistic over threshold: z / z* of detailed balance, log p / log p* of
                 # the chi-squared (at a_row / 2), the larger over the rows
                 "margin": max(max(r["db_max_z"] / r["db_crit"] if r["db_crit"] else 0.0,
                                   log_p_margin(r["chi2_p"], a_row / 2)) for r in rows),
                 "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate <= {alpha:g}: {alpha / len(rows):g} per corpus, half to the "
               f"exact binomial tests (Bonferroni over the pairs that moved), half to the "
               f"chi-squared (cells pooled to expected >= 5)"])


# -- the cases ----------------------------------------------------------------------------------

#: strings, letters, hyperparameters: ``d != d0`` and ``alpha != alpha0`` in every case (a slip
#: that swaps the two levels' values is invisible where they are equal; issue 39)
PDIA_CASES = (
    ([[0, 0], [0]], 1, {"alpha": 1.0, "beta": 1.0, "alpha0": 0.5, "d": 0.2, "d0": 0.6}),
    ([[0, 0, 0, 0]], 1, {"alpha": 1.0, "beta": 1.0, "alpha0": 0.6, "d": 0.45, "d0": 0.2}),
    ([[0, 1, 1, 0]], 2, {"alpha": 0.4, "beta": 0.5, "alpha0": 0.3, "d": 0.6, "d0": 0.4}),
    ([[0, 1, 0], [1]], 2, {"alpha": 0.6, "beta": 0.5, "alpha0": 0.3, "d": 0.15, "d0": 0.55}),
)
PDIA_MOVES = 40_000


def pdia_cases(pi0=None) -> list[_Case]:
    """The PDIA's cases; ``pi0``: the smoothed PDIA's fixed emission base (a function of the
    number of symbols)."""
    return [_Case(1, s, n, h, pi0=None if pi0 is None else pi0(n + 1)) for s, n, h in PDIA_CASES]


def smoothed_pi0(n_sym: int) -> np.ndarray:
    """A fixed non-uniform emission base for ``pdia-smoothed``'s cases."""
    w = np.arange(1, n_sym + 1, dtype=np.float64)[::-1]
    return w / w.sum()


PDFA_CASES = (
    ([[0, 1, 1, 0]], 2, {"alpha": 0.7, "beta": 0.5}, (0.2, 0.5, 0.3)),
    ([[0, 0], [1, 1]], 2, {"alpha": 1.5, "beta": 1.0}, (0.5, 0.2, 0.3)),
    ([[0, 0, 0]], 1, {"alpha": 0.5, "beta": 0.7}, (0.3, 0.3, 0.4)),
)
PDFA_MOVES = 40_000


def pdfa_cases() -> list[_Case]:
    return [_Case(0, s, n, h, mu=mu) for s, n, h, mu in PDFA_CASES]


def pdia_move_checks(variant: int = 0, *, seed: int = 0, alpha: float = ALPHA, label="pdia",
                     smoothed: bool = False, n: int = PDIA_MOVES):
    cases = pdia_cases(smoothed_pi0 if smoothed else None)
    return [move_check(cases, kind, label, n=n, seed=seed, alpha=alpha, variant=variant)
            for kind in ("entry", "table")]


def pdfa_move_checks(variant: int = 0, *, seed: int = 0, alpha: float = ALPHA, label="pdfa",
                     n: int = PDFA_MOVES):
    return [move_check(pdfa_cases(), "entry", label, n=n, seed=seed, alpha=alpha,
                       variant=variant), mu_check(variant, seed=seed, alpha=alpha, label=label)]


# -- the finite PDFA's mu move ------------------------------------------------------------------

MU_CASES = (
    # strings, letters, alpha, gamma, delta (visited entries -> target), |Q| = 2
    ([[0, 1, 1, 0]], 2, 0.7, 1.0, {(0, 1): 1, (1, 2): 1, (1, 1): 0}),
    ([[0, 1, 1, 0], [1]], 2, 0.3, 0.2, {(0, 1): 1, (1, 2): 1, (1, 1): 1, (0, 2): 1}),
)
MU_MOVES = 20_000


def mu_conditional(v: np.ndarray, alpha: float, gamma: float):
    """``(grid of mu_1, CDF)`` of ``p(mu | delta)`` for ``|Q| = 2`` (module docstring),
    ``v[k, j]`` the entries of column ``j`` that go to ``k``: tabulated on a logit grid
    ``z`` in ``[-745, 745]`` (density in ``z``: ``p(mu_1) mu_1 (1 - mu_1)``), trapezoid rule
    on 200,001 points."""
    z = np.linspace(-745.0, 745.0, 200_001)
    lm1 = -np.logaddexp(0.0, -z)          # log mu_1
    lm0 = -np.logaddexp(0.0, z)           # log mu_0
    a = gamma / 2
    logp = (a - 1) * (lm0 + lm1) + lm0 + lm1
    from scipy.special import gammaln

    for j in range(v.shape[1]):
        for k, lm in ((0, lm0), (1, lm1)):
            if v[k, j] > 0:
                am = alpha * np.exp(lm)
                logp += gammaln(am + v[k, j]) - gammaln(am)
    p = np.exp(logp - logp.max())
    cdf = np.concatenate([[0.0], np.cumsum((p[1:] + p[:-1]) / 2 * np.diff(z))])
    cdf /= cdf[-1]
    return z, cdf


def mu_check(variant: int = 0, *, seed: int = 0, alpha: float = ALPHA, label: str = "pdfa",
             n: int = MU_MOVES):
    """``move-mu``: one ``move_mu`` from each of ``n`` i.i.d. draws of the exact conditional
    of ``mu`` given a fixed transition table, Kolmogorov-Smirnov of ``F(mu_1')`` against the
    uniform (module docstring); one row per case at ``alpha / rows``."""
    from bayesfa.corpus import Corpus
    from bayesfa.samplers.pdia import _pdfa_kernel as K
    from bayesfa.samplers.pdia import pdfa as P

    t0 = time.perf_counter()
    rng = np.random.default_rng([seed, 21, 2])
    krng = np.random.default_rng(rng.integers(2 ** 63))
    rows = []
    for strings, n_letters, a, g, delta in MU_CASES:
        data = P.as_symbols(Corpus.from_strings(strings, n_letters), False)
        st = P.ChainState(0, data, 2)
        for (q, s), k in delta.items():
            st.v[k, s] += 1
            st.nj[s] += 1
        hyp, _ = P.hyper_values(0, {"alpha": a, "beta": 1.0, "gamma": g})
        z, cdf = mu_conditional(st.v, a, g)
        u0 = rng.random(n)
        z0 = np.interp(u0, cdf, z)
        stats = np.zeros(K.N_STATS)
        f = np.empty(n)
        for r in range(n):
            st.lmu[1] = -np.logaddexp(0.0, -z0[r])
            st.lmu[0] = -np.logaddexp(0.0, z0[r])
            st.mu[:] = np.exp(st.lmu)
            K.move_mu(st.mu, st.lmu, st.v, st.nj, hyp, 1, krng, stats, variant)
            z1 = st.lmu[1] - st.lmu[0]
            f[r] = np.interp(z1, z, cdf) if np.isfinite(z1) else (0.0 if z1 < 0 else 1.0)
        ks = sps.kstest(f, "uniform")
        rows.append({"corpus": f"{strings} alpha={a:g} gamma={g:g}", "draws": n,
                     "ks": float(ks.statistic), "p": float(ks.pvalue),
                     "pass": bool(ks.pvalue > alpha / len(MU_CASES))})
    return _check(
        name="move-mu", passed=all(r["pass"] for r in rows),
        description=(f"{label}: the mu move (one step from each of {n} i.i.d. draws of the "
                     f"exact conditional p(mu | delta), |Q|=2, tabulated on a logit grid) "
                     f"keeps that conditional: Kolmogorov-Smirnov of F(mu_1')"),
        alpha=alpha, columns=["corpus", "draws", "ks", "p", "pass"], rows=rows,
        summary={"p": min(r["p"] for r in rows), "min_p": min(r["p"] for r in rows),
                 "margin": log_p_margin(min(r["p"] for r in rows), alpha / len(MU_CASES)),
                 "seconds": time.perf_counter() - t0},
        notes=[f"false-alarm rate <= {alpha:g} ({alpha / len(rows):g} per case; KS exact for "
               f"i.i.d. draws of a continuous law)"])
