"""A sweep report's plots: each metric against each swept parameter, a line per tenant."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from simsched.outputs.report.page import Plot, decorate, figure, save
from simsched.outputs.sweep_table import FIXED_COLUMNS
from simsched.results.metrics import ALL, COUNT_METRICS
from simsched.sim.recorder import SHED_REASONS

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
    params = [c for c in table.columns if c not in FIXED_COLUMNS]
    seeds = table["seed"].nunique() if "seed" in table else 1
    return params or (["seed"] if seeds > 1 else ["point"])


def varies(table: pd.DataFrame, metric: str) -> bool:
    """Whether `metric` takes more than one value for some variant and tenant."""
    counts = table.groupby(["variant", "tenant"], sort=False)[metric].nunique(dropna=True)
    return bool(len(counts)) and int(counts.max()) > 1


def metric_plot(table: pd.DataFrame, metric: str, params: list[str], folder: Path) -> Plot:
    variants = list(dict.fromkeys(table["variant"]))
    fig, axes = figure(len(variants), len(params), sharey=True)
    for row, variant in zip(axes, variants, strict=True):
        rows = table[table["variant"] == variant]
        for ax, param in zip(row, params, strict=True):
            for tenant, part in rows.groupby("tenant", sort=False):
                # the other parameters and the seeds are averaged out
                means = part.groupby(param, sort=True)[metric].apply(_mean)
                # the `all` line underneath, dashed, so that a tenant equal to it still shows
                ax.plot(
                    [str(x) if isinstance(x, str) else x for x in means.index],
                    means.to_numpy(dtype=float),
                    marker="o",
                    label=tenant,
                    **(ALL_STYLE if tenant == ALL else {}),
                )
            decorate(ax, variant, _axis_label(param), _axis_label(metric))
    more = " (mean over the other parameters and seeds)" if len(params) > 1 else ""
    return save(
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
