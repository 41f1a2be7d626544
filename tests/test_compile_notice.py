"""bayesfa.compiling: one line when numba compiles a method's kernels, and Ctrl-C during that
compilation stops the command at once (exit 130, no run folder left).

Each test runs in its own process with ``NUMBA_CACHE_DIR`` in an empty temporary folder, so
that numba must compile (and the test's SIGINT reaches no one else).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: a cached kernel (the notice) and one compiled in every process (``cache=False``: no notice)
TOY = textwrap.dedent("""
    import numba

    @numba.njit(cache=True)
    def cached(x):
        return x + 1

    @numba.njit
    def per_process(x):
        return 2 * x
    """)


def _default_sigint() -> None:
    """In the child before it execs: SIGINT back to its default. A shell starts a background
    job (``pytest ... &`` in a script) with SIGINT ignored, its children inherit that, and
    Python then never turns SIGINT into KeyboardInterrupt: the tests below would see the
    shell's setting, not bayesfa's behaviour."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run(tmp_path: Path, script: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "toy_kernels.py").write_text(TOY)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]),
           "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], env=env,
                          capture_output=True, text=True, timeout=300, preexec_fn=_default_sigint)


NOTICE = """
    import sys
    from bayesfa.compiling import compile_notice
    said = []
    with compile_notice("toy", said.append, 12):
        import toy_kernels
        toy_kernels.per_process(1)
        print(len(said))                      # compiled here, cache=False: no notice
        toy_kernels.cached(1)
        toy_kernels.cached(2.5)               # a second signature: no second notice
    with compile_notice("toy", said.append, 12):
        toy_kernels.cached(3)                 # compiled in this process already
    with compile_notice("toy", None):         # --quiet
        toy_kernels.cached(1j)
    print(said)
    """


def test_one_notice_when_a_cached_kernel_compiles_none_when_it_loads(tmp_path):
    first = _run(tmp_path, NOTICE)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        "0", "['compiling toy kernels (first use only, about 12 s)']"]
    again = _run(tmp_path, NOTICE)  # the same cache: every kernel loads from disk
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == ["0", "[]"]


SWALLOWED = """
    import contextlib, ctypes, signal, sys
    from numba.core import event
    from bayesfa.compiling import compile_notice

    # LLVM calls back into Python through ctypes while numba compiles; a Ctrl-C arriving there
    # raises KeyboardInterrupt inside the callback, which ctypes prints and drops
    @ctypes.CFUNCTYPE(None)
    def callback():
        signal.raise_signal(signal.SIGINT)

    class CtrlCInACallback(event.Listener):
        sent = False
        def on_start(self, ev):
            if not self.sent:
                self.sent = True
                callback()
        def on_end(self, ev):
            pass

    with event.install_listener("numba:run_pass", CtrlCInACallback()):
        try:
            with compile_notice("toy", None) if sys.argv[1] == "notice" else contextlib.nullcontext():
                import toy_kernels
                toy_kernels.cached(1)
        except KeyboardInterrupt:
            print("interrupted")
        else:
            print("compiled to the end")
    """


def test_ctrl_c_that_a_ctypes_callback_drops_still_stops_the_compile(tmp_path):
    plain = _run(tmp_path, SWALLOWED, "plain")  # numba's own behaviour
    assert plain.stdout == "compiled to the end\n"
    assert "Exception ignored" in plain.stderr and "KeyboardInterrupt" in plain.stderr
    (tmp_path / "numba-cache").rename(tmp_path / "used-cache")  # compile again below
    noticed = _run(tmp_path, SWALLOWED, "notice")
    assert noticed.stdout == "interrupted\n", noticed.stderr
    assert noticed.stderr == ""  # the dropped Ctrl-C raised again, not printed


