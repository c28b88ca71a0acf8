"""GPU-hours, cost and busy share per pool and for the whole fleet, for a run on `cluster.pools`.

A fixed pool's replicas are provisioned for the whole window, from the first arrival to the end
of the last iteration on any replica; an autoscaled pool's slots only while up (warming, serving
or draining), the integral of its replica count over the same window (`results.provisioned`):

    replica_ms = replicas x window_ms                      (a fixed pool)
               = sum over the pool's spans of clip(end) - clip(start)   (an autoscaled one)
    gpu_hours  = replica_ms x tp / 3,600,000  (a fixed pool: replicas x tp x window_ms / 3.6e6)
    cost_usd   = gpu_hours x price per GPU-hour (config/prices.py, the pool's own GPU and price;
                 null without a price)
    busy_share = sum over the pool's replicas of time inside iterations / replica_ms

`gpus` is the pool's GPUs at the start of the run (an autoscaled pool's `replicas` x tp).

`fleet` sums the pools' figures as reported: GPU-hours and cost (null when a pool has no price),
and the busy share
weighted by each pool's provisioned replica time (GPUs per replica set aside: a share of time).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from simsched.config.autoscale import replica_slots
from simsched.config.prices import gpu_price
from simsched.results.provisioned import provisioned_ms

MS_PER_HOUR = 3_600_000.0
DIGITS = 4


def add_pool_costs(
    usage: dict[str, Any],
    specs: Sequence[Any],
    usages: Sequence[Any],
    frame: pd.DataFrame,
    groups: Sequence[Any],
) -> dict[str, Any]:
    """The utilisation block's `pools` entries gain their cost figures; `fleet` the totals.
    `groups`: each pool's replica group (replica_group.py), for the spans an autoscaled pool
    was provisioned; a fixed group: the whole window."""
    start = float(frame["arrival_ms"].min()) if len(frame) else 0.0
    end = max([start, *(u.last_end_ms for u in usages)])
    window = end - start
    pools = {name: dict(entry) for name, entry in usage["pools"].items()}
    shown: list[tuple[dict[str, Any], float, Sequence[Any]]] = []
    first = 0
    for index, spec in enumerate(specs):
        slots = replica_slots(spec)
        mine = usages[first : first + slots]
        first += slots
        group = groups[index]
        if group.states() is not None:  # autoscaled: its spans
            up_ms = provisioned_ms(group.spans(), start, end)
            figures = autoscaled_pool_cost(spec, mine, up_ms)
        else:
            up_ms = spec.replicas * window
            figures = pool_cost(spec, mine, window)
        pools[spec.name] |= figures
        shown.append((figures, up_ms, mine))
    fleet = {"window_ms": round(window, 2), **fleet_totals(shown)}
    return {**usage, "pools": pools, "fleet": fleet}


def fleet_totals(pools: Sequence[tuple[dict[str, Any], float, Sequence[Any]]]) -> dict[str, Any]:
    """The fleet's sums from each pool's (figures shown, provisioned replica ms, replica usages),
    in declaration order: GPU-hours and cost as the sums of the figures shown (cost null when a
    pool has no price), busy share weighted by provisioned replica time."""
    replica_ms = busy_ms = gpu_hours = dollars = 0.0
    priced = True
    for figures, up_ms, usages in pools:
        replica_ms += up_ms
        busy_ms += sum(u.busy_ms for u in usages)
        gpu_hours += figures["gpu_hours"]
        priced = priced and figures["cost_usd"] is not None
        dollars += figures["cost_usd"] or 0.0
    return {
        "gpu_hours": round(gpu_hours, 6),
        "cost_usd": round(dollars, DIGITS) if priced else None,
        "busy_share": round(busy_ms / replica_ms, DIGITS) if replica_ms else 0.0,
    }


def autoscaled_pool_cost(spec: Any, usages: Sequence[Any], replica_ms: float) -> dict[str, Any]:
    """One autoscaled pool's figures over the `replica_ms` its slots were up."""
    return _cost_figures(spec, usages, replica_ms, replica_ms * spec.tp / MS_PER_HOUR)


def pool_cost(spec: Any, usages: Sequence[Any], window: float) -> dict[str, Any]:
    """One pool's GPUs, GPU-hours, price, cost and busy share over `window` ms."""
    gpu_hours = spec.replicas * spec.tp * window / MS_PER_HOUR
    return _cost_figures(spec, usages, spec.replicas * window, gpu_hours)


def _cost_figures(
    spec: Any, usages: Sequence[Any], replica_ms: float, gpu_hours: float
) -> dict[str, Any]:
    """A pool's figures from its provisioned replica time and GPU-hours (each caller keeps its
    own order of multiplication, so the rounded figures stay as they were)."""
    price, source = gpu_price(spec)
    busy = sum(u.busy_ms for u in usages)
    return {
        "gpus": spec.replicas * spec.tp,
        "gpu_hours": round(gpu_hours, 6),
        "price_per_gpu_hour": price,
        "price_source": source,
        "cost_usd": None if price is None else round(gpu_hours * price, DIGITS),
        "busy_share": round(busy / replica_ms, DIGITS) if replica_ms else 0.0,
    }
