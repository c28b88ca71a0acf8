"""A sweep report's plots: each metric against each swept parameter, a line per tenant."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from simsched.outputs.report.limits import off_scale_note, robust_limits
from simsched.outputs.report.page import Plot, decorate, save, small_multiples
from simsched.outputs.report.sweep_focus import (
    BACKGROUND,
    BACKGROUND_LABEL,
    focus_rows,
    in_focus_first,
    tenant_style,
)
from simsched.outputs.report.targets import TARGET_GID, Target, draw_target
from simsched.outputs.sweep_table import FIXED_COLUMNS, OPTIONAL_METRICS
from simsched.results.confidence import estimate
from simsched.results.metric_ranges import clip, valid_range
from simsched.results.tenants import ALL, COUNT_METRICS
from simsched.sim.recorder import SHED_REASONS

INTERACTIVE = "interactive"  # the class whose latency a capacity plan is for
UNITS = {
    "_ms": "ms",
    "_rps": "requests/s",
    "_rate": "fraction",
    "_share": "fraction",
    "_ratio": "fraction",
    "_attainment": "fraction",
    "_tokens": "service tokens",
}
ALL_STYLE = {"color": "black", "linestyle": "--", "zorder": 1}


def sweep_parameters(table: pd.DataFrame) -> list[str]:
    """The swept settings: every column that is neither a fixed column nor a metric."""
    params = [c for c in table.columns if c not in FIXED_COLUMNS and c not in OPTIONAL_METRICS]
    seeds = table["seed"].nunique() if "seed" in table else 1
    return params or (["seed"] if seeds > 1 else ["point"])


def grid_axes(table: pd.DataFrame, params: list[str]) -> list[str]:
    """The swept settings that take at least two values: a grid needs two of them (a setting
    swept over one value is a constant, not an axis)."""
    return [p for p in params if p in table and table[p].nunique(dropna=True) >= 2]


def x_first(table: pd.DataFrame, params: list[str]) -> list[str]:
    """The parameters with a numeric one that varies first (it goes on x, where a line between
    values means something); otherwise in their sweep order."""
    numeric = [p for p in grid_axes(table, params) if numeric_axis(table[p])]
    return numeric[:1] + [p for p in params if p not in numeric[:1]]


def numeric_axis(values: pd.Series) -> bool:
    return not any(isinstance(v, str) for v in values.dropna())


def varies(table: pd.DataFrame, metric: str) -> bool:
    """Whether `metric` takes more than one value for some variant and tenant."""
    counts = table.groupby(["variant", "tenant"], sort=False)[metric].nunique(dropna=True)
    return bool(len(counts)) and int(counts.max()) > 1


def metric_plot(
    table: pd.DataFrame,
    metric: str,
    params: list[str],
    folder: Path,
    targets: Sequence[Target] = (),
) -> Plot:
    """Per variant a panel (wrapping at 4 a row): the metric against the first parameter. With
    one parameter, a line per tenant; with more, a line per value of the other parameters, for
    the `all` row (never an average of percentiles across an axis). A numeric swept setting goes
    on x when there is one (`x_first`); a category axis (GPU names) is drawn as categories with
    markers only (no line joins two GPUs), a numeric one with ticks at the swept values. With
    several seeds the line is their mean and the band (error bars on categories) their 95%
    t-interval, clipped to the metric's valid range. The targets of SLOs on this metric are
    drawn (red, dashed) in every panel that shows their row; the y range leaves out a value far
    above the rest, and the panel says so."""
    variants = list(dict.fromkeys(table["variant"]))
    x, *others = x_first(table, params)
    fig, panels = small_multiples(len(variants), sharex=True, sharey=True)
    plotted: list[float] = []
    focus = focus_rows(table, targets) if not others else None
    for ax, variant in zip(panels, variants, strict=True):
        rows = table[table["variant"] == variant]
        if not others:
            plotted += _tenant_lines(ax, rows, x, metric, focus)
        else:
            for key, part in rows[rows["tenant"] == ALL].groupby(others, sort=True):
                plotted += _line(ax, part, x, metric, _label(others, key), {})
        shown_rows = set(rows["tenant"]) if not others else {ALL}
        for target in targets:
            if target.metric == metric and target.row in shown_rows:
                draw_target(ax, target)
        _ticks(ax, table[x])
        decorate(ax, variant, _axis_label(x), _axis_label(metric))
    limits = [t.limit for t in targets if t.metric == metric]
    caption = _limit_panels(panels, plotted, max(limits, default=None), metric)
    lines = "a line per tenant" if not others else f"a line per {', '.join(others)} (all tenants)"
    if focus is not None:
        lines += f" ({', '.join(sorted(focus))} in colour, {BACKGROUND_LABEL} in grey behind)"
    return save(
        fig,
        folder,
        f"sweep_{metric}.png",
        metric,
        f"{metric} against {x}, {lines}; with seeds, the mean and its 95% t-interval (band, "
        f"clipped to the metric's range).{caption}",
    )


def _tenant_lines(
    ax, rows: pd.DataFrame, x: str, metric: str, focus: set[str] | None
) -> list[float]:
    """A line per tenant: those in focus (`sweep_focus`) in colour, the rest grey behind."""
    parts = {str(k): part for k, part in rows.groupby("tenant", sort=False)}
    plotted: list[float] = []
    behind = 0
    for tenant in in_focus_first([str(k) for k in parts], focus):
        base = ALL_STYLE if tenant == ALL else {}
        style, label = tenant_style(tenant, focus, base, first_behind=behind == 0)
        behind += style is BACKGROUND
        plotted += _line(ax, parts[tenant], x, metric, label, style)
    return plotted


def slo_plot(table: pd.DataFrame, targets: list[Target], params: list[str], folder: Path) -> Plot:
    """The sweep's question first: a panel per SLO, its row's metric against the first
    parameter, a line per variant (and per value of the other parameters), and the target."""
    x, *others = x_first(table, params)
    fig, panels = small_multiples(len(targets), sharex=True)
    for ax, target in zip(panels, targets, strict=True):
        rows = table[table["tenant"] == target.row]
        plotted: list[float] = []
        for key, part in rows.groupby(["variant", *others], sort=False):
            values = key if isinstance(key, tuple) else (key,)
            label = ", ".join(
                [str(values[0]), _label(others, values[1:])] if others else [str(values[0])]
            )
            plotted += _line(ax, part, x, target.metric, label, {})
        draw_target(ax, target)
        _ticks(ax, table[x])
        decorate(ax, target.text, _axis_label(x), _axis_label(target.metric))
        _limit_panels([ax], plotted, target.limit, target.metric)
    return save(
        fig,
        folder,
        "sweep_slos.png",
        "The SLOs against the swept settings",
        f"Each SLO's metric against {x}, a line per variant; red dashed: the target. With "
        "seeds, the mean and its 95% t-interval (clipped to the metric's range).",
    )


def _limit_panels(panels: list, plotted: list[float], floor: float | None, metric: str) -> str:
    """Robust y-limits: a value far above the rest (the flood at the smallest capacity) would
    squash the range that matters, so the axis stops above the others and the panel says which
    values are off the scale. The caption's addition, or ""."""
    limits = robust_limits(plotted, floor, valid_range(metric)[0])
    if limits is None:
        return ""
    upper = limits[1]
    for ax in panels:
        ax.set_ylim(*limits)
        lines = [line for line in ax.lines if line.get_gid() != TARGET_GID]
        above = [v for line in lines for v in line.get_ydata() if _number(v) and v > upper]
        if above:  # under the title, clear of the lines and the legend
            ax.set_title(f"{ax.get_title()}\n{off_scale_note(above)}", fontsize="small")
    return f" Values above {upper:.4g} are off the scale (each panel names them)."


