"""A pre-warmed test runner for mutation testing: one server process imports the heavy
libraries once (numpy, scipy, numba, pytest, ...; never bayesfa), then forks a child per
request that runs pytest on the (mutated) working copy and reports its exit code. This cuts
each mutant's cost from a fresh interpreter's imports (seconds on the shared machine) to a
fork; the result is the same as running pytest in a new process, because the module under
mutation is imported only in the child (and bytecode is never written, so a mutant never
reads another's cached .pyc).

    python warm_runner.py serve SOCKET ROOT -- PYTEST_ARGS...   # the server (background)
    python warm_runner.py run SOCKET [TIMEOUT]                    # the test command: exit 0 = pass
"""
import os
import socket
import sys


# seconds; below cosmic-ray's own timeout, so a hung mutant is killed here (WARM_TIMEOUT: longer,
# for tests that compile numba kernels)
CHILD_TIMEOUT = float(os.environ.get("WARM_TIMEOUT", "100"))


def _wait(pid: int, timeout: float) -> int:
    """The child's exit code, or 1 after killing it when it runs past ``timeout``."""
    import signal
    import time

    end = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > end:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return 1
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
    """0 if the tests pass, 1 if they fail. A failure to reach the server is not a kill: it is
    retried for a minute, then logged to ``SOCKET.errors`` (which must stay empty for the run
    to count) before exiting 1."""
    import time

    end = time.monotonic() + 60
    while True:
        try:
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.settimeout(timeout)
            client.connect(path)
            client.sendall(b"run")
            reply = client.recv(16).decode()
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
        sys.exit(run(sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 110.0))
