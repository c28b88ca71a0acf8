"""Whether the gateway ever held a backlog: requests of two tenants queued at once.

A scheduling policy decides only when requests of more than one tenant wait at the gateway at
the same time; otherwise every policy dispatches the same request next, and variants that differ
only in the policy give identical results. A request waits from its arrival to its dispatch (or
to its shedding at dispatch, `arrival_ms + queue_wait_ms`); one with no wait never queued. Two
waits overlap when one starts before the other ends. Requests that arrive at the same instant
and leave at once are not a backlog: they wait for nothing.

The wait's end is `dispatch_ms` where the request was dispatched: it is the exact instant, while
`queue_wait_ms` is rounded to 0.01 ms (as the reference records it), so `arrival_ms +
queue_wait_ms` can land up to 0.005 ms either side of the dispatch. At a tie (one request leaves
the queue at the instant another arrives) that error alone would decide: a wait read as ending
0.001 ms late overlaps the next arrival, one that ended 0.004 ms after it reads as zero and is
dropped. Only a request with no dispatch (shed while queued) falls back to the rounded wait.
"""

from __future__ import annotations

import heapq

import numpy as np
import pandas as pd


def had_backlog(frame: pd.DataFrame) -> bool:
    """Whether requests of two tenants ever waited at the gateway at the same time."""
    starts = frame["arrival_ms"].to_numpy(dtype=np.float64)
    ends = wait_ends(frame)
    waited = ends > starts
    if not waited.any():
        return False
    tenants = frame["tenant_id"].to_numpy()
    return _overlap_across(starts[waited], ends[waited], tenants[waited])


def wait_ends(frame: pd.DataFrame) -> np.ndarray:
    """When each request left the gateway's queue: its dispatch, exact; without one (shed while
    queued, or a frame with no dispatch column), its arrival plus its rounded wait."""
    rounded = frame["arrival_ms"].to_numpy(dtype=np.float64) + frame["queue_wait_ms"].to_numpy(
        dtype=np.float64
    )
    if "dispatch_ms" not in frame:
        return rounded
    dispatched = frame["dispatch_ms"].to_numpy(dtype=np.float64)
    return np.where(np.isnan(dispatched), rounded, dispatched)


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
