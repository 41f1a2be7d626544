"""Annealing for CGS-PFA (issue 22, item 2): the tempered Gibbs sweep of ``Pr(alpha, z)^b``
(Eq. 4 of Shibata & Yoshinaka 2013 raised to ``b``; ``_cgs_pfa_kernel.tempered_sweeps``) and
the front's ``--anneal`` (tempered burn-in only, so Eq. 6's draws are untempered).

The references are exact enumerations of every path of the ``tiny`` toy (N = 2, 11 free
positions, 2,048 paths; ``bayesfa.validation.pfa.reference``), which never call the kernel.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.method_options import resolve
from bayesfa.samplers.pfa import _cgs_pfa_kernel as kernel
from bayesfa.samplers.pfa import cgs_pfa
from bayesfa.validation.pfa.kernel_tests import pooled_chi2, sweep_distribution
from bayesfa.validation.pfa.mutants import _new_state
from bayesfa.validation.pfa.reference import path_codes, path_posterior
from bayesfa.validation.toys import get_toy

B = 0.5
ALPHA = 1e-3  # false-failure rate of each chi-square test below on a correct kernel


def _tempered(pp, b: float):
    """``pp`` with its log joint times ``b``: its ``prob`` is ``Pr(alpha, z)^b`` normalised,
    and :func:`sweep_distribution` of it runs the exact Gibbs kernel of that target."""
    lj = b * pp.log_joint
    prob = np.exp(lj - lj.max())
    return dataclasses.replace(pp, log_joint=lj, prob=prob / prob.sum())


def _run(starts, n_sweeps, b, toy, seed):
    """End paths of ``n_sweeps`` tempered sweeps at ``b`` from each row of ``starts``."""
    tokens = toy.train.tokens
    positions = cgs_pfa.free_positions(tokens)
    state = _new_state(toy.n_states, toy.train.alphabet_size + 1)
    rng = np.random.default_rng(seed)
    ends = np.empty_like(starts)
    for r in range(starts.shape[0]):
        z = starts[r].copy()
        kernel.fill_counts(tokens, z, *state, toy.beta)
        kernel.tempered_sweeps(n_sweeps, positions, tokens, z, *state, rng, toy.beta, B if b is None else b)
        ends[r] = z
    return path_codes(ends, tokens, toy.n_states)


def test_tempered_sweep_leaves_the_tempered_target_invariant():
    """20,000 exact draws of ``Pr(alpha, z)^0.5`` (normalised), 3 tempered sweeps at b = 0.5
    each: the end paths are tested against that target (Pearson chi-square, pooled cells;
    false-failure rate ALPHA = 1e-3). The untempered posterior is far from it (total variation
    > 0.1), so a sweep that ignored ``b`` would not pass the uniform-start test below."""
    toy = get_toy("tiny")
    pp = path_posterior(toy.train, toy.n_states, toy.beta)
    target = _tempered(pp, B)
    assert 0.5 * np.abs(target.prob - pp.prob).sum() > 0.1
    rng = np.random.default_rng(1)
    starts = target.sample_paths(20_000, rng).astype(np.int32)
    codes = _run(starts, 3, B, toy, seed=2)
    _, _, p, _ = pooled_chi2(np.bincount(codes, minlength=pp.prob.size), target.prob)
    assert p >= ALPHA, p


def test_tempered_sweeps_from_uniform_match_the_exact_tempered_gibbs_kernel():
    """20,000 uniformly random paths, 2 tempered sweeps at b = 0.5 each, against the exact
    distribution after 2 systematic-scan Gibbs sweeps of ``Pr(alpha, z)^0.5`` (enumerated);
    false-failure rate 1e-3. The same test fails the untempered sweep (b = 1) at p < 1e-9
    (power check: the 2-sweep distributions of the two targets differ)."""
    toy = get_toy("tiny")
    pp = path_posterior(toy.train, toy.n_states, toy.beta)
    uniform = np.full(pp.prob.size, 1.0 / pp.prob.size)
    ref = sweep_distribution(_tempered(pp, B), uniform, 2)
    positions = cgs_pfa.free_positions(toy.train.tokens)
    rng = np.random.default_rng(3)
    starts = np.zeros((20_000, toy.train.tokens.size + 1), dtype=np.int32)
    starts[:, positions] = rng.integers(1, toy.n_states + 1, size=(20_000, positions.size), dtype=np.int32)
    observed = {b: np.bincount(_run(starts, 2, b, toy, seed=4), minlength=pp.prob.size) for b in (B, 1.0)}
    assert pooled_chi2(observed[B], ref)[2] >= ALPHA
    assert pooled_chi2(observed[1.0], ref)[2] < 1e-9


def test_tempered_sweeps_at_b_1_are_the_sweeps():
    """``tempered_sweeps(..., b=1.0)`` draws the same numbers and paths as ``sweeps``."""
    toy = get_toy("tiny")
    tokens = toy.train.tokens
    positions = cgs_pfa.free_positions(tokens)
    n_symbols = toy.train.alphabet_size + 1
    z0 = cgs_pfa.random_path(tokens, toy.n_states, np.random.default_rng(5))
    out = []
    for run in (kernel.sweeps, lambda *a: kernel.tempered_sweeps(*a, 1.0)):
        z, state, rng = z0.copy(), _new_state(toy.n_states, n_symbols), np.random.default_rng(6)
        kernel.fill_counts(tokens, z, *state, toy.beta)
        run(20, positions, tokens, z, *state, rng, toy.beta)
        out.append((z, state[0], rng.random()))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
    assert out[0][2] == out[1][2]


def test_anneal_schedule():
    """b rises geometrically from --anneal-start to 1 over the first SWEEPS sweeps, then is 1."""
    bs = [cgs_pfa.anneal_b(s, 4, 0.1) for s in range(6)]
    np.testing.assert_allclose(bs[:4], 0.1 ** (np.arange(4, 0, -1) / 4))
    assert bs[4] == bs[5] == 1.0 and cgs_pfa.anneal_b(0, 0) == 1.0
    assert np.all(np.diff(bs[:5]) > 0)


def _fit(iterations=60, period=5, **kw):
    corpus = Corpus.from_strings([[0, 1, 0], [1], [0, 0, 1, 1, 0, 1, 1], [], [1, 0, 0, 1]], 2)
    return cgs_pfa.sample_cgs_pfa(corpus, 3, 0.5, iterations, 20, period, 2, 11, **kw)


def test_anneal_0_is_no_option_and_anneal_changes_only_the_start():
    """``anneal=0`` gives arrays identical to no option; ``anneal=20`` (= burn-in) gives other
    paths at the end of burn-in, the same again from the same seed, and the info records it.
    (Later draws may coincide: both chains read the same uniforms after burn-in, and on so
    small a corpus inverse-CDF Gibbs chains on common random numbers coalesce.)"""
    base, zero = _fit(), _fit(anneal=0)
    for name in ("counts", "log_joint", "n_states", "n_edges", "z"):
        np.testing.assert_array_equal(getattr(base, name), getattr(zero, name))
    hot, again = _fit(21, 1, anneal=20, anneal_start=0.2), _fit(21, 1, anneal=20, anneal_start=0.2)
    np.testing.assert_array_equal(hot.z, again.z)
    assert not np.array_equal(hot.z, _fit(21, 1).z)
    assert hot.info["anneal"] == 20 and hot.info["anneal_start"] == 0.2 and base.info["anneal"] == 0


def test_anneal_longer_than_burn_in_and_bad_values_are_refused():
    with pytest.raises(InputError, match="--anneal 21 exceeds --burn-in 20"):
        _fit(anneal=21)
    with pytest.raises(InputError, match="--anneal-start"):
        _fit(anneal=5, anneal_start=0.0)
    with pytest.raises(InputError, match="--anneal needs --kernel gibbs"):
        _fit(anneal=5, kernel="alias-mh")
    with pytest.raises(InputError, match="--interleave"):
        _fit(anneal=5, interleave=2)
    with pytest.raises(InputError, match="--anneal"):
        resolve("cgs-pfa", {"anneal": -1})
    assert resolve("cgs-pfa", {})["anneal"] == 0  # declared once, read by the API with its default
