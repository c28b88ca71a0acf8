"""Scenario models of the `cluster` section, one per service model (no SimPy here).

`cluster.service_model` chooses the model; a cluster section without it is a token server, the
reference's model. `continuous_batching` is a set of vLLM-like replicas
(docs/continuous_batching.md).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    field_validator,
)

from simsched.cluster import presets
from simsched.cluster.latency import build_latency, sustained_tokens_per_ms

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


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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


def _preset(table: dict[str, dict[str, Any]], what: str) -> Any:
    """A before-validator: a preset name becomes its mapping (with the name kept in it)."""

    def resolve(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if value not in table:
            raise ValueError(f"unknown {what} preset {value!r} (known: {', '.join(table)})")
        return {"name": value, **table[value]}

    return resolve


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


class ContinuousBatchingConfig(BaseModel):
    """Replicas with paged KV caches and iteration-level batching; see docs/continuous_batching.md.

    Field order matters: validators read fields declared before them (gpu before tp, both before
    model, all before num_gpu_blocks), so each error names the field to change.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    service_model: Literal["continuous_batching"]
    replicas: Annotated[int, Field(gt=0)] = 1
    gpu: Annotated[GpuSpec, BeforeValidator(_preset(presets.GPU_PRESETS, "gpu"))] = Field(
        default_factory=lambda: GpuSpec(name="h100-80gb", **presets.GPU_PRESETS["h100-80gb"])
    )
    tp: Annotated[int, Field(gt=0)] = 1
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] = 0.9
    model: Annotated[ModelSpec, BeforeValidator(_preset(presets.MODEL_PRESETS, "model"))] = Field(
        default_factory=lambda: ModelSpec(name="llama-3-8b", **presets.MODEL_PRESETS["llama-3-8b"])
    )
    block_size: Annotated[int, Field(gt=0)] = 16
    num_gpu_blocks: Annotated[int | None, Field(gt=0, validate_default=True)] = None
    max_num_batched_tokens: Annotated[int, Field(gt=0)] = 2048
    max_num_seqs: Annotated[int, Field(gt=0)] = 256
    max_waiting_per_replica: Annotated[int, Field(gt=0)] = 8
    latency_model: LatencyConfig = Field(
        default_factory=lambda: RooflineLatencyConfig(kind="roofline")
    )
    router: Literal["round_robin", "least_outstanding", "least_kv"] = "least_kv"
    fast_forward: bool = True

    @field_validator("tp")
    @classmethod
    def _tp_fits_a_node(cls, tp: int, info: ValidationInfo) -> int:
        gpu = info.data.get("gpu")
        if gpu is not None and tp > gpu.gpus_per_node:
            raise ValueError(
                f"{tp} GPUs exceed the {gpu.gpus_per_node} per node of gpu {gpu.name!r}: "
                "tensor parallelism stays inside one NVLink node"
            )
        return tp

    @field_validator("model")
    @classmethod
    def _weights_fit(cls, model: ModelSpec, info: ValidationInfo) -> ModelSpec:
        gpu, tp, share = (info.data.get(k) for k in ("gpu", "tp", "gpu_memory_utilization"))
        if None in (gpu, tp, share):
            return model  # an earlier field is invalid and already reported
        usable = presets.usable_bytes(gpu, tp, share)
        weights = presets.weight_bytes(model)
        if weights >= usable:
            raise ValueError(
                f"{model.name!r} does not fit: its weights take {weights / presets.GIB:.1f} GiB, "
                f"the replica may use {usable / presets.GIB:.1f} GiB (tp {tp} x "
                f"{gpu.memory_gib:g} GiB x gpu_memory_utilization {share:g}); raise tp or "
                "gpu_memory_utilization, or choose a larger gpu"
            )
        return model

    @field_validator("num_gpu_blocks")
    @classmethod
    def _some_blocks(cls, blocks: int | None, info: ValidationInfo) -> int | None:
        data = info.data
        if blocks is not None or any(k not in data for k in ("gpu", "tp", "model", "block_size")):
            return blocks
        derived = presets.blocks_from_memory(
            data["gpu"],
            data["model"],
            data["tp"],
            data["gpu_memory_utilization"],
            data["block_size"],
        )
        if derived == 0:
            raise ValueError(
                "the memory left beside the weights holds no KV block of "
                f"{data['block_size']} tokens; raise gpu_memory_utilization or tp, or set it"
            )
        return blocks

    @field_validator("max_num_seqs")
    @classmethod
    def _decodes_fit_the_budget(cls, seqs: int, info: ValidationInfo) -> int:
        # Every running sequence decodes one token per iteration, so they must all fit the
        # token budget (vLLM makes the same check).
        budget = info.data.get("max_num_batched_tokens")
        if budget is not None and seqs > budget:
            raise ValueError(f"must not exceed max_num_batched_tokens ({budget})")
        return seqs

    # --- derived figures ---------------------------------------------------------------------
    @property
    def kv_block_tokens(self) -> int:
        """Tokens per KV block, under the name the request costs use."""
        return self.block_size

    @property
    def blocks_per_replica(self) -> int:
        if self.num_gpu_blocks is not None:
            return self.num_gpu_blocks
        return presets.blocks_from_memory(
            self.gpu, self.model, self.tp, self.gpu_memory_utilization, self.block_size
        )

    @property
    def total_kv_blocks(self) -> int:
        return self.blocks_per_replica * self.replicas

    @property
    def service_tokens_per_ms(self) -> float:
        """The cluster's sustained rate, as the gateway's wait estimate uses it."""
        return self.replicas * sustained_tokens_per_ms(build_latency(self), self)


def _service_model(value: Any) -> str:
    if isinstance(value, dict):
        return value.get("service_model", "token_server")
    return getattr(value, "service_model", "token_server")


SERVICE_MODEL_NAMES = ("continuous_batching", "token_server")
# Every tag pydantic may put into an error location under `cluster`: the service models and the
# latency-model union inside continuous_batching. Loading strips them from the path it shows.
SERVICE_MODEL_TAGS = frozenset(SERVICE_MODEL_NAMES) | NESTED_TAGS

ClusterConfig = Annotated[
    Annotated[TokenServerConfig, Tag("token_server")]
    | Annotated[ContinuousBatchingConfig, Tag("continuous_batching")],
    Discriminator(
        _service_model,
        custom_error_type="invalid_service_model",
        custom_error_message="unknown service_model (known: "
        + ", ".join(SERVICE_MODEL_NAMES)
        + ")",
    ),
]
