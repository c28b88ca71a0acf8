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

from simsched.config.autoscale import replica_slots
from simsched.config.pool_eligibility import tenants_of_pool
from simsched.results.pool_costs import fleet_totals
from simsched.results.provisioned import group_block, provisioned_ms


def pooled_provisioned_summary(
    scenario: Any, groups: Any, usages: Sequence[Any], frame: pd.DataFrame
) -> dict[str, Any]:
    start = float(frame["arrival_ms"].min()) if len(frame) else 0.0
    end = max([start, *(u.last_end_ms for u in usages)])
    pools: dict[str, Any] = {}
    shown = []
    first = 0
    for spec, group in zip(scenario.cluster.pools, groups.groups, strict=True):
        slots = replica_slots(spec)
        mine = usages[first : first + slots]
        first += slots
        pool = _pool_block(scenario, spec, group, mine, frame, start, end)
        pools[spec.name] = pool
        shown.append((pool, provisioned_ms(group.spans(), start, end), mine))
    total = fleet_totals(shown)  # the total is the sum of the figures shown
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
    # the load a pool met is its own tenants' (a pinned flood elsewhere is not this pool's)
    tenants = tenants_of_pool(scenario.tenants, scenario.cluster.pools, spec.name)
    mine = frame[frame["tenant_id"].isin(tenants)]
    return group_block(scenario.slo, spec, group, usages, mine, (start, end))
