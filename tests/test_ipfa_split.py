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


def test_the_pair_of_anchors_is_the_documented_rule_of_the_first_uniforms():
    """The anchors ``t1, t2`` of a move are the free positions ``m1 = floor(u1 M)`` and, for
    ``PAIRS_UNIFORM`` (Jain & Neal), ``m2 = floor(u2 (M - 1))``, plus one from ``m1`` on,
    of the ``M`` free positions, ``u1, u2`` the move's first uniforms: every ordered pair of
    distinct positions has probability ``1 / (M (M - 1))``. For ``PAIRS_LETTERS``, ``m2`` is
    then drawn again, ``floor(u M)``, while the letter at ``t2`` equals the letter at ``t1``.
    Any pair law that ignores ``z`` keeps the posterior, so the invariance check cannot see
    a wrong one: this reads the pair off a path with one state per free position (every move
    then a merge of ``j = z_t2`` into ``i = z_t1``; dry, so nothing is accepted) and compares
    it, seed by seed, with the rule applied to the same Generator's uniforms; after each dry
    move the whole chain state (``z``, the counts, ``recip``, ``bk``, ``beta``) must be as
    before. A split that finds no empty state proposes nothing (kind 0, ``out`` all 0).
    Deterministic."""
    import numpy as np

    from bayesfa.corpus import Corpus
    from bayesfa.exact import free_positions
    from bayesfa.samplers.pfa._cgs_pfa_kernel import count_transitions, padded_width
    from bayesfa.samplers.pfa._ipfa_kernel import refresh_weights

    corpus = Corpus.from_strings([[0, 1, 0, 1], [1, 1, 0], [0, 0], []], 2)
    tokens = np.ascontiguousarray(corpus.tokens, dtype=np.int32)
    positions = free_positions(tokens).astype(np.int64)
    m, n_sym = positions.size, corpus.alphabet_size + 1
    letter = tokens[positions]  # the letter at each free position (0: the end)
    assert m == 9 and len(set(letter.tolist())) == 3

    def chain(z, n_st):
        w = padded_width(n_st)
        c, ct = np.zeros((n_st + 1, n_sym, w)), np.zeros((n_sym, n_st + 1, w))
        ci = np.zeros(n_st + 1, np.int32)
        recip, bk, beta = np.zeros(w), np.zeros(w), np.full(n_st + 1, 1.0 / n_st)
        beta[0] = 0.0
        count_transitions(tokens, z, c, ct, ci)
        refresh_weights(ci, recip, bk, beta, np.zeros(2, np.int64), 1.5, n_sym, True)
        return [z, c, ct, ci, recip, bk, beta]

    members, saved, out = np.zeros(m, np.int64), np.zeros(m, np.int32), np.zeros(sk.OUT)
    z = np.zeros(tokens.size + 1, np.int32)
    z[positions] = np.arange(1, m + 1)  # state k at the k-th free position: i, j name t1, t2
    st = chain(z, m)
    before = [a.copy() for a in st]
    for pairs in (sk.PAIRS_UNIFORM, sk.PAIRS_LETTERS):
        seen = set()
        for seed in range(300):
            zz, c, ct, ci, recip, bk, beta = st
            kind = sk.propose(positions, tokens, zz, c, ct, ci, recip, bk, beta, 1.5, 1.0,
                              np.random.default_rng(seed), 0, sk.CHOICE_UNIFORM, True, members,
                              saved, out, -1, -1, sk.LAUNCH_RANDOM, pairs)
            u = np.random.default_rng(seed).random
            m1 = min(int(u() * m), m - 1)
            m2 = min(int(u() * (m - 1)), m - 2)
            m2 += m2 >= m1
            while pairs == sk.PAIRS_LETTERS and letter[m2] == letter[m1]:
                m2 = min(int(u() * m), m - 1)
            got = (int(out[sk.STATE_I]), int(out[sk.STATE_J]))
            assert kind == 2 and got == (m1 + 1, m2 + 1), (pairs, seed, got, (m1 + 1, m2 + 1))
            assert out[sk.ACCEPTED] == 0.0, (pairs, seed)
            assert all(np.array_equal(a, b) for a, b in zip(st, before)), (pairs, seed)
            seen.add((m1, m2))
        # the seeds reach nearly every pair the rule allows (72, resp. the 54 of two letters)
        allowed = [(a, b) for a in range(m) for b in range(m)
                   if a != b and (pairs == sk.PAIRS_UNIFORM or letter[a] != letter[b])]
        assert seen <= set(allowed) and len(seen) > 0.9 * len(allowed), (pairs, len(seen))
    # two states, both in use: the pair (0, 1) lies in state 1, a split with no empty state
    z2 = np.zeros(tokens.size + 1, np.int32)
    z2[positions] = [1, 1] + [2] * (m - 2)
    zz, c, ct, ci, recip, bk, beta = chain(z2, 2)
    out[:] = 7.0
    kind = sk.propose(positions, tokens, zz, c, ct, ci, recip, bk, beta, 1.5, 1.0,
                      np.random.default_rng(0), 0, sk.CHOICE_UNIFORM, False, members, saved,
                      out, 0, 1, sk.LAUNCH_RANDOM, sk.PAIRS_UNIFORM)
    assert kind == 0 and not out.any(), out
