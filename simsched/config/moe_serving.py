"""How a replica serves a Mixture-of-Experts model: expert and attention parallelism, routing
imbalance and the all-to-all's latency (`cluster.moe_serving`; docs/moe.md).

The replica keeps its `tp` GPUs. `ep` of them split the routed experts (expert parallelism:
each token's hidden state is dispatched to the GPUs holding its experts and combined back, an
all-to-all per MoE layer); without it the experts are sharded by tensor parallelism like dense
weights. `attention_dp` groups run attention data-parallel ("DEP" when ep = attention_dp = tp),
each over tp / attention_dp GPUs, each with its own sequences and KV cache.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from simsched.config.hardware import expert_precision
from simsched.config.model_presets import DTYPE_BYTES, dtype_bytes
from simsched.config.moe import MlaSpec, attention_of
from simsched.config.spec_base import SubfieldError

Small = Annotated[int, Field(gt=0, le=2**20)]
Share = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]

# Fitted together by `simsched calibrate` on 14 TensorRT-LLM MoE throughput cases and the 6
# DeepSeek-R1 MTP-depth cases (docs/moe.md, "Calibration"; every cell of the TensorRT-LLM MoE
# tables is now a case, on which they are off by 11.8%, median, with the experts' size scaling,
# which they were not refitted with; 14.5% before it), with the grouped GEMMs' tile
# padding counted (`EXPERT_TILE_ROWS`): the grouped GEMMs' two shares, and the fixed kernel
# time of one MoE layer beyond a dense FFN's, µs per iteration ("Per-layer kernel time")
EXPERT_COMPUTE_EFFICIENCY = 0.7448
EXPERT_MEMORY_EFFICIENCY = 0.5616
MOE_LAYER_US = 42.88
# the share of the GPU preset's link bandwidth (`link_gbps`) an all-to-all or AllGather of the
# MoE layers' tokens moves at (docs/moe.md, "All-to-all link efficiency"): NCCL's all-gather
# saturates at a bus bandwidth of about 360 GB/s on 8 H100s over NVLink, "exactly what we'd
# expect on H100" (NVIDIA/nccl-tests issue 326, its maintainer), 0.8 of the 450 GB/s a
# direction. Not fitted: a fit on the MoE cases drives it to 0.27, standing in for costs the
# model lacks (docs/moe.md)
ALLTOALL_LINK_EFFICIENCY = 0.8
# the token rows of one tile of a grouped GEMM (docs/moe.md, "Tile padding"). An assumption, not
# fitted and not read off a source: TensorRT-LLM's MoE GEMMs put the tokens on the GEMM's N side
# and its autotuner picks the token tile among 16, 32, 64, 128 and 256 on Hopper
# (cutlass_kernels/cutlass_heuristic.cpp, `get_candidate_tiles_sm90` for GROUPED_GEMM), one per
# call; vLLM's Triton fused_moe pads each expert's rows to a multiple of its BLOCK_SIZE_M
# (`moe_align_block_size`, 64 by default). The fitted values above were fitted with 128
EXPERT_TILE_ROWS = 128
# how the grouped GEMMs' compute share grows with the size of one expert's weight matrix on one GPU
# (docs/moe.md, "Expert size"): share x (size / REFERENCE_EXPERT_ELEMENTS) ^ exponent, at most a
# dense GEMM's. The exponent is read off a source, not fitted: the least-squares slope of
# log TFLOPS on log (N x K) over the six M = 4,096 rows of DeepGEMM's FP8 GEMM table on an H800
# (deepseek-ai/DeepGEMM README.md @327ec92f, "Normal GEMMs for dense models": 775 to 1,520
# TFLOPS for N x K of 14.7M to 117M elements). The reference is DeepSeek-V3's expert (2,048 x
# 7,168), the shape those kernels were measured for, so the fitted share is the share there
EXPERT_SIZE_EXPONENT = 0.196
REFERENCE_EXPERT_ELEMENTS = 2048 * 7168


class MoeServingSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    ep: Small = 1
    attention_dp: Small = 1
    # the busiest GPU's expert reads over the mean under uniform routing; 1 is uniform routing
    # (no fitted value yet: docs/moe.md, "Calibration")
    imbalance: Annotated[float, Field(ge=1, le=64, allow_inf_nan=False)] = 1.0
    # latency of one all-to-all (dispatch or combine); unset: `alltoall_latency_us` below
    alltoall_us: Annotated[float | None, Field(ge=0, le=1e6, allow_inf_nan=False)] = None
    # the share of the link's bandwidth the exchange moves at: NCCL's all-to-all and AllGather
    # reach well under the NVLink peak with many small messages (docs/moe.md, "All-to-all
    # link efficiency")
    link_efficiency: Share = ALLTOALL_LINK_EFFICIENCY
    # how attention-DP ranks exchange the MoE layers' tokens (docs/moe.md, "Iteration cost"):
    # `alltoall` sends each token to the ranks of its k experts (DeepEP, pplx, NCCL all-to-all);
    # `allgather` sends every token to every rank and reduce-scatters the outputs back, as
    # TensorRT-LLM's PyTorch MoE does on a node without multi-node NVLink
    # (tensorrt_llm/_torch/modules/fused_moe: `enable_alltoall` only with MNNVL or DeepEP).
    # Unset: the engine's (`dispatch_of`)
    dispatch: Literal["alltoall", "allgather"] | None = None
    # how the MoE layer puts its tokens into expert order around the grouped GEMMs (docs/moe.md,
    # "Token copies in HBM"): `kernel` copies each token's hidden state for each of its experts
    # in a kernel of its own before the first GEMM and sums the copies after the second
    # (TensorRT-LLM's CUTLASS MoE: expandInputRowsKernel, finalizeMoeRoutingKernel; the engine of
    # every MoE calibration case); `fused` gathers the rows inside the first GEMM and sums only
    # (vLLM's and SGLang's Triton fused_moe: moe_sum). Unset: the engine's (`permute_of`)
    permute: Literal["kernel", "fused"] | None = None
    # the precision the routed experts' GEMMs take their inputs in, and so the tensor-core rate
    # their FLOPs run at (docs/moe.md, "Expert activations"): NVFP4 experts run W4A4 (`fp4`);
    # MXFP4 experts run with MXFP8 activations in TensorRT-LLM on Blackwell (`fp8`) and with
    # BF16 ones in vLLM's default and on Hopper (`bf16`). Unset: the model's GEMM precision
    expert_activations: Literal["bf16", "fp8", "fp4"] | None = None
    # the fixed time of an MoE layer's own kernels (router GEMM, top-k, permute, the grouped
    # GEMMs' launch and tail, unpermute, the shared expert) beside a dense FFN's, paid every
    # iteration whatever its tokens (docs/moe.md, "Per-layer kernel time")
    layer_us: Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)] = MOE_LAYER_US
    # the routed experts' grouped GEMMs against a dense GEMM's roofline, one share per side of
    # it (docs/moe.md, "Grouped GEMMs"): compute-bound (prefill chunks, large decode batches:
    # many tokens per expert) and memory-bound (small decode batches: a few tokens per expert).
    # Fitted on the TensorRT-LLM MoE cases (calibration/moe_experts.yaml)
    expert_compute_efficiency: Share = EXPERT_COMPUTE_EFFICIENCY
    expert_memory_efficiency: Share = EXPERT_MEMORY_EFFICIENCY
    # token rows a grouped GEMM's tile computes at once: each expert with tokens computes its last
    # tile whole, on average half a tile of rows beyond its own (at most as many again as it
    # has); 0 computes its rows only (docs/moe.md, "Tile padding")
    expert_tile_rows: Annotated[int, Field(ge=0, le=4096)] = EXPERT_TILE_ROWS
    # how the compute share grows with one expert's weight matrix on one GPU (expert_ffn / (tp /
    # ep) x hidden against DeepSeek-V3's 2,048 x 7,168); 0 gives every expert size the same share
    # (docs/moe.md, "Expert size")
    expert_size_exponent: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = (
        EXPERT_SIZE_EXPONENT
    )
    # both shares at once (the single share of earlier versions); a share written beside it
    # (other than its default, which a re-validated dump carries) would be ignored: refused
    expert_efficiency: Share | None = None

    @model_validator(mode="after")
    def _one_way_to_set_a_share(self) -> MoeServingSpec:
        if self.expert_efficiency is None:
            return self
        for name in ("expert_compute_efficiency", "expert_memory_efficiency"):
            if getattr(self, name) != type(self).model_fields[name].default:
                raise SubfieldError(
                    "expert_efficiency",
                    f"sets both shares; {name} is given too: give one of them",
                )
        return self

    @property
    def compute_share(self) -> float:
        """The grouped GEMMs' share of the compute roofline a dense GEMM reaches."""
        return self.expert_efficiency or self.expert_compute_efficiency

    @property
    def memory_share(self) -> float:
        """The grouped GEMMs' share of the memory roofline a dense GEMM reaches."""
        return self.expert_efficiency or self.expert_memory_efficiency


