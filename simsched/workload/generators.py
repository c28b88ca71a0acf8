"""Requests generated from a tenant's `arrivals` and token sizes, as numpy columns."""

from __future__ import annotations

import numpy as np

from simsched.requests import CLASS_INDEX
from simsched.workload.table import RequestTable


def arrival_times(arrivals) -> np.ndarray:
    """Arrival instants in ms for one tenant's arrival process."""
    if arrivals.kind == "periodic":
        return arrivals.start_ms + arrivals.interval_ms * np.arange(
            arrivals.count, dtype=np.float64
        )
    raise ValueError(f"unknown arrival kind {arrivals.kind!r}")


def request_ids(tenant_id: str, count: int) -> np.ndarray:
    # Zero-padded so that string order is numeric order: ties on arrival_ms break by request_id.
    width = max(6, len(str(count - 1)))
    return np.array([f"{tenant_id}-{i:0{width}d}" for i in range(count)], dtype=object)


def generate_tenant(tenant, index: int, rng: np.random.Generator) -> RequestTable:
    times = arrival_times(tenant.arrivals)
    count = len(times)
    return RequestTable(
        request_id=request_ids(tenant.id, count),
        tenant=np.full(count, index, dtype=np.int64),
        lane=np.full(count, CLASS_INDEX[tenant.priority], dtype=np.int64),
        arrival_ms=times,
        prefill_tokens=np.full(count, tenant.prefill_tokens, dtype=np.int64),
        decode_tokens=np.full(count, tenant.decode_tokens, dtype=np.int64),
    )
