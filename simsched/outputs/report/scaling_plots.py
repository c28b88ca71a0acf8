"""A scenario report's autoscaling section: replicas over time against the request rate, and
the provisioned fleet's GPU-hours, cost and busy share (summary.json's `provisioned` block).

Drawn only where some variant autoscales; a fixed pool beside it shows as a flat line. A variant
on `cluster.pools` draws each pool's lines, named by the pool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simsched.outputs.report.data import ScenarioData
from simsched.outputs.report.page import Plot, decorate, save, variant_panels
from simsched.results.provisioned import POOL as SINGLE_POOL  # a single pool's name

RATE_BINS = 120  # request-rate bins over the window
# One colour per pool; its provisioned count a wide pale band, its serving count a thin line on
# it, so that both show where they are equal (a fixed pool, or no replica warming or draining)
PROVISIONED = {"linewidth": 6.0, "alpha": 0.35}
SERVING = {"linewidth": 1.5}


def replicas_over_time(data: ScenarioData, folder: Path) -> Plot:
    fig, panels = variant_panels(data.variants, sharey=False)
    legend: tuple[list, list] | None = None
    for ax, variant in panels:
        block = (data.provisioned or {}).get(variant)
        if block is None:
            ax.set_axis_off()
            continue
        start, end = block["window_ms"]
        highest = 0.0
        for index, (name, pool) in enumerate(block["pools"].items()):  # `cluster`, or each pool
            steps = np.array(pool["replicas_over_time"], dtype=float)
            times = np.append(steps[:, 0], end) / 1000
            prefix = "" if name == SINGLE_POOL else f"{name}: "
            for column, label, style in ((1, "provisioned", PROVISIONED), (2, "serving", SERVING)):
                counts = np.append(steps[:, column], steps[-1, column])
                ax.step(times, counts, where="post", label=f"{prefix}replicas {label}",
                        color=f"C{index}", **style)  # fmt: skip
            highest = max(highest, steps[:, 1].max())
        ax.set_ylim(0, highest + 1)
        decorate(ax, variant, "time (s)", "replicas")
        rate = ax.twinx()
        centres, per_s = _arrival_rate(data.requests, variant, start, end)
        rate.plot(centres / 1000, per_s, color="grey", linewidth=0.8, label="requests/s")
        rate.set_ylabel("arrivals per second")
        rate.set_ylim(bottom=0)
        legend = _without_legends(ax, rate)
    if legend is not None:  # the same lines in every panel: one legend, under them all
        fig.legend(*legend, loc="outside lower center", ncols=3, fontsize="small")
    return save(
        fig,
        folder,
        "replicas_over_time.png",
        "Replicas over time against the request rate",
        "Provisioned replicas (warming, serving or draining: what is paid for; the wide pale "
        "band) and serving ones (what the router sees; the thin line, in the pool's colour), "
        "left axis; arrivals per second, right axis (grey).",
    )


def _without_legends(ax, rate) -> tuple[list, list]:
    """The panel's lines on both axes for the figure's one legend; the panel's own legend (which
    `decorate` draws for the left axis alone) removed: legends inside the panel, one per axis,
    overlap each other and the lines whatever corners they take."""
    handles, labels = ax.get_legend_handles_labels()
    more, more_labels = rate.get_legend_handles_labels()
    if ax.get_legend() is not None:
        ax.get_legend().remove()
    return handles + more, labels + more_labels


def _arrival_rate(
    requests: pd.DataFrame, variant: str, start: float, end: float
) -> tuple[np.ndarray, np.ndarray]:
    arrivals = requests.loc[requests["variant"] == variant, "arrival_ms"].to_numpy(dtype=float)
    edges = np.linspace(start, max(end, start + 1.0), RATE_BINS + 1)
    counts, _ = np.histogram(arrivals, edges)
    width_s = (edges[1] - edges[0]) / 1000
    return (edges[:-1] + edges[1:]) / 2, counts / width_s


def provisioned_table(provisioned: dict[str, Any] | None) -> list[tuple[str, pd.DataFrame]]:
    if not provisioned:
        return []
    rows = []
    pooled = any(name != SINGLE_POOL for block in provisioned.values() for name in block["pools"])
    for variant, block in provisioned.items():
        for name, pool in block["pools"].items():
            rows.append(_table_row(variant, name, pool, pooled))
    title = "Provisioned fleet, from the first arrival to the last iteration"
    return [(title, pd.DataFrame(rows))]


def _table_row(variant: str, name: str, pool: dict[str, Any], pooled: bool) -> dict[str, Any]:
    """One pool's row; the `pool` column only where some variant has cluster.pools."""
    counts = [step[1] for step in pool["replicas_over_time"]]
    where = {"variant": variant} | ({"pool": name} if pooled else {})
    return where | {
        "GPU-hours": pool["gpu_hours"],
        "cost $": pool["cost_usd"],
        "busy share": pool["busy_share"],
        "KV held share": pool["kv_held_share"],
        "mean replicas": pool["mean_replicas"],
        "replicas min..max": f"{min(counts)}..{max(counts)}",
        "warm-up s": pool["warmup_s"],
        "TTFT misses while warming": pool["ttft_misses_while_warming"],
    }
