"""summary.json's `provisioned` block for a run on `cluster.pools` where some pool autoscales.

Per pool, the figures `results.provisioned` gives a single pool, over the same window (the first
arrival to the end of the last iteration on any replica of any pool), each from that pool's own
spans and replica slots: GPU-hours (the integral of its provisioned replica count x tp), cost at
its GPU's price, busy share, KV held share, mean replicas, the replica counts at each change
(`replicas_over_time`), the request rate each count met (arrivals of the tenants that may use
the pool, `config/pool_eligibility.py`: in P/D a request counts in its prefill and its decode
pools), its warm-up (null for a fixed pool) and the TTFT misses of those tenants' requests that
arrived while one of its replicas warmed. `total` sums GPU-hours and cost (null
when a pool has no price) and weighs busy share by provisioned replica time:

    total.busy_share = sum of busy time over every pool / sum of provisioned replica time
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from simsched.config.pool_eligibility import tenants_of_pool
from simsched.config.prices import gpu_price
from simsched.results.pool_costs import provisioned_ms
from simsched.results.provisioned import (
    DIGITS,
    _misses_while,
    _rates,
    _steps,
    _warming_windows,
    _warmup_s,
    pool_usage,
)
from simsched.sim.cluster.replica_group import replica_slots


def pooled_provisioned_summary(
    scenario: Any, groups: Any, usages: Sequence[Any], frame: pd.DataFrame
) -> dict[str, Any]:
    start = float(frame["arrival_ms"].min()) if len(frame) else 0.0
    end = max([start, *(u.last_end_ms for u in usages)])
    pools: dict[str, Any] = {}
    replica_ms = busy_ms = gpu_hours = dollars = 0.0
    priced, first = True, 0
    for spec, group in zip(scenario.cluster.pools, groups.groups, strict=True):
        slots = replica_slots(spec)
        mine = usages[first : first + slots]
        first += slots
        pool = _pool_block(scenario, spec, group, mine, frame, start, end)
        pools[spec.name] = pool
        replica_ms += provisioned_ms(group.spans(), start, end)
        busy_ms += sum(u.busy_ms for u in mine)
        gpu_hours += pool["gpu_hours"]  # the total is the sum of the figures shown
        priced = priced and pool["cost_usd"] is not None
        dollars += pool["cost_usd"] or 0.0
    total = {
        "gpu_hours": round(gpu_hours, 6),
        "cost_usd": round(dollars, DIGITS) if priced else None,
        "busy_share": round(busy_ms / replica_ms, DIGITS) if replica_ms else 0.0,
    }
    return {"window_ms": [round(start, 2), round(end, 2)], "pools": pools, "total": total}


def _pool_block(
    scenario: Any,
    spec: Any,
    group: Any,
    usages: Sequence[Any],
    frame: pd.DataFrame,
    start: float,
    end: float,
) -> dict[str, Any]:
    pool = pool_usage(group.spans(), usages, start, end, spec.tp)
    price, source = gpu_price(spec)
    pool["price_per_gpu_hour"] = price
    pool["price_source"] = source
    pool["cost_usd"] = None if price is None else round(pool["gpu_hours"] * price, DIGITS)
    pool["warmup_s"] = _warmup_s(spec)
    pool["replicas_over_time"] = _steps(group, start, end)
    # the load a pool met is its own tenants' (a pinned flood elsewhere is not this pool's)
    tenants = tenants_of_pool(scenario.tenants, scenario.cluster.pools, spec.name)
    mine = frame[frame["tenant_id"].isin(tenants)]
    pool["request_rate_per_s"] = _rates(mine, pool["replicas_over_time"], end)
    warming = _warming_windows(group.events())
    pool["ttft_misses_while_warming"] = _misses_while(mine, scenario.slo, warming)
    return pool