def _interrupt_while_compiling(tmp_path, args: list[str], notice: str):
    """``bayesfa ARGS`` on an empty numba cache: its first stderr line must be ``notice``;
    SIGINT half a second later. Its exit code, the rest of stdout and stderr, and the seconds
    from the signal to its end."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "bayesfa.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)
    try:
        assert proc.stderr.readline() == notice
        time.sleep(0.5)  # into the compilation
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=60)
        waited = time.monotonic() - sent
        return rc, proc.stdout.read(), proc.stderr.read(), waited
    finally:
        proc.kill()


def test_ctrl_c_while_fit_compiles_exits_130_at_once_and_leaves_no_run(tmp_path):
    """``bayesfa fit`` on an empty numba cache says it compiles; SIGINT then stops it within
    seconds (not after the compilation and the fit), exit 130, no run folder."""
    train, run = tmp_path / "toy.train", tmp_path / "run"
    train.write_text("4 2\n2 0 1\n0\n1 1\n3 0 0 1\n")
    rc, out, err, waited = _interrupt_while_compiling(
        tmp_path, ["fit", str(train), "--method", "estatemerge", "--out", str(run)],
        "bayesfa: compiling estatemerge kernels (first use only, about 12 s)\n")
    assert rc == 130 and err == "bayesfa: interrupted\n"
    assert waited < 10  # 2-3.5 s on a busy 2-core machine (load 5-12); compiling takes 12 CPU s
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "toy.train"]


NESTED = """
    from bayesfa.compiling import compile_notice
    said, inner = [], []
    with compile_notice("outer", said.append, 5):
        with compile_notice("inner", inner.append, 7):   # an API method inside a command
            import toy_kernels
            toy_kernels.cached(1)
    print(said, inner)
    """


def test_a_notice_inside_another_leaves_the_block_to_the_outer_one(tmp_path):
    """The command line wraps the API's methods, which wrap themselves too: one notice, the
    outer one's (the inner one neither speaks nor installs a second Ctrl-C handler)."""
    out = _run(tmp_path, NESTED)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "['compiling outer kernels (first use only, about 5 s)'] []\n"


# -- every entry point that runs kernels wraps its work (issue 36 item 5) ----------------------

class _Recorder:
    """Stands in for :func:`bayesfa.compiling.compile_notice`: records each block's method,
    whether it would say the notice, and the seconds it would say."""

    def __init__(self):
        self.calls = []

    def __call__(self, name, say, seconds=None):
        import contextlib

        self.calls.append((name, say is not None, seconds))
        return contextlib.nullcontext()


def _recorder(monkeypatch, module: str = "bayesfa.compiling") -> _Recorder:
    """The recorder in place of ``module``'s compile_notice (the command line and the Dask
    entry points import it from :mod:`bayesfa.compiling` when they run; :mod:`bayesfa.api`
    holds its own name)."""
    import importlib

    rec = _Recorder()
    monkeypatch.setattr(importlib.import_module(module), "compile_notice", rec)
    return rec


WORDS = ["ab", "abab", "b", "", "aab", "b", "abb", "ab", "ba", "a"] * 3


def _words_run(tmp_path):
    import bayesfa

    train = tmp_path / "words.lines"
    train.write_text("\n".join(WORDS) + "\n")
    bayesfa.fit(train, method="cgs-pfa", format="lines", seed=1, out=tmp_path / "run",
                states=2, iterations=20, burn_in=10, period=2, chains=2)
    return train, tmp_path / "run"


def test_predict_and_perplexity_commands_wrap_the_prediction(tmp_path, monkeypatch):
    from bayesfa.cli import main

    train, run = _words_run(tmp_path)
    rec = _recorder(monkeypatch)
    assert main(["predict", str(run), str(train), "--out", str(tmp_path / "pred.txt")]) == 0
    assert rec.calls == [("cgs-pfa", True, None)]  # the fit kernels' seconds are not said
    assert main(["predict", str(run), str(train), "--out", str(tmp_path / "q.txt"), "--quiet"]) == 0
    assert rec.calls[-1] == ("cgs-pfa", False, None)
    assert main(["perplexity", str(run), str(train)]) == 0
    assert rec.calls[-1] == ("cgs-pfa", True, None)


def test_sample_decode_and_export_commands_wrap_their_work(tmp_path, monkeypatch):
    from bayesfa.cli import main

    train, run = _words_run(tmp_path)
    rec = _recorder(monkeypatch)
    assert main(["sample", str(run), "3", "--out", str(tmp_path / "s.txt")]) == 0
    assert rec.calls == [("cgs-pfa", True, None)]  # the fit kernels' seconds are not said
    assert main(["decode", str(run), str(train), "--out", str(tmp_path / "d.txt")]) == 0
    assert rec.calls[-1] == ("cgs-pfa", True, None)
    assert main(["export", str(run), "--format", "dot", "--out", str(tmp_path / "m.dot")]) == 0
    assert rec.calls[-1] == ("cgs-pfa", True, None) and len(rec.calls) == 3
    assert all((tmp_path / name).stat().st_size > 0 for name in ("s.txt", "d.txt", "m.dot"))


def test_select_and_validate_commands_wrap_their_work(tmp_path, monkeypatch):
    import bayesfa.selection
    import bayesfa.validation.harness
    from bayesfa.cli import main

    train = tmp_path / "words.lines"
    train.write_text("\n".join(WORDS) + "\n")
    rec = _recorder(monkeypatch)
    seen = {}

    def fake_selection(method, *args, notice=False, **kwargs):
        seen["notice"] = notice
        return {"stage1": [], "stage2": [], "choice": {"states": 2, "beta": 0.1}}

    monkeypatch.setattr(bayesfa.selection, "run_selection", fake_selection)
    monkeypatch.setattr(bayesfa.selection, "format_table", lambda rows: "")
    monkeypatch.setattr(bayesfa.selection, "choice_note", lambda result: "")
    assert main(["select", str(train), "--format", "lines", "--method", "cgs-pfa",
                 "--states", "2,3", "--out", str(tmp_path / "sel")]) == 0
    assert rec.calls == [("cgs-pfa", True, 3)] and seen["notice"] is True
    monkeypatch.setattr(bayesfa.validation.harness, "validate_main",
                        lambda *args, **kwargs: ("ok", True))
    assert main(["validate", "cgs-pfa:mutant-frozen"]) == 0
    assert rec.calls[-1] == ("cgs-pfa", True, None)


