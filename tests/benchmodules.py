"""Load a script of ``benchmarks/`` as a module in a test (the benchmarks are not a package).

A benchmark puts its own folder on ``sys.path`` to import its neighbours (``machine``,
``guarded_out``); :func:`load` restores ``sys.path`` afterwards so that no test sees it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def load(relpath: str, name: str | None = None):
    """The module of ``benchmarks/relpath`` (e.g. ``"peers.py"``, ``"mutation/run.py"``), run
    once per call; ``name`` its module name (default: the file's stem)."""
    path = BENCH / relpath
    saved = list(sys.path)
    try:
        spec = importlib.util.spec_from_file_location(name or path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
    return module
