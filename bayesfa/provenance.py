"""Which code made a result: the bayesfa version and, when the package runs from a git
checkout, its commit (short hash, ``+dirty`` when tracked files differ from it). Result files
(``pautomac run``'s summary, the benchmarks' JSON) record it so that every committed number
names the code that reproduces it."""

from __future__ import annotations

import subprocess
from pathlib import Path


#: the checkout holding the package (``bayesfa/..``)
ROOT = Path(__file__).resolve().parents[1]


def git_commit(root: str | Path | None = None) -> str:
    """Short hash of HEAD of the checkout at ``root`` (default :data:`ROOT`), ``+dirty`` when
    tracked files differ from it; ``"unknown"`` outside a git checkout or without git."""
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
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def code_version() -> str:
    """``"bayesfa VERSION, git COMMIT"`` (the installed distribution's version,
    :func:`git_commit`)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("bayesfa")
    except PackageNotFoundError:
        ver = "unknown"
    return f"bayesfa {ver}, git {git_commit()}"
