"""The `sweep`, `plan` and `report` commands, as typer functions for the app in `cli.py`.

`register(app)` adds them; each is a few lines over the library functions of `simsched.sweep`,
`simsched.plan` and `simsched.report`, which hold the logic (and raise `InputError` for bad
input, which the console script turns into one line and exit status 2).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from simsched.cli_options import FileArg, Format, SetOption
from simsched.errors import InputError
from simsched.progress import ProgressLine


def sweep(
    file: FileArg,
    out: Annotated[
        Path,
        typer.Option(metavar="FILE", help="Results table: .parquet or .csv.", show_default=False),
    ],
    grid: Annotated[
        list[str] | None,
        typer.Option(
            "--grid",
            metavar="PATH=V1,V2,...",
            help="Sweep a setting over these values; several --grid give every combination.",
        ),
    ] = None,
    zip_: Annotated[
        list[str] | None,
        typer.Option(
            "--zip",
            metavar="PATH=V1,V2,...",
            help="Settings that vary together, value i with value i (repeatable).",
        ),
    ] = None,
    seeds: Annotated[
        int,
        typer.Option(
            min=1, metavar="N", help="Run each point with this many seeds: seed, seed+1, ..."
        ),
    ] = 1,
    jobs: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help="Local worker processes (default: the cores).",
            show_default=False,
        ),
    ] = None,
    dask: Annotated[
        str | None,
        typer.Option(
            metavar="ADDRESS", help="Run on this Dask scheduler (tcp://host:8786) instead."
        ),
    ] = None,
    set_: SetOption = None,
) -> None:
    """Run a scenario over a grid of settings; one row per point, variant and tenant."""
    from simsched.sweep import check_table_path, parse_grid, write_table
    from simsched.sweep import sweep as run_sweep

    label = str(file)
    check_table_path(out)  # before hours of work, not after
    table = run_sweep(
        file,
        parse_grid(grid or [], "--grid", label),
        parse_grid(zip_ or [], "--zip", label),
        seeds=seeds,
        jobs=jobs,
        dask_address=dask,
        overrides=set_,
    )
    write_table(table, out)
    failed = table.loc[table["error"].notna(), "point"].nunique()
    points = table["point"].nunique()
    typer.echo(f"{points} points, {failed} failed; {len(table)} rows written to {out}")


def plan(
    file: FileArg,
    range_: Annotated[
        str,
        typer.Option(
            "--range", metavar="LO:HI", help="The knob's range, ends included.", show_default=False
        ),
    ],
    slo: Annotated[
        list[str],
        typer.Option(
            metavar="EXPR",
            help="TENANT.METRIC<=LIMIT (or <, >=, >; TENANT may be `all`); repeatable.",
            show_default=False,
        ),
    ],
    vary: Annotated[
        str | None,
        typer.Option(
            metavar="PATH", help="Capacity knob: find its smallest value meeting the SLOs."
        ),
    ] = None,
    maximize: Annotated[
        str | None,
        typer.Option(metavar="PATH", help="Load knob: find its largest value meeting the SLOs."),
    ] = None,
    step: Annotated[
        float | None,
        typer.Option(
            metavar="S", help="Step between values (default 1 for integers, (HI-LO)/64 otherwise)."
        ),
    ] = None,
    variant: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="The variant the SLOs judge (default: the last)."),
    ] = None,
    set_: SetOption = None,
    format: Annotated[Format, typer.Option("--format", help="Output format.")] = (Format.table),
) -> None:
    """Find the smallest capacity (or largest load) that meets every SLO, by bisection."""
    from simsched.plan import plan as run_plan

    if (vary is None) == (maximize is None):
        raise InputError(str(file), "--vary", "give either --vary PATH or --maximize PATH")
    knob = vary or maximize
    line = ProgressLine("plan")
    show = _probe_printer(knob) if format is Format.table else _probe_note(line)
    result = run_plan(
        file,
        knob,
        range_,
        slo,
        step=_step(step),
        maximize=maximize is not None,
        variant=variant,
        overrides=set_,
        on_probe=show,
    )
    line.close()
    if format is Format.json:
        typer.echo(json.dumps(result.to_json_dict(), indent=2))
        return
    typer.echo(result.message)
    for warning in result.warnings:
        typer.echo(f"warning: {warning}")


def _step(step: float | None) -> int | float | None:
    # typer reads every step as a float; 100.0 is the integer step 100
    return int(step) if step is not None and step.is_integer() else step


def _probe_printer(knob: str):
    """Each probe as a table row on stdout, as soon as it is known."""
    columns: list[str] = []

    def row(cells: list[object]) -> str:
        return "  ".join(
            f"{cell!s:>{max(len(c), 8)}}" for cell, c in zip(cells, columns, strict=True)
        )

    def show(probe) -> None:
        if not columns:
            columns.extend([knob, "met", *probe.metrics])
            typer.echo(row(columns))
        met = "yes" if probe.met else "no"
        typer.echo(row([probe.value, met, *probe.metrics.values()]))

    return show


def _probe_note(line: ProgressLine):
    def show(probe) -> None:
        line.message(f"{probe.value}: {'met' if probe.met else 'missed'}")

    return show


def report(
    results: Annotated[
        Path,
        typer.Argument(
            metavar="RESULTS",
            help="A folder written by `simsched scenario --out`, or a sweep table file.",
            show_default=False,
        ),
    ],
    out: Annotated[Path, typer.Option(metavar="DIR", help="Folder for the plots and index.html.")],
) -> None:
    """Plot a scenario's results or a sweep's table into PNG files and an index.html."""
    from simsched.report import report as write

    folder = write(results, out)
    typer.echo(f"report written to {folder / 'index.html'}")


def register(app: typer.Typer) -> None:
    """Add the three commands to `app` (the CLI's, or a test's)."""
    app.command()(sweep)
    app.command()(plan)
    app.command()(report)
