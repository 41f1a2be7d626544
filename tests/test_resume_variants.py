"""Mid-chain checkpoints and ``--holdout`` of CGS-SG, CGS-HMM and CGS-HMM(*) (issue 26, item 5).

As ``tests/test_checkpoint.py`` does for CGS-PFA: interruptions simulated in this process (a
progress callback that raises ``KeyboardInterrupt`` after some blocks of sweeps) at several
points, and for real (``kill -9`` of a ``bayesfa fit --jobs 2`` process group once a
mid-chain checkpoint is on disk); foreign and damaged checkpoint files. Every comparison is
exact (``assert_array_equal``): same seed, same result, bit for bit. The held-out
diagnostic is checked against a path-product reference written here from Eq. 6's plug-ins.
"""

from __future__ import annotations

import numpy as np
import pytest

from bayesfa.cli import main
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.samplers.pfa import cgs_hmm, cgs_sg
from bayesfa.samplers.pfa.cgs_pfa import holdout_split, plugin_xi
from chain_resume import (Stop, child_code, kill_9_mid_chain, kill_9_then_resume, small_corpus,
                          use_small_blocks)
from conftest import checkpoint_state, mid_chain_checkpoints

ITER, BURN, PERIOD, CHAINS, SEED = 230, 50, 6, 2, 7
N_DRAWS = (ITER - BURN) // PERIOD  # 30
N_STATES = 3
CORPUS = small_corpus()


def _sample(method, corpus=CORPUS, **kw):
    """The method's sampler with this file's schedule; ``kw`` overrides (seed, holdout, ...)."""
    args = {"seed": SEED, "holdout": 0.1, **kw}
    if method == "cgs-sg":
        return cgs_sg.sample_cgs_sg(corpus, N_STATES, 0.3, ITER, BURN, PERIOD, CHAINS,
                                    graph_interval=7, **args)
    return cgs_hmm.sample_cgs_hmm(corpus, N_STATES, 0.2, 0.3, ITER, BURN, PERIOD, CHAINS,
                                  star=method == "cgs-hmm-star", **args)


def _arrays(res) -> dict:
    """Every array of a result: the samples, the trace (held-out included) and the last ``z``."""
    if isinstance(res, cgs_sg.SGResult):
        return {"counts": res.counts, "graph": res.graph, "z": res.z, **res.trace}
    return {"counts": res.counts, "log_joint": res.log_joint, "n_states": res.n_states,
            "n_edges": res.n_edges, "z": res.z, "heldout_log_pred": res.heldout_log_pred}


def _assert_same(a, b) -> None:
    a, b = _arrays(a), _arrays(b)
    assert set(a) == set(b)
    for name in a:
        if a[name] is None or b[name] is None:
            assert a[name] is None and b[name] is None, name
        else:
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)


