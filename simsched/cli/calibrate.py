"""`simsched calibrate FILE`: the table of cases, the fitted settings, the error summary."""

from __future__ import annotations

import shlex
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from simsched.cli.options import SetOption
from simsched.errors import InputError

if TYPE_CHECKING:  # the library loads when the command runs, so `--help` stays fast
    from simsched.studies.calibration.areas import Area, AreaSummary
    from simsched.studies.calibration.fit import Calibration
    from simsched.studies.calibration.spec import CalibrationFile


def calibrate_command(
    file: Annotated[
        Path, typer.Argument(help="Calibration YAML file.", metavar="FILE", show_default=False)
    ],
    jobs: Annotated[int, typer.Option(min=1, metavar="N", help="Cases simulated in parallel.")] = 1,
    out: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="Write the fitted settings as a YAML fragment."),
    ] = None,
    no_fit: Annotated[
        bool, typer.Option("--no-fit", help="Only compare, the settings at their start values.")
    ] = False,
    set_: SetOption = None,
) -> None:
    """Fit numeric settings to measured figures by simulating each case (docs/calibration.md).

    `--set` applies to every case, after its own `set`; on a path the file fits it sets where
    that setting starts."""
    from simsched.outputs.atomic import write_text_atomic
    from simsched.studies.calibration.fit import calibrate
    from simsched.studies.calibration.spec import calibration_inputs

    if out is not None:  # now, not after the whole fit
        _check_out(out, calibration_inputs(file, set_))
    progress = partial(_progress, flagged=bool(set_))
    result = calibrate(file, jobs=jobs, fit=not no_fit, progress=progress, overrides=set_)
    for warning in result.spec.warnings:
        typer.echo(f"warning: {warning}", err=True)
    typer.echo(render(result))
    if out is not None:
        write_text_atomic(out, fragment(result, file))
        typer.echo(f"{'start' if no_fit else 'fitted'} settings written to {out}")


def _check_out(out: Path, inputs: list[Path]) -> None:
    """`--out` can be written, and is none of the files the calibration reads (the file itself,
    its vLLM results, each case's scenario and what that reads)."""
    from simsched.outputs.preflight import check_output_file

    check_output_file(out, "--out", inputs)  # first: a name too long fails even is_dir()
    if not out.absolute().parent.is_dir():
        raise InputError(str(out), "--out", f"no such folder: {out.parent}")


def _progress(
    count: int, values: tuple | None, simulated: list[float], flagged: bool = False
) -> None:
    own = "the file's own settings" + (" and --set" if flagged else "")
    shown = own if values is None else ", ".join(f"{v:.4g}" for v in values)
    typer.echo(f"evaluation {count}: {shown}", err=True)


def render(result: Calibration) -> str:
    from simsched.studies.calibration.areas import AreaSummary
    from simsched.studies.calibration.fit import error, summary

    spec = result.spec
    width = max(len(case.name) for case in spec.cases)
    # "as written": the scenario's own settings (with the case's set); then the settings fitted,
    # or under --no-fit at their start values; the error is that column's
    after = "fitted" if result.fit else "start"
    lines = [
        f"{'case':<{width}}  {'metric':<13} {'measured':>11} {'as written':>11} "
        f"{after:>11} {after + ' err':>10}"
    ]
    after_errors, before_errors = [], []
    for case, meas, bef, aft in zip(
        spec.cases, result.measured, result.before, result.after, strict=True
    ):
        before_errors.append(error(bef, meas))
        after_errors.append(error(aft, meas))
        lines.append(
            f"{case.name:<{width}}  {case.metric:<13} {meas:>11.4g} {bef:>11.4g} {aft:>11.4g} "
            f"{after_errors[-1]:>+10.1%}"
        )
    lines.append("")
    lines.append(f"{'fitted' if result.fit else 'start'} settings (--set):")
    starts = spec.command_line.starts
    for j, (setting, value) in enumerate(zip(spec.settings, result.fitted, strict=True)):
        notes = [setting.name] if setting.name else []
        if setting.cases:
            first, count = setting.cases[0], len(setting.cases)
            if count == 1:
                notes.append(f"only {first}")
            elif count < len(spec.cases):  # a subset: how many, and the first by name
                notes.append(f"only {count} of the {len(spec.cases)} cases: {first}, ...")
        if j in starts:  # the start is the command line's, not the file's
            notes.append(f"start {setting.initial:.4g} from --set" if result.fit else "from --set")
            others = _unreached(spec, setting.path)
            if others:  # docs/calibration.md: there the flag is a plain one
                who = "1 case gets" if others == 1 else f"{others} cases get"
                notes.append(f"{who} the --set as a plain flag")
        only = f"   # {'; '.join(notes)}" if notes else ""
        lines.append(f"  {setting.path}={value:.4g}{only}")
    plain = spec.command_line.plain(spec.settings)
    if plain:  # the other flags, which every case ran with (both columns)
        lines.append("every case, after its own set (--set):")
        lines += [f"  {text}" for text in plain]
    labels = ("as written", "fitted" if result.fit else "start values")
    for label, errors in zip(labels, (before_errors, after_errors), strict=True):
        median, worst = summary(errors)
        whole = AreaSummary("", len(errors), median, worst, spec.median_target)
        lines.append(
            f"{label}: median absolute error {median:.1%}, worst {worst:.1%}{_against(whole)}"
        )
    if spec.case_areas:
        lines += _by_area(spec.areas, spec.case_areas, labels, before_errors, after_errors)
    return "\n".join(lines)


