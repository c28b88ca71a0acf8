"""Scenario models of the `cluster` section, one per service model (no SimPy here).

`cluster.service_model` chooses the model; a cluster section without it is a token server, the
reference's model. `continuous_batching` is a set of vLLM-like replicas
(docs/continuous_batching.md): its settings are in `batching.py`, its GPU, model and latency-model
sections in `hardware.py`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from simsched.config.batching import ContinuousBatchingConfig
from simsched.config.hardware import NESTED_TAGS
from simsched.config.pools import PooledClusterConfig
from simsched.config.spec_base import Measure, MeasureOrZero, Size


class TokenServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    service_model: Literal["token_server"] = "token_server"
    total_kv_blocks: Size = 1600
    kv_block_tokens: Annotated[int, Field(gt=0, le=2**31 - 1)] = 16
    service_tokens_per_ms: Measure = 45.0
    kv_hold_factor: Measure = 5.5
    prefill_tokens_per_ms: Measure = 48.0
    min_prefill_ms: MeasureOrZero = 8.0


def _service_model(value: Any) -> str:
    if isinstance(value, dict):
        if "pools" in value:  # `cluster: {pools: [...]}` (config/pools.py)
            return value.get("service_model", "pools")
        return value.get("service_model", "token_server")
    return getattr(value, "service_model", "token_server")


SERVICE_MODEL_NAMES = ("continuous_batching", "token_server", "pools")
# Every tag pydantic may put into an error location under `cluster`: the service models and the
# latency-model union inside continuous_batching. Loading strips them from the path it shows.
SERVICE_MODEL_TAGS = frozenset(SERVICE_MODEL_NAMES) | NESTED_TAGS

ClusterConfig = Annotated[
    Annotated[TokenServerConfig, Tag("token_server")]
    | Annotated[ContinuousBatchingConfig, Tag("continuous_batching")]
    | Annotated[PooledClusterConfig, Tag("pools")],
    Discriminator(
        _service_model,
        custom_error_type="invalid_service_model",
        custom_error_message="unknown service_model (known: "
        + ", ".join(SERVICE_MODEL_NAMES)
        + ")",
    ),
]
