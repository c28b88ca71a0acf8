"""Fairness measures over one variant's requests.

- Service share: each tenant's share of admitted service tokens, next to its weight share.
- Jain's index over admitted work (`jain_index_admitted`), over weight-normalised service
  (admitted service tokens / weight): 1 when every tenant got service in proportion to its
  weight, 1/n when one tenant got everything. It counts admitted work only, so a tenant whose
  requests were mostly shed can still look fairly treated.
- Jain's index against demand (`jain_index_demand`), over each tenant's admitted share of what
  it asked for (admitted / submitted service tokens), each tenant counted in proportion to its
  weight: 1 when every tenant got the same share of its demand (all of it, say).
  Both are None when nothing was admitted: no service is no answer, not perfect fairness.
- Backlogged service gap: the largest difference in weight-normalised service received by two
  tenants over any interval during which both stayed backlogged. This is the quantity the
  Virtual Token Counter paper bounds (Sheng et al., OSDI 2024). A tenant is backlogged from a
  request's arrival until it leaves the queue (dispatch, or a shed at the dispatch gate), and
  service counts at dispatch. Within a period where both tenants are backlogged the gap over
  any sub-interval is max(D) - min(D) of the running difference D, so one pass per period does.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simsched.results.frames import TenantRows, admitted


def jain_index(values: np.ndarray, weights: np.ndarray | None = None) -> float:
    """`(Σ wᵢxᵢ)² / (Σ wᵢ · Σ wᵢxᵢ²)`, each value counted `wᵢ` times (1 without weights).

    NaN when there is nothing to compare (no values, or all zero: nothing served is no answer,
    not perfect fairness)."""
    values = np.asarray(values, dtype=np.float64)
    if not len(values) or not np.any(values):
        return np.nan
    w = np.ones_like(values) if weights is None else np.asarray(weights, dtype=np.float64)
    scaled = values / values.max()  # squares of huge values would overflow
    return float(np.dot(w, scaled) ** 2 / (w.sum() * np.dot(w, np.square(scaled))))


def fairness_summary(frame: pd.DataFrame, weights: dict[str, float]) -> dict[str, float | None]:
    """Two Jain indices, named for what they count, and the backlogged service gap."""
    tenant_rows = TenantRows(frame)
    service = frame["service_tokens"].to_numpy()
    ok = admitted(frame)
    # Per-tenant sums on arrays, not a pandas groupby per call (the fixed cost of a small run):
    # service tokens are integers, so the sums are exact in any order.
    asked, normalised, met = [], [], []
    for tenant in tenant_rows.names:  # first appearance, as `frame["tenant_id"].unique()`
        mine = tenant_rows.of(tenant)
        demand = service[mine].sum()
        if demand > 0:
            served = service[mine & ok].sum()
            asked.append(tenant)
            normalised.append(served / weights[tenant])
            met.append(served / demand)
    tenant_weights = np.array([weights[t] for t in asked], dtype=np.float64)
    return {
        "jain_index_admitted": _rounded(jain_index(np.array(normalised, dtype=np.float64))),
        "jain_index_demand": _rounded(jain_index(np.array(met, dtype=np.float64), tenant_weights)),
        "max_backlogged_service_gap": round(max_backlogged_gap(frame, weights), 2),
    }


def _rounded(value: float) -> float | None:
    # None, not NaN: summary.json must stay valid JSON (null)
    return None if np.isnan(value) else round(value, 4)


@dataclass(frozen=True)
class QueuedArrays:
    """The requests that entered a queue, as arrays (one frame filter, not one per tenant)."""

    tenant: np.ndarray  # each request's tenant code in `tenants`
    tenants: TenantRows
    arrival_ms: np.ndarray  # float64
    left_ms: np.ndarray  # when it left the queue: dispatch, or a shed at the dispatch gate
    service_tokens: np.ndarray
    served: np.ndarray  # admitted

    @classmethod
    def of(cls, frame: pd.DataFrame) -> QueuedArrays:
        arrival = frame["arrival_ms"].to_numpy(dtype=np.float64)
        wait = frame["queue_wait_ms"].to_numpy(dtype=np.float64)
        dispatch = frame["dispatch_ms"].to_numpy(dtype=np.float64)
        left = np.where(np.isnan(dispatch), arrival + wait, dispatch)
        ok = admitted(frame)
        entered = ok | (wait > 0)
        tenants = TenantRows(frame)
        return cls(
            tenant=tenants.codes[entered],
            tenants=tenants,
            arrival_ms=arrival[entered],
            left_ms=left[entered],
            service_tokens=frame["service_tokens"].to_numpy()[entered],
            served=ok[entered],
        )


def max_backlogged_gap(frame: pd.DataFrame, weights: dict[str, float]) -> float:
    queued = QueuedArrays.of(frame)
    masks = {t: queued.tenant == queued.tenants.code(t) for t in weights}
    tenants = [t for t in weights if masks[t].any()]
    spans = {
        t: merged_spans(queued.arrival_ms[masks[t]], queued.left_ms[masks[t]]) for t in tenants
    }
    events = {t: _service_events(queued, masks[t], weights[t]) for t in tenants}
    gaps = [
        _pair_gap(spans[a], spans[b], events[a], events[b])
        for a, b in itertools.combinations(tenants, 2)
    ]
    return max(gaps, default=0.0)


def queued_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Requests that entered a queue: admitted ones, and those shed at the dispatch gate."""
    left = frame["dispatch_ms"].fillna(frame["arrival_ms"] + frame["queue_wait_ms"])
    entered = admitted(frame) | (frame["queue_wait_ms"] > 0)
    rows = frame.loc[entered, ["tenant_id", "arrival_ms", "service_tokens", "status_code"]]
    return rows.assign(left_ms=left[entered])


