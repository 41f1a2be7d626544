"""The Dask cluster a command runs on: ``--scheduler local|ADDRESS`` and ``--workers W``.

Shared by ``bayesfa pautomac run`` (:mod:`bayesfa.production`) and the sharded CGS-PFA fit
(``bayesfa fit --method cgs-pfa --shards K``, :mod:`bayesfa.samplers.pfa.sharded`):
``local`` starts an embedded ``LocalCluster`` of ``W`` single-thread worker processes; any
other value is the address of a running ``dask scheduler`` (whose workers need bayesfa
installed). Importing this module imports neither Dask nor numba.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from typing import Any, Iterator, NamedTuple

from bayesfa.errors import InputError


def check_scheduler(scheduler: str, workers: int | None) -> None:
    """One-line :class:`InputError` unless ``scheduler`` is ``local`` or an address like
    ``tcp://HOST:PORT``, and ``workers`` is given only with ``local`` (a running scheduler
    has its own workers)."""
    if not isinstance(scheduler, str) or (scheduler != "local" and not re.match(r"^[a-z]+://", scheduler)):
        raise InputError(f"--scheduler {scheduler!r}: expected 'local' or an address like tcp://HOST:PORT")
    if workers is not None and scheduler != "local":
        raise InputError("--workers sets the size of --scheduler local; a running scheduler has its own")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise InputError(f"--workers must be an integer >= 1, got {workers!r}")


class Cluster(NamedTuple):
    """An open client. ``memory``: what a unit may use (``{"copies": W}`` on this machine,
    ``{"copies": 1, "available": BYTES}`` from a running scheduler's smallest worker, or None
    when unknown); ``has_dashboard``: whether the scheduler serves its dashboard."""

    client: Any
    memory: dict | None
    has_dashboard: bool

    def announce(self) -> None:
        """``bayesfa: Dask scheduler ADDRESS; dashboard at URL`` on standard error."""
        where = (f"dashboard at {self.client.dashboard_link}" if self.has_dashboard
                 else "no dashboard: bokeh is not installed (pip install 'dask[diagnostics]')")
        print(f"bayesfa: Dask scheduler {self.client.scheduler.address}; {where}", file=sys.stderr)


@contextlib.contextmanager
def open_cluster(scheduler: str = "local", workers: int | None = None, *,
                 processes: bool = True) -> Iterator[Cluster]:
    """A :class:`Cluster` on ``scheduler`` (:func:`check_scheduler`): ``"local"`` starts a
    ``LocalCluster`` of ``workers`` (default 1) workers with one thread each (processes, or
    threads of this process with ``processes=False``, which tests use), its scheduler on a
    free port of 127.0.0.1; else a client of the running scheduler at that address. The
    client, then the local cluster, are closed on exit."""
    from dask.distributed import Client, LocalCluster

    check_scheduler(scheduler, workers)
    cluster = None
    try:
        if scheduler == "local":
            import importlib.util

            # a free port (the scheduler serves HTTP there, the dashboard too when bokeh is here)
            cluster = LocalCluster(n_workers=int(workers or 1), threads_per_worker=1,
                                   processes=processes, dashboard_address="127.0.0.1:0")
            client = Client(cluster)
            memory = {"copies": int(workers or 1)}  # this machine's available memory
            has_dashboard = importlib.util.find_spec("bokeh") is not None
        else:
            client = Client(scheduler, timeout="30s")
            has_dashboard = True
            # one fit at a time per single-thread worker, within the smallest worker's limit
            limits = [w.get("memory_limit") or 0 for w in client.scheduler_info()["workers"].values()]
            memory = {"copies": 1, "available": min(limits)} if limits and min(limits) > 0 else None
        try:
            yield Cluster(client, memory, has_dashboard)
        finally:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()


def run_command(cmd: list[str], timeout: float) -> dict:
    """Run ``cmd`` as a process of its own (a task a Dask worker runs: a benchmark's unit, which
    must be killable), killed after ``timeout`` wall seconds: ``{"returncode", "stdout",
    "stderr"}``, or ``{"timeout": True, "cpu": S}`` with the CPU seconds it had spent."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, _, usage = os.wait4(proc.pid, 0)
        proc.stdout.close()
        proc.stderr.close()
        return {"timeout": True, "cpu": usage.ru_utime + usage.ru_stime}
    return {"returncode": proc.returncode, "stdout": stdout, "stderr": stderr}