NO_EXPERT_PARALLELISM = MoeServingSpec()


def alltoall_latency_us(spec: MoeServingSpec, roofline: Any) -> float:
    """The latency of one all-to-all, µs: `alltoall_us` when given, else the named assumption
    ALL-TO-ALL = ALL-REDUCE: the latency of one tensor-parallel all-reduce over the same link
    (`latency_model.allreduce_us` of the running GPU, calibrated), since no measurement in the
    calibration material isolates an all-to-all's fixed cost (docs/moe.md, "Defaults"). Both
    are one small NCCL collective over NVLink; a refit of `allreduce_us` carries over here."""
    if spec.alltoall_us is not None:
        return spec.alltoall_us
    return roofline.allreduce_us


# the engines whose MoE layers run the Triton fused_moe kernels (vllm/model_executor/layers/
# fused_moe/fused_moe.py; SGLang's copy of it): the rows are gathered inside the first GEMM
FUSED_PERMUTE_ENGINES = ("vllm", "vllm-0.6", "sglang")


def dispatch_of(spec: MoeServingSpec, engine: Any) -> str:
    """The `dispatch` a replica runs: as written, else `allgather` for TensorRT-LLM under
    attention DP with expert parallelism (no GPU preset has multi-node NVLink, the one case its
    PyTorch MoE runs an all-to-all by default), else `alltoall`, as before engines chose it."""
    if spec.dispatch is not None:
        return spec.dispatch
    gathers = getattr(engine, "name", None) == "trtllm" and spec.ep > 1 and spec.attention_dp > 1
    return "allgather" if gathers else "alltoall"


