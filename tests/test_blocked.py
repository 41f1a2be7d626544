"""Blocked whole-string moves for CGS-PFA (issue 37, item 2): ``_ffbs_kernel`` and ``--blocked-every``.

The exact checks (:mod:`bayesfa.validation.pfa.blocked`) compare FFBS given theta with the
enumerated ``Pr(z | alpha, theta)``, and the blocked move with the enumerated collapsed
posterior of Eq. 4 (one move from exact draws; chains of moves only); each is a chi-square
with a false-failure rate of 1e-3 per check on a correct move, at fixed seeds. The fast tests
run seed 0 for the move and one mutant; the slow one runs every mutant on seeds 0-4.
"""

from __future__ import annotations

import numpy as np
import pytest

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.exact import prior_matrix
from bayesfa.forward import forward_log_prob, xi_to_pfa
from bayesfa.method_options import resolve
from bayesfa.samplers.pfa import _cgs_pfa_kernel as gibbs
from bayesfa.samplers.pfa import _ffbs_kernel as ffbs
from bayesfa.samplers.pfa import cgs_pfa
from bayesfa.validation.pfa import blocked as check
from bayesfa.validation.pfa.mutants import BLOCKED_MUTANTS, Kernel, _new_state, all_mutant_names
from bayesfa.validation.toys import get_toy


def _theta(n_states, n_symbols, beta, rng):
    prior = prior_matrix(n_states, n_symbols, beta)
    theta = np.zeros_like(prior)
    for i in range(n_states + 1):
        m = prior[i] > 0
        theta[i][m] = rng.dirichlet(prior[i][m])
    return theta


def test_ffbs_is_scaled_on_long_strings_and_keeps_fixed_positions():
    """A 20,000-letter string (``Pr`` about e^-20000: an unscaled filter underflows), the empty
    string and short ones: the log-likelihood equals :func:`bayesfa.forward.forward_log_prob`
    (an independent forward pass) to 1e-9, positions fixed at 0 stay 0, the free ones are in
    1..N, and every transition of the drawn path has positive probability."""
    rng = np.random.default_rng(4)
    n_states, n_symbols = 5, 4
    strings = [rng.integers(0, 3, size=20_000), [], [2], [0, 1, 2, 1]]
    corpus = Corpus.from_strings(strings, 3)
    theta = _theta(n_states, n_symbols, 0.5, rng)
    tokens = corpus.tokens
    z = np.zeros(tokens.size + 1, dtype=np.int32)
    _, filt = ffbs.scratch(tokens, n_states, n_symbols)
    log_lik = ffbs.ffbs_paths(theta, tokens, z, filt, rng)
    expected = forward_log_prob(*xi_to_pfa(theta), corpus).sum()
    assert log_lik < -1000 and abs(log_lik - expected) < 1e-9 * abs(expected)
    free = cgs_pfa.free_positions(tokens)
    fixed = np.setdiff1d(np.arange(z.size), free)
    assert np.all(z[fixed] == 0) and np.all((z[free] >= 1) & (z[free] <= n_states))
    assert np.all(theta[z[:-1], tokens, z[1:]] > 0)


def test_a_string_impossible_under_theta_keeps_its_path():
    """A string whose forward filter empties part-way (a letter no state reached can emit)
    has probability 0: the log-likelihood is -inf and that string's path is left as it was,
    while the strings before and after it are drawn (issue 39: the emptied filter taken as
    usable lived, drawing the string a path from the filter's stale rows)."""
    rng = np.random.default_rng(1)
    n_states, n_symbols = 3, 3
    theta = _theta(n_states, n_symbols, 0.5, rng)
    theta[1:, 2, :] = 0.0  # letter 1 (symbol 2) only from the start state
    theta[1:] /= theta[1:].sum(axis=(1, 2), keepdims=True)
    corpus = Corpus.from_strings([[0, 0, 0], [1, 1, 0], [1, 0]], 2)
    tokens = corpus.tokens
    _, filt = ffbs.scratch(tokens, n_states, n_symbols)
    z = np.zeros(tokens.size + 1, dtype=np.int32)
    z[cgs_pfa.free_positions(tokens)] = 3
    before = z.copy()
    log_lik = ffbs.ffbs_paths(theta, tokens, z, filt, rng)
    assert log_lik == -np.inf
    np.testing.assert_array_equal(z[5:8], before[5:8])  # [1, 1, 0]'s letters and end
    assert np.any(z[1:4] != 3)  # [0, 0, 0] drawn: 3^3 paths, all possible


