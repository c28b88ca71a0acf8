"""Reports: PNG plots and a self-contained `index.html`, for a scenario's results or a sweep's.

`write_report(result, out_dir)` reports a `SimulationResult`; `report(path, out_dir)` reads
either a folder written by `simsched scenario --out` or a sweep table (.csv / .parquet). Plots are
drawn with matplotlib's object API (`Figure`, no pyplot), so nothing global changes and no
display is needed. `index.html` embeds every plot (it opens anywhere on its own) and links each
PNG file beside it. Like every output folder, a report is written to a temporary folder and
moved into place only once complete.
"""

from __future__ import annotations

import base64
import html
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simsched.errors import InputError
from simsched.loading import resolve_variants
from simsched.metrics import COUNT_METRICS, METRIC_COLUMNS
from simsched.recorder import SHED_REASONS, STATUS_OK
from simsched.results import SimulationResult
from simsched.sweep import FIXED_COLUMNS, read_table

INDEX = "index.html"
SHARE_WINDOWS = 100  # time windows of the service-share plot
Figure = Any  # matplotlib.figure.Figure, imported lazily so the CLI starts fast


@dataclass
class Plot:
    file: str
    title: str
    caption: str


@dataclass
class ScenarioData:
    """What a scenario report needs, from a result in memory or from an output folder."""

    title: str
    variants: list[str]
    requests: pd.DataFrame
    tenants: pd.DataFrame
    timeline: pd.DataFrame | None
    slo_ms: dict[str, dict[str, float]]  # variant -> class -> TTFT SLO


def write_report(result: SimulationResult, out_dir: str | Path) -> Path:
    """Plots and index.html for a simulation result, written to `out_dir`."""
    resolved = dict(resolve_variants(result.scenario))
    slo = {v: _class_slos(resolved[v].slo.model_dump()) for v in result.variants}
    data = ScenarioData(
        _title(result.scenario.name, result.scenario.description),
        list(result.variants),
        result.requests,
        result.tenants,
        result.timeline if len(result.timeline) else None,
        slo,
    )
    return publish(out_dir, lambda folder: scenario_report(data, folder))


def report(results: str | Path, out_dir: str | Path) -> Path:
    """A report of a `simsched scenario --out` folder or of a sweep table file."""
    path = Path(results)
    if not path.exists():
        raise InputError(str(path), "", "no such file or folder")
    if path.is_dir():
        data = read_results_folder(path)
        return publish(out_dir, lambda folder: scenario_report(data, folder))
    table = read_table(path)
    missing = {"point", "variant", "tenant"} - set(table.columns)
    if missing:
        raise InputError(str(path), "", f"not a sweep table (no {', '.join(sorted(missing))})")
    return publish(out_dir, lambda folder: sweep_report(table, path.name, folder))


def _title(name: str, description: str) -> str:
    return f"{name}: {description}" if description else name


def _class_slos(slo: dict[str, Any]) -> dict[str, float]:
    return {"interactive": slo["interactive_ttft_ms"], "batch": slo.get("batch_ttft_ms")}


# -- reading an output folder -------------------------------------------------------------------


def read_results_folder(folder: Path) -> ScenarioData:
    requests = _read_csv(folder / "requests.csv", required=True)
    tenants = _read_csv(folder / "tenants.csv", required=True)
    timeline = _read_csv(folder / "timeline.csv", required=False)
    summary = _read_summary(folder / "summary.json")
    variants = list(dict.fromkeys(tenants["variant"].astype(str)))
    slo = {
        v: {"interactive": summary.get("slo", {}).get(v, {}).get("interactive_ttft_ms")}
        for v in variants
    }
    title = str(summary.get("scenario", folder.name))
    return ScenarioData(title, variants, requests, tenants, timeline, slo)


def _read_csv(path: Path, required: bool) -> pd.DataFrame | None:
    if not path.is_file():
        if required:
            message = f"no {path.name}: not a folder written by `simsched scenario --out`"
            raise InputError(str(path.parent), "", message)
        return None
    try:
        return pd.read_csv(path)
    except (ValueError, OSError) as exc:
        raise InputError(str(path), "", f"cannot read: {exc}") from None