def backlog_periods(rows: pd.DataFrame) -> np.ndarray:
    """Disjoint [start, end] intervals during which the tenant had something queued."""
    spans = rows[["arrival_ms", "left_ms"]].to_numpy(dtype=np.float64)
    return merged_spans(spans[:, 0], spans[:, 1])


def merged_spans(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Disjoint [start, end] intervals covering the intervals [starts[i], ends[i]]."""
    if not len(starts):
        return np.empty((0, 2), dtype=np.float64)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)  # the furthest end so far
    opens = np.flatnonzero(np.r_[True, starts[1:] > reach[:-1]])  # a gap before this start
    return np.column_stack([starts[opens], np.maximum.reduceat(ends, opens)])


def _service_events(queued: QueuedArrays, mine: np.ndarray, weight: float) -> np.ndarray:
    served = mine & queued.served
    events = np.column_stack([queued.left_ms[served], queued.service_tokens[served] / weight])
    return events[np.argsort(events[:, 0], kind="stable")] if len(events) else events


def _pair_gap(spans_a, spans_b, events_a, events_b) -> float:
    periods = _intersect(spans_a, spans_b)
    events = np.concatenate([events_a, events_b * [1.0, -1.0]])
    if not len(periods) or not len(events):
        return 0.0
    events = events[np.argsort(events[:, 0], kind="stable")]
    times, signed = events[:, 0], events[:, 1]
    period = np.searchsorted(periods[:, 0], times, side="right") - 1
    inside = (period >= 0) & (times <= periods[np.maximum(period, 0), 1])
    if not inside.any():
        return 0.0
    period, signed = period[inside], signed[inside]
    # The running difference starts at 0 at the start of each period. pandas' grouped cumsum
    # (compensated summation, so not np.cumsum's floats); the events are in time order, so each
    # period's are one run and its extremes are one reduceat.
    running = pd.Series(signed).groupby(period).cumsum().to_numpy()
    runs = np.flatnonzero(np.r_[True, period[1:] != period[:-1]])
    highs, lows = np.maximum.reduceat(running, runs), np.minimum.reduceat(running, runs)
    # as Series.clip(lower=0) and clip(upper=0): a -0.0 stays -0.0
    return float((np.where(highs >= 0, highs, 0.0) - np.where(lows <= 0, lows, 0.0)).max())


def _intersect(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersections of two lists of disjoint intervals, by one sweep over all their ends.

    Each list contributes +1 at a start and -1 at an end; where the running count is 2 both
    lists cover the line. Ends sort before starts at the same point, so intervals that only
    touch do not intersect.
    """
    points = np.concatenate([a[:, 0], b[:, 0], a[:, 1], b[:, 1]])
    steps = np.repeat([1, -1], len(a) + len(b))
    order = np.lexsort((steps, points))
    points, depth = points[order], np.cumsum(steps[order])
    both = np.flatnonzero(depth[:-1] == 2)
    spans = np.column_stack([points[both], points[both + 1]])
    return spans[spans[:, 0] < spans[:, 1]].reshape(-1, 2)
