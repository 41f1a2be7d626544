"""Shared test helpers: where the test data live; reading a chain's checkpoint files.

The markers ``slow`` and ``shared_data`` are declared in pyproject.toml; nothing is
registered here.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

TESTS_DIR = Path(__file__).resolve().parent
#: Small data files kept with the tests (e.g. PAutomaC problem 12).
TEST_DATA = TESTS_DIR / "data"


def shared_data_path() -> Path:
    """Where ``../shared/data`` should be: ``$BAYESFA_SHARED_DATA``, else next to the checkout.

    The path is returned whether or not it exists (use it at collection time, e.g. to
    parametrise over the PAutomaC problems; test ``.is_dir()`` yourself).
    """
    env = os.environ.get("BAYESFA_SHARED_DATA")
    if env:
        return Path(env).expanduser().resolve()
    return Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder (full PAutomaC set, text, DNA); skips the test when absent."""
    path = shared_data_path()
    if not path.is_dir():
        pytest.skip(f"shared data folder {path} not found "
                    "(set BAYESFA_SHARED_DATA to its location to run this test)")
    return path


#: The start of a script run in a fresh process (``python -c``) that measures resident memory
#: as the operating system sees it (numba's arrays are not Python's): ``rss()`` the bytes
#: resident now, ``maxrss()`` the address space's high-water mark (``VmHWM``; not getrusage's
#: ``ru_maxrss``, which Linux keeps across exec, so a child of a large pytest process would
#: start with its parent's peak), ``reset()`` the mark back to what is resident now (Linux
#: >= 4.0; a no-op where refused).
RSS_PRELUDE = r"""
import argparse, gc, json, resource, sys
import numpy as np

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()

def maxrss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) * 1024

def reset():
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
"""


def traced_peak(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` and tracemalloc's peak during the call, in bytes (numpy registers
    its buffers with tracemalloc; numba's own allocations are not seen)."""
    import tracemalloc

    tracemalloc.start()
    try:
        out = fn(*args, **kwargs)
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def checkpoint_state(path: Path) -> dict:
    """Every array of a chain checkpoint (``chain-CCCC.npz``)."""
    with np.load(path) as npz:
        return {k: npz[k] for k in npz.files}


def mid_chain_checkpoints(root: Path, n_draws: int) -> list[Path]:
    """The chain checkpoints below ``root`` saved after their first draw and before their
    last (``n_draws``); a file being replaced at this moment is skipped."""
    out = []
    for p in root.rglob("chain-*.npz"):
        try:
            d = int(checkpoint_state(p)["draws_done"])
        except Exception:  # noqa: BLE001 - being replaced at this moment
            continue
        if 0 < d < n_draws:
            out.append(p)
    return out
