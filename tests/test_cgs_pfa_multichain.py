"""Several CGS-PFA chains in one interleaved kernel (issue 12, item 2).

The interleaved kernel (:mod:`bayesfa.samplers.pfa._cgs_pfa_multichain_kernel`) must leave every
chain bit for bit where the one-chain kernel would: ``z``, the counts, the Generator, and the
recorded draws and trace, through the front too (checkpoints and resume included, and
``bayesfa fit --chains 8`` with one process or two). Since the one-chain kernel passes the
validation suite (exact enumeration, Geweke, SBC), that identity carries its correctness over;
an exact-enumeration test of the interleaved kernel itself is added anyway. Every comparison
is exact (``assert_array_equal``).
"""

from __future__ import annotations

import numpy as np
import pytest
from numba.typed import List

from bayesfa.samplers.chains import free_positions
from bayesfa.cli import main
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.rundir import read_trace
from bayesfa.samplers.pfa import _cgs_pfa_kernel as kernel
from bayesfa.samplers.pfa import _cgs_pfa_multichain_kernel as multi
from bayesfa.samplers.pfa import cgs_pfa
from chain_resume import Stop  # KeyboardInterrupt after some sweeps
from test_checkpoint import FIELDS, _assert_same


def _corpus(n_strings=60, seed=0, letters=3):
    rng = np.random.default_rng(seed)
    strings = [rng.integers(0, letters, size=rng.integers(0, 7)).tolist() for _ in range(n_strings)]
    return Corpus.from_strings(strings, alphabet_size=letters)


CORPUS = _corpus()


def _chain_states(tokens, n_states, n_symbols, n_chains, seed, beta):
    """Chains initialised as the front does: ``(z, c, ct, ci, recip, rng)`` per SeedSequence child."""
    positions = free_positions(tokens)
    out = []
    for child in np.random.SeedSequence(seed).spawn(n_chains):
        rng = np.random.default_rng(child)
        z = np.zeros(tokens.size + 1, dtype=np.int32)
        z[positions] = rng.integers(1, n_states + 1, size=positions.size, dtype=np.int32)
        c, ct, ci, recip = cgs_pfa.new_counts(n_states, n_symbols)
        kernel.fill_counts(tokens, z, c, ct, ci, recip, beta)
        out.append([z, c, ct, ci, recip, rng])
    return positions, out


def _stack(states):
    z = np.stack([s[0] for s in states], axis=1)
    c, ct, ci, recip = (np.stack([s[i] for s in states]) for i in (1, 2, 3, 4))
    return z, c, ct, ci, recip, List([s[5] for s in states])


@pytest.mark.parametrize("n_states", [3, 33])  # rows of one and of two 32-lane blocks
@pytest.mark.parametrize("n_chains", [1, 3, 8])
def test_kernel_is_bit_identical_to_the_one_chain_kernel(n_chains, n_states):
    tokens, beta = CORPUS.tokens, 0.2
    n_symbols = CORPUS.alphabet_size + 1
    positions, alone = _chain_states(tokens, n_states, n_symbols, n_chains, 5, beta)
    _, together = _chain_states(tokens, n_states, n_symbols, n_chains, 5, beta)
    shape = (n_states + 1, n_symbols, n_states + 1)
    want = [(np.zeros((3,) + shape, np.int32), np.zeros(3), np.zeros(3, np.int32), np.zeros(3, np.int32),
             np.zeros((3, kernel.STATS), np.int64)) for _ in range(n_chains)]
    for s, out in zip(alone, want):
        kernel.sweeps(7, positions, tokens, *s, beta)
        kernel.sample_draws(2, positions, tokens, *s, beta, *out)
    z, c, ct, ci, recip, rngs = _stack(together)
    got = (np.zeros((n_chains, 3) + shape, np.int32), np.zeros((n_chains, 3)),
           np.zeros((n_chains, 3), np.int32), np.zeros((n_chains, 3), np.int32),
           np.zeros((n_chains, 3, kernel.STATS), np.int64))
    multi.sweeps(7, positions, tokens, z, c, ct, ci, recip, rngs, beta)
    multi.sample_draws(2, positions, tokens, z, c, ct, ci, recip, rngs, beta, *got)
    moved = 0
    for h, (s, out) in enumerate(zip(alone, want)):
        for a, b in zip((z[:, h], c[h], ct[h], ci[h], recip[h]), s[:5]):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(got, out):
            np.testing.assert_array_equal(a[h], b)
        assert rngs[h].bit_generator.state == s[5].bit_generator.state
        moved += np.count_nonzero(s[0] != together[h][0])
    assert moved > 0  # the chains did move (the stacked copy, not the inputs, was swept)


