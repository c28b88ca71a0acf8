"""The `simsched` command: a thin typer app over the library API.

Bad input of any kind (an `InputError`) becomes one line on stderr and exit status 2.
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from simsched.describe import describe_scenario
from simsched.errors import InputError
from simsched.loading import load_scenario
from simsched.output import write_result
from simsched.simulation import simulate
from simsched.tables import comparison_table

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Simulate multi-tenant LLM inference serving: fair queueing, quotas, admission control.",
)


class Format(str, Enum):
    table = "table"
    json = "json"


FileArg = Annotated[Path, typer.Argument(help="Scenario YAML file.", show_default=False)]


@app.command()
def scenario(
    file: FileArg,
    variant: Annotated[
        list[str] | None, typer.Option("--variant", help="Run only this variant (repeatable).")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a setting: dotted.path=value (repeatable)."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Write requests.csv, tenants.csv and summary.json to this folder."),
    ] = None,
    format: Annotated[Format, typer.Option("--format", help="Output format.")] = Format.table,
) -> None:
    """Run a scenario's variants on the same workload and compare them."""
    loaded = load_scenario(file, set_)
    result = simulate(loaded, variant, progress=_progress_printer())
    if out is not None:
        write_result(result, out)
    if format is Format.json:
        typer.echo(json.dumps(result.to_json_dict(), indent=2))
    else:
        typer.echo(comparison_table(result))


@app.command()
def validate(
    file: FileArg,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a setting: dotted.path=value (repeatable)."),
    ] = None,
) -> None:
    """Check a scenario (and its trace) and describe it in a few lines."""
    typer.echo(describe_scenario(load_scenario(file, set_)))


def _progress_printer():
    """Progress lines on stderr, only when a person is watching it."""
    if not sys.stderr.isatty():
        return None
    return lambda message: typer.echo(f"... {message}", err=True)


def main() -> None:
    try:
        app(standalone_mode=False)
    except InputError as exc:
        typer.echo(str(exc), err=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(130)
    except Exception as exc:  # click usage errors carry their own exit code
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