def _number(value) -> bool:
    return isinstance(value, (int, float)) and value == value


def _label(names: list[str], key) -> str:
    values = key if isinstance(key, tuple) else (key,)
    return ", ".join(f"{n}={v}" for n, v in zip(names, values, strict=True))


def _line(ax, part: pd.DataFrame, x: str, metric: str, label: str, style: dict) -> list[float]:
    """The line (markers only on categories), its seed band clipped to the metric's valid
    range, and the means it drew (for the y-limits)."""
    stats = [
        (value, estimate(group[metric].astype("Float64").astype("float64").tolist()))
        for value, group in part.groupby(x, sort=True)
    ]
    stats = [(v, e) for v, e in stats if e.mean is not None]
    xs = [_position(v) for v, _ in stats]
    means = [e.mean for _, e in stats]
    lows = [clip(metric, e.low) for _, e in stats]
    highs = [clip(metric, e.high) for _, e in stats]
    spread = any(e.n > 1 and e.high != e.low for _, e in stats)
    if any(isinstance(v, str) for v in xs):  # categories: markers, never a line between them
        style = {k: v for k, v in style.items() if k != "linestyle"}
        (line,) = ax.plot(xs, means, marker="o", linestyle="none", label=label, **style)
        if spread:
            bars = [[m - lo for m, lo in zip(means, lows, strict=True)],
                    [hi - m for m, hi in zip(means, highs, strict=True)]]  # fmt: skip
            ax.errorbar(xs, means, yerr=bars, fmt="none", ecolor=line.get_color(), capsize=3)
        return means
    (line,) = ax.plot(xs, means, marker="o", label=label, **style)
    if spread:
        ax.fill_between(xs, lows, highs, color=line.get_color(), alpha=0.2, linewidth=0)
    return means


