"""Reports: PNG plots and a self-contained `index.html`, for a scenario's results or a sweep's.

`write_report(result, out_dir)` reports a `SimulationResult`; `report(path, out_dir)` reads
either a folder written by `simsched scenario --out` or a sweep table (.csv / .parquet). Plots are
drawn with matplotlib's object API (`Figure`, no pyplot), so nothing global changes and no
display is needed. `index.html` embeds every plot (it opens anywhere on its own) and links each
PNG file beside it. Like every output folder, a report is written to a temporary folder and
moved into place only once complete (`simsched.outputs.atomic`).

This module decides what each page holds; the parts live beside it in this package: `data`,
`scenario_plots`, `sweep_plots` and `page`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import pandas as pd

from simsched.errors import InputError
from simsched.outputs.atomic import publish_folder, staging_folder
from simsched.outputs.files import RESULT_FILES
from simsched.outputs.preflight import check_output_folder
from simsched.outputs.report.cache_plots import has_hit_rates, prefix_hit_rates
from simsched.outputs.report.chargeback_plots import (
    chargeback_tables,
    cost_per_tenant,
    has_chargeback,
)
from simsched.outputs.report.data import ScenarioData, read_results_folder, result_data
from simsched.outputs.report.page import write_index
from simsched.outputs.report.scaling_plots import provisioned_table, replicas_over_time
from simsched.outputs.report.scenario_plots import (
    kv_occupancy,
    queue_depth,
    service_share,
    shed_counts,
    tpot_cdf,
    ttft_cdf,
)
from simsched.outputs.report.sweep_cost import cost_per_tenant_plot, has_cost
from simsched.outputs.report.sweep_plots import (
    grid_axes,
    heatmap,
    metric_plot,
    slo_plot,
    sweep_parameters,
    varies,
    x_first,
)
from simsched.outputs.report.tables import per_tenant_tables
from simsched.outputs.report.targets import Target, parse_target
from simsched.outputs.report.utilisation_table import utilisation_tables
from simsched.outputs.report_files import SCENARIO_REPORT_FILES, sweep_report_files
from simsched.outputs.sweep_table import read_table
from simsched.results.frames import SimulationResult
from simsched.results.tenants import METRIC_COLUMNS


def write_report(
    result: SimulationResult,
    out_dir: str | Path,
    inputs: Iterable[Path] = (),
    flag: str = "--report",
) -> Path:
    """Plots and index.html for a simulation result, written to `out_dir`; none of its files
    may be one of the run's `inputs` (`config.inputs.scenario_inputs`)."""
    data = result_data(result)
    build = lambda folder: scenario_report(data, folder)  # noqa: E731
    return publish(out_dir, build, SCENARIO_REPORT_FILES, inputs, flag)


def report(results: str | Path, out_dir: str | Path, slos: Sequence[str] = ()) -> Path:
    """A report of a `simsched scenario --out` folder or of a sweep table file; `slos`
    (`ROW.METRIC<=LIMIT`, a sweep's only) are the targets its first section judges."""
    path = Path(results)
    if not path.exists():
        raise InputError(str(path), "", "no such file or folder")
    if path.is_dir():  # the report reads the folder's result files
        if slos:
            raise InputError(str(path), "--slo", "SLO targets are for a sweep table's report")
        check_output_folder(out_dir, "--out", SCENARIO_REPORT_FILES, _folder_files(path))
        data = read_results_folder(path)
        build = lambda folder: scenario_report(data, folder)  # noqa: E731
        return publish(out_dir, build, SCENARIO_REPORT_FILES, _folder_files(path))
    names = sweep_report_files()
    check_output_folder(out_dir, "--out", names, [path])  # before reading a large table
    table = read_table(path)
    missing = {"point", "variant", "tenant"} - set(table.columns)
    if missing:
        raise InputError(str(path), "", f"not a sweep table (no {', '.join(sorted(missing))})")
    targets = sweep_targets(table, list(slos), str(path))
    build = lambda folder: sweep_report(table, path.name, folder, targets)  # noqa: E731
    return publish(out_dir, build, names, [path])


def _folder_files(folder: Path) -> list[Path]:
    return [folder / name for name in RESULT_FILES]


def scenario_report(data: ScenarioData, folder: Path) -> None:
    plots = [ttft_cdf(data, folder)]
    if "tpot_ms" in data.requests and data.requests["tpot_ms"].notna().any():
        plots.append(tpot_cdf(data, folder))
    if data.timeline is not None and len(data.timeline):
        plots += [kv_occupancy(data, folder), queue_depth(data, folder)]
    shed = shed_counts(data, folder)
    plots += [service_share(data, folder)] + ([shed] if shed is not None else [])
    if has_hit_rates(data):  # some variant caches prefixes
        plots.append(prefix_hit_rates(data, folder))
    if has_chargeback(data):  # some variant has a `chargeback` section
        plots.append(cost_per_tenant(data, folder))
    if data.provisioned:  # some variant autoscales
        plots.append(replicas_over_time(data, folder))
    tables = [*per_tenant_tables(data.tenants), *utilisation_tables(data.utilisation)]
    tables += chargeback_tables(data.chargeback) + provisioned_table(data.provisioned)
    if shed is None:  # no empty plot: a sentence says it
        tables.append(("No request was shed", pd.DataFrame()))
    notes = [f"note: {note}" for note in data.notes]  # what the console table says under it
    write_index(folder, data.title, plots, tables, description=data.description, lines=notes)


