"""GPU-hours, cost and busy share per pool and for the whole fleet, for a run on `cluster.pools`.

A pool's replicas are provisioned for the whole window, from the first arrival to the end of the
last iteration on any replica (the window `results.provisioned` uses for an autoscaled pool,
whose replicas are paid for only while up; pools have a fixed count today):

    gpu_hours  = replicas x tp x window_ms / 3,600,000
    cost_usd   = gpu_hours x price per GPU-hour (config/prices.py, the pool's own GPU and price;
                 null without a price)
    busy_share = sum over the pool's replicas of time inside iterations / (replicas x window_ms)

`fleet` sums the pools' figures as reported: GPU-hours and cost (null when a pool has no price),
and the busy share
weighted by each pool's provisioned replica time (GPUs per replica set aside: a share of time).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from simsched.config.prices import gpu_price

MS_PER_HOUR = 3_600_000.0
DIGITS = 4


def add_pool_costs(
    usage: dict[str, Any], specs: Sequence[Any], usages: Sequence[Any], frame: pd.DataFrame
) -> dict[str, Any]:
    """The utilisation block's `pools` entries gain their cost figures; `fleet` the totals."""
    start = float(frame["arrival_ms"].min()) if len(frame) else 0.0
    window = max([start, *(u.last_end_ms for u in usages)]) - start
    pools = {name: dict(entry) for name, entry in usage["pools"].items()}
    replica_ms = busy_ms = gpu_hours = dollars = 0.0
    priced, first = True, 0
    for spec in specs:
        mine = usages[first : first + spec.replicas]
        first += spec.replicas
        figures = pool_cost(spec, mine, window)
        pools[spec.name] |= figures
        replica_ms += spec.replicas * window
        busy_ms += sum(u.busy_ms for u in mine)
        gpu_hours += figures["gpu_hours"]  # the totals are the sums of the figures shown
        priced = priced and figures["cost_usd"] is not None
        dollars += figures["cost_usd"] or 0.0
    fleet = {
        "window_ms": round(window, 2),
        "gpu_hours": round(gpu_hours, 6),
        "cost_usd": round(dollars, DIGITS) if priced else None,
        "busy_share": round(busy_ms / replica_ms, DIGITS) if replica_ms else 0.0,
    }
    return {**usage, "pools": pools, "fleet": fleet}


def pool_cost(spec: Any, usages: Sequence[Any], window: float) -> dict[str, Any]:
    """One pool's GPUs, GPU-hours, price, cost and busy share over `window` ms."""
    gpu_hours = spec.replicas * spec.tp * window / MS_PER_HOUR
    price, source = gpu_price(spec)
    replica_ms = spec.replicas * window
    busy = sum(u.busy_ms for u in usages)
    return {
        "gpus": spec.replicas * spec.tp,
        "gpu_hours": round(gpu_hours, 6),
        "price_per_gpu_hour": price,
        "price_source": source,
        "cost_usd": None if price is None else round(gpu_hours * price, DIGITS),
        "busy_share": round(busy / replica_ms, DIGITS) if replica_ms else 0.0,
    }
