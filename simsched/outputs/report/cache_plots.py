"""The prefix-cache plot of a scenario report: each tenant's hit rate, per variant."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from simsched.outputs.report.data import ScenarioData
from simsched.outputs.report.page import Plot, figure, save


def has_hit_rates(data: ScenarioData) -> bool:
    return "prefix_hit_rate" in data.tenants


def prefix_hit_rates(data: ScenarioData, folder: Path) -> Plot:
    tenants = data.tenants
    fig, axes = figure(1, 1, width=8, height=0.9 + 0.35 * len(tenants))
    ax = axes[0][0]
    labels = [f"{row.variant} / {row.tenant_id}" for row in tenants.itertuples()]
    rates = 100.0 * tenants["prefix_hit_rate"].to_numpy(dtype=float)
    ax.barh(labels, np.nan_to_num(rates))
    for y, rate in enumerate(rates):
        ax.text(rate + 0.5, y, f"{rate:.1f}%", va="center", fontsize="small")
    ax.invert_yaxis()  # variants and tenants top to bottom, as in the tables
    ax.set_xlim(0, 105)
    ax.set_xlabel("prompt tokens served from the prefix cache (%)")
    ax.set_ylabel("variant / tenant")
    ax.grid(axis="x", alpha=0.3)
    return save(
        fig,
        folder,
        "prefix_hit_rate.png",
        "Prefix-cache hit rate per tenant",
        "Cached prompt tokens over prompt tokens of each tenant's admitted requests "
        "(0 where a variant does not cache).",
    )
