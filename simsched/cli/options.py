"""Options shared by every `simsched` command that reads a scenario."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer


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
