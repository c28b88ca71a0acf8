"""Cluster service models (SimPy) and the hardware presets their settings refer to.

The models are loaded on first use: the scenario models import `simsched.config.presets`, and
describing a scenario must not pull in the simulation (SimPy) with it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SERVICE_MODELS", "ContinuousBatching", "TokenServer"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from simsched.sim.cluster import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'simsched.sim.cluster' has no attribute {name!r}")
