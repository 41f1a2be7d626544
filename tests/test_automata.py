"""PFA, PDFA and HMM: conversions to the PFA form, sampling and validation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from bayesfa.automata import HMM, PDFA, PFA, classify
from bayesfa.datasets import pautomac_path
from bayesfa.errors import InputError
from bayesfa.pautomac import read_model, read_sample
from bayesfa.corpus import Corpus
from test_forward import all_strings, brute_force_prob, random_pfa, random_xi

#: Chance that a statistical test fails although the code is right (for a random seed;
#: the seeds below are fixed, so each run is deterministic).
TEST_FAILURE_RATE = 1e-3


# -- PDFA ------------------------------------------------------------------------------------
def random_pdfa(rng, n_states=4, n_letters=3) -> PDFA:
    delta = rng.integers(0, n_states, size=(n_states, n_letters))
    delta[rng.random(delta.shape) < 0.3] = -1  # some undefined transitions
    weights = rng.random((n_states, n_letters)) * (delta >= 0)
    stop = rng.uniform(0.1, 0.5, size=n_states)
    total = weights.sum(axis=1)
    pi = np.where(total[:, None] > 0, weights / np.where(total > 0, total, 1)[:, None] * (1 - stop)[:, None], 0)
    stop = np.where(total > 0, stop, 1.0)  # a state with no transition always stops
    return PDFA(delta, pi, stop, start=int(rng.integers(n_states)))


def pdfa_direct(pdfa: PDFA, string) -> float:
    """Follow the unique path from the start state (0 if a transition is undefined)."""
    q, p = pdfa.start, 1.0
    for a in string:
        if pdfa.delta[q, a] < 0:
            return 0.0
        p *= pdfa.pi[q, a]
        q = pdfa.delta[q, a]
    return p * pdfa.stop[q]


@pytest.mark.parametrize("seed", range(4))
def test_pdfa_to_pfa_matches_direct_computation(seed):
    pdfa = random_pdfa(np.random.default_rng(seed))
    strings = list(all_strings(3, 4))
    corpus = Corpus.from_strings(strings, 3)
    want = np.array([pdfa_direct(pdfa, s) for s in strings])
    assert np.any(want == 0) and np.any(want > 0)
    np.testing.assert_allclose(pdfa.to_pfa().prob(corpus), want, rtol=1e-12, atol=0)
    np.testing.assert_allclose(np.exp(pdfa.log_prob(corpus)), want, rtol=1e-12, atol=0)
    pfa = pdfa.to_pfa()
    assert pfa.init[pdfa.start] == 1.0 and pfa.init.sum() == 1.0
    # determinism: each (state, letter) has at most one successor
    assert (np.count_nonzero(pfa.trans, axis=2) <= 1).all()


@pytest.mark.parametrize("kwargs, match", [
    (dict(delta=[[1, 0], [0, 2]], pi=[[0.5, 0.5], [0.5, 0.5]], stop=[0.0, 0.0]), "state"),
    (dict(delta=[[1, -1], [0, 0]], pi=[[0.5, 0.5], [0.5, 0.5]], stop=[0.0, 0.0]), "undefined"),
    (dict(delta=[[1, 0], [0, 0]], pi=[[0.5, 0.4], [0.5, 0.5]], stop=[0.0, 0.0]), "sums"),
    (dict(delta=[[1, 0], [0, 0]], pi=[[1.5, -0.5], [0.5, 0.5]], stop=[0.0, 0.0]), "non-negative"),
    (dict(delta=[[1, 0], [0, 0]], pi=[[0.5, 0.5], [0.5, 0.5]], stop=[0.0, 0.0], start=2), "start"),
    (dict(delta=[[1, 0], [0, 0]], pi=[[0.5, 0.5]], stop=[0.0, 0.0]), "shape|\\[Q, A\\]"),
])
def test_invalid_pdfa(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PDFA(**kwargs)


# -- HMM -------------------------------------------------------------------------------------
def random_hmm(rng, n_states=3, n_letters=2) -> HMM:
    out = rng.dirichlet(np.ones(1 + n_letters), size=n_states)
    theta = rng.dirichlet(np.ones(n_states), size=n_states)
    return HMM(init=rng.dirichlet(np.ones(n_states)), emit=out[:, 1:], theta=theta, stop=out[:, 0])


def hmm_direct(hmm: HMM, string) -> float:
    """HMM definition: in q stop (stop[q]) or emit a (emit[q, a]), then move q -> r (theta)."""
    init, emit, theta, stop = (np.asarray(x) for x in (hmm.init, hmm.emit, hmm.theta, hmm.stop))
    total = 0.0
    for path in itertools.product(range(init.size), repeat=len(string) + 1):
        p = init[path[0]]
        for a, q, r in zip(string, path[:-1], path[1:]):
            p *= emit[q, a] * theta[q, r]
        total += p * stop[path[-1]]
    return total


@pytest.mark.parametrize("seed", range(3))
def test_hmm_to_pfa_matches_direct_computation(seed):
    hmm = random_hmm(np.random.default_rng(seed))
    strings = list(all_strings(2, 4))
    corpus = Corpus.from_strings(strings, 2)
    want = np.array([hmm_direct(hmm, s) for s in strings])
    np.testing.assert_allclose(hmm.to_pfa().prob(corpus), want, rtol=1e-12)
    np.testing.assert_allclose(np.exp(hmm.log_prob(corpus)), want, rtol=1e-12)


def test_invalid_hmm():
    hmm = random_hmm(np.random.default_rng(0))
    with pytest.raises(ValueError, match="state transition"):
        HMM(hmm.init, hmm.emit, hmm.theta * 0.9, hmm.stop).to_pfa()
    with pytest.raises(ValueError):
        HMM(hmm.init, hmm.emit * 0.9, hmm.theta, hmm.stop).to_pfa()
    with pytest.raises(ValueError):
        HMM(hmm.init * 2, hmm.emit, hmm.theta, hmm.stop).to_pfa()


# -- PFA -------------------------------------------------------------------------------------
def test_pfa_log_prob_and_prob():
    init, trans, stop = random_pfa(np.random.default_rng(0), 3, 2)
    pfa = PFA(init, trans, stop)
    assert (pfa.n_states, pfa.alphabet_size) == (3, 2)
    assert pfa.to_pfa() is pfa
    strings = list(all_strings(2, 3))
    corpus = Corpus.from_strings(strings, 2)
    want = [brute_force_prob(init, trans, stop, s) for s in strings]
    np.testing.assert_allclose(pfa.prob(corpus), want, rtol=1e-12)
    np.testing.assert_allclose(pfa.log_prob(corpus), np.log(want), rtol=1e-12)


def test_pfa_from_xi():
    xi = random_xi(np.random.default_rng(1), 3, 3)
    pfa = PFA.from_xi(xi)
    assert pfa.init.tolist() == [1.0, 0.0, 0.0]
    np.testing.assert_array_equal(pfa.stop, xi[:, 0, 0])
    np.testing.assert_array_equal(pfa.trans[1], xi[:, 2, :])


def _valid():
    init, trans, stop = random_pfa(np.random.default_rng(2), 2, 2)
    return init, trans, stop


def _with(index, value):
    init, trans, stop = (x.copy() for x in _valid())
    parts = {"init": init, "trans": trans, "stop": stop}
    name, where = index
    parts[name][where] = value(parts[name][where])
    return parts


@pytest.mark.parametrize("parts", [
    pytest.param(_with(("stop", 0), lambda v: v + 0.1), id="row-sums-above-1"),
    pytest.param(_with(("trans", (0, 1, 1)), lambda v: v / 2), id="row-sums-below-1"),
    pytest.param(_with(("init", 0), lambda v: v + 0.5), id="init-not-summing-to-1"),
    pytest.param(_with(("init", 1), lambda v: np.nan), id="nan"),
    pytest.param(_with(("trans", (1, 0, 0)), lambda v: np.inf), id="inf"),
])
def test_invalid_pfa_rows(parts):
    with pytest.raises(ValueError):
        PFA(**parts)


def test_invalid_pfa_negative_entries_even_if_rows_sum_to_1():
    init = np.array([1.0, 0.0])
    stop = np.array([0.5, 0.5])
    trans = np.zeros((1, 2, 2))
    trans[0, 0] = [0.75, -0.25]  # 0.5 + 0.75 - 0.25 = 1
    trans[0, 1] = [0.5, 0.0]
    with pytest.raises(ValueError, match="non-negative"):
        PFA(init, trans, stop)
    with pytest.raises(ValueError, match="non-negative"):
        PFA(np.array([1.5, -0.5]), np.full((1, 2, 2), 0.25), stop)


@pytest.mark.parametrize("init, trans, stop", [
    (np.ones(2) / 2, np.full((1, 2, 3), 0.1), np.ones(2) / 2),    # trans not square
    (np.ones(3) / 3, np.full((1, 2, 2), 0.25), np.ones(2) / 2),   # init of the wrong size
    (np.ones(2) / 2, np.full((2, 2), 0.25), np.ones(2) / 2),      # trans 2-D
])
def test_invalid_pfa_shapes(init, trans, stop):
    with pytest.raises(ValueError):
        PFA(init, trans, stop)


def test_sample_frequencies_match_exact_probabilities():
    """Chi-square goodness of fit of sampled strings to their exact probabilities.

    Bins: every string of length <= 3 over 2 letters (15 bins) plus one bin "longer".
    The test fails with probability TEST_FAILURE_RATE when ``sample`` is right.
    """
    init, trans, stop = random_pfa(np.random.default_rng(11), 3, 2, min_stop=0.3)
    pfa = PFA(init, trans, stop)
    n = 20_000
    sample = pfa.sample(n, np.random.default_rng(12345))
    assert sample.n_strings == n and sample.alphabet_size == 2
    short = list(all_strings(2, 3))
    exact = pfa.prob(Corpus.from_strings(short, 2))
    probs = np.append(exact, 1 - exact.sum())
    index = {tuple(s): i for i, s in enumerate(short)}
    observed = np.zeros(len(probs))
    for s in sample.strings():
        observed[index.get(tuple(s.tolist()), len(short))] += 1
    expected = n * probs
    assert expected.min() >= 5, "bins too small for the chi-square approximation"
    result = stats.chisquare(observed, expected)
    assert result.pvalue > TEST_FAILURE_RATE, (observed, expected)


def test_sample_is_reproducible_and_respects_support():
    # A PDFA over 2 letters where letter 1 is only possible from state 1.
    pdfa = PDFA(delta=[[1, -1], [0, 0]], pi=[[0.6, 0.0], [0.2, 0.3]], stop=[0.4, 0.5])
    pfa = pdfa.to_pfa()
    a = pfa.sample(300, np.random.default_rng(4))
    b = pfa.sample(300, np.random.default_rng(4))
    assert a == b
    assert np.all(np.isfinite(pfa.log_prob(a)))  # every sampled string is possible


def test_sample_guards_against_non_stopping_machine():
    trans = np.ones((1, 1, 1))  # emits letter 0 forever
    pfa = PFA(np.ones(1), trans, np.zeros(1))
    with pytest.raises(RuntimeError, match="max_length"):
        pfa.sample(1, np.random.default_rng(0), max_length=50)


# -- building a PDFA or an HMM from a PFA / a PAutomaC model file ------------------------------
def test_pdfa_and_hmm_round_trip_through_the_pfa_form():
    rng = np.random.default_rng(4)
    pdfa = PDFA(np.array([[1, -1], [0, 1]]), np.array([[0.6, 0.0], [0.3, 0.2]]), np.array([0.4, 0.5]))
    back = PDFA.from_pfa(pdfa.to_pfa())
    np.testing.assert_array_equal(back.delta, pdfa.delta)
    np.testing.assert_allclose(back.pi, pdfa.pi)
    assert back.start == pdfa.start and classify(pdfa.to_pfa()) == "pdfa"
    theta = rng.dirichlet(np.ones(3), size=3)
    emit = rng.dirichlet(np.ones(3), size=3)[:, :2]  # the third column's mass is the stop
    hmm = HMM(np.array([1.0, 0, 0]), emit, theta, 1 - emit.sum(axis=1))
    back = HMM.from_pfa(hmm.to_pfa())
    np.testing.assert_allclose(back.theta, theta)
    np.testing.assert_allclose(back.emit, emit)
    assert classify(hmm.to_pfa()) == "hmm"


def test_from_pfa_rejects_other_forms():
    trans = np.zeros((1, 2, 2))
    trans[0, 0] = [0.3, 0.3]  # letter 0 from state 0 goes to two states ...
    trans[0, 1, 0] = 0.5
    stop = np.array([0.4, 0.5])
    pfa = PFA(np.array([1.0, 0.0]), trans, stop)
    with pytest.raises(ValueError, match="not a PDFA: state 0"):
        PDFA.from_pfa(pfa)
    assert classify(pfa) == "hmm"  # ... but with one letter it is an HMM
    trans2 = np.zeros((2, 2, 2))
    trans2[0, 0, 0], trans2[1, 0, 1] = 0.3, 0.3  # the next state depends on the letter
    trans2[0, 1, 0] = 0.5
    pfa2 = PFA(np.array([0.5, 0.5]), trans2, stop)
    with pytest.raises(ValueError, match="not an HMM: .* state 0"):
        HMM.from_pfa(pfa2)
    assert classify(pfa2) == "pfa"


def test_read_model_kind_on_the_bundled_problem(tmp_path):
    path = pautomac_path(24, "model")
    pdfa = read_model(path, kind="auto")
    assert isinstance(pdfa, PDFA)
    test = read_sample(pautomac_path(24, "test"))
    np.testing.assert_allclose(pdfa.log_prob(test), read_model(path).log_prob(test), rtol=1e-12)
    with pytest.raises(InputError, match="not an HMM") as err:
        read_model(path, kind="hmm")
    assert str(path) in str(err.value)


@pytest.mark.shared_data
def test_read_model_kinds_match_the_data_readme(shared_data):
    """The data README classifies the 48 target machines: 16 PDFAs, 16 HMMs, 16 PFAs."""
    import re

    readme = (shared_data / "README.md").read_text()
    expected = {int(m.group(1)): m.group(2).lower()
                for m in re.finditer(r"^\| (\d+) \| (HMM|PFA|PDFA) \|", readme, re.M)}
    assert len(expected) == 48
    for k, kind in expected.items():
        model = read_model(shared_data / "pautomac" / f"{k}.pautomac_model.txt", kind="auto")
        assert type(model).__name__.lower() == kind, k
        pfa = model.to_pfa()
        test = read_sample(shared_data / "pautomac" / f"{k}.pautomac.test").subset(range(50))
        if kind != "pfa" and test.alphabet_size <= pfa.alphabet_size:  # same probabilities
            reference = read_model(shared_data / "pautomac" / f"{k}.pautomac_model.txt")
            np.testing.assert_allclose(model.log_prob(test), reference.log_prob(test), rtol=1e-9)
