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
``train-likelihood``
    a fit of :data:`TRACE_RESTARTS` restarts stopped after :data:`TRACE_ITER` iterations (far
    from convergence, so each iteration still moves the likelihood): the
    ``train_log_likelihood`` it reports equals the enumerated log-likelihood of the parameters
    it returns (relative 1e-10), and is the largest of the restarts' it reports.
``sequence-predictive``
    ``--sequence`` on :data:`SEQUENCE_STRINGS` strings sampled (``--seed``) from the toy's
    source (the ``three`` toy's for a toy without one; the toys' own strings are too few for
    EM to give the two states different rows, and then the state a test continues from
    would not matter): the fitted HMM's ``predict_log_prob`` of the strings up to length 2, each
    continuing the training letters and the strings before it, equals ``log p(train, t_1 ..
    t_s) - log p(train, t_1 .. t_{s-1})`` by a forward pass over ``pi``, ``T``, ``B`` written
    here (scaled; not :mod:`bayesfa.forward`) (<= 1e-10).

Mutants (:data:`bayesfa.learners.hmm_em.MUTATIONS`): the EM is hmmlearn's (a wrong M-step
would fail ``em-step``), so the mutants change our code around it, each one term:
``prior-without-one`` (hmmlearn given the Dirichlet ``c``, not ``1 + c``: fails ``em-step``),
``emission-at-destination`` (the PFA emits from the state entered, not the state left: fails
``predictive``), ``carry-without-transition`` (a sequence's test continues from the last
training state, not the next one: fails ``sequence-predictive``), ``likelihood-from-trace``
(the restarts ranked and reported by hmmlearn's last trace value, which is the likelihood
before the last M-step: fails ``train-likelihood``).
"""

from __future__ import annotations

import itertools
import math

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
PREDICT_TOL = 1e-10
TRACE_RESTARTS = 3
TRACE_ITER = 3
TRACE_TOL = 1e-10
SEQUENCE_STRINGS = 60


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


def forward_log_likelihoods(pi, trans, emit, pieces: list[list[int]]) -> np.ndarray:
    """``log p(piece_s | the pieces before it)`` of symbol lists read one after the other as
    one sequence from ``pi``: a scaled forward pass ``alpha_l = (alpha_{l-1} T) * B[:, x_l]``
    (``alpha_1 = pi * B[:, x_1]``), each step's scale added to the piece it belongs to."""
    out = np.zeros(len(pieces))
    alpha = None
    for s, piece in enumerate(pieces):
        for x in piece:
            alpha = (pi if alpha is None else alpha @ trans) * emit[:, x]
            scale = alpha.sum()
            out[s] += np.log(scale)
            alpha = alpha / scale
    return out


def _check(name, passed, description, columns, rows, summary=None, notes=None) -> Check:
    return Check(name=name, passed=bool(passed), description=description, alpha=0.0,
                 columns=columns, rows=rows, summary=summary or {}, notes=notes or [])


def _params(model):
    return (np.array(model.startprob_, dtype=float), np.array(model.transmat_, dtype=float),
            np.array(model.emissionprob_, dtype=float))


