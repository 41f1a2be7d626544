"""Exact checks of ``hmm-em`` (``bayesfa validate hmm-em``): Baum-Welch (Rabiner 1989; the
HMM-EM baseline of Pfau, Bartlett & Wood 2010, Sect. 4) against brute force on a toy.

The reference enumerates every state path of every training string (sentences: the letters
then the end symbol 0, each string from ``pi``; ``K ** (n + 1)`` paths per string) and, from
the definition of the HMM alone, computes

- the log-likelihood ``sum_x log sum_z pi(z_1) B(z_1, x_1) prod_l T(z_{l-1}, z_l) B(z_l, x_l)``
  and the EM objective, that plus the log of the Dirichlet(1 + c) prior on the emission rows
  (``c`` = ``--pseudo-count``; the start and transition rows have a flat prior);
- one EM step: the posterior of each path, the expected start, transition and emission counts,
  and the M-step ``pi = E[start] / #strings``, ``T = E[trans]`` row-normalised,
  ``B = (E[emit] + c)`` row-normalised.

Checks (exact up to rounding):

``em-step``
    20 EM iterations of the method's EM (hmmlearn's CategoricalHMM, one iteration per call,
    from the method's start): every iterate equals the reference EM step of the one before
    (max abs difference of the parameters <= 1e-9).
``objective-monotone``
    along those iterates the reference objective never decreases (by more than 1e-10).
``fixed-point``
    the registry method's fit run to ``tol = 1e-12`` (at most 5 000 iterations): one more
    reference EM step moves no parameter by more than 1e-5 and the objective by at most 1e-9.
``predictive``
    the method's ``predict_log_prob`` of every string up to length 3 equals the enumerated
    log-likelihood under the fitted parameters (<= 1e-10).

No mutants: the EM is hmmlearn's, not code of ours (a wrong M-step would fail ``em-step``).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from bayesfa.corpus import Corpus
from bayesfa.validation.checks import Check

CHECK_STATES = 2
STEP_TOL = 1e-9
N_STEPS = 20
FIT_TOL = 1e-12
FIT_ITER = 5000
FIXED_PARAM_TOL = 1e-8
FIXED_OBJ_TOL = 1e-9


def _symbol_strings(corpus: Corpus) -> list[list[int]]:
    """Each string's symbols: its letters (as tokens, ``1..A``) followed by the end symbol 0."""
    return [[int(a) + 1 for a in corpus.string(s)] + [0] for s in range(corpus.n_strings)]


def _paths(k: int, n: int) -> np.ndarray:
    return np.array(list(itertools.product(range(k), repeat=n)), dtype=np.int64)


def path_probs(x: list[int], pi, trans, emit) -> tuple[np.ndarray, np.ndarray]:
    """``(paths [P, n], Pr(x, z) [P])`` for the symbol string ``x``."""
    z = _paths(pi.size, len(x))
    p = pi[z[:, 0]] * emit[z[:, 0], x[0]]
    for l in range(1, len(x)):
        p = p * trans[z[:, l - 1], z[:, l]] * emit[z[:, l], x[l]]
    return z, p


def log_likelihood(corpus: Corpus, pi, trans, emit) -> float:
    return float(sum(np.log(path_probs(x, pi, trans, emit)[1].sum())
                     for x in _symbol_strings(corpus)))


def objective(corpus: Corpus, pi, trans, emit, pseudo: float) -> float:
    """Log-likelihood plus ``c sum log B`` (the Dirichlet(1 + c) emission prior, up to a constant)."""
    prior = pseudo * float(np.sum(np.log(emit))) if pseudo > 0 else 0.0
    return log_likelihood(corpus, pi, trans, emit) + prior


def em_step(corpus: Corpus, pi, trans, emit, pseudo: float):
    """One Baum-Welch step by enumeration (module docstring)."""
    k, n_sym = emit.shape
    start = np.zeros(k)
    tc = np.zeros((k, k))
    ecount = np.zeros((k, n_sym))
    strings = _symbol_strings(corpus)
    for x in strings:
        z, p = path_probs(x, pi, trans, emit)
        post = p / p.sum()
        np.add.at(start, z[:, 0], post)
        for l in range(len(x)):
            np.add.at(ecount, (z[:, l], x[l]), post)
            if l:
                np.add.at(tc, (z[:, l - 1], z[:, l]), post)
    new_pi = start / len(strings)
    new_t = tc / tc.sum(axis=1, keepdims=True)
    e = ecount + pseudo
    return new_pi, new_t, e / e.sum(axis=1, keepdims=True)


