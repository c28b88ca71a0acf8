"""What a continuous-batching replica runs on, and how long its iterations take (no SimPy here).

The `gpu` and `model` sections, and the `latency_model` union (`linear` or `roofline`); the
`continuous_batching` settings that use them are in `batching.py`.
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
    model_validator,
)

from simsched.config.moe import AttentionSpec, MoeSpec, SlidingWindowSpec
from simsched.config.spec_base import (
    Measure,
    MeasureOrZero,
    NonNegativeFloat,
    Small,
    SubfieldError,
)

MAX_MODEL_PARAMS = 1e15  # a thousand times the largest published model: beyond it, a typo

# The number types of every cluster model, the token server's too.


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


Dtype = Literal["bf16", "fp16", "fp8", "int8", "int4", "fp4"]
Share = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]


class GpuSpec(Spec):
    """One GPU: dense BF16 TFLOP/s (and other precisions'), HBM GB/s, memory GiB, GPUs per
    NVLink node, link GB/s per direction, and the shares of peak that serving kernels reach
    (fitted for the presets; a custom GPU without them gets the assumed middle values)."""

    name: str = "custom"
    tflops: Measure
    peak_tflops: dict[Dtype, Measure] = Field(default_factory=dict)
    hbm_gbps: Measure
    memory_gib: Measure
    gpus_per_node: Small = 8
    link_gbps: Measure = 450.0
    compute_efficiency: dict[Dtype, Share] = Field(default_factory=lambda: {"bf16": 0.45})
    memory_efficiency: Share = 0.62
    price_per_gpu_hour: NonNegativeFloat | None = None  # None: the preset's (config/prices.py)


class ModelSpec(Spec):
    """A dense transformer's shape: enough for its weights, its KV cache and its FLOPs."""

    name: str = "custom"
    params: Annotated[float, Field(gt=0, le=MAX_MODEL_PARAMS, allow_inf_nan=False)]
    layers: Small
    hidden_size: Small
    kv_heads: Small
    head_dim: Small
    dtype_bytes: Annotated[int, Field(gt=0, le=64)] = 2
    heads: Small | None = None  # query heads; unset: hidden / head_dim
    vocab_size: Annotated[int, Field(ge=0, le=2**30)] = 0  # 0: embeddings not told apart
    tied_embeddings: bool = False
    weight_dtype: Dtype | None = None  # unset: dtype_bytes
    kv_dtype: Dtype | None = None  # unset: dtype_bytes (not the weights': FP8 weights keep a
    # BF16 cache unless told, as vLLM does)
    # Mixture-of-Experts layers, attention kind (GQA or MLA) and sliding-window layers
    # (config/moe.py, docs/moe.md); unset: a dense GQA model as before
    moe: MoeSpec | None = None
    attention: AttentionSpec | None = None
    sliding_window: SlidingWindowSpec | None = None
    # Multi-token-prediction modules shipped with the checkpoint (config.json
    # `num_nextn_predict_layers`: DeepSeek-V3/R1 1): the drafter `speculative: {method: mtp}`
    # runs; a model without one cannot draft that way (config/batching.py refuses it)
    mtp_modules: Annotated[int, Field(ge=0, le=64)] = 0
    # The longest sequence, prompt and output tokens together, the model serves (config.json
    # `max_position_embeddings`; vLLM's `--max-model-len` defaults to it and its API server
    # refuses a longer request): the presets carry their config's, and a workload with a longer
    # request is refused (workload/context_limits.py). Unset: no limit is checked
    max_position_embeddings: Annotated[int, Field(gt=0, le=2**31)] | None = None
    # The config.json the shape came from (`model: {hf_config: path}`): an input of the run,
    # which outputs must not overwrite (config/inputs.py). Not a setting: left out of dumps.
    hf_config: str | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _fp4_format_names_fp4_experts(self) -> ModelSpec:
        # a block format of 4-bit experts said of 8- or 16-bit ones would change nothing
        format_, experts = getattr(self.moe, "fp4_format", None), expert_precision(self)
        if format_ is not None and experts != "fp4":
            experts = experts or f"{self.dtype_bytes}-byte (dtype_bytes)"
            raise SubfieldError(  # located at the setting: cluster.model.moe.fp4_format
                "moe.fp4_format",
                f"{format_} is a format of FP4 experts, and this model's experts are {experts}: "
                "set moe.expert_dtype (or weight_dtype) to fp4, or drop fp4_format",
            )
        return self

    @model_validator(mode="after")
    def _a_full_attention_layer_remains(self) -> ModelSpec:
        # the KV blocks and the attention count the full-attention layers only (docs/moe.md):
        # with none left a sequence's cache would take no blocks, and more than `layers` would
        # make the full layers' costs negative
        window = self.sliding_window
        if window is not None and window.layers >= self.layers:
            raise SubfieldError(
                "sliding_window.layers",
                f"{window.layers} sliding-window layers leave none of the model's {self.layers} "
                "attending to the whole context, and simsched counts the cache of those only: "
                "give fewer, or leave sliding_window out to count every layer's cache in full",
            )
        return self


def expert_precision(model: Any) -> str | None:
    """The routed experts' weight precision: `moe.expert_dtype`, else the model's weights'
    (None on a dense model or one whose weights are told only by `dtype_bytes`)."""
    moe = getattr(model, "moe", None)
    if moe is None:
        return None
    return moe.expert_dtype or model.weight_dtype


class LinearLatencyConfig(Spec):
    """iteration_ms = base + prefill * tokens + decode * seqs + attention * context / 1000."""

    kind: Literal["linear"]
    base_ms: Measure  # > 0: every iteration takes time, or a replica could spin in place
    prefill_ms_per_token: MeasureOrZero
    decode_ms_per_seq: MeasureOrZero
    attention_ms_per_1k_context: MeasureOrZero = 0.0


class RooflineLatencyConfig(Spec):
    """GEMMs max(compute, weights), plus attention, all-reduces and CPU time; see latency.py.

    The efficiencies default to the GPU's (per precision); `efficiency` sets both at once. The
    CPU and front-end defaults are fitted to calibration/ (docs/continuous_batching.md).
    """

    kind: Literal["roofline"]
    efficiency: Share | None = None
    compute_efficiency: Share | None = None
    memory_efficiency: Share | None = None
    overhead_ms: MeasureOrZero = 0.938  # CPU per iteration: schedule, prepare, sample
    per_seq_ms: MeasureOrZero = 0.0968  # CPU per running sequence per iteration
    allreduce_us: MeasureOrZero = 30.2  # latency of one tensor-parallel all-reduce
    frontend_before_ms: MeasureOrZero = 30.0  # per request before its first token
    frontend_after_ms: MeasureOrZero = 5.0  # per request after its last token


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
