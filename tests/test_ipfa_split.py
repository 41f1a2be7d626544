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


def test_fit_with_moves_is_reproducible_changes_the_chain_and_checks_its_arguments():
    """``sample_ipfa(..., sampler="blocked", split_merge=R)`` runs the moves inside the blocked
    sweep (``build_hybrid``'s ``with_moves``): the same seed gives the same chain bit for bit,
    the counts stay those of the path, the chain differs from the one without moves (the
    moves draw from the same Generator), and bad arguments are one-line errors."""
    import numpy as np

    from bayesfa.errors import InputError
    from bayesfa.samplers.pfa.ipfa import sample_ipfa
    from bayesfa.validation.toys import get_toy

    train = get_toy("small").train
    common = dict(states=2, iterations=40, burn_in=20, period=4, chains=1, seed=3,
                  sampler="blocked", truncate=6)
    runs = [sample_ipfa(train, split_merge=2, split_merge_scans=3, **common) for _ in range(2)]
    for key in ("counts", "alpha", "gamma", "log_joint", "n_states", "z"):
        assert np.array_equal(getattr(runs[0], key), getattr(runs[1], key)), key
    r = runs[0]
    tokens = np.asarray(train.tokens)
    k1 = r.counts.shape[2]
    ref = np.zeros((k1, train.alphabet_size + 1, k1), dtype=np.int64)
    np.add.at(ref, (r.z[0][:-1], tokens, r.z[0][1:]), 1)
    assert np.array_equal(r.counts[0, -1], ref)
    plain = sample_ipfa(train, **common)
    assert not np.array_equal(plain.z, r.z)
    for kwargs, match in [({"split_merge": -1.0}, "split-merge"),
                          ({"split_merge": 1.0, "sampler": "direct", "truncate": 0}, "blocked"),
                          ({"split_merge": 1.0, "split_merge_scans": -2}, "split-merge-scans")]:
        with pytest.raises(InputError, match=match):
            sample_ipfa(train, **{**common, **kwargs})