def _position(value):
    return str(value) if isinstance(value, str) else value


def _ticks(ax, values: pd.Series) -> None:
    """Ticks at the swept values (no replica count of 2.5), when they are numbers and few."""
    distinct = sorted({v for v in values.dropna() if not isinstance(v, str)})
    if distinct and len(distinct) <= 12:
        ax.set_xticks(distinct)


def heatmap(table: pd.DataFrame, metric: str, params: list[str], folder: Path) -> Plot:
    """Two swept parameters (exactly: `grid_axes`; a third would be averaged over, so the report
    draws no heatmap then): the metric of the interactive class's pooled row (the `all` row when
    the sweep has none) over the grid, mean over seeds, a panel per variant; latency on a log
    colour scale; the SLO boundary drawn along cell edges, around the cells where every tenant
    meets its class SLO (`slo_met` on the `all` row) in every seed."""
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import FuncFormatter

    variants = list(dict.fromkeys(table["variant"]))
    x, y = params[:2]
    target = INTERACTIVE if (table["tenant"] == INTERACTIVE).any() else ALL
    fig, panels = small_multiples(len(variants), sharex=True, sharey=True)
    for ax, variant in zip(panels, variants, strict=True):
        rows = table[table["variant"] == variant]
        grid = _pivot(rows[rows["tenant"] == target], x, y, metric)
        met = _pivot(rows[rows["tenant"] == ALL], x, y, "slo_met").reindex_like(grid)
        values = grid.to_numpy(dtype=float)
        positive = values[values > 0]
        log = metric.endswith("_ms") and positive.size and (values[~pd.isna(values)] > 0).all()
        norm = LogNorm(positive.min(), positive.max()) if log else None
        image = ax.imshow(values, origin="lower", aspect="auto", norm=norm)
        bar = fig.colorbar(image, ax=ax, label=_axis_label(metric) + (", log scale" if log else ""))
        plain = FuncFormatter(lambda v, _: f"{v:g}")  # log ticks default to mathtext, off here
        bar.ax.yaxis.set_major_formatter(plain)
        bar.ax.yaxis.set_minor_formatter(plain)
        for xs, ys in boundary_segments(met.to_numpy(dtype=float) == 1.0):
            ax.plot(xs, ys, color="red", linewidth=2, label="_slo_boundary")
        ax.set_xticks(range(len(grid.columns)), [str(c) for c in grid.columns])
        ax.set_yticks(range(len(grid.index)), [str(i) for i in grid.index])
        ax.set_title(variant, fontsize="medium")
        ax.set_xlabel(x)
        ax.set_ylabel(y)
    return save(
        fig,
        folder,
        f"heatmap_{metric}.png",
        f"{target} {metric} over {x} and {y}",
        f"The {target} row's {metric} (mean over seeds) over the grid; red: the edges of the "
        "cells where every tenant meets its class SLO (slo_met) in every seed.",
    )


def boundary_segments(met) -> list[tuple[list[float], list[float]]]:
    """The cell edges between a met and a missed cell (image coordinates: cell (i, j) spans
    j-0.5..j+0.5 across, i-0.5..i+0.5 up), each as ([x0, x1], [y0, y1])."""
    rows, columns = met.shape
    segments = []
    for i in range(rows):
        for j in range(columns):
            if j + 1 < columns and met[i, j] != met[i, j + 1]:
                segments.append(([j + 0.5, j + 0.5], [i - 0.5, i + 0.5]))
            if i + 1 < rows and met[i, j] != met[i + 1, j]:
                segments.append(([j - 0.5, j + 0.5], [i + 0.5, i + 0.5]))
    return segments


def _pivot(rows: pd.DataFrame, x: str, y: str, metric: str) -> pd.DataFrame:
    values = rows.assign(v=rows[metric].astype("Float64").astype("float64"))
    return values.pivot_table(index=y, columns=x, values="v", aggfunc="mean", sort=True)


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
