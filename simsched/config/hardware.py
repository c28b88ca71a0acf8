"""What a continuous-batching replica runs on, and how long its iterations take (no SimPy here).

The `gpu` and `model` sections, and the `latency_model` union (`linear` or `roofline`); the
`continuous_batching` settings that use them are in `cluster_config_batching.py`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag

from simsched.config.spec_base import NonNegativeFloat, PositiveFloat

# The number types of every cluster model, the token server's too.


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class GpuSpec(Spec):
    """One GPU: dense BF16 TFLOP/s, HBM GB/s, memory GiB, GPUs per NVLink node."""

    name: str = "custom"
    tflops: PositiveFloat
    hbm_gbps: PositiveFloat
    memory_gib: PositiveFloat
    gpus_per_node: Annotated[int, Field(gt=0)] = 8


class ModelSpec(Spec):
    """A dense transformer's shape: enough for its weights, its KV cache and its FLOPs."""

    name: str = "custom"
    params: PositiveFloat
    layers: Annotated[int, Field(gt=0)]
    hidden_size: Annotated[int, Field(gt=0)]
    kv_heads: Annotated[int, Field(gt=0)]
    head_dim: Annotated[int, Field(gt=0)]
    dtype_bytes: Annotated[int, Field(gt=0)] = 2


class LinearLatencyConfig(Spec):
    """iteration_ms = base + prefill * tokens + decode * seqs + attention * context / 1000."""

    kind: Literal["linear"]
    base_ms: PositiveFloat  # > 0: every iteration takes time, or a replica could spin in place
    prefill_ms_per_token: NonNegativeFloat
    decode_ms_per_seq: NonNegativeFloat
    attention_ms_per_1k_context: NonNegativeFloat = 0.0


class RooflineLatencyConfig(Spec):
    """max(FLOPs / peak, bytes / bandwidth) / efficiency + overhead, split over tp GPUs."""

    kind: Literal["roofline"]
    efficiency: Annotated[float, Field(gt=0, le=1)] = 0.7
    overhead_ms: NonNegativeFloat = 1.0


def _latency_tag(value: Any) -> str:
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    return f"latency={kind}" if kind in ("linear", "roofline") else "latency=?"


def _reject_latency(value: Any) -> Any:
    kind = value.get("kind") if isinstance(value, dict) else value
    if kind == "linear":
        raise ValueError(
            "linear needs its coefficients: {kind: linear, base_ms, prefill_ms_per_token, "
            "decode_ms_per_seq, attention_ms_per_1k_context}"
        )
    raise ValueError(f"unknown latency model {kind!r} (known: roofline, linear)")


LatencyConfig = Annotated[
    Annotated[LinearLatencyConfig, Tag("latency=linear")]
    | Annotated[RooflineLatencyConfig, Tag("latency=roofline")]
    | Annotated[Any, BeforeValidator(_reject_latency), Tag("latency=?")],
    Discriminator(_latency_tag),
    # applied before the union: the bare name `roofline` means the roofline with its defaults
    BeforeValidator(lambda v: {"kind": "roofline"} if v == "roofline" else v),
]
NESTED_TAGS = frozenset({"latency=linear", "latency=roofline", "latency=?"})
