"""The `plan` command: a capacity (or load) search, its probes shown as they are known.

As a table (`--format table`), each probe is a row on stdout; as JSON, stdout holds only the
result, so the probes go to the progress line on stderr (drawn on a terminal only).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from simsched.cli.options import FileArg, Format, SetOption
from simsched.errors import InputError
from simsched.outputs.progress import ProgressLine


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
    from simsched.studies.plan import plan as run_plan

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
