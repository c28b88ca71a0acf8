"""The terminal table's provisioned-fleet rows, where some variant autoscales.

GPU-hours, cost, busy share and KV held over the time replicas were provisioned (from the first
arrival to the end of the last iteration; `results.provisioned` defines them), the replica
counts, and the requests that missed their TTFT target while a replica warmed up.
"""

from __future__ import annotations

from typing import Any

from simsched.results.frames import SimulationResult
from simsched.results.provisioned import POOL  # a single pool's name in the block


def provisioned_rows(result: SimulationResult) -> list[tuple[str, list[str]]]:
    """The rows of each pool: `cluster` for a single pool (rows named as they always were),
    each pool of `cluster.pools` by its name (`pool NAME:` before each of its rows)."""
    blocks = [result.provisioned.get(v) for v in result.variants]
    names = list(dict.fromkeys(n for b in blocks if b is not None for n in b["pools"]))
    if not names:
        return []
    rows = [("provisioned (first arrival to last iteration)", [""] * len(blocks))]
    for name in names:
        pools = [None if b is None else b["pools"].get(name) for b in blocks]
        rows += _pool_rows(pools, "" if name == POOL else f"pool {name}: ")
    return rows


def _pool_rows(pools: list[dict[str, Any] | None], prefix: str) -> list[tuple[str, list[str]]]:
    return [
        (f"  {prefix}GPU-hours", [_cell(p, lambda p: f"{p['gpu_hours']:.4f}") for p in pools]),
        (f"  {prefix}cost $ at list or given price", [_cell(p, _cost) for p in pools]),
        (
            f"  {prefix}busy share of provisioned time",
            [_cell(p, lambda p: f"{p['busy_share']:.2f}") for p in pools],
        ),
        (
            f"  {prefix}KV held share of provisioned blocks",
            [_cell(p, lambda p: f"{p['kv_held_share']:.3f}") for p in pools],
        ),
        (f"  {prefix}replicas: mean (min..max)", [_cell(p, _replicas) for p in pools]),
        (f"  {prefix}TTFT misses while a replica warmed", [_cell(p, _misses) for p in pools]),
    ]


def autoscaled_variants(result: SimulationResult) -> set[str]:
    """Variants whose replica count changed over the run (their per-slot figures are partial):
    the single pool, or some pool of `cluster.pools`, had a warm-up."""
    return {
        variant
        for variant in result.variants
        if any_autoscaled_pool(result.provisioned.get(variant))
    }


def any_autoscaled_pool(block: dict[str, Any] | None) -> bool:
    """Whether a `provisioned` block has a pool with a warm-up (one an autoscaler resized)."""
    pools = block.get("pools", {}) if isinstance(block, dict) else {}
    return any(isinstance(p, dict) and p.get("warmup_s") is not None for p in pools.values())


def _cell(pool: dict[str, Any] | None, show) -> str:
    return "-" if pool is None else show(pool)


def _cost(pool: dict[str, Any]) -> str:
    return "no price" if pool["cost_usd"] is None else f"{pool['cost_usd']:.2f}"


def _replicas(pool: dict[str, Any]) -> str:
    counts = [step[1] for step in pool["replicas_over_time"]]
    return f"{pool['mean_replicas']:.2f} ({min(counts)}..{max(counts)})"


def _misses(pool: dict[str, Any]) -> str:
    return "-" if pool["warmup_s"] is None else str(pool["ttft_misses_while_warming"])