def _unreached(spec: CalibrationFile, path: str) -> int:
    """Cases that get a `--set` on `path` as a plain flag (those no setting on it reaches, or
    whose own `set` writes it), as the run applied it (`command_line.per_case`)."""
    from simsched.config.overrides import overlapping
    from simsched.studies.calibration.paths import cluster_path

    def plain(case: str) -> bool:
        sets = spec.command_line.case_sets(case)
        return any(overlapping(cluster_path(text.split("=", 1)[0]), path) for text in sets)

    return sum(plain(case.name) for case in spec.cases)


def _against(summary: AreaSummary) -> str:
    """' (target 8%: met)', or nothing without a target."""
    if summary.target is None:
        return ""
    return f" (target {summary.target:g}%: {summary.verdict})"


def _by_area(
    areas: dict[str, Area],
    case_areas: list[str],
    labels: tuple[str, str],
    before: list[float],
    after: list[float],
) -> list[str]:
    """The two columns' median and worst absolute error within each of the file's areas, each
    median against the area's target where it has one."""
    from simsched.studies.calibration.areas import summarise_areas

    columns = [summarise_areas(areas, case_areas, errors) for errors in (before, after)]
    width = max(len("by area"), *(len(area.name) + 2 for area in columns[0]))
    heads = [f"{label} median / worst" for label in labels]
    lines = [f"{'by area':<{width}}  figures  target  {heads[0]:<30}  {heads[1]}"]
    for first, second in zip(*columns, strict=True):
        target = "-" if first.target is None else f"{first.target:g}%"
        lines.append(
            f"  {first.name:<{width - 2}}  {first.figures:>7}  {target:>6}  "
            f"{_pair(first):<30}  {_pair(second)}".rstrip()
        )
    return lines


def _pair(area: AreaSummary) -> str:
    return f"{area.median:.1%} / {area.worst:.1%} {area.verdict}".rstrip()


def fragment(result: Calibration, file: Path) -> str:
    """Fitted settings as YAML: nested by path where a path is fitted once, listed otherwise."""
    import yaml

    from simsched.studies.calibration.fit import error, summary

    paths = [s.path for s in result.spec.settings]
    nested: dict = {}
    listed = []
    for setting, value in zip(result.spec.settings, result.fitted, strict=True):
        value = float(f"{value:.4g}")
        if paths.count(setting.path) > 1 or setting.cases:
            listed.append({"name": setting.name, "path": setting.path, "value": value})
            continue
        node = nested
        *parents, leaf = setting.path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    errors = [error(a, m) for a, m in zip(result.after, result.measured, strict=True)]
    median, worst = summary(errors)
    body = dict(nested)
    if listed:
        body["per_case_settings"] = listed
    # the command that made it, with its flags: the values hold with them only
    flags = "".join(f" --set {shlex.quote(f.text)}" for f in result.spec.command_line.flags)
    head = (
        f"# simsched calibrate {file.name}{flags}: median absolute error {median:.1%}, "
        f"worst {worst:.1%}\n"
    )
    return head + yaml.safe_dump(body, sort_keys=False)