class HMMEMSpec:
    """The validation spec of ``hmm-em`` (module docstring)."""

    def __init__(self, variant: int = 0):
        self.variant = variant

    def mutant_names(self) -> list[str]:
        from bayesfa.learners import hmm_em

        return list(hmm_em.MUTATIONS)

    def mutant(self, variant: str):
        from bayesfa.learners import hmm_em
        from bayesfa.validation.harness import carry_spec

        spec = HMMEMSpec(hmm_em.MUTATIONS[variant])
        return carry_spec(spec._method(), spec, f"hmm-em:mutant-{variant}")

    def _method(self):
        """The method the checks fit (:func:`~bayesfa.validation.harness.variant_method`)."""
        from bayesfa.learners import hmm_em
        from bayesfa.validation.harness import variant_method

        return variant_method("hmm-em", hmm_em.METHOD, self.variant)

    def check_names(self) -> list[str]:
        return ["em-step", "objective-monotone", "fixed-point", "predictive", "train-likelihood",
                "sequence-predictive"]

    def deterministic_checks(self, toy, *, seed: int = 0, alpha: float = 0.0) -> list[Check]:
        # a mutant's parameters may have zeros: log 0 = -inf fails its check, quietly
        with np.errstate(divide="ignore", invalid="ignore"):
            return self._checks(toy, seed)

    def _checks(self, toy, seed: int) -> list[Check]:
        from bayesfa.learners import hmm_em

        method = self._method()
        corpus = toy.train
        k = CHECK_STATES
        opts = {"states": k, "restarts": 1, "n_iter": 1, "tol": FIT_TOL, "pseudo_count": 0.01,
                "sequence": False}
        pseudo = opts["pseudo_count"]
        x, lengths, n_features = hmm_em.symbols(corpus, False)
        model = hmm_em.new_model(k, n_features, opts, int(seed), method.variant)  # the method's own
        iterates, refused = [], None
        with hmm_em._quiet_hmmlearn():
            try:
                model.fit(x, lengths)
                iterates.append(_params(model))
                model.init_params = ""
                for _ in range(N_STEPS):
                    model.fit(x, lengths)
                    iterates.append(_params(model))
            except ValueError as err:  # hmmlearn refuses a row that no longer sums to one
                refused = f"hmmlearn refused iterate {len(iterates)}: {err}"
        step_rows, obj_rows = [], []
        objs = [objective(corpus, *p, pseudo) for p in iterates]
        for i in range(1, len(iterates)):
            ref = em_step(corpus, *iterates[i - 1], pseudo)
            err = max(float(np.abs(a - b).max()) for a, b in zip(ref, iterates[i]))
            step_rows.append({"iteration": i, "max_abs_diff": err, "pass": err <= STEP_TOL})
            rise = objs[i] - objs[i - 1]
            obj_rows.append({"iteration": i, "objective": objs[i], "change": rise,
                             "pass": bool(rise >= -1e-10)})
        if refused:
            step_rows.append({"iteration": len(iterates), "max_abs_diff": math.inf, "pass": False})
        largest = max([r["max_abs_diff"] for r in step_rows] or [math.inf])
        drop = max([0.0] + [-r["change"] for r in obj_rows if np.isfinite(r["change"])])
        checks = [
            _check("em-step", bool(step_rows) and all(r["pass"] for r in step_rows),
                   f"{N_STEPS} EM iterations of the method (hmmlearn, K={k}, pseudo-count "
                   f"{pseudo}): each equals the brute-force Baum-Welch step of the one before "
                   f"(tolerance {STEP_TOL:g})", ["iteration", "max_abs_diff", "pass"], step_rows,
                   {"max_abs_diff": largest, "statistic": largest},
                   [refused] if refused else None),
            _check("objective-monotone", not refused and all(r["pass"] for r in obj_rows),
                   "the EM objective (log-likelihood + log Dirichlet(1 + c) emission prior, by "
                   "enumeration) never decreases along those iterates (by more than 1e-10)",
                   ["iteration", "objective", "change", "pass"], obj_rows,
                   {"statistic": drop}, [refused] if refused else None)]
        from bayesfa.validation.learners.greedy import check_corpus

        sequence_data = check_corpus(toy, seed, SEQUENCE_STRINGS)
        for part, data, names in (
                (self._fixed_point_and_predictive, corpus, ["fixed-point", "predictive"]),
                (self._train_likelihood, corpus, ["train-likelihood"]),
                (self._sequence_predictive, sequence_data, ["sequence-predictive"])):
            try:
                checks += part(method, data, opts, seed)
            except (ValueError, FloatingPointError) as err:  # a fit hmmlearn refuses
                checks += [_check(n, False, f"{n}: the fit raised {type(err).__name__}: {err}",
                                  [], [], {"statistic": math.inf}) for n in names]
        return checks

    def _fixed_point_and_predictive(self, method, corpus: Corpus, opts: dict,
                                    seed: int) -> list[Check]:
        from bayesfa.validation.toys import all_strings

        pseudo = opts["pseudo_count"]
        fit_opts = dict(opts, n_iter=FIT_ITER, restarts=1)
        fit = method.fit(corpus, fit_opts, seed, False)
        arr = fit.arrays
        params = (arr["startprob"], arr["transmat"], arr["emissionprob"])
        nxt = em_step(corpus, *params, pseudo)
        dp = max(float(np.abs(a - b).max()) for a, b in zip(nxt, params))
        do = abs(objective(corpus, *nxt, pseudo) - objective(corpus, *params, pseudo))
        iters = fit.info["restarts"][0]["iterations"]
        ok = dp <= FIXED_PARAM_TOL and do <= FIXED_OBJ_TOL
        checks = []
        checks.append(_check(
            "fixed-point", ok,
            f"the registry fit (tol {FIT_TOL:g}, at most {FIT_ITER} iterations) is a fixed point: "
            f"one more brute-force EM step moves the parameters by <= {FIXED_PARAM_TOL:g} and "
            f"the objective by <= {FIXED_OBJ_TOL:g}",
            ["iterations", "max_param_change", "objective_change", "pass"],
            [{"iterations": iters, "max_param_change": dp, "objective_change": do, "pass": ok}],
            {"statistic": dp}))
        test = all_strings(3, corpus.alphabet_size)
        got = np.asarray(method.predict_log_prob(arr, fit_opts, test))
        ref = np.array([np.log(path_probs(s, *params)[1].sum()) for s in _symbol_strings(test)])
        err = float(np.where(got == ref, 0.0, np.abs(got - ref)).max())  # -inf == -inf: equal
        checks.append(_check(
            "predictive", err <= PREDICT_TOL,
            f"predict_log_prob of the {test.n_strings} strings up to length 3 vs the enumerated "
            f"log-likelihood under the fitted parameters (tolerance {PREDICT_TOL:g})",
            ["max_abs_error", "pass"], [{"max_abs_error": err, "pass": err <= PREDICT_TOL}],
            {"statistic": err}))
        return checks

    def _train_likelihood(self, method, corpus: Corpus, opts: dict, seed: int) -> list[Check]:
        fit = method.fit(corpus, dict(opts, restarts=TRACE_RESTARTS, n_iter=TRACE_ITER), seed,
                         False)
        arr = fit.arrays
        ref = log_likelihood(corpus, arr["startprob"], arr["transmat"], arr["emissionprob"])
        got = float(fit.info["train_log_likelihood"])
        reported = [r["log_likelihood"] for r in fit.info["restarts"]]
        rel = abs(got - ref) / max(1.0, abs(ref))
        ok = rel <= TRACE_TOL and got == max(reported)
        return [_check(
            "train-likelihood", ok,
            f"a fit of {TRACE_RESTARTS} restarts of {TRACE_ITER} EM iterations: the "
            "train_log_likelihood it reports equals the enumerated log-likelihood of the "
            f"parameters it returns (relative tolerance {TRACE_TOL:g}) and is the largest of "
            "its restarts'",
            ["reported", "enumerated", "restarts_reported", "rel_error", "pass"],
            [{"reported": got, "enumerated": ref, "restarts_reported": reported,
              "rel_error": rel, "pass": ok}], {"statistic": rel})]

    def _sequence_predictive(self, method, corpus: Corpus, opts: dict, seed: int) -> list[Check]:
        from bayesfa.validation.toys import all_strings

        seq_opts = dict(opts, sequence=True, n_iter=50, restarts=1)
        fit = method.fit(corpus, seq_opts, seed, False)
        arr = fit.arrays
        test = all_strings(2, corpus.alphabet_size)
        got = np.asarray(method.predict_log_prob(arr, seq_opts, test))
        train = [int(a) for s in range(corpus.n_strings) for a in corpus.string(s)]
        pieces = [train] + [[int(a) for a in test.string(s)] for s in range(test.n_strings)]
        ref = forward_log_likelihoods(np.asarray(arr["startprob"]), np.asarray(arr["transmat"]),
                                      np.asarray(arr["emissionprob"]), pieces)[1:]
        err = float(np.where(got == ref, 0.0, np.abs(got - ref)).max())  # -inf == -inf: equal
        ok = err <= PREDICT_TOL
        return [_check(
            "sequence-predictive", ok,
            f"--sequence: predict_log_prob of the {test.n_strings} strings up to length 2, each "
            "continuing the training letters and the strings before it, vs a forward pass over "
            f"(pi, T, B) written here (tolerance {PREDICT_TOL:g})",
            ["string", "method", "reference", "pass"],
            [{"string": "".join(chr(ord("a") + int(a)) for a in test.string(s)) or "ε",
              "method": float(got[s]), "reference": float(ref[s]),
              "pass": bool(abs(got[s] - ref[s]) <= PREDICT_TOL)} for s in range(test.n_strings)],
            {"statistic": err})]


HMM_EM = HMMEMSpec()
