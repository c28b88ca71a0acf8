"""A scenario report's plots: TTFT, KV occupancy, queue depth, service share, sheds.

Every plot but the shed counts has a panel per variant; tenants keep their declaration order,
as in the tables.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simsched.outputs.report.data import ScenarioData
from simsched.outputs.report.legends import shared_legend
from simsched.outputs.report.page import Plot, decorate, figure, save, variant_panels
from simsched.results.flow_shed import FLOW_SHED_REASONS
from simsched.results.frames import admitted
from simsched.sim.recorder import SHED_REASONS

SHARE_WINDOWS = 100  # time windows of the service-share plot


def ttft_cdf(data: ScenarioData, folder: Path) -> Plot:
    return latency_cdf(data, folder, "ttft_ms", "TTFT", data.slo_ms)


def tpot_cdf(data: ScenarioData, folder: Path) -> Plot:
    return latency_cdf(data, folder, "tpot_ms", "TPOT", data.tpot_slo_ms)


def latency_cdf(data: ScenarioData, folder: Path, column: str, name: str, slos: dict) -> Plot:
    """Per variant, each tenant's latency CDF on a log scale (the p99 tail shows), the p50 and
    p99 levels dotted, and the class targets dashed; panels share both axes."""
    fig, panels = variant_panels(data.variants)
    for ax, variant in panels:
        rows = _admitted(data.requests, variant)
        for tenant in _tenant_ids(data, variant):
            values = rows.loc[rows["tenant_id"] == tenant, column].to_numpy(dtype=float)
            values = np.sort(values[~np.isnan(values) & (values > 0)])
            if len(values):
                ax.step(values, np.arange(1, len(values) + 1) / len(values), where="post",
                        label=tenant)  # fmt: skip
        for level in (0.5, 0.99):
            ax.axhline(level, color="grey", linestyle=":", linewidth=0.8)
            ax.text(1.0, level, f" p{level * 100:g}", transform=ax.get_yaxis_transform(),
                    va="center", fontsize="x-small")  # fmt: skip
        for lane, limit in ((slos or {}).get(variant) or {}).items():
            if limit:
                ax.axvline(limit, color="red", linestyle="--", linewidth=1,
                           label=f"{lane} target {limit:g} ms")  # fmt: skip
        if ax.lines and any(len(line.get_xdata()) for line in ax.lines):
            ax.set_xscale("log")
        decorate(ax, variant, f"{name} (ms, log scale)", "fraction of admitted requests")
    shared_legend(fig, [ax for ax in fig.axes])
    return save(
        fig,
        folder,
        f"{column.removesuffix('_ms')}_cdf.png",
        f"{name} distribution per tenant",
        f"Cumulative share of each tenant's admitted requests by {name} (log scale; dotted: "
        "p50 and p99; dashed red: the class targets).",
    )


def kv_occupancy(data: ScenarioData, folder: Path) -> Plot:
    fig, panels = variant_panels(data.variants)
    for ax, variant in panels:
        rows = data.timeline[data.timeline["variant"] == variant]
        cluster = rows.groupby("time_ms")[["kv_blocks_used", "kv_blocks_total"]].sum()
        ax.plot(cluster.index / 1000, _percent_used(cluster), label="cluster")
        if rows["replica"].nunique() > 1:  # one thin line per replica under the total
            # one legend entry for them all: a legend row per replica would cover the panel
            for index, (_, part) in enumerate(rows.groupby("replica")):
                ax.plot(
                    part.time_ms / 1000,
                    _percent_used(part),
                    linewidth=0.6,
                    alpha=0.6,
                    label="each replica" if index == 0 else "_nolegend_",
                )
        decorate(ax, variant, "time (s)", "KV blocks in use (%)")
    return save(
        fig,
        folder,
        "kv_occupancy.png",
        "KV occupancy over time",
        "Share of the cluster's KV blocks held by running requests.",
    )


def _percent_used(rows: pd.DataFrame) -> pd.Series:
    return 100 * rows.kv_blocks_used / rows.kv_blocks_total


def queue_depth(data: ScenarioData, folder: Path) -> Plot:
    # own y scales: a protected policy's short queues would vanish beside a flooded one
    fig, panels = variant_panels(data.variants, sharey=False)
    for ax, variant in panels:
        rows = data.timeline[data.timeline["variant"] == variant]
        lanes = rows.drop_duplicates("time_ms")  # lane sizes repeat on every replica's row
        for lane in ("interactive", "batch"):
            ax.step(lanes.time_ms / 1000, lanes[f"{lane}_queued"], where="post", label=lane)
        decorate(ax, variant, "time (s)", "requests queued")
    return save(
        fig,
        folder,
        "queue_depth.png",
        "Queue depth per lane",
        "Requests waiting at the gateway in each lane over time.",
    )


def service_share(data: ScenarioData, folder: Path) -> Plot:
    fig, panels = variant_panels(data.variants)
    for ax, variant in panels:
        rows = _admitted(data.requests, variant).dropna(subset=["dispatch_ms"])
        weights = data.tenants[data.tenants["variant"] == variant]
        times, shares = cumulative_shares(rows, list(weights["tenant_id"]))
        for (tenant, share), weight in zip(shares.items(), weights["weight_share"], strict=True):
            (line,) = ax.plot(times / 1000, share, label=tenant)
            ax.axhline(weight, color=line.get_color(), linestyle="--", linewidth=0.8)
        decorate(ax, variant, "dispatch time (s)", "cumulative service-token share")
    shared_legend(fig, [ax for ax in fig.axes])
    return save(
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


def shed_counts(data: ScenarioData, folder: Path) -> Plot | None:
    """Shed requests by reason; None (no plot) when nothing was shed: the index says so."""
    columns = data.tenants.columns  # flow control's reasons where the scenario has them
    reasons = [*SHED_REASONS, *(r for r in FLOW_SHED_REASONS if r in columns)]
    if not data.tenants[reasons].to_numpy(dtype=float).any():
        return None
    fig, axes = figure(1, 1, width=8, height=0.9 + 0.35 * len(data.tenants))
    ax = axes[0][0]
    labels = [f"{row.variant} / {row.tenant_id}" for row in data.tenants.itertuples()]
    left = np.zeros(len(labels))
    for reason in reasons:
        counts = data.tenants[reason].to_numpy(dtype=float)
        ax.barh(labels, counts, left=left, label=reason.removeprefix("shed_").replace("_", " "))
        left += counts
    ax.invert_yaxis()  # variants and tenants top to bottom, as in the tables
    ax.set_xlabel("requests shed")
    ax.set_ylabel("variant / tenant")
    ax.legend(fontsize="small", title="reason")
    ax.grid(axis="x", alpha=0.3)
    return save(
        fig,
        folder,
        "shed_reasons.png",
        "Requests shed, by reason",
        "Shed requests per variant and tenant, stacked by the rule that shed them.",
    )


def _tenant_ids(data: ScenarioData, variant: str) -> list[str]:
    return list(data.tenants.loc[data.tenants["variant"] == variant, "tenant_id"])


def _admitted(requests: pd.DataFrame, variant: str) -> pd.DataFrame:
    mask = (requests["variant"] == variant).to_numpy() & admitted(requests)
    return requests[mask]
