"""What a pool cost and how hard its GPUs worked over the time they were provisioned.

From the replica group's spans (`sim.cluster.replica_group.ProvisionedSpan`: a replica slot paid
for from a start to an end) and each slot's utilisation sums (`ReplicaUsage`), over the window
from the first arrival to the end of the last iteration (the run's end; a slot still up is paid
for until then, one that began with the run from the first arrival):

    replica_ms   = sum over spans of (clip(end) - clip(start))
    gpu_hours    = replica_ms x tp / 3,600,000
    cost_usd     = gpu_hours x price per GPU-hour (config/prices.py; null without a price)
    busy_share   = sum of time inside iterations / replica_ms
    kv_held_share = sum of (KV blocks held x time) / sum over spans of (duration x blocks)
    mean_replicas = replica_ms / window

`replicas_over_time` lists each change of the provisioned (warming, serving or draining),
serving and warming counts, from the window's start; `request_rate_per_s` the arrivals per
second from each change to the next (the last to the window's end), the load each count met.
`ttft_misses_while_warming` counts admitted requests that arrived while some replica was
warming and missed their class's TTFT target: the SLO price of a cold start. Today a cluster
is one pool, named `cluster`; `cluster.pools` reports each pool by its name
(results/pool_provisioned.py); the `total` row sums the pools (docs/autoscaling.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from simsched.config.pools import pools_of
from simsched.config.presets import weight_bytes
from simsched.config.prices import gpu_price

MS_PER_HOUR = 3_600_000.0
POOL = "cluster"  # the one pool of today's cluster section
DIGITS = 4


def provisioned_summary(
    scenario: Any, group: Any, usages: Sequence[Any], frame: pd.DataFrame
) -> dict[str, Any]:
    """summary.json's `provisioned` block for one continuous-batching variant (per pool of
    `cluster.pools`: results/pool_provisioned.py)."""
    cluster = scenario.cluster
    if hasattr(cluster, "pools"):
        from simsched.results.pool_provisioned import pooled_provisioned_summary  # it uses ours

        return pooled_provisioned_summary(scenario, group, usages, frame)
    start = float(frame["arrival_ms"].min()) if len(frame) else 0.0
    end = max([start, *(u.last_end_ms for u in usages)])
    pool = group_block(scenario.slo, cluster, group, usages, frame, (start, end))
    return {
        "window_ms": [round(start, 2), round(end, 2)],
        "pools": {POOL: pool},
        "total": {key: pool[key] for key in ("gpu_hours", "cost_usd", "busy_share")},
    }


def group_block(
    slo: Any,
    spec: Any,
    group: Any,
    usages: Sequence[Any],
    served: pd.DataFrame,
    window: tuple[float, float],
) -> dict[str, Any]:
    """One replica group's figures over `window` (start, end): its usage, price and cost,
    warm-up, replica counts at each change, and the load and warm-up misses of `served`, the
    requests of the tenants the group may serve."""
    start, end = window
    pool = pool_usage(group.spans(), usages, start, end, spec.tp)
    price, source = gpu_price(spec)
    pool["price_per_gpu_hour"] = price
    pool["price_source"] = source
    pool["cost_usd"] = None if price is None else round(pool["gpu_hours"] * price, DIGITS)
    pool["warmup_s"] = _warmup_s(spec)
    pool["replicas_over_time"] = _steps(group, start, end)
    pool["request_rate_per_s"] = _rates(served, pool["replicas_over_time"], end)
    warming = _warming_windows(group.events())
    pool["ttft_misses_while_warming"] = _misses_while(served, slo, warming)
    return pool


def pool_usage(
    spans: Sequence[Any], usages: Sequence[Any], start: float, end: float, tp: int
) -> dict[str, Any]:
    """GPU-hours, busy share, KV held and replica counts of one pool's spans in [start, end]."""
    replica_ms = block_ms = 0.0
    for span in spans:
        held = _clipped(span, start, end)
        replica_ms += held
        block_ms += held * usages[span.replica].kv_blocks
    busy = sum(u.busy_ms for u in usages)
    window = end - start
    return {
        "gpus_per_replica": tp,
        "gpu_hours": round(replica_ms * tp / MS_PER_HOUR, 6),
        "busy_share": _ratio(busy, replica_ms),
        "kv_held_share": _ratio(sum(u.kv_block_ms for u in usages), block_ms),
        "mean_replicas": _ratio(replica_ms, window),
    }