def with_engine_choices(
    spec: MoeServingSpec, engine: Any, gpu: Any = None, model: Any = None
) -> MoeServingSpec:
    """`spec` with the settings an engine chooses where they are left unset filled in (the
    experts' input precision only when the GPU and the model are given)."""
    choices = {"dispatch": dispatch_of(spec, engine), "permute": permute_of(spec, engine)}
    choices["expert_activations"] = expert_activations_of(spec, engine, gpu, model)
    return spec.model_copy(update=choices)


# docs/moe.md, "Expert activations": the precision an engine feeds FP4 experts' GEMMs on a GPU
# with FP4 tensor cores, by the experts' block format. TensorRT-LLM quantizes NVFP4 experts'
# inputs to NVFP4 (`fp4_quantize`) and gives MXFP4 experts MXFP8 inputs on Blackwell
# (`get_mxfp4_quant_algo`); vLLM's and SGLang's CUTLASS FP4 MoE quantize NVFP4 experts' inputs
# to FP4 (`scaled_fp4_experts_quant`), while vLLM runs MXFP4 experts on BF16 inputs by default
# (mxfp4.py). A format an engine does not list, or no engine: the model's own GEMM precision.
ENGINE_EXPERT_INPUTS: dict[str, dict[str, str]] = {
    "trtllm": {"nvfp4": "fp4", "mxfp4": "fp8"},
    "vllm": {"nvfp4": "fp4"},
    "sglang": {"nvfp4": "fp4"},
}


def expert_activations_of(spec: MoeServingSpec, engine: Any, gpu: Any, model: Any) -> str | None:
    """The experts' input precision a replica runs: as written, else its engine's for the
    experts' FP4 format on a GPU with tensor cores for both (`ENGINE_EXPERT_INPUTS`), else None
    (the model's own GEMM precision)."""
    if spec.expert_activations is not None:
        return spec.expert_activations
    format_ = getattr(getattr(model, "moe", None), "fp4_format", None)
    chosen = ENGINE_EXPERT_INPUTS.get(getattr(engine, "name", None), {}).get(format_)
    peaks = getattr(gpu, "peak_tflops", {})
    return chosen if "fp4" in peaks and chosen in peaks else None


def permute_of(spec: MoeServingSpec, engine: Any) -> str:
    """The `permute` a replica runs: as written, else its engine's (`fused` for vLLM and SGLang),
    else `kernel`, TensorRT-LLM's, the engine every MoE calibration case ran."""
    if spec.permute is not None:
        return spec.permute
    return "fused" if getattr(engine, "name", None) in FUSED_PERMUTE_ENGINES else "kernel"


def check_layout(spec: MoeServingSpec, tp: int, model: Any) -> None:
    """ep and attention_dp must divide the replica's GPUs; ep > 1 needs experts to split."""
    for name in ("ep", "attention_dp"):
        value = getattr(spec, name)
        if tp % value:
            raise SubfieldError(
                name, f"{name} ({value}) must divide tp ({tp}): it splits the replica's GPUs"
            )
    if getattr(model, "moe", None) is None:
        _refuse_expert_settings_on_a_dense_model(spec, model)
    if spec.ep > 1 and model.moe.experts % spec.ep:
        raise SubfieldError(
            "ep", f"ep ({spec.ep}) must divide the model's {model.moe.experts} experts"
        )
    if spec.dispatch == "allgather" and (spec.ep == 1 or spec.attention_dp == 1):
        raise SubfieldError(
            "dispatch",
            "allgather gathers the attention-DP ranks' tokens for the expert-parallel GPUs: it "
            f"needs ep and attention_dp above 1 (ep {spec.ep}, attention_dp {spec.attention_dp})",
        )


