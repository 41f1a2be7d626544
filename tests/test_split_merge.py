"""Split-merge moves for CGS-PFA (issue 22, item 2): ``_split_merge_kernel`` and ``--split-merge``.

The reference (:func:`bayesfa.validation.pfa.split_merge.transition_row`) enumerates the move's
transition probabilities from the posterior of the enumerated toy and never calls the kernel;
here it is first checked to be in detailed balance with ``Pr(z | alpha)`` exactly, then the
kernel's single moves and its action on exact posterior draws are tested against it
(chi-square, false-failure rate 1e-3 per check on a correct move; fixed seeds), and each
mutant of the move is shown to fail.
"""

from __future__ import annotations

import numpy as np
import pytest

from bayesfa.errors import InputError
from bayesfa.method_options import resolve
from bayesfa.samplers.pfa import _cgs_pfa_kernel as gibbs
from bayesfa.samplers.pfa import _split_merge_kernel as sm
from bayesfa.samplers.pfa import cgs_pfa
from bayesfa.validation.pfa import split_merge as check
from bayesfa.validation.pfa.mutants import SPLIT_MERGE_MUTANTS, Kernel, all_mutant_names
from bayesfa.validation.pfa.mutants import _new_state
from bayesfa.validation.pfa.reference import path_codes, path_posterior
from bayesfa.validation.toys import get_toy


@pytest.fixture(scope="module")
def pp():
    return path_posterior(check.TOY.train, check.TOY.n_states, check.TOY.beta)


def test_reference_is_a_kernel_in_detailed_balance_with_the_posterior(pp):
    """For 8 start paths (the three of ``start_paths`` and 5 posterior draws) and every path
    their row reaches: rows sum to 1 and pi(z) T(z, z') = pi(z') T(z', z) to 1e-12 (relative),
    for 0 and 3 launch scans."""
    rng = np.random.default_rng(3)
    tokens = check.TOY.train.tokens
    starts = list(check.start_paths(pp).values()) + list(pp.sample_paths(5, rng))
    for scans in (0, 3):
        for z in starts:
            row = check.transition_row(pp, z, scans)
            assert row.min() >= 0 and abs(row.sum() - 1.0) < 1e-12
            cz = int(path_codes(z, tokens, check.TOY.n_states))
            reached = [f for f in np.flatnonzero(row > 0) if f != cz]
            assert reached  # the move moves
            for f in reached[:25]:
                back = check.transition_row(pp, pp.paths[f], scans)[cz]
                lhs = pp.log_joint[cz] + np.log(row[f])
                rhs = pp.log_joint[f] + np.log(back)
                assert abs(lhs - rhs) < 1e-12 * max(1.0, abs(lhs))


def test_start_paths_cover_one_to_three_empty_states(pp):
    free = cgs_pfa.free_positions(check.TOY.train.tokens)
    used = sorted(np.unique(z[free]).size for z in check.start_paths(pp).values())
    assert used == [1, 2, 3]


def test_the_move_passes_its_exact_checks():
    """Both checks at seed 0 (each a false alarm with probability 1e-3 on a correct move)."""
    rows, inv = check.split_merge_checks(None, seed=0)
    assert rows.passed and inv.passed, (rows.rows, inv.rows)
    # both directions happen, and are accepted, from the path with two states in use
    starts = rows.summary["starts"]["2 states in use, 3 scans"]
    assert starts["splits"][1] > 1000 and starts["merges"][1] > 100


@pytest.mark.slow
@pytest.mark.parametrize("variant", list(SPLIT_MERGE_MUTANTS))
def test_each_mutant_of_the_move_fails(variant):
    rows, inv = check.split_merge_checks(variant, seed=0)
    assert not rows.passed
    assert min(r["p_value"] for r in rows.rows) < 1e-10


def test_mutants_are_known_to_validate_and_run_the_production_sweep():
    names = all_mutant_names()
    for variant in SPLIT_MERGE_MUTANTS:
        assert f"cgs-pfa:mutant-{variant}" in names
        assert Kernel(variant)._sweep is gibbs.sweep_positions
    assert sm.build_move(None) is sm.split_merge
    with pytest.raises(ValueError):
        sm.build_move("no-such-mutation")


