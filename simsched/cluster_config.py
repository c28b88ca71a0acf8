"""Scenario models of the `cluster` section, one per service model (no SimPy here).

`cluster.service_model` chooses the model; a cluster section without it is a token server, the
reference's model.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class TokenServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    service_model: Literal["token_server"] = "token_server"
    total_kv_blocks: Annotated[int, Field(gt=0)] = 1600
    kv_block_tokens: Annotated[int, Field(gt=0)] = 16
    service_tokens_per_ms: PositiveFloat = 45.0
    kv_hold_factor: PositiveFloat = 5.5
    prefill_tokens_per_ms: PositiveFloat = 48.0
    min_prefill_ms: NonNegativeFloat = 8.0


def _service_model(value: Any) -> str:
    if isinstance(value, dict):
        return value.get("service_model", "token_server")
    return getattr(value, "service_model", "token_server")


SERVICE_MODEL_TAGS = frozenset({"token_server"})

ClusterConfig = Annotated[
    Annotated[TokenServerConfig, Tag("token_server")],
    Discriminator(
        _service_model,
        custom_error_type="invalid_service_model",
        custom_error_message="unknown service_model (known: "
        + ", ".join(sorted(SERVICE_MODEL_TAGS))
        + ")",
    ),
]
