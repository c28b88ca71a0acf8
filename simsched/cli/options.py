"""Options shared by every `simsched` command that reads a scenario."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from simsched.errors import InputError

# The exit status of a command that ran but whose answer is no or partial: a plan with no value
# meeting the SLOs, a sweep with failed points (docs/cli.md, "Exit status and errors").
ANSWER_IS_NO = 3


@contextmanager
def named_by(file: Path) -> Iterator[None]:
    """An InputError found while running (a workload too large, a clock run out) names the
    scenario file it came from, as load errors do."""
    try:
        yield
    except InputError as exc:
        if exc.source:
            raise
        raise InputError(str(file), exc.where, exc.message) from None


class Format(str, Enum):
    table = "table"
    json = "json"


FileArg = Annotated[
    Path, typer.Argument(help="Scenario YAML file.", metavar="FILE", show_default=False)
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set", metavar="PATH=VALUE", help="Override a setting: dotted.path=value (repeatable)."
    ),
]
# `scenario` runs and `validate` checks only these variants (the others are left out before
# validation, so a `--set` they could not take does not stop it)
VariantOption = Annotated[
    list[str] | None,
    typer.Option("--variant", metavar="NAME", help="Only this variant (repeatable)."),
]