def provisioned_ms(spans: Sequence[Any], start: float, end: float) -> float:
    """Sum over spans of the time inside [start, end] (a span with no start: from `start`; with
    no end: still up at `end`)."""
    return sum((_clipped(span, start, end) for span in spans), 0.0)


def _clipped(span: Any, start: float, end: float) -> float:
    lo = start if span.start_ms is None else max(start, span.start_ms)
    hi = end if span.end_ms is None else min(end, span.end_ms)
    return max(0.0, hi - lo)


def _steps(group: Any, start: float, end: float) -> list[list[float]]:
    """[time_ms, provisioned, serving, warming] at the window's start and at each change."""
    initial = sum(1 for span in group.spans() if span.start_ms is None)
    steps = [[round(start, 2), initial, initial, 0]]
    for event in group.events():
        if event.time_ms <= end:
            row = [round(event.time_ms, 2), event.provisioned, event.serving, event.warming]
            steps.append(row)
    return steps


def _rates(frame: pd.DataFrame, steps: list[list[float]], end: float) -> list[float | None]:
    """Arrivals per second between each step of the replica counts and the next (the last up
    to the window's end): the load each count met. None for an interval of no length."""
    arrival = np.sort(frame["arrival_ms"].to_numpy(dtype=float))
    edges = [row[0] for row in steps] + [end]
    rates: list[float | None] = []
    for i, (lo, hi) in enumerate(zip(edges, edges[1:], strict=False)):
        last = i == len(steps) - 1  # the last interval holds the arrivals at its end too
        right = np.searchsorted(arrival, hi, side="right" if last else "left")
        count = right - np.searchsorted(arrival, lo, side="left")
        rates.append(round(float(count) / ((hi - lo) / 1000), 3) if hi > lo else None)
    return rates


def _warming_windows(events: Sequence[Any]) -> list[tuple[float, float]]:
    """The intervals during which some replica was warming (the last may run past the end)."""
    windows, opened = [], None
    for event in events:
        if event.warming and opened is None:
            opened = event.time_ms
        elif not event.warming and opened is not None:
            windows.append((opened, event.time_ms))
            opened = None
    if opened is not None:
        windows.append((opened, float("inf")))
    return windows


def _misses_while(frame: pd.DataFrame, slo: Any, windows: list[tuple[float, float]]) -> int:
    if not windows or not len(frame):
        return 0
    arrival = frame["arrival_ms"].to_numpy()
    inside = np.zeros(len(frame), dtype=bool)
    for lo, hi in windows:
        inside |= (arrival >= lo) & (arrival < hi)
    interactive = frame["priority_class"].to_numpy() == "interactive"
    target = np.where(interactive, slo.interactive_ttft_ms, slo.batch_ttft_ms)
    ttft = frame["ttft_ms"].to_numpy(dtype=float)
    return int(np.sum(inside & (ttft > target)))


def _warmup_s(cluster: Any) -> float | None:
    autoscale = cluster.autoscale
    return None if autoscale is None else round(autoscale.warmup_s(weight_bytes(cluster.model)), 3)


def _ratio(part: float, whole: float) -> float:
    return round(part / whole, DIGITS) if whole else 0.0


def autoscaled(scenario: Any) -> bool:
    """Whether the variant's cluster, or one of its pools, has an autoscaler (then every variant
    reports this block)."""
    pools = pools_of(scenario.cluster)
    return any(getattr(pool, "autoscale", None) is not None for pool in pools)