def test_interleave_option_is_checked():
    assert cgs_pfa.interleave_size(None, "alias-mh", 3) == 1
    assert cgs_pfa.interleave_size(4, "alias-mh", 3) == 1
    assert cgs_pfa.interleave_size(5, "gibbs", 300) == 5
    for bad in (0, -1, 2.5, True, "8"):
        with pytest.raises(InputError, match="interleave"):
            cgs_pfa.interleave_size(bad, "gibbs", 3)


@pytest.mark.parametrize("n_chains", [1, 3, 8])
def test_front_interleaved_equals_chains_one_by_one(n_chains):
    test = _corpus(12, seed=1)
    kw = dict(n_states=4, beta=0.3, iterations=40, burn_in=10, period=3, chains=n_chains, seed=9,
              holdout=0.1, predict=test, max_draws=4)
    one = cgs_pfa.sample_cgs_pfa(CORPUS, **kw, interleave=1)
    together = cgs_pfa.sample_cgs_pfa(CORPUS, **kw, interleave=8)
    assert one.info["interleave"] == 1 and together.info["interleave"] == 8
    for name in FIELDS + ("predict_log_mean",):
        np.testing.assert_array_equal(getattr(together, name), getattr(one, name), err_msg=name)
    # groups of 3: the chains run 3 per kernel call, in one lockstep
    if n_chains == 8:
        threes = cgs_pfa.sample_cgs_pfa(CORPUS, **kw, interleave=3)
        _assert_same(threes, one)


def test_interrupted_interleaved_chains_resume_bit_identical(tmp_path, monkeypatch):
    kw = dict(n_states=3, beta=0.3, iterations=200, burn_in=50, period=6, chains=3, seed=7, holdout=0.1)
    n_free = free_positions(CORPUS.tokens).size
    monkeypatch.setattr(cgs_pfa, "_BLOCK_UNITS", 5 * kw["n_states"] * n_free)  # 5-6 sweeps a block
    full = cgs_pfa.sample_cgs_pfa(CORPUS, **kw, interleave=1)
    with pytest.raises(KeyboardInterrupt):  # one chain's callback raises: all three stop
        cgs_pfa.sample_cgs_pfa(CORPUS, **kw, interleave=8, checkpoint_dir=tmp_path,
                               checkpoint_every=0, on_sweeps=Stop(3 * 120))
    done = []
    for p in sorted(tmp_path.glob("chain-*.npz")):
        with np.load(p) as npz:
            done.append(int(npz["sweeps_done"]))
    assert len(done) == 3 and all(50 < d < 200 for d in done)  # every chain cut mid-draws
    # resume interleaved from those states
    resumed = cgs_pfa.sample_cgs_pfa(CORPUS, **kw, interleave=8, checkpoint_dir=tmp_path)
    assert resumed.info["chains_resumed_mid_chain"] == 3
    _assert_same(resumed, full)
    # chains at different points in one lockstep: one finished, one mid-chain, one afresh
    with pytest.raises(KeyboardInterrupt):
        cgs_pfa.sample_cgs_pfa(CORPUS, **kw, interleave=8, checkpoint_dir=tmp_path / "b",
                               checkpoint_every=0, on_sweeps=Stop(3 * 80))
    full_states = {p.name: p.read_bytes() for p in tmp_path.glob("chain-*.npz")}
    (tmp_path / "b" / "chain-0000.npz").write_bytes(full_states["chain-0000.npz"])
    (tmp_path / "b" / "chain-0002.npz").unlink()
    mixed = cgs_pfa.sample_cgs_pfa(CORPUS, **kw, interleave=8, checkpoint_dir=tmp_path / "b")
    assert mixed.info["chains_resumed"] == 1 and mixed.info["chains_resumed_mid_chain"] == 1
    _assert_same(mixed, full)


