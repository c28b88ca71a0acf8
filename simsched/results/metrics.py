"""A flat metrics row per variant and tenant (plus an `all` row) from a `SimulationResult`.

Sweeps, capacity plans and reports share these rows, so a metric has one name and one definition
everywhere: `simsched plan --slo tenant_chat_pro.p99_ttft_ms<=500` judges the same number that
`simsched sweep` puts in the `p99_ttft_ms` column and `tenants.csv` holds. The rows are the
result's tenant rows (see `tenant_metrics.py`), keyed by `tenant` instead of `tenant_id`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from simsched.results.frames import SimulationResult
from simsched.results.tenants import ALL, COLUMNS
from simsched.sim.recorder import SHED_REASONS

# Counts stay integers in sweep tables; everything else is a float or a verdict.
COUNT_METRICS = ["submitted", "admitted", "shed", *SHED_REASONS, "admitted_service_tokens"]
DESCRIPTIVE = ("variant", "tenant_id", "priority", "weight")
METRIC_COLUMNS = [column for column in COLUMNS if column not in DESCRIPTIVE]
ROW_KEYS = ["variant", "tenant", *METRIC_COLUMNS]

__all__ = ["ALL", "COUNT_METRICS", "METRIC_COLUMNS", "ROW_KEYS", "metrics_frame", "metrics_rows"]


def metrics_rows(result: SimulationResult) -> list[dict[str, Any]]:
    """Per variant: a row per declared tenant (declaration order), then the `all` row."""
    rows = result.tenants.to_dict("records")
    return [{"variant": r["variant"], "tenant": r["tenant_id"]} | _metrics(r) for r in rows]


def metrics_frame(result: SimulationResult) -> pd.DataFrame:
    return pd.DataFrame(metrics_rows(result), columns=ROW_KEYS)


def _metrics(row: dict[str, Any]) -> dict[str, Any]:
    return {column: row[column] for column in METRIC_COLUMNS}
