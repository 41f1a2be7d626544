"""The one error type for bad input: it names the file, the line and the problem."""

from __future__ import annotations

import os


class InputError(ValueError):
    """Malformed or inconsistent input.

    ``str(err)`` is one line, ``"<file>:<line>: <problem>"`` (the line is left out when
    the problem is not tied to one line), which the CLI prints as it is.
    """

    def __init__(self, problem: str, path: str | os.PathLike | None = None,
                 line: int | None = None):
        self.problem = problem
        self.path = None if path is None else os.fspath(path)
        self.line = line
        super().__init__(self._format())

    def _format(self) -> str:
        if self.path is None:
            return self.problem
        where = self.path
        if self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: {self.problem}"


class TooLargeError(InputError):
    """The work asked for needs more memory than the machine has available
    (:func:`bayesfa.memory.check_fits`); one line naming the figure and what to change."""
