"""Prefix-cache figures for the outputs: hit rates per tenant and per replica.

The hit rate is cached prompt tokens over prompt tokens, over admitted requests (a shed request
never reaches a cache). `cached_tokens` is what the request's prompt found in its replica's
cache when it first started, so `cached_tokens + prompt tokens computed on the first start =
prefill_tokens` for every request. A preempted request that starts again finds blocks again
(mostly its own, computed before the preemption): those are `preempted_cached_tokens`, summed
over its restarts, and never count as hits (as vLLM's PrefixCacheStats keeps preempted
requests' hits apart).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from simsched.sim.recorder import STATUS_OK


def caching_on(scenario) -> bool:
    return bool(getattr(scenario.cluster, "prefix_caching", False))


def hit_rate(rows: pd.DataFrame) -> float:
    ok = rows["status_code"].to_numpy() == STATUS_OK
    prompt = int(rows["prefill_tokens"].to_numpy()[ok].sum())
    cached = int(rows["cached_tokens"].to_numpy()[ok].sum())
    return round(cached / prompt, 4) if prompt else 0.0


def add_tenant_hit_rates(frame: pd.DataFrame, rows: list[dict[str, Any]]) -> None:
    """`prefix_hit_rate` on each tenants.csv row (the `all` row over every tenant)."""
    tenant_ids = frame["tenant_id"].to_numpy()
    for row in rows:
        mine = frame if row["tenant_id"] == "all" else frame[tenant_ids == row["tenant_id"]]
        row["prefix_hit_rate"] = hit_rate(mine)


def replica_summary(frame: pd.DataFrame, replicas: int) -> dict[str, Any]:
    """Cached share of prompt tokens, overall and per replica (summary.json's `prefix_cache`)."""
    placed = frame["replica"].to_numpy()
    per_replica = {str(r): hit_rate(frame[placed == r]) for r in range(replicas)}
    ok = frame["status_code"].to_numpy() == STATUS_OK
    return {
        "hit_rate": hit_rate(frame),
        "cached_prompt_tokens": int(frame["cached_tokens"].to_numpy()[ok].sum()),
        # not hits: what preempted requests found again when they restarted
        "preempted_cached_tokens": int(frame["preempted_cached_tokens"].to_numpy()[ok].sum()),
        "prompt_tokens": int(frame["prefill_tokens"].to_numpy()[ok].sum()),
        "replica_hit_rate": per_replica,
        "replica_requests": {str(r): int(np.sum(placed == r)) for r in range(replicas)},
    }