def _check(name, passed, description, columns, rows, summary=None, notes=None) -> Check:
    return Check(name=name, passed=bool(passed), description=description, alpha=0.0,
                 columns=columns, rows=rows, summary=summary or {}, notes=notes or [])


def _params(model):
    return (np.array(model.startprob_, dtype=float), np.array(model.transmat_, dtype=float),
            np.array(model.emissionprob_, dtype=float))


class HMMEMSpec:
    """The validation spec of ``hmm-em`` (module docstring)."""

    def check_names(self) -> list[str]:
        return ["em-step", "objective-monotone", "fixed-point", "predictive"]

    def deterministic_checks(self, toy, *, seed: int = 0, alpha: float = 0.0) -> list[Check]:
        from bayesfa.learners import hmm_em
        from bayesfa.methods import get_method
        from bayesfa.validation.toys import all_strings

        method = get_method("hmm-em")
        corpus = toy.train
        k = CHECK_STATES
        opts = {"states": k, "restarts": 1, "n_iter": 1, "tol": FIT_TOL, "pseudo_count": 0.01,
                "sequence": False}
        pseudo = opts["pseudo_count"]
        x, lengths, n_features = hmm_em.symbols(corpus, False)
        model = hmm_em.new_model(k, n_features, opts, int(seed))
        iterates = []
        with hmm_em._quiet_hmmlearn():
            model.fit(x, lengths)
            iterates.append(_params(model))
            model.init_params = ""
            for _ in range(N_STEPS):
                model.fit(x, lengths)
                iterates.append(_params(model))
        step_rows, obj_rows = [], []
        objs = [objective(corpus, *p, pseudo) for p in iterates]
        for i in range(1, len(iterates)):
            ref = em_step(corpus, *iterates[i - 1], pseudo)
            err = max(float(np.abs(a - b).max()) for a, b in zip(ref, iterates[i]))
            step_rows.append({"iteration": i, "max_abs_diff": err, "pass": err <= STEP_TOL})
            rise = objs[i] - objs[i - 1]
            obj_rows.append({"iteration": i, "objective": objs[i], "change": rise,
                             "pass": rise >= -1e-10})
        checks = [
            _check("em-step", all(r["pass"] for r in step_rows),
                   f"{N_STEPS} EM iterations of the method (hmmlearn, K={k}, pseudo-count "
                   f"{pseudo}): each equals the brute-force Baum-Welch step of the one before "
                   f"(tolerance {STEP_TOL:g})", ["iteration", "max_abs_diff", "pass"], step_rows,
                   {"max_abs_diff": max(r["max_abs_diff"] for r in step_rows)}),
            _check("objective-monotone", all(r["pass"] for r in obj_rows),
                   "the EM objective (log-likelihood + log Dirichlet(1 + c) emission prior, by "
                   "enumeration) never decreases along those iterates (by more than 1e-10)",
                   ["iteration", "objective", "change", "pass"], obj_rows)]
        fit_opts = dict(opts, n_iter=FIT_ITER, restarts=1)
        fit = method.fit(corpus, fit_opts, seed, False)
        arr = fit.arrays
        params = (arr["startprob"], arr["transmat"], arr["emissionprob"])
        nxt = em_step(corpus, *params, pseudo)
        dp = max(float(np.abs(a - b).max()) for a, b in zip(nxt, params))
        do = abs(objective(corpus, *nxt, pseudo) - objective(corpus, *params, pseudo))
        iters = fit.info["restarts"][0]["iterations"]
        ok = dp <= FIXED_PARAM_TOL and do <= FIXED_OBJ_TOL
        checks.append(_check(
            "fixed-point", ok,
            f"the registry fit (tol {FIT_TOL:g}, at most {FIT_ITER} iterations) is a fixed point: "
            f"one more brute-force EM step moves the parameters by <= {FIXED_PARAM_TOL:g} and "
            f"the objective by <= {FIXED_OBJ_TOL:g}",
            ["iterations", "max_param_change", "objective_change", "pass"],
            [{"iterations": iters, "max_param_change": dp, "objective_change": do, "pass": ok}]))
        test = all_strings(3, corpus.alphabet_size)
        got = np.asarray(method.predict_log_prob(arr, fit_opts, test))
        ref = np.array([np.log(path_probs(s, *params)[1].sum()) for s in _symbol_strings(test)])
        err = float(np.abs(got - ref).max())
        checks.append(_check(
            "predictive", err <= 1e-10,
            f"predict_log_prob of the {test.n_strings} strings up to length 3 vs the enumerated "
            "log-likelihood under the fitted parameters (tolerance 1e-10)",
            ["max_abs_error", "pass"], [{"max_abs_error": err, "pass": err <= 1e-10}]))
        return checks


HMM_EM = HMMEMSpec()
