"""Options shared by every `simsched` command that reads a scenario."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

# The exit status of a command that ran but whose answer is no or partial: a plan with no value
# meeting the SLOs, a sweep with failed points (docs/cli.md, "Exit status and errors").
ANSWER_IS_NO = 3


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
