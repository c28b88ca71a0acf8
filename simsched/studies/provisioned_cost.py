"""What an autoscaled fleet costs per hour, for `plan --minimize cost`.

A fixed pool costs replicas x tp x price every hour. An autoscaled one costs what it
provisioned: one run of the variant at the plan's answer, with the scenario's seed, gives its
GPU-hours over the run's window (`results.provisioned`), and

    cost per hour = GPU-hours / window hours x price = mean provisioned GPUs x price.

The per-hour figure compares combinations on the same footing as a fixed pool's, over the
scenario's own day. On `cluster.pools`, where each pool has its own GPU and price, it is the
run's total cost (each pool's GPU-hours, fixed or autoscaled, at its own price) over the window:

    cost per hour = sum over pools of GPU-hours x price / window hours
"""

from __future__ import annotations

from typing import Any

from simsched.config.prices import gpu_price
from simsched.results.provisioned import MS_PER_HOUR, autoscaled
from simsched.results.simulate import simulate


def provisioned_cost_per_hour(scenario: Any, variant: str, resolved: Any) -> float | None:
    """$ per hour of the variant's provisioned GPUs at one run; None without a price. Only for
    a resolved variant that autoscales (`autoscaled(resolved)`)."""
    if hasattr(resolved.cluster, "pools"):
        return _pooled_cost_per_hour(scenario, variant)
    price, _ = gpu_price(resolved.cluster)
    if price is None:
        return None
    block = simulate(scenario, [variant]).provisioned[variant]
    start, end = block["window_ms"]
    hours = (end - start) / MS_PER_HOUR
    gpu_hours = block["total"]["gpu_hours"]
    return round(gpu_hours / hours * price, 4) if hours > 0 else 0.0


def _pooled_cost_per_hour(scenario: Any, variant: str) -> float | None:
    """The pools' total cost of one run over its window in hours; None if a pool has no price."""
    block = simulate(scenario, [variant]).provisioned[variant]
    dollars = block["total"]["cost_usd"]
    if dollars is None:
        return None
    start, end = block["window_ms"]
    hours = (end - start) / MS_PER_HOUR
    return round(dollars / hours, 4) if hours > 0 else 0.0


__all__ = ["autoscaled", "provisioned_cost_per_hour"]
