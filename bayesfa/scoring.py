"""Scores: the PAutomaC score (Shibata & Yoshinaka 2013, Eq. 19) and per-symbol perplexity."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bayesfa.errors import InputError


class Score(NamedTuple):
    """What :func:`score_all` returns."""

    #: The PAutomaC score of the prediction (Eq. 19, :func:`pautomac_score`); lower is better.
    score: float
    #: The score of the solution against itself, the smallest any prediction can get.
    min_score: float
    #: ``score / min_score``, 1 for a perfect prediction.
    ratio: float

    def as_dict(self) -> dict[str, float]:
        """``{"score", "min_score", "ratio"}``."""
        return {"score": self.score, "min_score": self.min_score, "ratio": self.ratio}


def _normalise(p: np.ndarray, what: str) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise InputError(f"{what} must be finite and non-negative")
    total = p.sum()
    if not total > 0:
        raise InputError(f"{what} sum to 0: nothing to normalise")
    return p / total


def pautomac_score(pred: np.ndarray, solution: np.ndarray) -> float:
    """``2 ** -sum_x P_T(x) log2 P_C(x)`` of Eq. 19, both normalised over the test set.

    ``inf`` when the prediction gives probability 0 to a string the solution gives mass.
    """
    pred = np.asarray(pred, dtype=np.float64).reshape(-1)
    solution = np.asarray(solution, dtype=np.float64).reshape(-1)
    if pred.shape != solution.shape:
        raise InputError(f"prediction has {pred.size} probabilities, solution {solution.size}")
    p_c = _normalise(pred, "predicted probabilities")
    p_t = _normalise(solution, "solution probabilities")
    mass = p_t > 0
    if np.any(p_c[mass] == 0):
        return float("inf")
    return float(2.0 ** (-np.sum(p_t[mass] * np.log2(p_c[mass]))))


def pautomac_score_log(log_pred: np.ndarray, log_solution: np.ndarray) -> float:
    """Eq. 19 from natural-log probabilities (as :func:`bayesfa.pautomac.read_solution` gives
    with ``log=True``), so that probabilities below float64's range still count.

    ``inf`` when the prediction gives probability 0 (log ``-inf``) to a string the solution
    gives mass.
    """
    from scipy.special import logsumexp

    lp = np.asarray(log_pred, dtype=np.float64).reshape(-1)
    ls = np.asarray(log_solution, dtype=np.float64).reshape(-1)
    if lp.shape != ls.shape:
        raise InputError(f"prediction has {lp.size} probabilities, solution {ls.size}")
    for what, x in (("predicted probabilities", lp), ("solution probabilities", ls)):
        if np.any(np.isnan(x)) or np.any(x > 1e-9):
            raise InputError(f"{what} must be probabilities (log in [-inf, 0])")
        if not np.isfinite(x).any():
            raise InputError(f"{what} sum to 0: nothing to normalise")
    log_c = lp - logsumexp(lp)
    p_t = np.exp(ls - logsumexp(ls))
    mass = p_t > 0
    if np.any(np.isinf(log_c[mass])):
        return float("inf")
    return float(2.0 ** (-np.sum(p_t[mass] * log_c[mass]) / np.log(2.0)))


def score_all_log(log_pred: np.ndarray, log_solution: np.ndarray) -> Score:
    """:func:`score_all` from natural-log probabilities."""
    s, m = pautomac_score_log(log_pred, log_solution), pautomac_score_log(log_solution, log_solution)
    return Score(s, m, s / m)


def min_score(solution: np.ndarray) -> float:
    """The smallest score any prediction can get: the solution scored against itself."""
    return pautomac_score(solution, solution)


def score_all(pred: np.ndarray, solution: np.ndarray) -> Score:
    """The PAutomaC score of ``pred``, the smallest score possible and their ratio (1 is
    perfect), as a :class:`Score`.

    ``pred`` and ``solution`` are probabilities (not logs) of the same test strings in the same
    order, shape ``[n_strings]`` (e.g. ``np.exp(run.predict(test))`` and
    :func:`bayesfa.pautomac.read_solution`); each is normalised over the test set. The score
    is Eq. 19 of Shibata & Yoshinaka (2013), ``2 ** -sum_x P_T(x) log2 P_C(x)``
    (:func:`pautomac_score`): ``inf`` when the prediction gives probability 0 to a string the
    solution gives mass. Probabilities below float64's range: :func:`score_all_log`. Arrays
    of different lengths, or not finite and non-negative, are an
    :class:`~bayesfa.errors.InputError`."""
    s, m = pautomac_score(pred, solution), min_score(solution)
    return Score(s, m, s / m)


def perplexity(log_probs: np.ndarray, n_symbols: int) -> float:
    """Per-symbol perplexity ``exp(-sum log p / n_symbols)`` of natural-log probabilities.

    For a corpus, ``n_symbols`` is usually ``corpus.n_tokens``: every letter and every end of
    string is a prediction the model made.
    """
    log_probs = np.asarray(log_probs, dtype=np.float64)
    if n_symbols < 1:
        raise InputError("perplexity needs at least one symbol")
    return float(np.exp(-log_probs.sum() / n_symbols))
