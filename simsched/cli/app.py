"""The `simsched` command: a thin typer app over the library API.

Bad input of any kind (an `InputError`) becomes one line on stderr and exit status 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from simsched import __version__
from simsched.cli.options import FileArg, Format, SetOption
from simsched.cli.studies import register as register_analysis_commands
from simsched.config.loading import load_scenario, resolve_variants, select_variants
from simsched.errors import InputError
from simsched.outputs.atomic import output_folder
from simsched.outputs.describe import describe_scenario
from simsched.outputs.files import write_result
from simsched.outputs.progress import ProgressLine
from simsched.outputs.tables import comparison_table
from simsched.outputs.workload_stats import workload_stats, write_trace_csv
from simsched.results.simulate import simulate
from simsched.workload import build_workload
from simsched.workload.servegen import import_servegen, write_scenario_yaml

LONG_RUN_REQUESTS = 100_000

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Simulate multi-tenant LLM inference serving: fair queueing, quotas, admission control.",
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"simsched {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Simulate multi-tenant LLM inference serving: fair queueing, quotas, admission control."""


@app.command()
def scenario(
    file: FileArg,
    variant: Annotated[
        list[str] | None,
        typer.Option("--variant", metavar="NAME", help="Run only this variant (repeatable)."),
    ] = None,
    set_: SetOption = None,
    out: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="Write requests.csv, tenants.csv, summary.json and timeline.csv to this folder.",
        ),
    ] = None,
    format: Annotated[Format, typer.Option("--format", help="Output format.")] = Format.table,
    report: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Write PNG plots and an index.html to this folder."),
    ] = None,
) -> None:
    """Run a scenario's variants on the same workload and compare them."""
    loaded = load_scenario(file, set_)
    for folder, flag in ((out, "--out"), (report, "--report")):  # before the long part
        if folder is not None:
            output_folder(folder, flag)
    # checked here, not only inside simulate(), so that the message names the file
    select_variants(resolve_variants(loaded, str(file)), variant, str(file))
    try:
        result = simulate(loaded, variant, progress=_progress_printer())
    except InputError as exc:  # found mid-run (a request no replica can hold): name the file
        raise InputError(exc.source or str(file), exc.where, exc.message) from None
    if out is not None:
        write_result(result, out)
    if report is not None:
        from simsched.outputs.report import (
            write_report,  # matplotlib is slow to import: only when asked
        )

        write_report(result, report)
    if format is Format.json:
        typer.echo(json.dumps(result.to_json_dict(), indent=2))
    else:
        typer.echo(comparison_table(result))


@app.command()
def validate(file: FileArg, set_: SetOption = None) -> None:
    """Check a scenario (and its trace) and describe it in a few lines."""
    typer.echo(describe_scenario(load_scenario(file, set_)))


@app.command()
def workload(
    file: FileArg,
    set_: SetOption = None,
    out: Annotated[
        Path | None,
        typer.Option(metavar="TRACE.csv", help="Write the generated requests as a trace CSV."),
    ] = None,
) -> None:
    """Describe a scenario's workload per tenant; optionally freeze it as a trace CSV."""
    loaded = load_scenario(file, set_)
    if out is not None and not out.resolve().parent.is_dir():  # fail before the long part
        raise InputError(str(out), "--out", "its folder does not exist")
    table = build_workload(loaded)
    tenant_ids = loaded.tenant_ids()
    typer.echo(workload_stats(table, tenant_ids).to_string(index=False, float_format="%.3f"))
    if out is not None:
        write_trace_csv(table, tenant_ids, out)
        typer.echo(f"wrote {len(table):,} requests to {out}")


register_analysis_commands(app)

import_app = typer.Typer(help="Turn public workload data into scenarios.", no_args_is_help=True)
app.add_typer(import_app, name="import")


@import_app.command("servegen")
def import_servegen_command(
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="A ServeGen per-client data folder.")
    ],
    top: Annotated[int, typer.Option(help="The K largest clients become tenants.")] = 5,
    start_window: Annotated[int, typer.Option(help="First 10-minute window to use.")] = 0,
    windows: Annotated[
        int | None, typer.Option(help="How many windows (default: to the end of the data).")
    ] = None,
    rate_scale: Annotated[float, typer.Option(help="Multiply every rate by this.")] = 1.0,
    out: Annotated[Path, typer.Option(metavar="SCENARIO.yaml", help="Where to write.")] = Path(
        "servegen_tenants.yaml"
    ),
) -> None:
    """Build a scenario from ServeGen data: top clients as tenants, the rest as one long tail."""
    mapping = import_servegen(
        directory, top, start_window=start_window, windows=windows, rate_scale=rate_scale
    )
    write_scenario_yaml(mapping, out)
    typer.echo(f"wrote {out}: {len(mapping['tenants'])} tenants")


def _progress_printer():
    """A progress line per variant on stderr, for runs long enough to want one.

    `ProgressLine` itself stays silent unless stderr is a terminal.
    """
    lines: dict[str, ProgressLine] = {}

    def report(variant: str, done: int, total: int) -> None:
        if total < LONG_RUN_REQUESTS:
            return
        line = lines.setdefault(variant, ProgressLine(f"variant {variant}"))
        line(done, total)
        if done == total:
            line.close()

    return report


def main() -> None:
    """The console script: bad input is one stderr line and exit status 2, never a traceback.

    The app runs in click's standalone mode, so usage errors (unknown option, missing argument)
    get click's own message and exit status 2 whichever click typer ships with. Only our
    `InputError` passes through it; any other exception is a bug and keeps its traceback.
    """
    try:
        app()
    except InputError as exc:
        typer.echo(_one_line(str(exc)), err=True)
        sys.exit(2)


def _one_line(message: str) -> str:
    # messages quoted from parsers (YAML, CSV) may carry newlines; a user gets a single line
    return " ".join(message.split())


if __name__ == "__main__":
    main()
