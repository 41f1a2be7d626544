"""Paths to PAutomaC problems: the bundled problem 24, or any problem of a folder you name."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from bayesfa.errors import InputError

BUNDLED_PROBLEMS = (24,)
_SUFFIX = {"train": "pautomac.train", "test": "pautomac.test",
           "solution": "pautomac_solution.txt", "model": "pautomac_model.txt"}


def pautomac_path(problem: int, kind: str, folder: str | os.PathLike | None = None) -> Path:
    """Path of ``<problem>.<kind>`` (kind: train, test, solution or model).

    Without ``folder``, the files bundled with bayesfa (problem 24 only).
    """
    if kind not in _SUFFIX:
        raise ValueError(f"kind must be one of {', '.join(_SUFFIX)}")
    name = f"{problem}.{_SUFFIX[kind]}"
    if folder is None:
        if problem not in BUNDLED_PROBLEMS:
            raise InputError(f"problem {problem} is not bundled (only {BUNDLED_PROBLEMS}); name a folder")
        return Path(str(resources.files("bayesfa") / "data" / "pautomac" / name))
    path = Path(folder) / name
    if not path.is_file():
        raise InputError("no such file", path)
    return path
