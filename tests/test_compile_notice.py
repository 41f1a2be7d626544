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


def _run(tmp_path: Path, script: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "toy_kernels.py").write_text(TOY)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]),
           "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], env=env,
                          capture_output=True, text=True, timeout=300)


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


def test_ctrl_c_while_fit_compiles_exits_130_at_once_and_leaves_no_run(tmp_path):
    """``bayesfa fit`` on an empty numba cache says it compiles; SIGINT then stops it within
    seconds (not after the compilation and the fit), exit 130, no run folder."""
    train, run = tmp_path / "toy.train", tmp_path / "run"
    train.write_text("4 2\n2 0 1\n0\n1 1\n3 0 0 1\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "bayesfa.cli", "fit", str(train),
                             "--method", "estatemerge", "--out", str(run)],
                            env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert line == "bayesfa: compiling estatemerge kernels (first use only, about 12 s)\n"
        time.sleep(0.5)  # into the compilation
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=60)
        waited = time.monotonic() - sent
    finally:
        proc.kill()
    assert rc == 130 and proc.stderr.read() == "bayesfa: interrupted\n"
    assert waited < 10  # 2-3.5 s on a busy 2-core machine (load 5-12); compiling takes 12 CPU s
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "toy.train"]
