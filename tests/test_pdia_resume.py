"""Mid-chain checkpoints of the PDFA, PDIA and smoothed PDIA: an interrupted fit resumes and
ends bit-identical.

Interruptions are simulated in this process (``_sweeps`` replaced by a wrapper that raises
``KeyboardInterrupt`` before its N-th call, after the checkpoint of the block before) and for
real (``kill -9`` of a ``bayesfa fit`` process once a mid-chain checkpoint is on disk). Every
comparison is exact (``assert_array_equal``): same seed, same result, bit for bit, every array
and every trace variable.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from bayesfa.cli import main
from bayesfa.corpus import Corpus
from bayesfa.errors import InputError
from bayesfa.methods import get_method
from bayesfa.pautomac import write_sample
from bayesfa.rundir import read_trace
from bayesfa.samplers.pdia import pdfa
from conftest import checkpoint_state, mid_chain_checkpoints


def _corpus(n_strings=40, seed=0):
    rng = np.random.default_rng(seed)
    strings = [rng.integers(0, 3, size=rng.integers(0, 7)).tolist() for _ in range(n_strings)]
    return Corpus.from_strings(strings, alphabet_size=3)


CORPUS = _corpus()
#: per method: its settings; burn-in 60 is two blocks (50 + 10), then one _sweeps call a draw
SETTINGS = {"pdia": dict(iterations=120, burn_in=60, period=4, chains=2),
            "pdfa": dict(iterations=110, burn_in=60, period=5, chains=2, states=4),
            "pdia-smoothed": dict(iterations=120, burn_in=60, period=4, chains=2)}


def _options(name: str, **kw) -> dict:
    parser = argparse.ArgumentParser()
    get_method(name).add_arguments(parser)
    opts = vars(parser.parse_args([]))
    opts.update(SETTINGS[name])
    opts.update(kw)
    return opts


def _n_draws(name: str) -> int:
    s = SETTINGS[name]
    return (s["iterations"] - s["burn_in"]) // s["period"]


def _calls_per_chain(name: str) -> int:
    """``_sweeps`` calls of one chain: two burn-in blocks, one per draw."""
    return 2 + _n_draws(name)


class _Counting:
    """Stands in for ``pdfa._sweeps``: counts the calls and raises KeyboardInterrupt instead
    of making call number ``stop + 1`` (None: never)."""

    def __init__(self, real, stop: int | None = None):
        self.real, self.stop, self.calls = real, stop, 0

    def __call__(self, *args, **kwargs):
        if self.stop is not None and self.calls >= self.stop:
            raise KeyboardInterrupt
        self.calls += 1
        return self.real(*args, **kwargs)


def _assert_same(a, b) -> None:
    assert set(a.arrays) == set(b.arrays) and set(a.trace) == set(b.trace)
    for k in a.arrays:
        assert np.asarray(a.arrays[k]).dtype == np.asarray(b.arrays[k]).dtype, k
        np.testing.assert_array_equal(a.arrays[k], b.arrays[k], err_msg=k)
    for k in a.trace:
        np.testing.assert_array_equal(a.trace[k], b.trace[k], err_msg=k)


@pytest.mark.parametrize("name", list(SETTINGS))
@pytest.mark.parametrize("where", ["burn-in", "draws"])
def test_interrupted_fit_resumes_bit_identical(tmp_path, monkeypatch, name, where):
    """Chain 0 cut after its first burn-in block, or chain 1 cut among its draws (chain 0
    finished, and not run again)."""
    method = get_method(name)
    full = method.fit(CORPUS, _options(name), 7, False)
    per_chain = _calls_per_chain(name)
    stop = 1 if where == "burn-in" else per_chain + 2 + 5  # chain 1: burn-in and 5 draws
    counting = _Counting(pdfa._sweeps, stop)
    monkeypatch.setattr(pdfa, "_sweeps", counting)
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        method.fit(CORPUS, _options(name, checkpoint_every=0), 7, False, workdir=tmp_path)
    first = time.perf_counter() - t0
    files = sorted(p.name for p in tmp_path.glob("chain-*.npz"))
    assert files == (["chain-0000.npz"] if where == "burn-in"
                     else ["chain-0000.npz", "chain-0001.npz"])
    last = checkpoint_state(tmp_path / files[-1])
    # a chain's saved seconds are the seconds it ran, within the call's (issue 39: ``+ t0``
    # for ``- t0`` lived)
    assert 0 < float(last["seconds"]) <= first
    if where == "burn-in":
        assert int(last["sweeps_done"]) == 50 and int(last["draws_done"]) == 0
    else:
        assert int(checkpoint_state(tmp_path / files[0])["draws_done"]) == _n_draws(name)
        assert int(last["draws_done"]) == 5 and int(last["sweeps_done"]) == 60 + 5 * SETTINGS[
            name]["period"]
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave no temporary file
    # resume (the interval never changes the result: a long one here)
    counting = _Counting(counting.real)
    monkeypatch.setattr(pdfa, "_sweeps", counting)
    t0 = time.perf_counter()
    resumed = method.fit(CORPUS, _options(name, checkpoint_every=1e9), 7, False,
                         workdir=tmp_path)
    both = first + time.perf_counter() - t0
    _assert_same(resumed, full)
    assert all(0 < c <= both for c in resumed.info["chain_seconds"])
    assert resumed.info["chains_resumed_mid_chain"] == 1
    assert resumed.info["chains_resumed"] == (0 if where == "burn-in" else 1)
    assert counting.calls == 2 * per_chain - stop  # finished blocks and chains not run again
    # a third run reuses both finished chains
    counting.calls = 0
    _assert_same(method.fit(CORPUS, _options(name), 7, False, workdir=tmp_path), full)
    assert counting.calls == 0


def test_checkpoint_of_another_run_is_ignored(tmp_path, monkeypatch):
    """A chain saved with another seed or other settings is neither resumed nor reused; the
    result is that of a fresh fit (and the file is overwritten by this run's chain)."""
    method = get_method("pdia")
    monkeypatch.setattr(pdfa, "_sweeps", _Counting(pdfa._sweeps, _calls_per_chain("pdia") + 4))
    with pytest.raises(KeyboardInterrupt):
        method.fit(CORPUS, _options("pdia", checkpoint_every=0), 7, False, workdir=tmp_path)
    monkeypatch.undo()
    for seed, change in ((8, {}), (7, {"alpha": 2.0}), (7, {"period": 3})):
        fresh = method.fit(CORPUS, _options("pdia", **change), seed, False)
        other = tmp_path / f"other-{seed}-{len(change)}-{sorted(change)}"
        for p in tmp_path.glob("chain-*.npz"):  # the interrupted run's files, every time
            (other / p.name).parent.mkdir(exist_ok=True)
            (other / p.name).write_bytes(p.read_bytes())
        again = method.fit(CORPUS, _options("pdia", **change), seed, False, workdir=other)
        assert again.info["chains_resumed"] == 0 and again.info["chains_resumed_mid_chain"] == 0
        _assert_same(again, fresh)
    # the other method on the same data and seed: other model, other fingerprint
    pdfa_fit = get_method("pdfa").fit(CORPUS, _options("pdfa"), 7, False, workdir=tmp_path)
    assert pdfa_fit.info["chains_resumed"] == pdfa_fit.info["chains_resumed_mid_chain"] == 0
    # checkpoint_every and chains (chain c is the same whatever their number) are not settings
    three = method.fit(CORPUS, _options("pdia", chains=3, checkpoint_every=5), 7, False,
                       workdir=tmp_path / "more")
    two = method.fit(CORPUS, _options("pdia"), 7, False, workdir=tmp_path / "more")
    assert two.info["chains_resumed"] == 2
    np.testing.assert_array_equal(two.trace["log_joint"], three.trace["log_joint"][:2])


def test_corrupt_checkpoint_is_an_input_error_naming_the_file(tmp_path, monkeypatch):
    method = get_method("pdia-smoothed")
    opts = _options("pdia-smoothed")
    method.fit(CORPUS, opts, 7, False, workdir=tmp_path)
    path = tmp_path / "chain-0001.npz"
    data = path.read_bytes()
    for damaged in (data[: len(data) // 2], b"", b"not a zip file at all\n"):
        path.write_bytes(damaged)
        with pytest.raises(InputError) as err:
            method.fit(CORPUS, opts, 7, False, workdir=tmp_path)
        message = str(err.value)
        assert str(path) in message and "\n" not in message and "corrupt checkpoint" in message
        assert "delete it to run this chain afresh" in message
    # readable files whose arrays disagree with their counters or with the chain
    for key, value in (("draws_done", _n_draws("pdia-smoothed") - 1), ("sweeps_done", 7),
                       ("rng_state", "{not json"),
                       ("st_delta", np.zeros((3, 3), dtype=np.int32))):  # kept for below
        path.write_bytes(data)
        state = checkpoint_state(path)
        if key == "st_delta":  # a mid-chain state, so that the chain's arrays are read back
            state["draws_done"], state["sweeps_done"] = np.array(0), np.array(50)
        state[key] = np.array(value)
        np.savez(path, **state)
        with pytest.raises(InputError, match="chain-0001.npz"):
            method.fit(CORPUS, opts, 7, False, workdir=tmp_path)
    # a chain's arrays are checked before any chain runs (chain 0 would run afresh)
    (tmp_path / "chain-0000.npz").unlink()
    counting = _Counting(pdfa._sweeps)
    monkeypatch.setattr(pdfa, "_sweeps", counting)
    with pytest.raises(InputError, match="chain-0001.npz"):
        method.fit(CORPUS, opts, 7, False, workdir=tmp_path)
    assert counting.calls == 0
    monkeypatch.undo()
    path.write_bytes(data)
    method.fit(CORPUS, opts, 7, False, workdir=tmp_path)


def test_cli_checkpoint_every_option(capsys):
    for name in SETTINGS:
        assert _options(name)["checkpoint_every"] == 120.0
        assert get_method(name).resumable is True
        with pytest.raises(SystemExit) as exc:
            main(["fit", "x", "--method", name, "--checkpoint-every", "-1", "--out", "y"])
        assert exc.value.code == 2
    capsys.readouterr()


# -- the command line -----------------------------------------------------------------------------

def _fit_args(train, out, *extra):
    return ["fit", str(train), "--method", "pdia", "--iterations", "160", "--burn-in", "60",
            "--period", "4", "--chains", "2", "--seed", "3", "--out", str(out), "--quiet",
            *extra]


@pytest.fixture()
def train(tmp_path) -> Path:
    path = tmp_path / "tiny.train"
    write_sample(path, CORPUS)
    return path


def _assert_same_runs(ref: Path, run: Path) -> None:
    with np.load(ref / "arrays.npz") as a, np.load(run / "arrays.npz") as b:
        assert a.files == b.files
        for k in a.files:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    t_ref, t_run = read_trace(ref / "trace.nc"), read_trace(run / "trace.nc")
    assert set(t_ref) == set(t_run)
    for k in t_ref:
        np.testing.assert_array_equal(t_ref[k], t_run[k], err_msg=k)


def test_cli_interrupted_fit_resumes(tmp_path, train, monkeypatch, capsys):
    """``bayesfa fit`` interrupted (Ctrl-C: exit 130) keeps its chain states in
    ``RUN/partial``; the same command resumes them and ends bit-identical."""
    ref, run = tmp_path / "ref", tmp_path / "run"
    assert main(_fit_args(train, ref)) == 0
    every = ("--checkpoint-every", "0")
    monkeypatch.setattr(pdfa, "_sweeps", _Counting(pdfa._sweeps, 2 + 25 + 2 + 3))
    assert main(_fit_args(train, run, *every)) == 130
    assert sorted(p.name for p in (run / "partial").glob("chain-*.npz")) == [
        "chain-0000.npz", "chain-0001.npz"]
    monkeypatch.undo()
    assert main(_fit_args(train, run, *every)) == 0
    info = json.loads((run / "manifest.json").read_text())["info"]
    assert info["chains_resumed"] == 1 and info["chains_resumed_mid_chain"] == 1
    _assert_same_runs(ref, run)
    capsys.readouterr()


_CHILD = """
import sys, time
from bayesfa.samplers.pdia import pdfa
real = pdfa._sweeps
def slow(*args, **kwargs):  # the same sweeps, slowly: a kill lands mid-chain
    time.sleep(0.02)
    return real(*args, **kwargs)
pdfa._sweeps = slow
from bayesfa.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_kill_9_of_bayesfa_fit_then_resume_is_bit_identical(tmp_path, train, capsys):
    ref, run = tmp_path / "ref", tmp_path / "run"
    assert main(_fit_args(train, ref)) == 0
    every = ("--checkpoint-every", "0.05")  # the same command each time
    child = subprocess.Popen([sys.executable, "-c", _CHILD] + _fit_args(train, run, *every),
                             start_new_session=True, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    try:
        while not mid_chain_checkpoints(run, 25):
            assert child.poll() is None, f"fit ended before a mid-chain checkpoint: " \
                                         f"{child.stderr.read()!r}"
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        os.killpg(child.pid, signal.SIGKILL)  # as a crash would
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert not (run / "manifest.json").exists()
    saved = sorted(run.rglob("chain-*.npz"))
    assert any(int(checkpoint_state(p)["draws_done"]) < 25 for p in saved)

    # a damaged checkpoint: one line naming it, exit 2
    victim = saved[-1]
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 3])
    capsys.readouterr()
    assert main(_fit_args(train, run, *every)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(victim) in err and "Traceback" not in err
    victim.write_bytes(data)

    assert main(_fit_args(train, run, *every)) == 0
    info = json.loads((run / "manifest.json").read_text())["info"]
    assert info["chains_resumed_mid_chain"] == 1
    _assert_same_runs(ref, run)
