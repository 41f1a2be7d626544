"""What the resume tests of the chain samplers share (``tests/test_checkpoint.py`` for CGS-PFA,
``tests/test_resume_variants.py`` for CGS-SG, CGS-HMM and CGS-HMM(*)): a small corpus, blocks
of a few sweeps, an interruption in this process (:class:`Stop`) and one for real
(:func:`kill_9_then_resume`: ``kill -9`` of a ``bayesfa fit`` process group once a checkpoint
is on disk; :func:`kill_9_mid_chain` for a sampler run with ``--jobs 2``). Every comparison
is exact (``assert_array_equal``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bayesfa.cli import main
from bayesfa.corpus import Corpus
from bayesfa.datasets import pautomac_path
from bayesfa.rundir import read_trace
from bayesfa.samplers.chains import free_positions
from conftest import checkpoint_state, mid_chain_checkpoints


def small_corpus(n_strings: int = 60, seed: int = 0) -> Corpus:
    """``n_strings`` random strings of 0 to 6 letters over 3 letters."""
    rng = np.random.default_rng(seed)
    strings = [rng.integers(0, 3, size=rng.integers(0, 7)).tolist() for _ in range(n_strings)]
    return Corpus.from_strings(strings, alphabet_size=3)


def use_small_blocks(monkeypatch, front, corpus: Corpus, n_states: int) -> None:
    """Blocks of about 5 sweeps in ``front`` (a module with ``_BLOCK_UNITS``), instead of the
    whole chain on so small a corpus."""
    n_free = free_positions(corpus.tokens).size
    monkeypatch.setattr(front, "_BLOCK_UNITS", 5 * n_states * n_free)


class Stop:
    """An ``on_sweeps`` callback that raises KeyboardInterrupt once ``after`` sweeps (over
    all chains, in order) have been reported."""

    def __init__(self, after: int):
        self.after, self.seen = after, 0

    def __call__(self, n: int) -> None:
        self.seen += n
        if self.seen > self.after:
            raise KeyboardInterrupt


def child_code(front: str, block_units: int, wait: float = 1.0) -> str:
    """A ``python -c`` program running ``bayesfa`` with ``front``'s blocks set to
    ``block_units`` (checkpoints come often) and each checkpoint save followed by ``wait``
    seconds of sleep (the workers are forked, so theirs too): the parent, polling every few
    milliseconds, sees a mid-chain checkpoint before the fit can end, however loaded the
    machine (without it a loaded parent once polled too late). The draws do not change."""
    return (f"import sys, time\nfrom bayesfa.samplers.pfa import {front}\n"
            f"{front}._BLOCK_UNITS = {block_units}\n"
            f"real = {front}.save_checkpoint\n"
            f"def save_then_wait(*args, **kwargs):\n"
            f"    real(*args, **kwargs)\n"
            f"    time.sleep({wait})\n"
            f"{front}.save_checkpoint = save_then_wait\n"
            f"from bayesfa.cli import main\nsys.exit(main(sys.argv[1:]))\n")


def kill_9_then_resume(tmp_path: Path, capsys, child: str, fit_args, *, n_strings: int,
                       again: tuple, ready, poll: float, cut=None,
                       files: tuple = ("arrays.npz",), heldout: bool = True,
                       seconds: float = 120) -> dict:
    """Fit ``n_strings`` strings of PAutomaC problem 24 with ``fit_args(train, out)`` (the
    reference), then with ``fit_args(train, run, *again)`` in ``child`` (a ``python -c``
    program, e.g. :func:`child_code`), killed with its workers by SIGKILL once ``ready(run)``
    (looked at every ``poll`` seconds) says a checkpoint worth resuming is on disk; at least one
    chain file is left, and one for which ``cut(path)`` holds when given. A truncated
    checkpoint is then one line naming it and exit 2; restored, the same command resumes and
    its ``files`` (arrays, predictions) and trace (with ``heldout_log_pred`` when ``heldout``)
    equal the reference's bit for bit; the child has ``seconds`` to checkpoint. Returns the
    resumed run's ``info`` and ``trace``."""
    lines = pautomac_path(24, "train").read_text().splitlines()
    train = tmp_path / "small.train"
    train.write_text("\n".join([f"{n_strings} 5"] + lines[1:n_strings + 1]) + "\n")
    ref, run = tmp_path / "ref", tmp_path / "run"
    assert main(fit_args(train, ref)) == 0

    command = fit_args(train, run, *again)  # the same command each time
    process = subprocess.Popen([sys.executable, "-c", child] + command, start_new_session=True,
                               stderr=subprocess.PIPE)
    deadline = time.monotonic() + seconds
    try:
        while not ready(run):
            assert process.poll() is None, \
                f"fit ended before a mid-chain checkpoint: {process.stderr.read()!r}"
            assert time.monotonic() < deadline
            time.sleep(poll)
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the CLI and its workers, as a crash would
        process.wait()
    assert process.returncode == -signal.SIGKILL
    assert not (run / "manifest.json").exists()
    saved = sorted(run.rglob("chain-*.npz"))
    assert saved and (cut is None or any(cut(p) for p in saved))

    # a damaged checkpoint: one line naming it, exit 2
    victim = saved[0]
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 3])
    capsys.readouterr()
    assert main(command) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(victim) in err and "Traceback" not in err
    victim.write_bytes(data)

    assert main(command) == 0
    info = json.loads((run / "manifest.json").read_text())["info"]
    for name in files:
        with np.load(ref / name) as a, np.load(run / name) as b:
            assert a.files == b.files
            for k in a.files:
                np.testing.assert_array_equal(a[k], b[k], err_msg=f"{name}: {k}")
    t_ref, t_run = read_trace(ref / "trace.nc"), read_trace(run / "trace.nc")
    assert set(t_ref) == set(t_run) and ("heldout_log_pred" in t_run) == heldout
    for k in t_ref:
        np.testing.assert_array_equal(t_ref[k], t_run[k], err_msg=k)
    return {"info": info, "trace": t_run}


def kill_9_mid_chain(tmp_path: Path, capsys, child: str, fit_args, n_strings: int, n_draws: int,
                     every: str, poll: float) -> dict:
    """:func:`kill_9_then_resume` of a sampler of ``n_draws`` draws a chain run with
    ``--jobs 2 --checkpoint-every every``, killed once a chain has saved a mid-chain
    checkpoint; the resumed fit says it resumed a chain mid-way."""
    out = kill_9_then_resume(
        tmp_path, capsys, child, fit_args, n_strings=n_strings,
        again=("--jobs", "2", "--checkpoint-every", every),
        ready=lambda run: mid_chain_checkpoints(run, n_draws), poll=poll,
        cut=lambda path: int(checkpoint_state(path)["draws_done"]) < n_draws)
    assert out["info"]["chains_resumed_mid_chain"] >= 1
    return out
