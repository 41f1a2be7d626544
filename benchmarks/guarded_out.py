"""The benchmark scripts' ``--out`` through bayesfa's guarded writer (issue 26, item 1):
:func:`bayesfa.rundir.check_output` before any work, :func:`bayesfa.rundir.write_output` for
every write (atomic, follows the umask, recorded in the folder's ``.bayesfa-written.json``).
A file bayesfa did not write is refused in one line, exit 2; so is one changed since.

Result files written into this repository's ``benchmarks/results/`` before there was a
ledger are the benchmarks' own (committed with their command): they may be replaced
(:func:`bayesfa.rundir.check_output`'s ``legacy``). Anywhere else, only the ledger vouches.

Imported by the scripts, which have this folder on ``sys.path``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

from bayesfa.errors import InputError
from bayesfa.rundir import check_output, jsonable, write_output, write_output_text

RESULTS = Path(__file__).resolve().parent / "results"


def _repository_result(path: Path) -> bool:
    """Whether ``path`` lies in this repository's ``benchmarks/results/``."""
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(RESULTS))


def _refuse(err: InputError) -> None:
    print(f"{Path(sys.argv[0]).name}: error: {err}", file=sys.stderr)
    raise SystemExit(2)


def check_out(*paths: str | os.PathLike, option: str = "--out") -> None:
    """Refuse, before any work, an output path that the guarded writer would refuse (one
    line on standard error, exit 2). Its folder is made when written, as before."""
    for path in paths:
        try:
            check_output(path, option, legacy=_repository_result, make_folder=True)
        except InputError as err:
            _refuse(err)


def write_out(path: str | os.PathLike, write: Callable[[str], None], option: str = "--out") -> None:
    """``write(tmp_path)`` onto ``path``, guarded (:func:`bayesfa.rundir.write_output`)."""
    try:
        write_output(path, write, option, legacy=_repository_result, make_folder=True)
    except InputError as err:
        _refuse(err)


def write_out_text(path: str | os.PathLike, text: str, option: str = "--out") -> None:
    """A text onto ``path``, guarded (:func:`bayesfa.rundir.write_output_text`)."""
    try:
        write_output_text(path, text, option, legacy=_repository_result, make_folder=True)
    except InputError as err:
        _refuse(err)


def write_out_json(path: str | os.PathLike, obj: Any, option: str = "--out") -> None:
    """``obj`` as :func:`bayesfa.rundir.write_json` formats it (strict JSON, sorted keys),
    guarded."""
    write_out_text(path, json.dumps(jsonable(obj), indent=2, sort_keys=True, allow_nan=False) + "\n",
                   option)
