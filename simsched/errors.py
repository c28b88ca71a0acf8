"""The one error type that reaches users: bad input, named by file and field.

The CLI turns an `InputError` into a single stderr line and exit status 2; anything else is a bug
and keeps its traceback.
"""

from __future__ import annotations

import os
from pathlib import Path


class InputError(Exception):
    """A problem with something the user gave us: a scenario, a trace, a flag."""

    def __init__(self, source: str, where: str, message: str) -> None:
        self.source = source
        self.where = where
        self.message = message
        # The three parts as args, so a copy made from args is the same error (SimPy re-raises
        # exceptions from inside processes that way).
        super().__init__(source, where, message)

    def __str__(self) -> str:
        parts = [p for p in (self.source, self.where, self.message) if p]
        return ": ".join(parts)


def display_path(path: str | Path) -> str:
    """A file's name as a message shows it: relative to the working folder when inside it.

    Scenario paths are resolved to absolute ones when a scenario is loaded; a message shows a
    file below the working folder the way the user would type it.
    """
    try:
        return str(Path(os.path.abspath(path)).relative_to(Path.cwd()))
    except ValueError:
        return str(path)
