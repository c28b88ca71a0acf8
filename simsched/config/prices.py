"""List prices of the GPU presets, for `simsched plan --minimize cost` (no SimPy here).

US dollars per GPU-hour, on demand: the CoreWeave public price list (coreweave.com/pricing,
2025), which prices an 8-GPU HGX instance; the figure here is the instance price over 8.
Prices change and differ between providers: a scenario overrides one with `price_per_gpu_hour`
in its `gpu` mapping (`gpu: {name: h100-80gb, price_per_gpu_hour: 2.99}`), see
docs/sweeps_and_planning.md.
"""

from __future__ import annotations

from typing import Any

GPU_PRICES_PER_HOUR: dict[str, float] = {
    "a100-80gb": 21.60 / 8,  # NVIDIA A100 80GB, 8-GPU instance $21.60/h
    "h100-80gb": 49.24 / 8,  # NVIDIA HGX H100, 8-GPU instance $49.24/h
    "h200": 50.44 / 8,  # NVIDIA HGX H200, 8-GPU instance $50.44/h
}


def gpu_price(gpu: Any) -> float | None:
    """The scenario's own price if it sets one, else the preset's list price, else None."""
    own = getattr(gpu, "price_per_gpu_hour", None)
    return own if own is not None else GPU_PRICES_PER_HOUR.get(getattr(gpu, "name", ""))


def fleet_cost(cluster: Any) -> tuple[int | None, float | None]:
    """(GPUs, dollars per hour) of a cluster section; (None, None) for the token server, which
    has no GPUs, and a None cost for a GPU without a price."""
    if getattr(cluster, "service_model", None) != "continuous_batching":
        return None, None
    gpus = cluster.replicas * cluster.tp
    price = gpu_price(cluster.gpu)
    return gpus, None if price is None else round(gpus * price, 4)
