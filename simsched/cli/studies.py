"""The `sweep`, `plan` and `report` commands, as typer functions for the app in `cli.py`.

`register(app)` adds them; each is a few lines over the library functions of `simsched.studies.sweep`,
`simsched.studies.plan` and `simsched.outputs.report`, which hold the logic (and raise `InputError` for bad
input, which the console script turns into one line and exit status 2). `plan`, with the way it
shows its probes as they come, is in `plan_command.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simsched.cli.options import FileArg, SetOption
from simsched.cli.plan import plan


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
    from simsched.studies.sweep import check_table_path, parse_grid, write_table
    from simsched.studies.sweep import sweep as run_sweep

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
    from simsched.outputs.report import report as write

    folder = write(results, out)
    typer.echo(f"report written to {folder / 'index.html'}")


def register(app: typer.Typer) -> None:
    """Add the three commands to `app` (the CLI's, or a test's)."""
    app.command()(sweep)
    app.command()(plan)
    app.command()(report)
    from simsched.cli.calibrate import calibrate_command

    app.command("calibrate")(calibrate_command)
