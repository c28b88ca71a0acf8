"""Utilisation that tells the truth: per replica and for the cluster, over the run.

From each replica's sums (`sim.cluster.utilisation.ReplicaUsage`) and the requests placed on it:

- `busy_share`: time inside iterations over the run's span (from 0 to the end of the last
  iteration on any replica);
- `token_budget_share`: batch tokens over `max_num_batched_tokens`, averaged over iterations
  (how full an iteration is when there is one);
- `mean_running`: running sequences, averaged over the span;
- `kv_held_share`: KV blocks held over the replica's blocks, averaged over the span;
- `requests`: requests placed on the replica (admitted ones; a request placed twice, after a
  preemption, is counted once).

The `total` row sums running sequences and weighs the shares by time, tokens and blocks:
busy share is the replicas' mean, the token-budget share counts every iteration of every
replica, KV held is over all blocks. `request_skew` is the busiest replica's requests over the
mean (1 for an even spread); `SKEW_LIMIT` is where the outputs call the load skewed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

SKEW_LIMIT = 1.5
DIGITS = 4


def utilisation_summary(usages: Sequence[Any], frame: pd.DataFrame) -> dict[str, Any] | None:
    """summary.json's `utilisation` block for one variant; None without replicas."""
    if not usages:
        return None
    span = max(u.last_end_ms for u in usages)
    placed = frame["replica"].to_numpy()
    counts = [int(np.sum(placed == index)) for index in range(len(usages))]
    replicas = {
        str(index): _shares(span, [usage], count)
        for index, (usage, count) in enumerate(zip(usages, counts, strict=True))
    }
    return {
        "span_ms": round(span, 2),
        "replicas": replicas,
        "total": _shares(span, usages, sum(counts)),
        "request_skew": request_skew(counts),
    }


def request_skew(counts: Sequence[int]) -> float | None:
    """The busiest replica's requests over the mean of `counts` (4 decimals); None when nothing
    was placed: the run's, or on `cluster.pools` one pool's (results/pools.py)."""
    mean = sum(counts) / len(counts) if counts else 0
    return round(max(counts) / mean, DIGITS) if mean else None


def _shares(span: float, usages: Sequence[Any], requests: int) -> dict[str, Any]:
    iterations = sum(u.iterations for u in usages)
    budget = sum(u.iterations * u.token_budget for u in usages)
    blocks = sum(u.kv_blocks for u in usages)
    return {
        "requests": requests,
        "busy_share": _ratio(sum(u.busy_ms for u in usages), span * len(usages)),
        "token_budget_share": _ratio(sum(u.batch_tokens for u in usages), budget),
        "mean_running": _ratio(sum(u.running_ms for u in usages), span),
        "kv_held_share": _ratio(sum(u.kv_block_ms for u in usages), span * blocks),
        "iterations": iterations,
    }


def _ratio(part: float, whole: float) -> float:
    return round(part / whole, DIGITS) if whole else 0.0


def skewed(summary: dict[str, Any] | None) -> bool:
    """Whether the busiest replica took more than SKEW_LIMIT times the mean of requests (on
    `cluster.pools`, within one pool: `skewed_pools`)."""
    return bool(skewed_pools(summary))


def skewed_pools(summary: dict[str, Any] | None) -> list[tuple[str | None, float]]:
    """(pool, its busiest entry replica's requests over its mean) where that passes SKEW_LIMIT:
    each pool's router balances its own replicas, while pools of other models, tenants or GPUs
    rightly take other shares. A run without pools (or a summary written before pools had their
    own skew): (None, the run's skew)."""
    if summary is None:
        return []
    # a decode pool is never where a request is placed: it has no skew of its own
    entry = {
        k: pool for k, pool in (summary.get("pools") or {}).items() if pool.get("role") != "decode"
    }
    if entry and all("request_skew" in pool for pool in entry.values()):
        found = [(name, pool["request_skew"]) for name, pool in entry.items()]
    else:
        found = [(None, summary["request_skew"])]
    return [(name, skew) for name, skew in found if skew is not None and skew > SKEW_LIMIT]


def skewed_replicas(pool: str | None) -> str:
    """Where `skewed_pools` found the skew, in words: `replicas`, or `pool chat's replicas`."""
    return "replicas" if pool is None else f"pool {pool}'s replicas"