def test_counts_stay_those_of_the_path_and_partial_log_joint_is_the_difference():
    """After every move ``c, ct, ci, recip`` equal a refill from ``z``, and the change of the
    log joint over a relabelling between two states equals the change of
    :func:`partial_log_joint` over them (Eq. 4)."""
    toy = get_toy("small")
    tokens = toy.train.tokens
    n_states, n_symbols, beta = 4, toy.train.alphabet_size + 1, toy.beta
    positions = cgs_pfa.free_positions(tokens)
    rng = np.random.default_rng(0)
    z = np.zeros(tokens.size + 1, dtype=np.int32)
    z[positions] = rng.integers(1, n_states + 1, size=positions.size)
    state = _new_state(n_states, n_symbols)
    gibbs.fill_counts(tokens, z, *state, beta)
    members = np.zeros(positions.size, dtype=np.int64)
    saved = np.zeros(positions.size, dtype=np.int32)
    stats = np.zeros(sm.STATS)
    for _ in range(300):
        before = z.copy()
        lj0 = gibbs.log_joint(state[0], beta)
        sm.moves(1, positions, tokens, z, *state, rng, beta, 2, members, saved, stats)
        fresh = _new_state(n_states, n_symbols)
        gibbs.fill_counts(tokens, z, *fresh, beta)
        for a, b in zip(state, fresh):
            np.testing.assert_array_equal(a, b)
        changed = np.unique(np.concatenate([before[before != z], z[before != z]]))
        if changed.size == 2:
            i, j = (int(s) for s in changed)
            old = _new_state(n_states, n_symbols)
            gibbs.fill_counts(tokens, before, *old, beta)
            d_part = (sm.partial_log_joint(state[0], beta, i, j)
                      - sm.partial_log_joint(old[0], beta, i, j))
            assert abs((gibbs.log_joint(state[0], beta) - lj0) - d_part) < 1e-9
    assert stats[sm.SPLITS_ACCEPTED] > 0 and stats[sm.MERGES_ACCEPTED] > 0


def test_fractional_rate():
    rng = np.random.default_rng(1)
    draws = np.array([sm.n_moves_now(0.25, rng) for _ in range(4000)])
    assert set(np.unique(draws)) == {0, 1} and abs(draws.mean() - 0.25) < 0.03  # sd 0.007
    assert sm.n_moves_now(2.0, rng) == 2


def _fit(**kw):
    toy = get_toy("small")
    return cgs_pfa.sample_cgs_pfa(toy.train, 4, 0.5, 120, 40, 8, 2, 11, **kw)


def test_split_merge_0_is_no_option_and_a_seed_gives_one_result(tmp_path):
    base, zero = _fit(), _fit(split_merge=0)
    for name in ("counts", "log_joint", "n_states", "n_edges", "z"):
        np.testing.assert_array_equal(getattr(base, name), getattr(zero, name))
    on, again = _fit(split_merge=0.5), _fit(split_merge=0.5)
    np.testing.assert_array_equal(on.counts, again.counts)
    assert not np.array_equal(on.counts, base.counts)
    assert on.info["split_merge"] == 0.5 and on.info["split_merge_scans"] == sm.SCANS
    assert base.info["split_merge"] == 0.0


def test_split_merge_chain_resumes_bit_identical(tmp_path):
    """A chain stopped after its first checkpoint and resumed ends as the uninterrupted one."""
    full = _fit(split_merge=1.5, checkpoint_dir=tmp_path / "a")
    calls = []

    def stop(n):
        calls.append(n)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _fit(split_merge=1.5, checkpoint_dir=tmp_path / "b", checkpoint_every=0.0, on_sweeps=stop)
    assert calls
    resumed = _fit(split_merge=1.5, checkpoint_dir=tmp_path / "b")
    assert resumed.info["chains_resumed_mid_chain"] == 1  # chain 0 resumed from its checkpoint
    np.testing.assert_array_equal(full.counts, resumed.counts)
    np.testing.assert_array_equal(full.log_joint, resumed.log_joint)


def test_bad_values_are_refused():
    with pytest.raises(InputError, match="--split-merge needs --kernel gibbs"):
        _fit(split_merge=1, kernel="alias-mh")
    with pytest.raises(InputError, match="--split-merge must be"):
        _fit(split_merge=-1)
    with pytest.raises(InputError, match="--split-merge-scans must be"):
        _fit(split_merge=1, split_merge_scans=-2)
    with pytest.raises(InputError, match="--interleave"):
        _fit(split_merge=1, interleave=2)
    with pytest.raises(InputError, match="--split-merge"):
        resolve("cgs-pfa", {"split_merge": -1})
    assert resolve("cgs-pfa", {})["split_merge"] == 0.0


def test_memory_estimate_counts_the_moves_scratch():
    """On a corpus of few long strings (where the chain state dominates the estimate) the
    moves' scratch, 12 bytes a token, is added."""
    from bayesfa.corpus import Corpus

    rng = np.random.default_rng(0)
    corpus = Corpus.from_strings([rng.integers(0, 2, size=20_000) for _ in range(10)], 2)
    options = resolve("cgs-pfa", {"states": 4})
    base = cgs_pfa.METHOD.estimate_memory(corpus, options)
    with_moves = cgs_pfa.METHOD.estimate_memory(corpus, {**options, "split_merge": 0.1})
    assert with_moves - base == 12 * corpus.n_tokens