# The settings that describe the routed experts: on a dense model nothing reads them, so a value
# other than the default would be silently ignored (attention_dp, refused on a dense model as
# well, is checked apart: it describes the attention, not the experts)
EXPERT_SETTINGS = (
    "ep",
    "imbalance",
    "alltoall_us",
    "link_efficiency",
    "dispatch",
    "permute",
    "expert_activations",
    "expert_compute_efficiency",
    "expert_memory_efficiency",
    "expert_efficiency",
    "expert_tile_rows",
    "expert_size_exponent",
    "layer_us",
)


def check_expert_activations(spec: MoeServingSpec, gpu: Any, model: Any) -> None:
    """An 8- or 4-bit input precision needs tensor cores that run it: a GPU without that peak
    (an A100 has no FP8, a Hopper no FP4) would silently run it at the BF16 rate; and inputs
    narrower than the experts' weights (FP8 inputs to BF16 experts) run at the weights' rate."""
    wanted = spec.expert_activations
    if wanted is None:
        return
    experts = expert_precision(model)
    held = experts if experts in ("fp8", "fp4") else "bf16"  # int8/int4: weight-only, 16-bit
    if DTYPE_BYTES[wanted] < DTYPE_BYTES[held]:  # a GEMM runs at its wider operand's rate
        raise SubfieldError(
            "expert_activations",
            f"{wanted} inputs are narrower than the experts' {held} weights, and a GEMM runs at "
            f"its wider operand's rate: write {held} or a wider precision, or give the model "
            f"{wanted} experts",
        )
    peaks = getattr(gpu, "peak_tflops", {})
    if wanted == "bf16" or wanted in peaks:
        return
    has = ", ".join(["bf16", *sorted(peaks)])
    raise SubfieldError(
        "expert_activations",
        f"{wanted} activations need {wanted} tensor cores, and GPU {gpu.name!r} has none "
        f"(its peak_tflops names no such precision): use one it has ({has})",
    )


def _refuse_expert_settings_on_a_dense_model(spec: MoeServingSpec, model: Any) -> None:
    """A dense model has no experts: an expert setting changed from its default would change
    nothing, so it is an input error rather than a silently ignored value."""
    for name in EXPERT_SETTINGS:
        value = getattr(spec, name)
        if value != MoeServingSpec.model_fields[name].default:
            what = "splits experts" if name == "ep" else "applies to the routed experts"
            raise SubfieldError(name, f"{name} ({value}) {what}, and model {model.name!r} has none")
    if spec.attention_dp > 1:
        # the dense roofline costs attention over all tp GPUs: only the replicated weights' memory
        # would change, a half-modelled layout (docs/moe.md, "Layout checks")
        raise SubfieldError(
            "attention_dp",
            f"attention_dp ({spec.attention_dp}) is modelled for MoE models only, and model "
            f"{model.name!r} is dense: for data parallelism of a dense model, run more replicas "
            "with a smaller tp",
        )


def replicated_attention_bytes(model: Any, spec: MoeServingSpec | None) -> int:
    """Weight bytes beyond one copy that attention data parallelism holds: each of the
    `attention_dp` attention groups keeps all of the attention weights (split over its
    tp / attention_dp GPUs), while the experts are split once over `ep`, so

        extra = (attention_dp - 1) x layers x attention params per layer x weight bytes

    (DeepSeek-R1 DEP8 in FP8: 7 x 61 x 187.1M x 1 B, about 80 GB a node). Sources: TensorRT-LLM's
    DeepSeek-R1 guide ("attention DP": every rank runs the whole attention module on its own
    requests), SGLang's `--enable-dp-attention` (data-parallel attention replicas); docs/moe.md."""
    dp = (spec or NO_EXPERT_PARALLELISM).attention_dp
    if dp == 1:
        return 0
    per_layer = attention_of(model).params(model)
    return int((dp - 1) * model.layers * per_layer * dtype_bytes(model, "weight"))


def kv_copies(model: Any, tp: int, spec: MoeServingSpec | None) -> int:
    """How many GPUs hold each token's KV: MLA's one latent head cannot be split over heads, so
    every GPU of an attention group keeps the whole latent cache of its group's sequences (the
    S-TRT-B3 figure: 4,000 concurrent requests with attention DP8, 500 with attention TP8). GQA
    caches are split by heads (as the dense model has always assumed)."""
    if not isinstance(getattr(model, "attention", None), MlaSpec):
        return 1
    return tp // (spec or NO_EXPERT_PARALLELISM).attention_dp
