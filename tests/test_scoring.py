"""The PAutomaC score (Shibata & Yoshinaka 2013, Eq. 19) and per-symbol perplexity."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from bayesfa.automata import PFA
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.scoring import Score, min_score, pautomac_score, perplexity, score_all
from test_corpus import corpora


def positive_vectors(min_size=1, max_size=20):
    return st.integers(min_size, max_size).flatmap(lambda n: hnp.arrays(
        np.float64, n, elements=st.floats(1e-6, 1.0, allow_nan=False)))


def entropy2(p: np.ndarray) -> float:
    p = p / p.sum()
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


# -- Eq. 19 by hand --------------------------------------------------------------------------
def test_eq_19_by_hand():
    """P_T = (1/2, 1/4, 1/4), P_C = (1/4, 1/4, 1/2).

    score = 2^-(1/2 log2 1/4 + 1/4 log2 1/4 + 1/4 log2 1/2) = 2^(1 + 1/2 + 1/4) = 2^1.75;
    min score = 2^H(P_T) = 2^(1/2 + 1/2 + 1/2) = 2^1.5; ratio = 2^0.25.
    """
    solution = np.array([0.5, 0.25, 0.25])
    pred = np.array([0.25, 0.25, 0.5])
    assert pautomac_score(pred, solution) == pytest.approx(2 ** 1.75, rel=1e-14)
    assert min_score(solution) == pytest.approx(2 ** 1.5, rel=1e-14)
    result = score_all(pred, solution)
    assert isinstance(result, Score)
    assert result.ratio == pytest.approx(2 ** 0.25, rel=1e-14)
    assert list(result.as_dict()) == ["score", "min_score", "ratio"]
    # both sides are normalised over the test set first
    assert pautomac_score(pred * 1e-9, solution * 4) == pytest.approx(2 ** 1.75, rel=1e-14)
    assert pautomac_score([1, 1, 2], [2, 1, 1]) == pytest.approx(2 ** 1.75, rel=1e-14)


def test_uniform_prediction_on_uniform_solution_scores_n():
    assert pautomac_score(np.ones(7), np.ones(7)) == pytest.approx(7.0, rel=1e-14)


# -- properties -------------------------------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(positive_vectors())
def test_min_score_is_two_to_the_entropy(solution):
    assert min_score(solution) == pytest.approx(2 ** entropy2(solution), rel=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 20).flatmap(lambda n: st.tuples(
    hnp.arrays(np.float64, n, elements=st.floats(1e-6, 1.0)),
    hnp.arrays(np.float64, n, elements=st.floats(0.0, 1.0)).filter(lambda s: s.sum() > 0))))
def test_ratio_is_at_least_1(pair):
    """Gibbs' inequality: cross-entropy >= entropy, so score >= min score."""
    pred, solution = pair
    result = score_all(pred, solution)
    assert result.ratio >= 1 - 1e-12
    assert result.score >= result.min_score * (1 - 1e-12)


@settings(max_examples=100, deadline=None)
@given(positive_vectors(), st.floats(1e-8, 1e8), st.floats(1e-8, 1e8))
def test_normalisation_invariance(pred, scale_pred, scale_solution):
    solution = pred[::-1].copy()
    base = pautomac_score(pred, solution)
    assert pautomac_score(pred * scale_pred, solution) == pytest.approx(base, rel=1e-12)
    assert pautomac_score(pred, solution * scale_solution) == pytest.approx(base, rel=1e-12)
    assert score_all(pred * scale_pred, solution).ratio == pytest.approx(score_all(pred, solution).ratio,
                                                                         rel=1e-12)


# -- zeros and bad input ---------------------------------------------------------------------
def test_zero_prediction_where_the_solution_has_mass_is_infinite():
    assert pautomac_score([0.0, 1.0], [0.5, 0.5]) == math.inf
    assert score_all([0.0, 1.0], [0.5, 0.5]).ratio == math.inf
    # a zero where the solution has no mass costs nothing
    assert pautomac_score([0.0, 1.0], [0.0, 1.0]) == pytest.approx(1.0)


@pytest.mark.parametrize("pred, solution", [
    ([0.5, 0.5], [1.0]),
    ([0.5, -0.1], [0.5, 0.5]),
    ([0.5, np.nan], [0.5, 0.5]),
    ([0.5, np.inf], [0.5, 0.5]),
    ([0.0, 0.0], [0.5, 0.5]),
    ([0.5, 0.5], [0.0, 0.0]),
])
def test_invalid_scores_raise_input_error(pred, solution):
    with pytest.raises(InputError):
        pautomac_score(pred, solution)


# -- perplexity ------------------------------------------------------------------------------
def uniform_pfa(n_letters: int) -> PFA:
    """One state that stops or emits any letter (and stays), each with probability 1/(A+1)."""
    p = 1.0 / (n_letters + 1)
    return PFA(np.ones(1), np.full((n_letters, 1, 1), p), np.full(1, p))


@settings(max_examples=50, deadline=None)
@given(corpora(max_strings=10, max_length=8).filter(lambda d: d[0]))
def test_perplexity_of_the_uniform_model_is_alphabet_size_plus_1(data):
    """Every letter and every end of string has probability 1/(A+1) under ``uniform_pfa``, so
    log Pr(x) = -(|x| + 1) log(A + 1); summed over the corpus that is -n_tokens log(A + 1),
    and exp(-sum log Pr / n_tokens) = A + 1 whatever the strings (empty ones included)."""
    strings, alphabet_size = data
    corpus = Corpus.from_strings(strings, alphabet_size)
    logp = uniform_pfa(alphabet_size).log_prob(corpus)
    assert perplexity(logp, corpus.n_tokens) == pytest.approx(alphabet_size + 1, rel=1e-12)


