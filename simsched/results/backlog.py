"""Whether the gateway ever held a backlog: requests of two tenants queued at once.

A scheduling policy decides only when requests of more than one tenant wait at the gateway at
the same time; otherwise every policy dispatches the same request next, and variants that differ
only in the policy give identical results. A request waits from its arrival to its dispatch (or
to its shedding at dispatch, `arrival_ms + queue_wait_ms`); one with no wait never queued. Two
waits overlap when one starts before the other ends. Requests that arrive at the same instant
and leave at once are not a backlog: they wait for nothing.
"""

from __future__ import annotations

import heapq

import numpy as np
import pandas as pd


def had_backlog(frame: pd.DataFrame) -> bool:
    """Whether requests of two tenants ever waited at the gateway at the same time."""
    waited = frame[frame["queue_wait_ms"].to_numpy() > 0]
    if waited.empty:
        return False
    starts = waited["arrival_ms"].to_numpy(dtype=np.float64)
    ends = starts + waited["queue_wait_ms"].to_numpy(dtype=np.float64)
    tenants = waited["tenant_id"].to_numpy()
    return _overlap_across(starts, ends, tenants)


def _overlap_across(starts: np.ndarray, ends: np.ndarray, tenants: np.ndarray) -> bool:
    """A sweep over the waits by start: the ones still open, counted per tenant."""
    open_waits: list[tuple[float, int]] = []  # (end, index), the earliest end first
    per_tenant: dict[object, int] = {}
    for i in np.argsort(starts, kind="stable"):
        while open_waits and open_waits[0][0] <= starts[i]:
            _, done = heapq.heappop(open_waits)
            per_tenant[tenants[done]] -= 1
        if any(n > 0 for t, n in per_tenant.items() if t != tenants[i]):
            return True
        heapq.heappush(open_waits, (ends[i], int(i)))
        per_tenant[tenants[i]] = per_tenant.get(tenants[i], 0) + 1
    return False