def test_the_api_wraps_prediction_and_validation_quietly(tmp_path, monkeypatch):
    import bayesfa
    import bayesfa.validation.harness

    train, run_dir = _words_run(tmp_path)
    run = bayesfa.load(run_dir)
    rec = _recorder(monkeypatch, "bayesfa.api")
    run.predict(WORDS)
    assert rec.calls == [("cgs-pfa", False, None)]
    run.perplexity(WORDS)
    assert rec.calls[-1] == ("cgs-pfa", False, None)
    assert len(run.sample(3, seed=2)) == 3 and len(run.decode(WORDS)) == len(WORDS)
    assert run.export("dot").startswith("digraph")
    assert rec.calls[2:] == [("cgs-pfa", False, None)] * 3

    class Report:
        def to_dict(self):
            return {"passed": True}

    monkeypatch.setattr(bayesfa.validation.harness, "validate", lambda *a, **k: Report())
    assert bayesfa.validate("cgs-pfa") == {"passed": True}
    assert rec.calls[-1] == ("cgs-pfa", False, None)


def test_dask_workers_wrap_each_fit(monkeypatch):
    """``select --workers N`` and ``pautomac run`` fit in Dask worker processes: each task's
    entry point wraps its fit, saying the notice on the worker's stderr unless quiet."""
    import numpy as np

    import bayesfa.online
    import bayesfa.production
    import bayesfa.selection

    rec = _recorder(monkeypatch)
    monkeypatch.setattr(bayesfa.selection, "run_fold", lambda *args: {"loglik": 0.0})
    task = {"options": {}, "train": np.arange(2), "held": np.arange(2), "seed": 1, "notice": True}
    assert bayesfa.selection._run_task("cgs-pfa", None, task) == {"loglik": 0.0}
    assert bayesfa.selection._run_task("cgs-pfa", None, {**task, "notice": False})
    assert rec.calls == [("cgs-pfa", True, 3), ("cgs-pfa", False, 3)]

    class Pred:
        log_mean, n_draws, trace, info = np.zeros(2), 1, {}, {"fit": {}}

    monkeypatch.setattr(bayesfa.online, "fit_and_predict", lambda *args: Pred())
    out = bayesfa.production._final_unit("hpyp", None, None, {}, 1, True)
    assert out["n_draws"] == 1 and rec.calls[-1] == ("hpyp", True, 9)


@pytest.mark.slow  # two caches compiled from scratch: about 20 CPU seconds
def test_predict_says_it_compiles_on_first_use(tmp_path):
    """``bayesfa predict`` with an empty numba cache (a run fitted with another cache): the
    notice, then the predictions; with the cache filled, no notice."""
    train = tmp_path / "toy.train"
    train.write_text("4 2\n2 0 1\n0\n1 1\n3 0 0 1\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(tmp_path / "fit-cache")}
    fit = subprocess.run([sys.executable, "-m", "bayesfa.cli", "fit", str(train), "--method",
                          "estatemerge", "--out", str(tmp_path / "run"), "--quiet"],
                         env=env, capture_output=True, text=True, timeout=600)
    assert fit.returncode == 0, fit.stderr
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "predict-cache")
    command = [sys.executable, "-m", "bayesfa.cli", "predict", str(tmp_path / "run"), str(train),
               "--out", "-"]
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert first.stderr == "bayesfa: compiling estatemerge kernels (first use only)\n"
    assert len(first.stdout.split()) >= 4
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and again.stderr == "" and again.stdout == first.stdout


def test_ctrl_c_while_validate_compiles_exits_130_at_once(tmp_path):
    """``bayesfa validate`` compiles the method's kernels (its checks' too) on an empty numba
    cache: it says so, and SIGINT stops it within seconds (43 s to the end uninterrupted on
    a busy 2-core machine), exit 130."""
    rc, out, err, waited = _interrupt_while_compiling(
        tmp_path, ["validate", "estatemerge"], "bayesfa: compiling estatemerge kernels (first use only)\n")
    assert rc == 130 and err == "bayesfa: interrupted\n"
    assert out == ""  # no report of a validation that did not run
    assert waited < 10