@pytest.mark.parametrize("beta", [1e-4, 1e-7])
def test_theta_draws_are_distributions_even_for_tiny_beta(beta):
    """Rows of ``theta`` sum to 1 over the cells of Eq. 2 and are 0 elsewhere, with no NaN,
    for beta = 1e-4 at N = 30 (where gammas of shape beta underflow to 0 in linear space)
    and 1e-7, where nearly every cell of a row without counts has ``log G < -745`` (``G``
    below the smallest double relative to 1): only scaling each row by its own largest cell
    keeps it a distribution (scaled by 1 instead, as if the largest were a cell outside Eq.
    2's, every such row is 0 / 0)."""
    n_states, n_symbols = 30, 4
    c = np.zeros((n_states + 1, n_symbols, gibbs.padded_width(n_states)), dtype=np.float32)
    c[0, 1, 3] = 5
    theta = np.empty((n_states + 1, n_symbols, n_states + 1))
    rng = np.random.default_rng(0)
    allowed = prior_matrix(n_states, n_symbols, beta) > 0
    for _ in range(20):
        ffbs.draw_theta(c, beta, rng, theta)
        assert np.all(np.isfinite(theta)) and np.all(theta[~allowed] == 0)
        np.testing.assert_allclose(theta.sum(axis=(1, 2)), 1.0, rtol=1e-12)


def test_counts_stay_those_of_the_path():
    """After every blocked move ``c, ct, ci, recip`` equal a refill from ``z``, and the move
    changes the path (it is not frozen)."""
    toy = get_toy("small")
    tokens = toy.train.tokens
    n_states, n_symbols, beta = 4, toy.train.alphabet_size + 1, toy.beta
    positions = cgs_pfa.free_positions(tokens)
    rng = np.random.default_rng(0)
    z = np.zeros(tokens.size + 1, dtype=np.int32)
    z[positions] = rng.integers(1, n_states + 1, size=positions.size)
    state = _new_state(n_states, n_symbols)
    gibbs.fill_counts(tokens, z, *state, beta)
    scratch = ffbs.scratch(tokens, n_states, n_symbols)
    changed = 0
    for _ in range(50):
        before = z.copy()
        ffbs.blocked_move(tokens, z, *state, rng, beta, *scratch)
        fresh = _new_state(n_states, n_symbols)
        gibbs.fill_counts(tokens, z, *fresh, beta)
        for a, b in zip(state, fresh):
            np.testing.assert_array_equal(a, b)
        changed += not np.array_equal(before, z)
    assert changed > 40


def test_schedule_depends_on_the_sweep_index_only():
    """Ten sweeps with ``every = 3`` in one call equal the same ten split 4 + 6 (moves after
    sweeps 3, 6, 9 either way), bit for bit; ``every`` larger than the sweeps gives the plain
    sweeps of ``_cgs_pfa_kernel.sweeps``."""
    toy = get_toy("small")
    tokens = toy.train.tokens
    n_states, n_symbols, beta = 4, toy.train.alphabet_size + 1, float(toy.beta)
    positions = cgs_pfa.free_positions(tokens)
    z0 = np.zeros(tokens.size + 1, dtype=np.int32)
    z0[positions] = np.random.default_rng(1).integers(1, n_states + 1, size=positions.size)

    def run(parts, every, plain=False):
        z = z0.copy()
        state = _new_state(n_states, n_symbols)
        gibbs.fill_counts(tokens, z, *state, beta)
        rng = np.random.default_rng(5)
        scratch = ffbs.scratch(tokens, n_states, n_symbols)
        done = 0
        for n in parts:
            if plain:
                gibbs.sweeps(n, positions, tokens, z, *state, rng, beta)
            else:
                ffbs.sweeps(n, done, every, positions, tokens, z, *state, rng, beta, *scratch)
            done += n
        return z

    np.testing.assert_array_equal(run([10], 3), run([4, 6], 3))
    assert not np.array_equal(run([10], 3), run([10], 11))
    np.testing.assert_array_equal(run([10], 11), run([10], 0, plain=True))


def test_the_move_passes_its_exact_checks():
    """The three checks at seed 0 (each a false alarm with probability 1e-3 on a correct move)."""
    checks = check.blocked_checks(None, seed=0)
    assert [c.name for c in checks] == ["ffbs-given-theta", "blocked-invariance", "blocked-chain"]
    assert all(c.passed for c in checks), [c.rows for c in checks]
    assert checks[1].summary["moved"] > 0.5  # one move changes most paths


