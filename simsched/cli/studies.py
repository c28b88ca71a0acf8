"""The `sweep` and `report` commands (and `plan`, from `cli/plan.py`), registered on the app.

`register(app)` adds them; each is a few lines over the library functions of
`simsched.studies.sweep`, `simsched.studies.plan` and `simsched.outputs.report`, which hold the
logic (and raise `InputError` for bad input, which the console script turns into one line and exit
status 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simsched.cli.options import ANSWER_IS_NO, FileArg, SetOption
from simsched.cli.plan import plan
from simsched.errors import InputError


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
    from simsched.config.inputs import grid_inputs, scenario_inputs
    from simsched.config.loading import load_scenario
    from simsched.outputs.sweep_table import check_table_path, write_table
    from simsched.studies.grid import parse_grid
    from simsched.studies.limits import check_count, check_seeds
    from simsched.studies.sweep import sweep as run_sweep

    label = str(file)
    if dask is not None and not dask.strip():
        raise InputError(
            label, "--dask", "an empty address (give tcp://host:8786, or leave --dask out)"
        )
    loaded = load_scenario(file, set_)
    limits = loaded.limits
    check_seeds(seeds, limits, label)  # the size of the study, before a value is read

    def most(count: int) -> None:
        key = "max_grid_points"  # one flag's values: at least as many grid points
        check_count(count, limits.max_grid_points, key, "grid values", label, "--grid")

    grid_axes, zip_axes = (
        parse_grid(grid or [], "--grid", label, most),
        parse_grid(zip_ or [], "--zip", label, most),
    )
    # before hours of work, not after; never over a file the sweep reads
    inputs = [*scenario_inputs(loaded, file), *grid_inputs(grid_axes | zip_axes, file)]
    check_table_path(out, inputs)
    if seeds > 1:
        check_table_path(out.with_name(f"{out.stem}.ci{out.suffix}"), inputs)
    table = run_sweep(
        file,
        grid_axes,
        zip_axes,
        seeds=seeds,
        jobs=jobs,
        dask_address=dask,
        overrides=set_,
    )
    write_table(table, out)
    failed = table.loc[table["error"].notna(), "point"].nunique()
    points = table["point"].nunique()
    typer.echo(f"{points} points, {failed} failed; {len(table)} rows written to {out}")
    if seeds > 1:  # the replicates summarised: mean and 95% t-interval per metric
        from simsched.studies.seed_summary import seed_summary

        summary = out.with_name(f"{out.stem}.ci{out.suffix}")
        write_table(seed_summary(table), summary)
        typer.echo(f"mean and 95% t-interval across {seeds} seeds written to {summary}")
    if failed:  # the table is written, but partial: a script must not take it for complete
        raise typer.Exit(ANSWER_IS_NO)


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
    slo: Annotated[
        list[str] | None,
        typer.Option(
            metavar="EXPR",
            help="A sweep's SLO target, ROW.METRIC<=LIMIT (or <, >=, >), drawn and shown first; "
            "repeatable (default: all.slo_met>=1).",
        ),
    ] = None,
) -> None:
    """Plot a scenario's results or a sweep's table into PNG files and an index.html."""
    from simsched.outputs.report import report as write

    folder = write(results, out, slo or [])
    typer.echo(f"report written to {folder / 'index.html'}")


def register(app: typer.Typer) -> None:
    """Add the three commands to `app` (the CLI's, or a test's)."""
    app.command()(sweep)
    app.command()(plan)
    app.command()(report)
    from simsched.cli.calibrate import calibrate_command

    app.command("calibrate")(calibrate_command)