def sweep_targets(table: pd.DataFrame, slos: list[str], label: str) -> list[Target]:
    """The targets the first section judges: those given, each checked against the table, or
    by default `all.slo_met>=1` (every tenant met its class SLO, in every seed)."""
    if not slos:
        return [parse_target(DEFAULT_TARGET)] if "slo_met" in table else []
    targets = []
    rows = set(table["tenant"].dropna().astype(str))
    for text in slos:
        try:
            target = parse_target(text)
        except ValueError as exc:
            raise InputError(label, f"--slo {text}", str(exc)) from None
        if target.metric not in METRIC_COLUMNS or target.metric not in table:
            known = [m for m in METRIC_COLUMNS if m in table]
            close = difflib.get_close_matches(target.metric, known, n=1)
            guess = f"; did you mean {close[0]!r}?" if close else ""
            message = f"no metric {target.metric!r}{guess} (known: {', '.join(known)})"
            raise InputError(label, f"--slo {text}", message)
        if target.row not in rows:
            known = ", ".join(sorted(rows))
            raise InputError(label, f"--slo {text}", f"no row {target.row!r} (known: {known})")
        targets.append(target)
    return targets


DEFAULT_TARGET = "all.slo_met>=1"


def sweep_report(
    table: pd.DataFrame, name: str, folder: Path, targets: Sequence[Target] = ()
) -> None:
    """The sweep's question first (each SLO, a line per variant, its target), then the grid at a
    glance, then every metric that varies, those the SLOs judge first."""
    params = sweep_parameters(table)
    ok = table[table["error"].isna()] if "error" in table else table
    judged = list(dict.fromkeys(t.metric for t in targets))
    varying = [m for m in METRIC_COLUMNS if m in ok and varies(ok, m)]
    varying = [m for m in judged if m in varying] + [m for m in varying if m not in judged]
    plots = [slo_plot(ok, list(targets), params, folder)] if targets and len(ok) else []
    axes = grid_axes(ok, x_first(ok, params))  # a numeric axis across, categories up
    if len(axes) == 2 and "p99_ttft_ms" in varying:  # two axes: the grid at a glance
        plots.append(heatmap(ok, "p99_ttft_ms", axes, folder))
    if has_cost(ok):  # the scenario charges back: what each tenant costs at each setting
        plots.append(cost_per_tenant_plot(ok, params, folder))
    plots += [metric_plot(ok, metric, params, folder, list(targets)) for metric in varying]
    failed = table[table["error"].notna()] if "error" in table else table.iloc[0:0]
    tables = [("Failed points", failed[["point", *params, "error"]])] if len(failed) else []
    if len(axes) > 2:  # a heatmap of two would average percentiles over the others
        tables.append(
            (f"No heatmap: {len(axes)} swept settings vary, a grid shows two", pd.DataFrame())
        )
    after = []
    steady = [m for m in METRIC_COLUMNS if m in ok and m not in varying]
    if steady:  # flat lines say nothing a list does not
        frame = pd.DataFrame({"metric": steady})
        after.append(("Metrics the sweep did not change (for any variant and tenant)", frame))
    write_index(folder, f"sweep: {name}", plots, tables, lines=_target_lines(targets), after=after)


def _target_lines(targets: list[Target]) -> list[str]:
    if not targets:
        return ["No SLO target: the table has no slo_met column and no --slo was given."]
    shown = ", ".join(t.text for t in targets)
    given = (
        ""
        if [t.text for t in targets] != [DEFAULT_TARGET]
        else (
            " (the default: every tenant met its class SLO in every seed; "
            "`simsched report TABLE --slo ROW.METRIC<=LIMIT` judges others)"
        )
    )
    return [f"SLO targets: {shown}{given}."]


def publish(
    out_dir: str | Path,
    build: Callable[[Path], None],
    names: tuple[str, ...],
    inputs: Iterable[Path] = (),
    flag: str = "--out",
) -> Path:
    """Build the report in a temporary folder beside `out_dir`, then move it into place.

    `names` are the files the report may write: checked against the run's `inputs` (the one
    rule, `outputs.atomic.refuse_overwriting_inputs`), before the build and again before the
    move, and a file the build made outside the list is a bug, not published."""
    inputs = list(inputs)
    target = check_output_folder(out_dir, flag, names, inputs)
    from matplotlib import rc_context  # lazy: matplotlib only when a report is drawn

    with staging_folder(target, mode=0o755) as staging:  # a report is meant to be shared
        # Labels are names (tenant ids, variants), never mathematics: `$x^$` is text.
        with rc_context({"text.parse_math": False}):
            build(staging)
        made = sorted(item.name for item in staging.iterdir())
        unlisted = sorted(set(made) - set(names))
        if unlisted:
            raise RuntimeError(f"report files missing from outputs.report_files: {unlisted}")
        check_output_folder(target, flag, made, inputs)
        publish_folder(staging, target)
    return target
