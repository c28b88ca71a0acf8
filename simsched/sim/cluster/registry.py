"""Service models by name (`cluster.service_model`): add a model here, its settings in
`simsched/config/cluster.py`. Every model follows `contract.ServiceModel`."""

from __future__ import annotations

from typing import Any

from simsched.config.cluster import SERVICE_MODEL_NAMES
from simsched.sim.cluster.continuous_batching import ContinuousBatching
from simsched.sim.cluster.contract import ServiceModel
from simsched.sim.cluster.pools import PooledCluster
from simsched.sim.cluster.token_server import TokenServer

SERVICE_MODELS: dict[str, type[ServiceModel]] = {
    "token_server": TokenServer,
    "continuous_batching": ContinuousBatching,
    "pools": PooledCluster,
}

if set(SERVICE_MODELS) != set(SERVICE_MODEL_NAMES):  # the scenario format must accept exactly these
    raise ImportError(
        f"service models {sorted(SERVICE_MODELS)} != config names {sorted(SERVICE_MODEL_NAMES)}"
    )


def sustained_tokens_per_ms(config: Any) -> float:
    """The cluster's sustained service tokens per ms, as its model computes `tput`."""
    return SERVICE_MODELS[config.service_model].sustained_tokens_per_ms(config)
