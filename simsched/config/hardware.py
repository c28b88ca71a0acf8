"""What a continuous-batching replica runs on, and how long its iterations take (no SimPy here).

The `gpu` and `model` sections, and the `latency_model` union (`linear` or `roofline`); the
`continuous_batching` settings that use them are in `batching.py`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag

from simsched.config.spec_base import Measure, MeasureOrZero, NonNegativeFloat, Small

# The number types of every cluster model, the token server's too.


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class GpuSpec(Spec):
    """One GPU: dense BF16 TFLOP/s, HBM GB/s, memory GiB, GPUs per NVLink node."""

    name: str = "custom"
    tflops: Measure
    hbm_gbps: Measure
    memory_gib: Measure
    gpus_per_node: Small = 8
    price_per_gpu_hour: NonNegativeFloat | None = None  # None: the preset's (config/prices.py)


class ModelSpec(Spec):
    """A dense transformer's shape: enough for its weights, its KV cache and its FLOPs."""

    name: str = "custom"
    params: Annotated[float, Field(gt=0, le=1e15, allow_inf_nan=False)]
    layers: Small
    hidden_size: Small
    kv_heads: Small
    head_dim: Small
    dtype_bytes: Annotated[int, Field(gt=0, le=64)] = 2


class LinearLatencyConfig(Spec):
    """iteration_ms = base + prefill * tokens + decode * seqs + attention * context / 1000."""

    kind: Literal["linear"]
    base_ms: Measure  # > 0: every iteration takes time, or a replica could spin in place
    prefill_ms_per_token: MeasureOrZero
    decode_ms_per_seq: MeasureOrZero
    attention_ms_per_1k_context: MeasureOrZero = 0.0


class RooflineLatencyConfig(Spec):
    """max(FLOPs / peak, bytes / bandwidth) / efficiency + overhead, split over tp GPUs."""

    kind: Literal["roofline"]
    efficiency: Annotated[float, Field(gt=0, le=1)] = 0.7
    overhead_ms: MeasureOrZero = 1.0


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
