"""Which code made a result: the bayesfa version and, when the package runs from a git
checkout, its commit (short hash, ``+dirty`` when tracked files differ from it). Result files
(``pautomac run``'s summary, the benchmarks' JSON) record it so that every committed number
names the code that reproduces it."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path


#: the checkout holding the package (``bayesfa/..``)
ROOT = Path(__file__).resolve().parents[1]


#: Folders of the repository that hold what runs write (results), not code.
OUTPUTS = ("benchmarks/results",)


def git_commit(root: str | Path | None = None) -> str:
    """Short hash of HEAD of the checkout at ``root`` (default :data:`ROOT`), ``+dirty`` when
    tracked files differ from it; ``"unknown"`` outside a git checkout or without git.

    What runs write is not the code they ran: the files under :data:`OUTPUTS` (committed
    results, which a resumed run rewrites) and every folder's ledger
    (:data:`bayesfa.rundir.LEDGER`) never make a checkout dirty."""
    root = Path(root) if root else ROOT

    def git(*args: str) -> str:
        try:
            out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return ""
        return out.stdout.strip() if out.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD")
    if not head:
        return "unknown"
    from bayesfa.rundir import LEDGER  # (here: rundir's imports stay out of this module's)

    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                  *(f":(exclude){p}" for p in OUTPUTS), f":(exclude,glob)**/{LEDGER}")
    return head + ("+dirty" if changed else "")


def code_version() -> str:
    """``"bayesfa VERSION, git COMMIT"`` (the installed distribution's version,
    :func:`git_commit`)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("bayesfa")
    except PackageNotFoundError:
        ver = "unknown"
    return f"bayesfa {ver}, git {git_commit()}"


def compile_target() -> str:
    """The CPU numba compiles the kernels for, and its widest vector: ``"emeraldrapids, 512-bit
    vectors"`` (``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` when set, else the host's).

    Same seed, same result holds bit for bit among machines of one vector width: the sweep
    kernels' vectorised float32 sums round differently at 256 and 512 bits, so a chain that
    meets such a rounding difference goes on differently (docs/production.md, "Same seed, same
    result"). Results record it beside the code."""
    import llvmlite.binding as llvm
    from numba.core import config

    name = config.CPU_NAME or llvm.get_host_cpu_name()
    if config.CPU_FEATURES is not None:
        enabled = {f[1:] for f in config.CPU_FEATURES.split(",") if f.startswith("+")}
    else:
        enabled = {k for k, on in llvm.get_host_cpu_features().items() if on}
    width = 512 if "avx512f" in enabled else 256 if "avx2" in enabled or "avx" in enabled else 128
    return f"{name}, {width}-bit vectors"


def portable_path(text: str, root: str | Path | None = None) -> str:
    """``text`` as a path relative to the checkout at ``root`` (default :data:`ROOT`) when it
    is an absolute path on this machine, so that a recorded command runs from a fresh clone's
    top folder (``/home/me/bayesfa/runs/x`` -> ``runs/x``, ``/home/me/shared/data`` ->
    ``../shared/data``); anything else unchanged.

    >>> portable_path(str(ROOT / "runs" / "x"))
    'runs/x'
    >>> portable_path("--states")
    '--states'
    """
    root = Path(root) if root else ROOT
    if not os.path.isabs(text):
        return text
    return Path(os.path.relpath(text, root)).as_posix()


def portable_command(argv: list[str] | tuple[str, ...], root: str | Path | None = None) -> str:
    """A command line to record with a result, runnable from the checkout's top folder on any
    machine: the Python interpreter becomes ``python``, an installed ``bayesfa`` script
    ``bayesfa``, and every absolute path (also after ``--option=``) relative to ``root``
    (:func:`portable_path`). Quoted for a POSIX shell.

    >>> import sys
    >>> portable_command([sys.executable, str(ROOT / "benchmarks" / "x.py"), "--out=" + str(ROOT / "r")])
    'python benchmarks/x.py --out=r'
    """
    out = []
    for i, arg in enumerate(argv):
        arg = str(arg)
        if arg == sys.executable or (os.path.isabs(arg) and Path(arg).name in ("python", "python3")):
            out.append("python")
        elif i == 0 and Path(arg).name == "bayesfa":
            out.append("bayesfa")
        elif arg.startswith("--") and "=" in arg:
            key, value = arg.split("=", 1)
            out.append(f"{key}={portable_path(value, root)}")
        else:
            out.append(portable_path(arg, root))
    return shlex.join(out)

