"""Scores: the PAutomaC score (Shibata & Yoshinaka 2013, Eq. 19) and per-symbol perplexity."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bayesfa.errors import InputError


class Score(NamedTuple):
    score: float
    min_score: float
    ratio: float

    def as_dict(self) -> dict[str, float]:
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


def min_score(solution: np.ndarray) -> float:
    """The smallest score any prediction can get: the solution scored against itself."""
    return pautomac_score(solution, solution)


def score_all(pred: np.ndarray, solution: np.ndarray) -> Score:
    """Score, minimal score and their ratio (1 is perfect)."""
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
