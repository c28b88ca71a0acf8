"""List prices of the GPU presets, for `simsched plan --minimize cost` (no SimPy here).

US dollars per GPU-hour, on demand: the CoreWeave public price list (coreweave.com/pricing,
2025), which prices an 8-GPU HGX instance; the figure here is the instance price over 8.
Prices change and differ between providers: a scenario overrides them with a table by preset name,
`cluster.gpu_prices: {h100-80gb: 2.0, a100-80gb: 1.2}` (kept when `plan --over cluster.gpu=...`
swaps the GPU), or with `price_per_gpu_hour` in its `gpu` mapping (`gpu: {name: h100-80gb,
price_per_gpu_hour: 2.99}`, which wins); see docs/sweeps_and_planning.md.
"""

from __future__ import annotations

from typing import Any

GPU_PRICES_PER_HOUR: dict[str, float] = {
    "a100-80gb": 21.60 / 8,  # NVIDIA A100 80GB, 8-GPU instance $21.60/h
    "h100-80gb": 49.24 / 8,  # NVIDIA HGX H100, 8-GPU instance $49.24/h
    "h200": 50.44 / 8,  # NVIDIA HGX H200, 8-GPU instance $50.44/h
}


def gpu_price(cluster: Any) -> tuple[float | None, str]:
    """(price per GPU-hour, where it comes from): the gpu mapping's own, else the cluster's
    `gpu_prices` entry for the GPU's name, else the preset's list price, else None."""
    gpu = cluster.gpu
    own = getattr(gpu, "price_per_gpu_hour", None)
    if own is not None:
        return own, "the scenario's gpu.price_per_gpu_hour"
    name = getattr(gpu, "name", "")
    table = getattr(cluster, "gpu_prices", None) or {}
    if name in table:
        return table[name], "the scenario's cluster.gpu_prices"
    listed = GPU_PRICES_PER_HOUR.get(name)
    return listed, "list price" if listed is not None else "no price"


def fleet_cost(cluster: Any) -> tuple[int | None, float | None]:
    """(GPUs, dollars per hour) of a cluster section; (None, None) for the token server, which
    has no GPUs, and a None cost for a GPU without a price."""
    if getattr(cluster, "service_model", None) == "pools":  # the sum over pools
        return _pools_cost(cluster.pools)
    if getattr(cluster, "service_model", None) != "continuous_batching":
        return None, None
    gpus = cluster.replicas * cluster.tp
    price, _ = gpu_price(cluster)
    return gpus, None if price is None else round(gpus * price, 4)


def _pools_cost(pools: Any) -> tuple[int, float | None]:
    """Each pool's GPUs at its own GPU's price; no cost when a pool's GPU has none."""
    gpus, dollars = 0, 0.0
    priced = True
    for pool in pools:
        count = pool.replicas * pool.tp
        price, _ = gpu_price(pool)
        gpus += count
        priced = priced and price is not None
        dollars += count * (price or 0.0)
    return gpus, round(dollars, 4) if priced else None
