"""Blast radius: how much the noisiest tenant inflates every other tenant's p99 TTFT.

The noisiest tenant of a variant is the one that asked for the most service tokens (submitted,
admitted or not; ties go to the tenant declared first). The counterfactual runs the same
variant on the same requests minus that tenant's (the scenario, its weights and quotas
unchanged), so any difference is the tenant's doing. For every other tenant t:

    inflation_ms(t) = p99 TTFT(t) - p99 TTFT(t without the noisiest tenant)
    inflation_ratio(t) = p99 TTFT(t) / p99 TTFT(t without the noisiest tenant)

A p99 of no served request is NaN, so its inflation is too (null in summary.json). Sessions
and closed-loop clients react to what they are served, so their requests would not be the same
without the tenant: the scenario's validation refuses a blast radius with them.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd

from simsched.results.frames import variant_frame
from simsched.results.tenants import tenant_metric_rows
from simsched.sim.engine import request_costs, run_variant
from simsched.workload.table import RequestTable

COLUMNS = ["p99_ttft_ms_without_noisiest", "p99_ttft_inflation_ms"]
DIGITS = 4


def wants_blast_radius(scenario: Any) -> bool:
    return scenario.fairness is not None and scenario.fairness.blast_radius


def noisiest_tenant(scenario: Any, frame: pd.DataFrame) -> str:
    asked = frame.groupby("tenant_id")["service_tokens"].sum()
    demands = [(float(asked.get(t.id, 0)), -i, t.id) for i, t in enumerate(scenario.tenants)]
    return max(demands)[2]


def without_tenant(table: RequestTable, index: int) -> RequestTable:
    keep = table.tenant != index
    return RequestTable(
        **{
            field.name: None
            if getattr(table, field.name) is None
            else getattr(table, field.name)[keep]
            for field in dataclasses.fields(table)
        }
    )


def blast_radius(
    name: str, scenario: Any, table: RequestTable, frame: pd.DataFrame, rows: list[dict[str, Any]]
) -> dict[str, Any]:
    """Adds the two columns to the variant's tenant rows; summary.json's block for it."""
    noisy = noisiest_tenant(scenario, frame)
    index = scenario.tenant_ids().index(noisy)
    rest = without_tenant(table, index)
    alone = {}
    if len(rest):
        run = run_variant(scenario, rest)
        counterfactual = variant_frame(
            name, scenario, rest, request_costs(scenario, rest), run.recorder
        )
        alone = {
            r["tenant_id"]: r["p99_ttft_ms"]
            for r in tenant_metric_rows(name, scenario, counterfactual)
        }
    inflation, ratio = {}, {}
    for row in rows:
        tenant = row["tenant_id"]
        without = alone.get(tenant, math.nan) if tenant != noisy else math.nan
        row["p99_ttft_ms_without_noisiest"] = without
        row["p99_ttft_inflation_ms"] = _rounded(row["p99_ttft_ms"] - without)
        if tenant in alone and tenant != noisy:
            inflation[tenant] = row["p99_ttft_inflation_ms"]
            ratio[tenant] = _rounded(row["p99_ttft_ms"] / without) if without else math.nan
    return {
        "noisiest_tenant": noisy,
        "p99_ttft_inflation_ms": inflation,
        "p99_ttft_inflation_ratio": ratio,
    }


def _rounded(value: float) -> float:
    return round(value, DIGITS) if np.isfinite(value) else math.nan
