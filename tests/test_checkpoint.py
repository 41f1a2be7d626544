"""Mid-chain checkpoints of CGS-PFA: an interrupted chain resumes and ends bit-identical.

Issue 13, item 3. Interruptions are simulated in this process (a progress callback that
raises ``KeyboardInterrupt`` after some blocks of sweeps) and for real (``kill -9`` of a
``bayesfa fit --jobs 2`` process group once a mid-chain checkpoint is on disk). Every
comparison is exact (``assert_array_equal``): same seed, same result, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from bayesfa.cli import main
from bayesfa.errors import InputError
from bayesfa.samplers.pfa import cgs_pfa
from chain_resume import Stop, child_code, kill_9_mid_chain, small_corpus, use_small_blocks
from conftest import checkpoint_state

KW = dict(n_states=3, beta=0.3, iterations=230, burn_in=50, period=6, chains=2, seed=7)
N_DRAWS = (230 - 50) // 6  # 30
FIELDS = ("counts", "log_joint", "n_states", "n_edges", "z", "heldout_log_pred")
CORPUS = small_corpus()


@pytest.fixture()
def small_blocks(monkeypatch):
    """Blocks of about 5 sweeps (instead of the whole chain on so small a corpus)."""
    use_small_blocks(monkeypatch, cgs_pfa, CORPUS, KW["n_states"])


def _assert_same(a, b) -> None:
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("stop_after", [30, 230 + 120])  # chain 0 in burn-in; chain 1 mid-draws
def test_interrupted_chain_resumes_bit_identical(tmp_path, small_blocks, stop_after):
    full = cgs_pfa.sample_cgs_pfa(CORPUS, **KW, holdout=0.1)
    assert full.heldout_log_pred.shape == (2, N_DRAWS) and full.info["holdout_strings"] == 6
    with pytest.raises(KeyboardInterrupt):
        cgs_pfa.sample_cgs_pfa(CORPUS, **KW, holdout=0.1, checkpoint_dir=tmp_path,
                               checkpoint_every=0, on_sweeps=Stop(stop_after))
    states = {p.name: checkpoint_state(p) for p in sorted(tmp_path.glob("chain-*.npz"))}
    last = states[sorted(states)[-1]]
    assert 0 < int(last["sweeps_done"]) < 230  # a chain was cut mid-way and saved as such
    assert int(last["draws_done"]) == (0 if stop_after < 230 else (int(last["sweeps_done"]) - 50) // 6)
    # the interval never changes the result: resume with a long one
    resumed = cgs_pfa.sample_cgs_pfa(CORPUS, **KW, holdout=0.1, checkpoint_dir=tmp_path,
                                     checkpoint_every=1e9)
    assert resumed.info["chains_resumed_mid_chain"] == 1
    assert resumed.info["chains_resumed"] == (0 if stop_after < 230 else 1)
    _assert_same(resumed, full)


def test_resume_in_worker_processes_and_foreign_checkpoints(tmp_path, small_blocks):
    """A state saved by one process resumes in ``jobs=2`` workers; a checkpoint of another
    seed is ignored (and replaced), never mixed in."""
    full = cgs_pfa.sample_cgs_pfa(CORPUS, **KW, holdout=0.1)
    with pytest.raises(KeyboardInterrupt):
        cgs_pfa.sample_cgs_pfa(CORPUS, **KW, holdout=0.1, checkpoint_dir=tmp_path,
                               checkpoint_every=0, on_sweeps=Stop(100))
    assert 0 < int(checkpoint_state(tmp_path / "chain-0000.npz")["draws_done"]) < N_DRAWS
    resumed = cgs_pfa.sample_cgs_pfa(CORPUS, **KW, holdout=0.1, checkpoint_dir=tmp_path, jobs=2)
    assert resumed.info["chains_resumed_mid_chain"] == 1 and resumed.info["jobs"] == 2
    _assert_same(resumed, full)
    # other seed, other held-out fraction: the saved chains are not used
    for change in ({"seed": 8}, {"holdout": 0.2}):
        args = {**KW, "holdout": 0.1, **change}
        fresh = cgs_pfa.sample_cgs_pfa(CORPUS, **args)
        again = cgs_pfa.sample_cgs_pfa(CORPUS, **args, checkpoint_dir=tmp_path)
        assert again.info["chains_resumed"] == 0 and again.info["chains_resumed_mid_chain"] == 0
        _assert_same(again, fresh)


def test_corrupt_checkpoint_is_an_input_error_naming_the_file(tmp_path, small_blocks):
    cgs_pfa.sample_cgs_pfa(CORPUS, **KW, checkpoint_dir=tmp_path)
    path = tmp_path / "chain-0001.npz"
    data = path.read_bytes()
    for damaged in (data[: len(data) // 2], b"", b"not a zip file at all\n"):
        path.write_bytes(damaged)
        with pytest.raises(InputError) as err:
            cgs_pfa.sample_cgs_pfa(CORPUS, **KW, checkpoint_dir=tmp_path)
        assert str(path) in str(err.value) and "\n" not in str(err.value)
    # a readable file whose arrays disagree with its own counters
    path.write_bytes(data)
    state = checkpoint_state(path)
    state["draws_done"] = np.array(N_DRAWS - 1)
    np.savez(path, **state)
    with pytest.raises(InputError, match="chain-0001.npz"):
        cgs_pfa.sample_cgs_pfa(CORPUS, **KW, checkpoint_dir=tmp_path)


def test_holdout_slice_is_deterministic_and_not_sampled():
    root = np.random.SeedSequence(3)
    kept, held = cgs_pfa.holdout_split(500, 0.02, root)
    kept2, held2 = cgs_pfa.holdout_split(500, 0.02, np.random.SeedSequence(3))
    np.testing.assert_array_equal(held, held2)
    assert held.size == 10 and np.intersect1d(kept, held).size == 0 and kept.size == 490
    assert not np.array_equal(held, cgs_pfa.holdout_split(500, 0.02, np.random.SeedSequence(4))[1])
    assert cgs_pfa.holdout_split(10**6, 0.5, root)[1].size == cgs_pfa.HOLDOUT_MAX  # capped
    assert cgs_pfa.holdout_split(40, 0.02, root)[1].size == 0  # less than one string
    # the chains are fitted on the kept strings only: the same as sampling them alone
    res = cgs_pfa.sample_cgs_pfa(CORPUS, **KW, holdout=0.1)
    kept, held = cgs_pfa.holdout_split(CORPUS.n_strings, 0.1, np.random.SeedSequence(KW["seed"]))
    alone = cgs_pfa.sample_cgs_pfa(CORPUS.subset(kept), **KW)
    np.testing.assert_array_equal(res.counts, alone.counts)
    # and heldout_log_pred is the plug-in log predictive of the held-out strings, per draw
    expected = cgs_pfa.plugin_log_prob(res.counts[1], KW["beta"], CORPUS.subset(held)).sum(axis=1)
    np.testing.assert_allclose(res.heldout_log_pred[1], expected, rtol=1e-12)
    assert cgs_pfa.sample_cgs_pfa(CORPUS, **KW).heldout_log_pred is None


# -- the command line, killed for real --------------------------------------------------------

def _fit_args(train, out, *extra):
    return ["fit", str(train), "--method", "cgs-pfa", "--states", "4", "--beta", "0.1",
            "--iterations", "1200", "--burn-in", "200", "--period", "5", "--chains", "2",
            "--seed", "3", "--out", str(out), "--quiet", *extra]


def test_kill_9_of_bayesfa_fit_then_resume_is_bit_identical(tmp_path, capsys):
    """2,000 strings of problem 24, blocks of about 20 sweeps: checkpoints come often."""
    kill_9_mid_chain(tmp_path, capsys, child_code("cgs_pfa", 2_000_000), _fit_args,
                     n_strings=2000, n_draws=(1200 - 200) // 5, every="0.05", poll=0.01)


def test_cli_options_are_checked(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["fit", "x", "--method", "cgs-pfa", "--holdout", "1.5", "--out", "y"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        main(["fit", "x", "--method", "cgs-pfa", "--checkpoint-every", "-1", "--out", "y"])
