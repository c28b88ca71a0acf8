"""The chargeback part of a scenario report: cost and energy per tenant across variants, and the
fleet's provisioned, busy and idle figures (results/chargeback.py defines them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simsched.outputs.report.data import ScenarioData
from simsched.outputs.report.page import Plot, figure, save

FLEET_HEADING = (
    "Chargeback: the fleet per variant (provisioned = every GPU from 0 to the last iteration's "
    "end; idle = provisioned - busy; joules per output token include the idle draw)"
)
FLEET_FIGURES = [
    "price_per_gpu_hour",
    "provisioned_gpu_seconds",
    "busy_gpu_seconds",
    "idle_gpu_seconds",
    "provisioned_dollars",
    "busy_dollars",
    "idle_dollars",
    "energy_joules",
    "idle_energy_joules",
    "joules_per_output_token",
]


def has_chargeback(data: ScenarioData) -> bool:
    return "busy_dollars" in data.tenants and data.tenants["busy_dollars"].notna().any()


def cost_per_tenant(data: ScenarioData, folder: Path) -> Plot:
    """Per variant and tenant: busy dollars plus idle by usage (stacked bars), the total with
    idle by weight instead (a tick), and busy joules per output token."""
    tenants = data.tenants[data.tenants["busy_dollars"].notna()]
    fig, axes = figure(1, 2, width=12, height=1.2 + 0.38 * len(tenants))
    cost, energy = axes[0]
    labels = [f"{row.variant} / {row.tenant_id}" for row in tenants.itertuples()]
    y = np.arange(len(labels))
    busy = tenants["busy_dollars"].to_numpy(dtype=float)
    idle = tenants["idle_dollars_by_usage"].to_numpy(dtype=float)
    by_weight = tenants["dollars_by_weight"].to_numpy(dtype=float)
    cost.barh(y, busy, label="busy (attributed by the latency model's terms)")
    cost.barh(y, idle, left=busy, label="idle, by usage share", alpha=0.6)
    cost.scatter(by_weight, y, marker="|", s=200, color="black", label="total with idle by weight")
    cost.set_yticks(y, labels)
    cost.invert_yaxis()
    cost.set_xlabel("US dollars over the run")
    # below the axis: inside it would cover the bars of the last rows
    cost.legend(
        loc="upper center", bbox_to_anchor=(0.5, -0.6 / fig.get_figheight()), fontsize="small"
    )
    cost.grid(axis="x", alpha=0.3)
    per_token = tenants["joules_per_output_token"].to_numpy(dtype=float)
    energy.barh(y, np.nan_to_num(per_token), color="tab:green")
    energy.set_yticks(y, [""] * len(y))
    energy.invert_yaxis()
    energy.set_xlabel("joules per output token (busy iterations only)")
    energy.grid(axis="x", alpha=0.3)
    return save(
        fig,
        folder,
        "cost_per_tenant.png",
        "Cost and energy per tenant, across variants",
        "Left: each tenant's share of the GPU time of the iterations its requests ran in, in "
        "dollars, plus the idle fleet's cost split by that usage; the tick is the total with idle "
        "split by weight instead. Right: the tenant's energy of busy iterations over its output "
        "tokens (the fleet's idle draw is in the chargeback table).",
    )


def chargeback_tables(fleet: Any) -> list[tuple[str, pd.DataFrame]]:
    """A row per variant from summary.json's `chargeback` block; none without one."""
    if not isinstance(fleet, dict) or not fleet:
        return []
    rows = [
        {"variant": variant} | {key: block.get(key) for key in FLEET_FIGURES}
        for variant, block in fleet.items()
        if isinstance(block, dict)
    ]
    return [(FLEET_HEADING, pd.DataFrame(rows))] if rows else []