def test_cli_eight_chains_one_process_equals_two(tmp_path):
    train = tmp_path / "train.txt"
    strings = [s for s in (CORPUS.string(i) for i in range(CORPUS.n_strings))]
    train.write_text(f"{len(strings)} 3\n" + "".join(f"{len(s)} {' '.join(map(str, s))}\n" for s in strings))
    runs = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"run{jobs}"
        assert main(["fit", str(train), "--method", "cgs-pfa", "--states", "3", "--beta", "0.2",
                     "--iterations", "30", "--burn-in", "10", "--period", "4", "--chains", "8",
                     "--jobs", jobs, "--interleave", "8", "--seed", "3", "--out", str(out),
                     "--quiet"]) == 0
        with np.load(out / "arrays.npz") as npz:
            runs[jobs] = ({k: npz[k] for k in npz.files}, read_trace(out / "trace.nc"))
    (a1, t1), (a2, t2) = runs["1"], runs["2"]
    assert a1.keys() == a2.keys() and t1.keys() == t2.keys() and a1["counts"].shape[0] == 8
    for k in a1:
        np.testing.assert_array_equal(a1[k], a2[k], err_msg=k)
    for k in t1:
        np.testing.assert_array_equal(np.asarray(t1[k]), np.asarray(t2[k]), err_msg=k)


def test_interleaved_kernel_leaves_the_exact_posterior_invariant():
    """4,000 chains in one kernel call, each started from an exact draw of ``Pr(z | alpha)``
    (enumeration, toy "tiny"), 3 sweeps each: the end paths are again exact draws, tested by
    Pearson's chi-square (cells with expectation < 5 pooled) at a false-alarm rate of 1e-3."""
    from bayesfa.validation.pfa.kernel_tests import pooled_chi2
    from bayesfa.validation.pfa.reference import path_codes, path_posterior
    from bayesfa.validation.toys import get_toy

    toy = get_toy("tiny")
    tokens, n_states, beta = toy.train.tokens, toy.n_states, toy.beta
    n_symbols = toy.train.alphabet_size + 1
    pp = path_posterior(toy.train, n_states, beta)
    n_chains = 4000
    starts = pp.sample_paths(n_chains, np.random.default_rng(0)).astype(np.int32)
    positions, states = _chain_states(tokens, n_states, n_symbols, n_chains, 1, beta)
    for s, start in zip(states, starts):
        s[0][:] = start
        kernel.fill_counts(tokens, *s[:5], beta)
    z, c, ct, ci, recip, rngs = _stack(states)
    multi.sweeps(3, positions, tokens, z, c, ct, ci, recip, rngs, beta)
    ends = np.ascontiguousarray(z.T)
    assert np.mean(np.any(ends != starts, axis=1)) > 0.3  # the kernel moves
    _, _, p_value, _ = pooled_chi2(np.bincount(path_codes(ends, tokens, n_states), minlength=pp.prob.size),
                                   pp.prob)
    assert p_value >= 1e-3


@pytest.mark.slow
def test_harness_compare_passes_with_interleaved_chains():
    """The validation harness's exact comparison (posterior predictive of the toy "tiny" by
    enumeration, false-alarm rate 1e-3) on a fit whose 4 chains ran in one interleaved kernel
    (about 1 minute)."""
    from bayesfa.validation.harness import compare

    report = compare("cgs-pfa", "tiny", options={"interleave": 8, "kernel": "gibbs"})
    assert report.info["fit_info"]["interleave"] == 8
    assert report.passed


def test_interleave_is_not_part_of_a_runs_identity():
    """Interleaving never changes the result, so a run resumed with another ``--interleave``
    (or in a production runner started before the option existed) is the same run."""
    from bayesfa.rundir import run_identity

    train = {"sha256": "0" * 64, "format": "pautomac"}
    base = {"states": 10, "beta": 0.1, "iterations": 5, "kernel": "auto"}
    same = [run_identity("cgs-pfa", {**base, **extra}, 1, train)
            for extra in ({}, {"interleave": None}, {"interleave": 8}, {"interleave": 1, "jobs": 2})]
    assert all(s == same[0] for s in same)
    assert run_identity("cgs-pfa", {**base, "beta": 0.2}, 1, train) != same[0]