def test_perplexity_formula_and_errors():
    assert perplexity(np.log([0.5, 0.25]), 3) == pytest.approx(np.exp(np.log(8) / 3))
    with pytest.raises(InputError):
        perplexity(np.zeros(2), 0)


# -- probabilities below float64's range ------------------------------------------------------

def test_solution_round_trip_in_log_space_below_float64_range(tmp_path):
    from bayesfa.pautomac import read_solution, write_solution

    logp = np.array([0.0, -1.5, -744.0, -746.0, -1000.0, -123456.789, -np.inf])
    path = tmp_path / "pred"
    write_solution(path, log_probs=logp)
    back = read_solution(path, log=True)
    assert back[-1] == -np.inf
    np.testing.assert_allclose(back[:-1], logp[:-1], rtol=1e-13, atol=1e-12)
    plain = read_solution(path)  # as floats: what float64 can hold
    assert plain[4] == 0.0 and plain[0] == 1.0
    # written as the positive numbers they are (the mantissa of each, as float64 cannot hold them)
    assert all(float(x.lower().partition("e")[0]) > 0 for x in path.read_text().split()[1:-1])


def test_score_counts_probabilities_below_float64_range():
    from bayesfa.scoring import score_all, score_all_log

    sol = np.log(np.array([0.5, 0.3, 0.2]))
    pred = np.array([np.log(0.4), np.log(0.4), -900.0])  # exp(-900) underflows to 0
    res = score_all_log(pred, sol)
    assert np.isfinite(res.score)
    # the same score computed by hand in log space
    log_c = pred - np.logaddexp.reduce(pred)
    expected = 2.0 ** (-np.sum(np.exp(sol) * log_c) / np.log(2.0))
    assert res.score == pytest.approx(expected, rel=1e-12)
    assert not np.isfinite(score_all(np.exp(pred), np.exp(sol)).score)  # floats lose it
    ok = np.log(np.array([0.45, 0.35, 0.2]))
    assert score_all_log(ok, sol).score == pytest.approx(score_all(np.exp(ok), np.exp(sol)).score,
                                                          rel=1e-12)


def test_cli_predict_and_score_keep_tiny_probabilities(tmp_path, capsys):
    from bayesfa.cli import main

    sol = tmp_path / "sol"
    sol.write_text("3\n0.5\n0.3\n0.2\n")
    pred = tmp_path / "pred"
    pred.write_text("3\n0.4\n0.4\n1.5e-400\n")
    assert main(["score", str(pred), str(sol), "--json"]) == 0
    import json

    out = json.loads(capsys.readouterr().out)
    assert out["score"] is not None and np.isfinite(out["score"])


# -- added from the mutation run (benchmarks/RESULTS.md, "Mutation score") ----------------------

def test_log_and_linear_scores_agree_with_zeros_on_both_sides():
    """Eq. 19 in log space equals Eq. 19 on probabilities (score, minimal score and ratio =
    score / min), with zeros where the solution has no mass and unnormalised inputs on both
    sides; a zero prediction where the solution has no mass costs nothing in either."""
    from bayesfa.scoring import score_all_log

    rng = np.random.default_rng(19)
    for _ in range(5):
        sol = rng.random(12)  # unnormalised, each <= 1 (the log form takes probabilities)
        pred = rng.random(12) * 0.5
        sol[[2, 7]] = 0.0
        pred[7] = 0.0  # zero where the solution has none
        with np.errstate(divide="ignore"):
            lin, log = score_all(pred, sol), score_all_log(np.log(pred), np.log(sol))
        assert np.isfinite(lin.score) and np.isfinite(log.score)
        for a, b in zip(lin, log):
            assert a == pytest.approx(b, rel=1e-12)
        assert lin.ratio == pytest.approx(lin.score / lin.min_score, rel=1e-15)
        assert log.ratio == pytest.approx(log.score / log.min_score, rel=1e-15)
        assert lin.ratio > 1.0
        # by hand, on normalised vectors
        p_t, p_c = sol / sol.sum(), pred / pred.sum()
        m = p_t > 0
        assert lin.score == pytest.approx(2.0 ** -np.sum(p_t[m] * np.log2(p_c[m])), rel=1e-12)


def test_infinite_score_without_warnings():
    """A zero prediction where the solution has mass is ``inf`` by the rule of Eq. 19's
    docstring, not by ``log2(0)`` (no floating-point warning escapes)."""
    import warnings

    from bayesfa.scoring import pautomac_score_log

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pautomac_score([0.0, 1.0], [0.5, 0.5]) == math.inf
        assert pautomac_score_log([-np.inf, 0.0], np.log([0.5, 0.5])) == math.inf


@pytest.mark.parametrize("n_pred, n_sol", [(2, 3), (3, 2)])
def test_length_mismatch_is_an_input_error_either_way(n_pred, n_sol):
    from bayesfa.scoring import pautomac_score_log

    with pytest.raises(InputError, match="prediction has"):
        pautomac_score(np.full(n_pred, 0.5), np.full(n_sol, 0.5))
    with pytest.raises(InputError, match="prediction has"):
        pautomac_score_log(np.full(n_pred, -1.0), np.full(n_sol, -1.0))


@pytest.mark.parametrize("bad", [0.5, np.nan])
@pytest.mark.parametrize("side", ["pred", "solution"])
def test_log_scores_reject_log_probabilities_above_0_or_nan(bad, side):
    from bayesfa.scoring import pautomac_score_log

    ok = np.log([0.5, 0.25])
    wrong = np.array([bad, -1.0])
    args = (wrong, ok) if side == "pred" else (ok, wrong)
    with pytest.raises(InputError, match="log in"):
        pautomac_score_log(*args)
