"""A pre-warmed test runner for mutation testing: one server process imports the heavy
libraries once (numpy, scipy, numba, pytest, ...; never bayesfa), then forks a child per
request that runs pytest on the (mutated) working copy and reports its exit code. This cuts
each mutant's cost from a fresh interpreter's imports (seconds on the shared machine) to a
fork; the result is the same as running pytest in a new process, because the module under
mutation is imported only in the child (and bytecode is never written, so a mutant never
reads another's cached .pyc).

    python warm_runner.py serve SOCKET ROOT -- PYTEST_ARGS...   # the server (background)
    python warm_runner.py run SOCKET [TIMEOUT]                    # the test command: exit 0 = pass

Time limits are on CPU time (``WARM_CPU`` seconds, the child's ``RLIMIT_CPU``), not on wall
time: on a shared machine at load 10 a correct test run takes five times its CPU in wall time,
and a wall-clock limit would count that as a kill. A wall-clock backstop (``WARM_TIMEOUT``,
default ten times the CPU limit) catches a child that sleeps. ``run`` exits 0 when the tests
pass, 1 when they fail, 2 when the child ran out of time (a time-out: a kill, as cosmic-ray
counts it, which the caller can report apart).
"""
import os
import socket
import sys


# CPU seconds a child may use (WARM_CPU: more for tests that compile numba kernels); the
# wall-clock backstop WARM_TIMEOUT is ten times that unless given
CHILD_CPU = float(os.environ.get("WARM_CPU", "100"))
CHILD_TIMEOUT = float(os.environ.get("WARM_TIMEOUT", str(10 * CHILD_CPU)))
#: the reply for a child that ran out of time
TIMED_OUT = "T"


def _wait(pid: int, timeout: float):
    """The child's exit code, or :data:`TIMED_OUT` when it ran out of CPU time (``SIGXCPU``, or
    ``SIGKILL`` at the hard limit) or past ``timeout`` seconds of wall time (then killed)."""
    import signal
    import time

    end = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
                return TIMED_OUT
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > end:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return TIMED_OUT
        time.sleep(0.02)


def serve(path: str, root: str, args: list[str]) -> None:
    os.environ.setdefault("NUMBA_DISABLE_JIT", "1")
    sys.dont_write_bytecode = True
    import numpy, scipy, scipy.stats, scipy.special, numba, pytest  # noqa: F401  (warm)
    for name in ("hypothesis", "tqdm", "arviz", "xarray"):
        try:
            __import__(name)
        except ImportError:
            pass
    assert not any(m == "bayesfa" or m.startswith("bayesfa.") for m in sys.modules)
    if os.path.exists(path):
        os.unlink(path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    while True:
        conn, _ = server.accept()
        conn.recv(16)
        pid = os.fork()
        if pid == 0:
            import resource

            cpu = int(CHILD_CPU)
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
            server.close()
            os.chdir(root)
            sys.path.insert(0, root)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            code = pytest.main(["-x", "-q", "-p", "no:cacheprovider", *args])
            os._exit(int(code))
        code = _wait(pid, CHILD_TIMEOUT)
        try:
            conn.sendall(str(code).encode())
        finally:
            conn.close()


def run(path: str, timeout: float) -> int:
    """0 if the tests pass, 1 if they fail, 2 if they ran out of time. A failure to reach the
    server is not a kill: it is retried for a minute, then logged to ``SOCKET.errors`` (which
    must stay empty for the run to count) before exiting 1."""
    import time

    end = time.monotonic() + 60
    while True:
        try:
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.settimeout(timeout)
            client.connect(path)
            client.sendall(b"run")
            reply = client.recv(16).decode()
            if reply == TIMED_OUT:
                return 2
            return 0 if int(reply) == 0 else 1
        except (OSError, ValueError) as err:
            if time.monotonic() > end:
                with open(path + ".errors", "a") as log:
                    log.write(f"{time.ctime()}: {err!r}\n")
                return 1
            time.sleep(1)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        cut = sys.argv.index("--")
        serve(sys.argv[2], sys.argv[3], sys.argv[cut + 1:])
    else:
        sys.exit(run(sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else CHILD_TIMEOUT + 10))
