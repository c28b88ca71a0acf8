"""The terminal table's provisioned-fleet rows, where some variant autoscales.

GPU-hours, cost, busy share and KV held over the time replicas were provisioned (from the first
arrival to the end of the last iteration; `results.provisioned` defines them), the replica
counts, and the requests that missed their TTFT target while a replica warmed up.
"""

from __future__ import annotations

from typing import Any

from simsched.results.frames import SimulationResult


def provisioned_rows(result: SimulationResult) -> list[tuple[str, list[str]]]:
    pools = [_pool(result.provisioned.get(v)) for v in result.variants]
    if not any(pools):
        return []
    return [
        ("provisioned (first arrival to last iteration)", [""] * len(pools)),
        ("  GPU-hours", [_cell(p, lambda p: f"{p['gpu_hours']:.4f}") for p in pools]),
        ("  cost $ at list or given price", [_cell(p, _cost) for p in pools]),
        (
            "  busy share of provisioned time",
            [_cell(p, lambda p: f"{p['busy_share']:.2f}") for p in pools],
        ),
        (
            "  KV held share of provisioned blocks",
            [_cell(p, lambda p: f"{p['kv_held_share']:.3f}") for p in pools],
        ),
        ("  replicas: mean (min..max)", [_cell(p, _replicas) for p in pools]),
        ("  TTFT misses while a replica warmed", [_cell(p, _misses) for p in pools]),
    ]


def autoscaled_variants(result: SimulationResult) -> set[str]:
    """Variants whose replica count changed over the run (their per-slot figures are partial)."""
    return {
        variant
        for variant in result.variants
        if (pool := _pool(result.provisioned.get(variant))) and pool["warmup_s"] is not None
    }


def _pool(block: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if block is None else block["pools"]["cluster"]


def _cell(pool: dict[str, Any] | None, show) -> str:
    return "-" if pool is None else show(pool)


def _cost(pool: dict[str, Any]) -> str:
    return "no price" if pool["cost_usd"] is None else f"{pool['cost_usd']:.2f}"


def _replicas(pool: dict[str, Any]) -> str:
    counts = [step[1] for step in pool["replicas_over_time"]]
    return f"{pool['mean_replicas']:.2f} ({min(counts)}..{max(counts)})"


def _misses(pool: dict[str, Any]) -> str:
    return "-" if pool["warmup_s"] is None else str(pool["ttft_misses_while_warming"])
