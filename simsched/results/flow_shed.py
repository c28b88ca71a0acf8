"""Flow control's shed reasons as tenants.csv columns, only for scenarios with `flow_control`
(so that every other scenario's files keep their columns)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from simsched.sim.flow.controller import FLOW_SHED_REASONS

__all__ = ["FLOW_SHED_REASONS", "REASON_LABELS", "with_flow_shed_columns"]

REASON_LABELS = {
    "shed_queue_capacity": "shed: queue capacity (max_requests/max_bytes)",
    "shed_band_capacity": "shed: band capacity (max_requests/max_bytes)",
    "shed_sheddable_saturated": "shed: sheddable while saturated",
    "shed_queue_ttl": "shed: queue TTL, 429",
    "shed_queue_ttl_no_endpoints": "shed: queue TTL, no endpoints, 503",
}


def with_flow_shed_columns(
    rows: list[dict[str, Any]], frame: pd.DataFrame, scenario
) -> list[dict[str, Any]]:
    """Each row (a tenant's, or `all`) with a count per flow-control shed reason."""
    if scenario.flow_control is None:
        return rows
    tenant_ids, reasons = frame["tenant_id"].to_numpy(), frame["reason"].to_numpy()
    for row in rows:
        mine = reasons if row["tenant_id"] == "all" else reasons[tenant_ids == row["tenant_id"]]
        row |= {reason: int((mine == reason).sum()) for reason in FLOW_SHED_REASONS}
    return rows
