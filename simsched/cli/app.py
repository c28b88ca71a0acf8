"""The `simsched` command: a thin typer app over the library API.

Bad input of any kind (an `InputError`) becomes one line on stderr and exit status 2. Commands
import the library inside their bodies, so that `simsched --version` and `--help` load typer only.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Annotated

import typer

from simsched import __version__
from simsched.cli.options import FileArg, Format, SetOption, VariantOption, named_by
from simsched.cli.startup import release_interrupts
from simsched.cli.studies import register as register_analysis_commands
from simsched.errors import InputError

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
    variant: VariantOption = None,
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
    from simsched.config.inputs import scenario_inputs
    from simsched.config.loading import load_scenario, resolve_variants, select_variants
    from simsched.config.shadowing import refuse_shadowed_overrides
    from simsched.outputs.files import RESULT_FILES, json_safe, summary_document, write_result
    from simsched.outputs.preflight import check_output_folder
    from simsched.outputs.report_files import SCENARIO_REPORT_FILES
    from simsched.outputs.tables import comparison_table
    from simsched.results.simulate import simulate

    loaded = load_scenario(file, set_, variant)  # the variants left out are not validated
    refuse_shadowed_overrides(loaded, set_, variant, str(file))  # as sweep and plan do
    inputs = scenario_inputs(loaded, file)  # no output may overwrite what the run reads
    for folder, flag, names in (
        (out, "--out", RESULT_FILES),
        (report, "--report", SCENARIO_REPORT_FILES),
    ):
        if folder is not None:  # before the long part
            check_output_folder(folder, flag, names, inputs)
    # checked here, not only inside simulate(), so that the message names the file
    select_variants(resolve_variants(loaded, str(file)), variant, str(file))
    try:
        result = simulate(loaded, variant, progress=_progress_printer())
    except InputError as exc:  # found mid-run (a request no replica can hold): name the file
        raise InputError(exc.source or str(file), exc.where, exc.message) from None
    if out is not None:
        write_result(result, out, inputs)
    if report is not None:
        from simsched.outputs.report import write_report  # matplotlib: only when asked

        write_report(result, report, inputs)
    if format is Format.json:
        typer.echo(json.dumps(json_safe(summary_document(result)), indent=2, allow_nan=False))
    else:
        typer.echo(comparison_table(result))


@app.command()
def validate(file: FileArg, variant: VariantOption = None, set_: SetOption = None) -> None:
    """Check a scenario (and its trace) and describe it in a few lines."""
    from simsched.config.loading import load_scenario, resolve_variants, select_variants
    from simsched.config.shadowing import refuse_shadowed_overrides
    from simsched.outputs.describe import describe_scenario

    with named_by(file):
        loaded = load_scenario(file, set_, variant)  # with --variant, only those
        refuse_shadowed_overrides(loaded, set_, variant, str(file))  # as `scenario` does
        # a name no variant has (a scenario without variants has one, `base`), as `scenario`
        select_variants(resolve_variants(loaded, str(file)), variant, str(file))
        typer.echo(describe_scenario(loaded))


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
    from simsched.config.inputs import scenario_inputs
    from simsched.config.loading import load_scenario
    from simsched.outputs.preflight import check_output_file
    from simsched.outputs.workload_files import write_trace_csv
    from simsched.outputs.workload_stats import workload_stats
    from simsched.workload.build import build_workload, prefix_rng, tenant_rng
    from simsched.workload.context_limits import check_context
    from simsched.workload.session_plans import reactive_summary

    loaded = load_scenario(file, set_)
    if out is not None:  # fail before the long part
        check_output_file(out, "--out", scenario_inputs(loaded, file))  # a trace it reads too
        if not out.resolve().parent.is_dir():
            raise InputError(str(out), "--out", "its folder does not exist")
    with named_by(file):
        table = build_workload(loaded)
        # a frozen workload replays as a trace: refused then, so refused now (the model's context)
        check_context(loaded, table)
    tenant_ids = loaded.tenant_ids()
    typer.echo(workload_stats(table, tenant_ids).to_string(index=False, float_format="%.3f"))
    for tenant_id, plan in reactive_summary(loaded, tenant_rng, prefix_rng).items():
        typer.echo(f"{tenant_id}: not made in advance ({plan}); not counted above")
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
    from simsched.outputs.preflight import check_output_file
    from simsched.outputs.workload_files import write_scenario_yaml
    from simsched.workload.servegen import import_servegen

    # the importer reads the folder's chunk files: the scenario written may not replace one
    read = sorted(directory.glob("chunk-*")) if directory.is_dir() else []
    check_output_file(out, "--out", read)
    mapping = import_servegen(
        directory, top, start_window=start_window, windows=windows, rate_scale=rate_scale
    )
    write_scenario_yaml(mapping, out)
    typer.echo(f"wrote {out}: {len(mapping['tenants'])} tenants")


def _progress_printer():
    """A progress line per variant on stderr, for runs long enough to want one.

    `ProgressLine` itself stays silent unless stderr is a terminal.
    """
    from simsched.outputs.progress import ProgressLine

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
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        app()
    except InputError as exc:
        typer.echo(_one_line(str(exc)), err=True)
        sys.exit(2)
    except Terminated:
        _interrupted()
    except KeyboardInterrupt:  # Ctrl-C outside a command's body (click handles it inside)
        typer.echo("simsched: interrupted", err=True)
        sys.exit(128 + signal.SIGINT)
    except Exception:
        # the signal's exception raised inside a library that wraps what it catches (pydantic
        # building a validator turns it into a SchemaError): still the signal, not a bug
        if not Terminated.signalled:
            raise
        _interrupted()
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupted() -> None:
    typer.echo("simsched: interrupted (SIGTERM)", err=True)
    sys.exit(128 + signal.SIGTERM)


class Terminated(BaseException):
    """SIGTERM, raised where the program is, so that it unwinds as on Ctrl-C: staging folders
    are removed and sweep workers stopped on the way out. A BaseException, as KeyboardInterrupt
    is, so that no `except Exception` takes it for a failed point."""

    signalled = False  # set once the signal came: whatever fails after it failed because of it


def _terminate(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    Terminated.signalled = True
    raise Terminated()


def _one_line(message: str) -> str:
    # messages quoted from parsers (YAML, CSV) may carry newlines; a user gets a single line
    return " ".join(message.split())


release_interrupts()  # the command is built: Ctrl-C raises KeyboardInterrupt again (startup.py)

if __name__ == "__main__":
    main()
