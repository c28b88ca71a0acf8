"""The `plan` command: a capacity (or load) search, its probes shown as they are known.

As a table (`--format table`), each probe is a row on stdout; as JSON, stdout holds only the
result, so the probes go to the progress line on stderr (drawn on a terminal only).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from simsched.cli.options import ANSWER_IS_NO, FileArg, Format, SetOption, named_by
from simsched.errors import InputError
from simsched.outputs.area_errors import DENSE_MEDIAN_SHARE, MOE_MEDIAN_SHARE, SPEC_MEDIAN_SHARE
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
    over: Annotated[
        list[str] | None,
        typer.Option(
            "--over",
            metavar="PATH=V1,V2,...",
            help="Search within each of these values (repeatable: every combination).",
        ),
    ] = None,
    minimize: Annotated[
        str,
        typer.Option(metavar="value|cost|gpus", help="Which combination answers (with --over)."),
    ] = "value",
    seeds: Annotated[
        int, typer.Option(min=1, metavar="N", help="Run each probe with seeds seed..seed+N-1.")
    ] = 1,
    rule: Annotated[
        str,
        typer.Option(metavar="interval|every|mean", help="How the seeds decide (see the docs)."),
    ] = "interval",
    jobs: Annotated[
        int, typer.Option(min=1, metavar="N", help="Probes run at once, on local processes.")
    ] = 1,
    dask: Annotated[
        str | None,
        typer.Option(metavar="ADDRESS", help="Run the probes on this Dask scheduler instead."),
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Also plot each SLO metric against the knob here."),
    ] = None,
    headroom: Annotated[
        bool,
        typer.Option(
            "--headroom/--no-headroom",
            help="Find the largest load_scale the answer absorbs (one more bisection).",
        ),
    ] = True,
    tie_margin: Annotated[
        float | None,
        typer.Option(
            metavar="PCT",
            help="Options within PCT% of the answer's cost are near-ties, and an answer whose "
            "SLO margin or headroom is within PCT% is called thin (default: the largest median "
            "error of the calibration areas the judged model is in: "
            f"{100 * DENSE_MEDIAN_SHARE:.1f} for any model, {100 * MOE_MEDIAN_SHARE:.1f} "
            f"for an MoE model; speculative decoding's area, {100 * SPEC_MEDIAN_SHARE:.1f}, is "
            "below both).",
            show_default=False,
        ),
    ] = None,
    model_error: Annotated[
        float | None,
        typer.Option(
            metavar="PCT",
            help="Plan again with the latency model's efficiencies -PCT% and +PCT%.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Find the smallest capacity (or largest load) that meets every SLO, by bisection."""
    from simsched.cli.plan_output import ProbePrinter, print_result
    from simsched.outputs.report.plan_plots import write_plan_report
    from simsched.studies.grid import parse_grid
    from simsched.studies.plan import plan as run_plan

    if (vary is None) == (maximize is None):
        raise InputError(str(file), "--vary", "give either --vary PATH or --maximize PATH")
    knob = vary or maximize
    _check_over_count(file, set_, over or [], variant)
    grid = parse_grid(over or [], "--over", str(file))
    if report is not None:  # before the long part, as `scenario --report` does
        _check_report(report, file, set_, grid, variant)
    line = ProgressLine("plan")
    show = ProbePrinter(knob, list(grid)) if format is Format.table else _probe_note(line)
    with named_by(file):
        result = run_plan(
            file,
            knob,
            range_,
            slo,
            step=_step(step),
            maximize=maximize is not None,
            variant=variant,
            overrides=set_,
            over=grid,
            minimize=minimize,
            seeds=seeds,
            rule=rule,
            jobs=jobs,
            dask_address=dask,
            on_probe=show,
            headroom=headroom,
            **_uncertainty(file, tie_margin, model_error),
        )
    line.close()
    if report is not None:
        write_plan_report(result.to_json_dict(), report, _inputs(file, set_, grid, variant))
    if format is Format.json:
        typer.echo(json.dumps(result.to_json_dict(), indent=2))
    else:
        print_result(result)
    if result.answer is None:  # it ran, and the answer is no: not a success to a script
        raise typer.Exit(ANSWER_IS_NO)


def _uncertainty(
    file: Path, tie_margin: float | None, model_error: float | None
) -> dict[str, float]:
    """The percentages as the library's shares; an unset margin keeps the library's default.
    The ranges are checked here in percent, the unit the user typed."""
    if tie_margin is not None and not 0 <= tie_margin < 100:
        message = f"must be in [0, 100) percent, got {tie_margin:g}"
        raise InputError(str(file), "--tie-margin", message)
    if model_error is not None and not 0 < model_error < 100:
        message = f"must be in (0, 100) percent, got {model_error:g}"
        raise InputError(str(file), "--model-error", message)
    shares = {} if tie_margin is None else {"tie_margin": tie_margin / 100}
    return shares | ({} if model_error is None else {"model_error": model_error / 100})


def _check_over_count(
    file: Path, set_: list[str] | None, over: list[str], variant: str | None = None
) -> None:
    """The --over combinations (the product of every flag's count of values) within
    `limits.max_combinations`, counted before any value is read, so that the message gives the
    whole count and a limit that lets it through."""
    from math import prod

    from simsched.config.loading import load_scenario
    from simsched.studies.grid import split_values
    from simsched.studies.limits import check_combinations

    count = prod(len(split_values(spec.partition("=")[2])) for spec in over)
    loaded = load_scenario(file, set_, [variant] if variant else None)
    check_combinations(count, loaded.limits, str(file))


def _inputs(
    file: Path, set_: list[str] | None, over: dict[str, list], variant: str | None = None
) -> list[Path]:
    """Every file the plan reads: the scenario, what it names, and paths among the --over
    values."""
    from simsched.config.inputs import grid_inputs, scenario_inputs
    from simsched.config.loading import load_scenario

    loaded = load_scenario(file, set_, [variant] if variant else None)
    return [*scenario_inputs(loaded, file), *grid_inputs(over, file)]


def _check_report(
    report: Path, file: Path, set_: list[str] | None, over: dict, variant: str | None = None
) -> None:
    from simsched.outputs.preflight import check_output_folder
    from simsched.outputs.report_files import PLAN_REPORT_FILES

    check_output_folder(report, "--report", PLAN_REPORT_FILES, _inputs(file, set_, over, variant))


def _step(step: float | None) -> int | float | None:
    # typer reads every step as a float; 100.0 is the integer step 100
    return int(step) if step is not None and step.is_integer() else step


def _probe_note(line: ProgressLine):
    def show(probe) -> None:
        where = ", ".join(f"{p}={v}" for p, v in probe.combo)
        line.message(f"{where} {probe.value}: {'met' if probe.met else 'missed'}".strip())

    return show
