"""What an autoscaled fleet costs per hour, for `plan --minimize cost`.

A fixed pool costs replicas x tp x price every hour. An autoscaled one costs what it
provisioned: one run of the variant at the plan's answer, with the scenario's seed, gives its
GPU-hours over the run's window (`results.provisioned`), and

    cost per hour = GPU-hours / window hours x price = mean provisioned GPUs x price.

The per-hour figure compares combinations on the same footing as a fixed pool's, over the
scenario's own day. On `cluster.pools`, where each pool has its own GPU and price, it sums the
pools, each pool's mean provisioned replicas (fixed or autoscaled; its GPU-hours over the window's
hours, per GPU of a replica) at its own price:

    cost per hour = sum over pools of mean_replicas x tp x price
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
        return _pooled_cost_per_hour(scenario, variant, resolved.cluster.pools)
    price, _ = gpu_price(resolved.cluster)
    if price is None:
        return None
    block = simulate(scenario, [variant]).provisioned[variant]
    start, end = block["window_ms"]
    hours = (end - start) / MS_PER_HOUR
    gpu_hours = block["total"]["gpu_hours"]
    return round(gpu_hours / hours * price, 4) if hours > 0 else 0.0


def _pooled_cost_per_hour(scenario: Any, variant: str, pools: Any) -> float | None:
    """The pools' provisioned GPUs at their prices, per hour; None if a pool has no price."""
    figures = simulate(scenario, [variant]).provisioned[variant]["pools"]
    dollars = 0.0
    for spec in pools:
        price, _ = gpu_price(spec)
        if price is None:
            return None
        # the mean count, not the GPU-hours: those are rounded to 1e-6 h, coarse for a short run
        dollars += figures[spec.name]["mean_replicas"] * spec.tp * price
    return round(dollars, 4)


__all__ = ["autoscaled", "provisioned_cost_per_hour"]