def _read_summary(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (ValueError, OSError) as exc:
        raise InputError(str(path), "", f"cannot read: {exc}") from None


# -- scenario plots -----------------------------------------------------------------------------


def scenario_report(data: ScenarioData, folder: Path) -> None:
    plots = [ttft_cdf(data, folder), service_share(data, folder), shed_counts(data, folder)]
    if data.timeline is not None and len(data.timeline):
        plots[1:1] = [kv_occupancy(data, folder), queue_depth(data, folder)]
    table = data.tenants.drop(columns=["priority"], errors="ignore")
    write_index(folder, data.title, plots, [("Per tenant", table)])


def ttft_cdf(data: ScenarioData, folder: Path) -> Plot:
    fig, axes = _figure(1, len(data.variants), sharey=True)
    for ax, variant in zip(axes[0], data.variants, strict=True):
        rows = _admitted(data.requests, variant)
        for tenant in _tenant_ids(data, variant):  # declaration order, as in the tables
            ttft = np.sort(rows.loc[rows["tenant_id"] == tenant, "ttft_ms"].to_numpy(dtype=float))
            if len(ttft):
                ax.step(ttft, np.arange(1, len(ttft) + 1) / len(ttft), where="post", label=tenant)
        for lane, limit in data.slo_ms[variant].items():
            if limit and len(rows) and limit <= rows["ttft_ms"].max():
                ax.axvline(limit, color="grey", linestyle="--", label=f"{lane} SLO {limit:g} ms")
        _decorate(ax, variant, "TTFT (ms)", "fraction of admitted requests")
    return _save(
        fig,
        folder,
        "ttft_cdf.png",
        "TTFT distribution per tenant",
        "Cumulative share of each tenant's admitted requests by time to first token.",
    )


def kv_occupancy(data: ScenarioData, folder: Path) -> Plot:
    fig, axes = _figure(1, len(data.variants), sharey=True)
    for ax, variant in zip(axes[0], data.variants, strict=True):
        rows = data.timeline[data.timeline["variant"] == variant]
        cluster = rows.groupby("time_ms")[["kv_blocks_used", "kv_blocks_total"]].sum()
        ax.plot(
            cluster.index / 1000,
            100 * cluster.kv_blocks_used / cluster.kv_blocks_total,
            label="cluster",
        )
        if rows["replica"].nunique() > 1:  # one thin line per replica under the total
            for replica, part in rows.groupby("replica"):
                ax.plot(
                    part.time_ms / 1000,
                    100 * part.kv_blocks_used / part.kv_blocks_total,
                    linewidth=0.6,
                    alpha=0.6,
                    label=f"replica {replica}",
                )
        _decorate(ax, variant, "time (s)", "KV blocks in use (%)")
    return _save(
        fig,
        folder,
        "kv_occupancy.png",
        "KV occupancy over time",
        "Share of the cluster's KV blocks held by running requests.",
    )


def queue_depth(data: ScenarioData, folder: Path) -> Plot:
    fig, axes = _figure(1, len(data.variants), sharey=True)
    for ax, variant in zip(axes[0], data.variants, strict=True):
        rows = data.timeline[data.timeline["variant"] == variant]
        lanes = rows.drop_duplicates("time_ms")  # lane sizes repeat on every replica's row
        for lane in ("interactive", "batch"):
            ax.step(lanes.time_ms / 1000, lanes[f"{lane}_queued"], where="post", label=lane)
        _decorate(ax, variant, "time (s)", "requests queued")
    return _save(
        fig,
        folder,
        "queue_depth.png",
        "Queue depth per lane",
        "Requests waiting at the gateway in each lane over time.",
    )


def service_share(data: ScenarioData, folder: Path) -> Plot:
    fig, axes = _figure(1, len(data.variants), sharey=True)
    for ax, variant in zip(axes[0], data.variants, strict=True):
        rows = _admitted(data.requests, variant).dropna(subset=["dispatch_ms"])
        weights = data.tenants[data.tenants["variant"] == variant]
        times, shares = cumulative_shares(rows, list(weights["tenant_id"]))
        for (tenant, share), weight in zip(shares.items(), weights["weight_share"], strict=True):
            (line,) = ax.plot(times / 1000, share, label=tenant)
            ax.axhline(weight, color=line.get_color(), linestyle="--", linewidth=0.8)
        _decorate(ax, variant, "dispatch time (s)", "cumulative service-token share")
    return _save(
        fig,
        folder,
        "service_share.png",
        "Service share against weight share",
        "Each tenant's share of the admitted service tokens dispatched so far (solid) "
        "against its share of the weights (dashed, same colour).",
    )


def cumulative_shares(rows: pd.DataFrame, tenants: list[str]) -> tuple[np.ndarray, dict]:
    """Each tenant's share of the service tokens dispatched up to the end of each window."""
    if not len(rows):
        return np.zeros(0), {tenant: np.zeros(0) for tenant in tenants}
    rows = rows.sort_values("dispatch_ms", kind="stable")
    times = rows["dispatch_ms"].to_numpy(dtype=float)
    edges = np.linspace(times[0], times[-1], SHARE_WINDOWS + 1)[1:]
    upto = np.searchsorted(times, edges, side="right")  # requests dispatched by each edge
    tokens = rows["service_tokens"].to_numpy(dtype=float)
    total = np.concatenate([[0.0], np.cumsum(tokens)])[upto]
    shares = {}
    for tenant in tenants:
        mine = np.where(rows["tenant_id"].to_numpy() == tenant, tokens, 0.0)
        shares[tenant] = np.concatenate([[0.0], np.cumsum(mine)])[upto] / total
    return edges, shares


def shed_counts(data: ScenarioData, folder: Path) -> Plot:
    fig, axes = _figure(1, 1, width=8, height=0.9 + 0.35 * len(data.tenants))
    ax = axes[0][0]
    labels = [f"{row.variant} / {row.tenant_id}" for row in data.tenants.itertuples()]
    left = np.zeros(len(labels))
    for reason in SHED_REASONS:
        counts = data.tenants[reason].to_numpy(dtype=float)
        ax.barh(labels, counts, left=left, label=reason.removeprefix("shed_").replace("_", " "))
        left += counts
    ax.invert_yaxis()  # variants and tenants top to bottom, as in the tables
    ax.set_xlabel("requests shed")
    ax.legend(fontsize="small", title="reason")
    ax.grid(axis="x", alpha=0.3)
    if not left.any():
        ax.text(0.5, 0.5, "no request was shed", transform=ax.transAxes, ha="center")
    return _save(
        fig,
        folder,
        "shed_reasons.png",
        "Requests shed, by reason",
        "Shed requests per variant and tenant, stacked by the rule that shed them.",
    )


def _tenant_ids(data: ScenarioData, variant: str) -> list[str]:
    return list(data.tenants.loc[data.tenants["variant"] == variant, "tenant_id"])


def _admitted(requests: pd.DataFrame, variant: str) -> pd.DataFrame:
    mask = (requests["variant"] == variant) & (requests["status_code"] == STATUS_OK)
    return requests[mask]


# -- sweep plots --------------------------------------------------------------------------------

UNITS = {
    "_ms": "ms",
    "_rps": "requests/s",
    "_rate": "fraction",
    "_share": "fraction",
    "_ratio": "fraction",
    "_attainment": "fraction",
    "_tokens": "service tokens",
}


def sweep_report(table: pd.DataFrame, name: str, folder: Path) -> None:
    params = sweep_parameters(table)
    ok = table[table["error"].isna()] if "error" in table else table
    varying = [m for m in METRIC_COLUMNS if m in ok and _varies(ok, m)]
    plots = [metric_plot(ok, metric, params, folder) for metric in varying]
    failed = table[table["error"].notna()] if "error" in table else table.iloc[0:0]
    tables = [("Failed points", failed[["point", *params, "error"]])] if len(failed) else []
    steady = [m for m in METRIC_COLUMNS if m in ok and m not in varying]
    if steady:  # flat lines say nothing a list does not
        frame = pd.DataFrame({"metric": steady})
        tables.append(("Metrics the sweep did not change (for any variant and tenant)", frame))
    write_index(folder, f"sweep: {name}", plots, tables)


def _varies(table: pd.DataFrame, metric: str) -> bool:
    counts = table.groupby(["variant", "tenant"], sort=False)[metric].nunique(dropna=True)
    return bool(len(counts)) and int(counts.max()) > 1


def sweep_parameters(table: pd.DataFrame) -> list[str]:
    """The swept settings: every column that is neither a fixed column nor a metric."""
    params = [c for c in table.columns if c not in FIXED_COLUMNS]
    seeds = table["seed"].nunique() if "seed" in table else 1
    return params or (["seed"] if seeds > 1 else ["point"])


def metric_plot(table: pd.DataFrame, metric: str, params: list[str], folder: Path) -> Plot:
    variants = list(dict.fromkeys(table["variant"]))
    fig, axes = _figure(len(variants), len(params), sharey=True)
    for row, variant in zip(axes, variants, strict=True):
        rows = table[table["variant"] == variant]
        for ax, param in zip(row, params, strict=True):
            for tenant, part in rows.groupby("tenant", sort=False):
                # the other parameters and the seeds are averaged out
                means = part.groupby(param, sort=True)[metric].apply(_mean)
                # the `all` line underneath, dashed, so that a tenant equal to it still shows
                style = (
                    {"color": "black", "linestyle": "--", "zorder": 1} if tenant == "all" else {}
                )
                ax.plot(
                    [str(x) if isinstance(x, str) else x for x in means.index],
                    means.to_numpy(dtype=float),
                    marker="o",
                    label=tenant,
                    **style,
                )
            _decorate(ax, variant, _axis_label(param), _axis_label(metric))
    more = " (mean over the other parameters and seeds)" if len(params) > 1 else ""
    return _save(
        fig,
        folder,
        f"sweep_{metric}.png",
        metric,
        f"{metric} against each swept parameter, a line per tenant{more}.",
    )


def _mean(values: pd.Series) -> float:
    # booleans (slo_met) count as 0 and 1; a missing value is left out
    return float(values.astype("Float64").astype("float64").mean())


def _axis_label(name: str) -> str:
    if name in COUNT_METRICS[:-1] or name in SHED_REASONS:
        return f"{name} (requests)"
    if name == "slo_met":
        return "slo_met (fraction of runs)"
    unit = next((u for suffix, u in UNITS.items() if name.endswith(suffix)), None)
    return f"{name} ({unit})" if unit else name


# -- figures and the page -----------------------------------------------------------------------


def _figure(rows: int, cols: int, sharey: bool = False, width: float = 0, height: float = 0):
    from matplotlib.figure import Figure  # lazy: matplotlib costs a second to import

    size = (width or max(6.0, 4.6 * cols), height or 3.6 * rows)
    fig = Figure(figsize=size, layout="constrained")
    return fig, fig.subplots(rows, cols, squeeze=False, sharey=sharey)


def _decorate(ax, title: str, xlabel: str, ylabel: str) -> None:
    ax.set_title(title, fontsize="medium")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")


def _save(fig: Figure, folder: Path, file: str, title: str, caption: str) -> Plot:
    # no "Software" stamp: the same data gives the same bytes across matplotlib versions
    fig.savefig(folder / file, dpi=100, metadata={"Software": None})
    return Plot(file, title, caption)


def write_index(
    folder: Path, title: str, plots: list[Plot], tables: list[tuple[str, pd.DataFrame]]
) -> None:
    parts = [f"<h1>{html.escape(title)}</h1>"]
    for heading, table in tables:
        parts += [f"<h2>{html.escape(heading)}</h2>", table.to_html(index=False, na_rep="")]
    for plot in plots:
        data = base64.b64encode((folder / plot.file).read_bytes()).decode("ascii")
        parts.append(
            f'<figure><h2>{html.escape(plot.title)}</h2><a href="{plot.file}">'
            f'<img src="data:image/png;base64,{data}" alt="{html.escape(plot.title)}"></a>'
            f"<figcaption>{html.escape(plot.caption)} ({plot.file})</figcaption></figure>"
        )
    page = PAGE.format(title=html.escape(title), body="\n".join(parts))
    (folder / INDEX).write_text(page, encoding="utf-8")


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 1400px; }}
img {{ max-width: 100%; }} figure {{ margin: 2em 0; }}
table {{ border-collapse: collapse; font-size: 0.85em; }}
td, th {{ border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }}
</style></head><body>
{body}
</body></html>
"""


# -- all or nothing -----------------------------------------------------------------------------


def publish(out_dir: str | Path, build: Callable[[Path], None]) -> Path:
    """Build the report in a temporary folder beside `out_dir`, then move it into place."""
    target = Path(out_dir)
    if target.exists() and not target.is_dir():
        raise InputError(str(target), "--out", "exists and is not a folder")
    try:
        target.resolve().parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.resolve().parent))
    except OSError as exc:
        raise InputError(str(target), "--out", f"cannot write: {exc.strerror or exc}") from None
    try:
        build(staging)
        staging.chmod(0o755)  # mkdtemp's folder is private; a report is meant to be shared
        if not target.exists():
            os.replace(staging, target)
        else:  # an existing folder keeps its other files; ours are replaced one by one
            for item in sorted(staging.iterdir()):
                os.replace(item, target / item.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
