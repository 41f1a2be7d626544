"""What the benchmark scripts share: the machine they ran on and how they time a call
(imported by the scripts, which put this folder on ``sys.path``)."""

from __future__ import annotations

import platform
import time


def cpu_name() -> str:
    """The CPU's model name from ``/proc/cpuinfo``, else what :mod:`platform` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def best_of(fn, repeats: int, clock=time.thread_time) -> float:
    """The shortest of ``repeats`` calls of ``fn()`` in seconds of ``clock``. The default,
    CPU time of this thread: on a loaded machine, wall time also counts the time slices
    other processes get, and that inflates long calls (a sweep) more than short ones (a
    floor loop)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def git_commit(root=None) -> str:
    """The commit the code ran at (short hash), with ``+dirty`` when tracked files differ from it
    (:func:`bayesfa.provenance.git_commit` of this checkout)."""
    from pathlib import Path

    from bayesfa.provenance import git_commit as commit

    return commit(Path(root) if root else Path(__file__).resolve().parents[1])


def missing_pautomac_file(data, problem) -> str | None:
    """The first of problem ``problem``'s training, test and solution files missing from the
    folder ``data`` (a PAutomaC copy), or None when all three are there."""
    from pathlib import Path

    for name in (f"{problem}.pautomac.train", f"{problem}.pautomac.test",
                 f"{problem}.pautomac_solution.txt"):
        if not (Path(data) / name).is_file():
            return name
    return None