METHODS = ("cgs-sg", "cgs-hmm", "cgs-hmm-star")


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("stop_after", [3, 30, ITER + 120, 2 * ITER - 10])
def test_interrupted_chain_resumes_bit_identical(tmp_path, monkeypatch, method, stop_after):
    """Chain 0 cut in its first block or mid burn-in, chain 1 mid-draws or in its last draws:
    the resumed run equals an uninterrupted one made with the default (whole-chain) blocks."""
    full = _sample(method)
    assert full.info["holdout_strings"] == 6 and full.info["chains_resumed"] == 0
    use_small_blocks(monkeypatch, cgs_hmm, CORPUS, N_STATES)
    with pytest.raises(KeyboardInterrupt):
        _sample(method, checkpoint_dir=tmp_path, checkpoint_every=0, on_sweeps=Stop(stop_after))
    states = {p.name: checkpoint_state(p) for p in sorted(tmp_path.glob("chain-*.npz"))}
    last = states[sorted(states)[-1]]
    done = int(last["sweeps_done"])
    assert 0 < done < ITER  # a chain was cut mid-way and saved as such
    assert int(last["draws_done"]) == (0 if done <= BURN else (done - BURN) // PERIOD)
    assert len(states) == (1 if stop_after < ITER else 2)
    # the interval never changes the result: resume with a long one
    resumed = _sample(method, checkpoint_dir=tmp_path, checkpoint_every=1e9)
    assert resumed.info["chains_resumed_mid_chain"] == 1
    assert resumed.info["chains_resumed"] == (0 if stop_after < ITER else 1)
    _assert_same(resumed, full)
    # both chains are now saved finished: a third call samples nothing and gives the same
    again = _sample(method, checkpoint_dir=tmp_path, on_sweeps=Stop(0))
    assert again.info["chains_resumed"] == CHAINS
    _assert_same(again, full)


@pytest.mark.parametrize("method", METHODS)
def test_resume_in_worker_processes_and_foreign_checkpoints(tmp_path, monkeypatch, method):
    """A state saved by one process resumes in ``jobs=2`` workers; checkpoints of another
    seed, held-out fraction, or (for the held-out plug-in) the other CGS-HMM predictor are
    ignored (and replaced), never mixed in."""
    full = _sample(method)
    use_small_blocks(monkeypatch, cgs_hmm, CORPUS, N_STATES)
    with pytest.raises(KeyboardInterrupt):
        _sample(method, checkpoint_dir=tmp_path, checkpoint_every=0, on_sweeps=Stop(100))
    assert 0 < int(checkpoint_state(tmp_path / "chain-0000.npz")["draws_done"]) < N_DRAWS
    resumed = _sample(method, checkpoint_dir=tmp_path, jobs=2)
    assert resumed.info["chains_resumed_mid_chain"] == 1 and resumed.info["jobs"] == 2
    _assert_same(resumed, full)
    changes = [{"seed": 8}, {"holdout": 0.2}]
    other = {"cgs-hmm": "cgs-hmm-star", "cgs-hmm-star": "cgs-hmm"}.get(method)
    runs = [(method, ch) for ch in changes] + ([(other, {})] if other else [])
    for name, change in runs:
        fresh = _sample(name, **change)
        again = _sample(name, checkpoint_dir=tmp_path, **change)
        assert again.info["chains_resumed"] == 0 and again.info["chains_resumed_mid_chain"] == 0
        _assert_same(again, fresh)


@pytest.mark.parametrize("method", METHODS)
def test_corrupt_checkpoint_is_an_input_error_naming_the_file(tmp_path, method):
    _sample(method, checkpoint_dir=tmp_path)
    path = tmp_path / "chain-0001.npz"
    data = path.read_bytes()
    for damaged in (data[: len(data) // 2], b"", b"not a zip file at all\n"):
        path.write_bytes(damaged)
        with pytest.raises(InputError) as err:
            _sample(method, checkpoint_dir=tmp_path)
        assert str(path) in str(err.value) and "\n" not in str(err.value)
    # readable files whose arrays disagree with their own counters or settings
    path.write_bytes(data)
    good = checkpoint_state(path)
    for key, value in (("draws_done", np.array(N_DRAWS - 1)), ("state_0", good["state_0"][:-1]),
                       ("z", good["z"][:-1]), ("z", np.concatenate([good["z"], good["z"][-1:]])),
                       ("z", good["z"].astype(np.int64)),
                       ("rng_state", np.array("{not json"))):
        np.savez(path, **{**good, key: value})
        with pytest.raises(InputError, match="chain-0001.npz"):
            _sample(method, checkpoint_dir=tmp_path)
    del good["heldout"]
    np.savez(path, **good)
    with pytest.raises(InputError, match="missing heldout"):
        _sample(method, checkpoint_dir=tmp_path)


# -- the held-out slice -----------------------------------------------------------------------

def _reference_log_prob(xi: np.ndarray, corpus: Corpus) -> np.ndarray:
    """``log Pr(b | xi)`` per string by the product of the letter matrices
    ``M_a[i, j] = xi[i, a, j]`` from state 0, ending by ``xi[., 0, 0]`` (no forward code)."""
    out = []
    for k in range(corpus.n_strings):
        toks = corpus.tokens[corpus.offsets[k]:corpus.offsets[k + 1]]
        row = np.zeros(xi.shape[0])
        row[0] = 1.0
        for a in toks[:-1]:
            row = row @ xi[:, a, :]
        out.append(np.log(row @ xi[:, 0, 0]))
    return np.array(out)


def _hmm_xi_reference(counts, alpha, beta):
    """Eq. 20 with the move total (module docstring of cgs_hmm), written from the paper."""
    c = counts.astype(float)
    n_states, n_symbols = c.shape[0] - 1, c.shape[1]
    xi = np.zeros(c.shape)
    for i in range(n_states + 1):
        ci = c[i].sum()
        moves = ci - c[i, 0].sum()
        for a in range(n_symbols):
            eta = (c[i, a].sum() + alpha) / (ci + n_symbols * alpha)
            if a == 0:
                xi[i, 0, 0] = eta
                continue
            for j in range(1, n_states + 1):
                theta = (c[i, 1:, j].sum() + beta) / (moves + n_states * beta)
                xi[i, a, j] = eta * theta
    return xi


def _sg_xi_reference(counts, graph, beta):
    alpha = (counts + beta) * (graph > 0)
    total = alpha.sum(axis=(1, 2), keepdims=True)
    return np.divide(alpha, total, out=np.zeros_like(alpha), where=total > 0)


@pytest.mark.parametrize("method", METHODS)
def test_holdout_is_not_sampled_and_recorded_per_draw(method):
    res = _sample(method)
    kept, held = holdout_split(CORPUS.n_strings, 0.1, np.random.SeedSequence(SEED))
    assert held.size == 6 and res.info["holdout"] == 0.1
    alone = _sample(method, corpus=CORPUS.subset(kept), holdout=0.0)
    np.testing.assert_array_equal(res.counts, alone.counts)  # fitted on the kept strings only
    arrays = _arrays(res)
    assert _arrays(alone).get("heldout_log_pred") is None
    held_corpus = CORPUS.subset(held)
    for c, d in ((0, 0), (1, N_DRAWS - 1), (1, 11)):
        counts = res.counts[c, d]
        if method == "cgs-sg":
            xi = _sg_xi_reference(counts, res.graph[c, d], 0.3)
        elif method == "cgs-hmm":
            xi = _hmm_xi_reference(counts, 0.2, 0.3)
        else:
            xi = plugin_xi(counts, 0.3)  # CGS-HMM(*) is CGS-PFA's plug-in (tested there)
        expected = _reference_log_prob(xi, held_corpus).sum()
        np.testing.assert_allclose(arrays["heldout_log_pred"][c, d], expected, rtol=1e-10)
    with pytest.raises(InputError, match="holdout"):
        _sample(method, holdout=1.0)


# -- the command line, killed for real --------------------------------------------------------

CLI_ITER, CLI_BURN, CLI_PERIOD = 1000, 200, 4


def _fit_args(method):
    own = ["--graph-interval", "0"] if method == "cgs-sg" else ["--alpha", "0.2"]

    def fit_args(train, out, *extra):
        return ["fit", str(train), "--method", method, "--states", "4", "--beta", "0.1", *own,
                "--iterations", str(CLI_ITER), "--burn-in", str(CLI_BURN), "--period",
                str(CLI_PERIOD), "--chains", "2", "--seed", "3", "--holdout", "0.05", "--out",
                str(out), "--quiet", *extra]

    return fit_args


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_kill_9_of_bayesfa_fit_then_resume_is_bit_identical(tmp_path, capsys, method):
    """1,000 strings of problem 24, blocks of a few sweeps: checkpoints come often."""
    run = kill_9_mid_chain(tmp_path, capsys, child_code("cgs_hmm", 200_000), _fit_args(method),
                           n_strings=1000, n_draws=(CLI_ITER - CLI_BURN) // CLI_PERIOD,
                           every="0.02", poll=0.005)
    assert run["info"]["holdout_strings"] == 50
    assert np.isfinite(run["trace"]["heldout_log_pred"]).all()


@pytest.mark.parametrize("method", METHODS)
def test_cli_options_are_checked(method):
    for bad in (["--holdout", "1.5"], ["--checkpoint-every", "-1"]):
        with pytest.raises(SystemExit) as exc:
            main(["fit", "x", "--method", method, *bad, "--out", "y"])
        assert exc.value.code == 2


# -- the infinite PFA (ipfa): no --holdout, the same kill -9 trial --------------------------------

_IPFA_CHILD = """
import sys, time
from bayesfa.samplers.pfa import ipfa
real = ipfa._Chain.draw
def slow(self, *args, **kwargs):  # the same draws, slowly: a kill lands mid-chain
    time.sleep(0.01)
    return real(self, *args, **kwargs)
ipfa._Chain.draw = slow
from bayesfa.cli import main
sys.exit(main(sys.argv[1:]))
"""
IPFA_ITER, IPFA_BURN, IPFA_PERIOD = 400, 100, 4
IPFA_DRAWS = (IPFA_ITER - IPFA_BURN) // IPFA_PERIOD  # 75


@pytest.mark.slow  # a child process, 150 draws slowed to 10 ms each
def test_kill_9_of_bayesfa_fit_ipfa_then_resume_is_bit_identical(tmp_path, capsys):
    """``bayesfa fit --method ipfa`` (two chains, a checkpoint every 0.02 s) killed with
    SIGKILL once a chain has saved a mid-chain checkpoint: a truncated checkpoint is one line
    naming it and exit 2; restored, the same command resumes mid-chain and its arrays,
    predictions and trace equal an uninterrupted fit's bit for bit (tests/chain_resume.py's
    trial, without --holdout, which ipfa does not have)."""
    def fit_args(train, out, *extra):
        return ["fit", str(train), "--method", "ipfa", "--states", "3", "--iterations",
                str(IPFA_ITER), "--burn-in", str(IPFA_BURN), "--period", str(IPFA_PERIOD),
                "--chains", "2", "--seed", "3", "--predict", str(train), "--max-draws", "5",
                "--out", str(out), "--quiet", *extra]

    out = kill_9_then_resume(
        tmp_path, capsys, _IPFA_CHILD, fit_args, n_strings=200,
        again=("--checkpoint-every", "0.02"), ready=lambda run: mid_chain_checkpoints(run, IPFA_DRAWS),
        poll=0.005, cut=lambda path: 0 < int(checkpoint_state(path)["draws_done"]) < IPFA_DRAWS,
        files=("arrays.npz", "predictions.npz"), heldout=False, seconds=180)
    assert out["info"]["chains_resumed_mid_chain"] >= 1