def test_theta_from_the_prior_fails_invariance():
    """The subtlest mutant: FFBS is right given its theta (check (a) passes), but theta comes
    from the prior, so the move does not keep the posterior."""
    assert check.ffbs_given_theta("blocked-prior-theta", seed=0).passed
    inv = check.invariance("blocked-prior-theta", seed=0)
    assert not inv.passed and min(r["p_value"] for r in inv.rows) < 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_move_passes_and_every_mutant_fails_on_seeds_0_to_4(seed):
    """What ``bayesfa validate cgs-pfa`` sees of the blocked move at seeds 0-4: the move passes
    all three checks, each mutant fails one at least (the sweep's checks, which the mutants
    share with production, pass for them). Run at c0d4867: the move passed and each mutant
    failed (p < 1e-10) at each of seeds 0-4."""
    assert all(c.passed for c in check.blocked_checks(None, seed=seed))
    for variant in BLOCKED_MUTANTS:
        checks = check.blocked_checks(variant, seed=seed)
        assert min(r["p_value"] for c in checks for r in c.rows) < 1e-10, variant


def test_mutants_are_known_to_validate_and_run_the_production_sweep():
    names = all_mutant_names()
    for variant in BLOCKED_MUTANTS:
        assert f"cgs-pfa:mutant-{variant}" in names
        assert Kernel(variant)._sweep is gibbs.sweep_positions
    assert ffbs.build_blocked(None) is ffbs.blocked_move
    assert ffbs.build_ffbs(None) is ffbs.ffbs_paths
    with pytest.raises(ValueError):
        ffbs.build_blocked("no-such-mutation")


def _fit(**kw):
    toy = get_toy("small")
    return cgs_pfa.sample_cgs_pfa(toy.train, 4, 0.5, 120, 40, 8, 2, 11, **kw)


def test_blocked_every_0_is_no_option_and_a_seed_gives_one_result():
    base, zero = _fit(), _fit(blocked_every=0)
    for name in ("counts", "log_joint", "n_states", "n_edges", "z"):
        np.testing.assert_array_equal(getattr(base, name), getattr(zero, name))
    on, again = _fit(blocked_every=3), _fit(blocked_every=3)
    for name in ("counts", "log_joint", "z"):
        np.testing.assert_array_equal(getattr(on, name), getattr(again, name))
    assert not np.array_equal(on.counts, base.counts)
    assert on.info["blocked_every"] == 3 and base.info["blocked_every"] == 0
    assert resolve("cgs-pfa", {})["blocked_every"] == 0


def test_blocked_chain_resumes_bit_identical(tmp_path):
    """A chain stopped after its first checkpoint and resumed ends as the uninterrupted one
    (the moves fall on the same sweeps: their schedule is by sweep index)."""
    full = _fit(blocked_every=7, checkpoint_dir=tmp_path / "a")
    calls = []

    def stop(n):
        calls.append(n)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _fit(blocked_every=7, checkpoint_dir=tmp_path / "b", checkpoint_every=0.0, on_sweeps=stop)
    assert calls
    resumed = _fit(blocked_every=7, checkpoint_dir=tmp_path / "b")
    assert resumed.info["chains_resumed_mid_chain"] == 1
    np.testing.assert_array_equal(full.counts, resumed.counts)
    np.testing.assert_array_equal(full.log_joint, resumed.log_joint)
    # a checkpoint of the plain chain is not taken for a blocked one
    plain = _fit(checkpoint_dir=tmp_path / "c")
    other = _fit(blocked_every=7, checkpoint_dir=tmp_path / "c")
    assert other.info["chains_resumed"] == 0
    np.testing.assert_array_equal(other.counts, full.counts)
    assert not np.array_equal(plain.counts, full.counts)


def test_bad_values_are_refused():
    with pytest.raises(InputError, match="--blocked-every needs --kernel gibbs"):
        _fit(blocked_every=2, kernel="alias-mh")
    with pytest.raises(InputError, match="--blocked-every must be"):
        _fit(blocked_every=-1)
    with pytest.raises(InputError, match="--blocked-every must be"):
        _fit(blocked_every=1.5)
    with pytest.raises(InputError, match="--anneal"):
        _fit(blocked_every=2, anneal=10)
    with pytest.raises(InputError, match="--split-merge"):
        _fit(blocked_every=2, split_merge=0.5)
    with pytest.raises(InputError, match="--interleave"):
        _fit(blocked_every=2, interleave=2)
    with pytest.raises(InputError, match="--blocked-every"):
        resolve("cgs-pfa", {"blocked_every": -1})
