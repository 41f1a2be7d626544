"""The iPFA weak limit's split-merge proposal, accepted by its ratio, leaves Pr(z | beta,
alpha, data) invariant (:mod:`bayesfa.validation.pfa.ipfa_split`: one move from each of
200,000 exact posterior draws on a toy with L = 4, chi-square of the end paths against the
enumerated posterior; false-alarm rate 1e-3 at the fixed seed 0), and its mutants fail."""

import pytest

from bayesfa.samplers.pfa import _ipfa_split_kernel as sk
from bayesfa.validation.pfa.ipfa_split import ALPHA, invariance

#: (choice of the empty state, launch, pairs): Jain & Neal's, and the one the sampler runs
SETTINGS = [(sk.CHOICE_UNIFORM, sk.LAUNCH_RANDOM, sk.PAIRS_UNIFORM),
            (sk.CHOICE_BETA, sk.LAUNCH_LETTER, sk.PAIRS_LETTERS)]


@pytest.mark.slow
@pytest.mark.parametrize("choice,launch,pairs", SETTINGS)
def test_move_keeps_the_posterior(choice, launch, pairs):
    row = invariance(None, choice=choice, launch=launch, pairs=pairs, seed=0)
    assert row["splits_accepted"] > 1000 and row["merges_accepted"] > 1000, row
    assert row["p_value"] >= ALPHA, row


@pytest.mark.slow
@pytest.mark.parametrize("mutation", list(sk.MUTATIONS))
@pytest.mark.parametrize("choice,launch,pairs", SETTINGS)
def test_mutants_fail(mutation, choice, launch, pairs):
    row = invariance(mutation, choice=choice, launch=launch, pairs=pairs, seed=0)
    assert row["p_value"] < ALPHA, row
