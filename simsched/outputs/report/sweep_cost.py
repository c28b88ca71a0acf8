"""A sweep report's cost per tenant: where the sweep's scenario charges back (`chargeback`), each
tenant's dollars at every swept setting and variant, so policies compare by what each tenant
costs (results/chargeback.py defines the columns; the scenario report draws one run's)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simsched.outputs.report.page import Plot, figure, save
from simsched.results.tenants import ALL

FILE = "sweep_cost_per_tenant.png"


def has_cost(table: pd.DataFrame) -> bool:
    return "dollars_by_usage" in table and table["dollars_by_usage"].notna().any()


def setting_labels(table: pd.DataFrame, params: list[str]) -> pd.Series:
    """Each row's swept settings and variant, as the label of its group of bars."""
    shown = [p for p in params if p in table and p != "seed"]
    parts = [table[p].map(lambda v, p=p: f"{p}={v}") for p in shown]
    if table["variant"].nunique() > 1 or not parts:
        parts.append(table["variant"].astype(str))
    labels = parts[0].astype(str)
    for part in parts[1:]:
        labels = labels + ", " + part.astype(str)
    return labels


def mean_cost(table: pd.DataFrame, params: list[str]) -> pd.DataFrame:
    """Per setting and tenant, the mean over seeds of busy, idle-by-usage and by-weight dollars."""
    # tenants only: the `all` row sums them, class rows (a sweep's pooled classes) are not charged
    charged = (table["tenant"] != ALL) & table["dollars_by_usage"].notna()
    rows = table[charged].assign(setting=setting_labels(table[charged], params))
    columns = ["busy_dollars", "idle_dollars_by_usage", "dollars_by_weight"]
    grouped = rows.groupby(["setting", "tenant"], sort=False)[columns].mean()
    return grouped.reset_index()


def cost_per_tenant_plot(table: pd.DataFrame, params: list[str], folder: Path) -> Plot:
    cost = mean_cost(table, params)
    settings = list(dict.fromkeys(cost["setting"]))
    tenants = list(dict.fromkeys(cost["tenant"]))
    fig, axes = figure(1, 1, width=12, height=1.6 + 0.3 * len(settings) * len(tenants))
    ax = axes[0][0]
    y = np.arange(len(cost))
    busy = cost["busy_dollars"].to_numpy(dtype=float)
    idle = cost["idle_dollars_by_usage"].to_numpy(dtype=float)
    colours = [f"C{tenants.index(t) % 10}" for t in cost["tenant"]]
    ax.barh(y, busy, color=colours)
    ax.barh(y, idle, left=busy, color=colours, alpha=0.4)
    ax.scatter(cost["dollars_by_weight"], y, marker="|", s=200, color="black")
    ax.set_yticks(y, [f"{s} / {t}" for s, t in zip(cost["setting"], cost["tenant"], strict=True)])
    ax.invert_yaxis()
    ax.set_xlabel("US dollars over the run (mean over seeds)")
    ax.grid(axis="x", alpha=0.3)
    return save(
        fig,
        folder,
        FILE,
        "Cost per tenant, across the swept settings",
        "Each tenant's dollars at each swept setting (and variant): solid, its share of the GPU "
        "time of the iterations its requests ran in; pale, the idle fleet's cost split by that "
        "usage; the tick, the total with idle split by weight instead. Provisioned = every GPU "
        "of every replica from 0 to the last iteration's end. Shed requests cost nothing here.",
    )
