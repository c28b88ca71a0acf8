"""Requests generated from a tenant's `arrivals` and token-length specs, as numpy columns."""

from __future__ import annotations

import numpy as np

from simsched.sim.requests import CLASS_INDEX
from simsched.workload.arrivals import arrival_times
from simsched.workload.lengths import draw_token_lengths
from simsched.workload.table import RequestTable


def request_ids(tenant_id: str, count: int) -> np.ndarray:
    # Zero-padded so that string order is numeric order: ties on arrival_ms break by request_id.
    width = max(6, len(str(count - 1)))
    label = f"{tenant_id.replace('%', '%%')}-%0{width}d".__mod__  # printf: the fastest str maker
    return np.array(list(map(label, range(count))), dtype=object)


def generate_tenant(tenant, index: int, rng: np.random.Generator) -> RequestTable:
    """The tenant's requests. Arrivals and lengths draw from separate child streams of `rng`,
    so a change to the length distributions never moves an arrival (and vice versa)."""
    arrival_rng, length_rng = rng.spawn(2)
    times = arrival_times(tenant.arrivals, arrival_rng)
    count = len(times)
    prefill, decode = draw_token_lengths(
        tenant.prefill_tokens, tenant.decode_tokens, count, length_rng
    )
    return RequestTable(
        request_id=request_ids(tenant.id, count),
        tenant=np.full(count, index, dtype=np.int64),
        lane=np.full(count, CLASS_INDEX[tenant.priority], dtype=np.int64),
        arrival_ms=times,
        prefill_tokens=prefill,
        decode_tokens=decode,
    )
