"""Notes under a run's table when it serves an MoE model or decodes speculatively: how far the
model's figures are from the published runs it was checked against (docs/moe.md,
"Calibration"), and what it leaves out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simsched.config import moe_shapes, presets
from simsched.config.hardware import GpuSpec, ModelSpec, expert_precision
from simsched.config.model_presets import compute_dtype
from simsched.config.moe_serving import (
    ENGINE_EXPERT_INPUTS,
    EXPERT_SETTINGS,
    NO_EXPERT_PARALLELISM,
    MoeServingSpec,
    with_engine_choices,
)
from simsched.config.pools import pools_of
from simsched.outputs.area_errors import MOE_MEDIAN_SHARE, SPEC_MEDIAN_SHARE

# what `--model-error` (cluster.efficiency_scale) leaves alone, in every note that names it
MODEL_ERROR_LEAVES = "not its fixed latencies, link transfers or CPU time"
# the MoE and speculative areas' median absolute errors (area_errors.py)
MOE_MEDIAN_ERROR = f"{MOE_MEDIAN_SHARE:.1%}"
# Judged only (calibration/inferencemax_gpt_oss.yaml, `--no-fit`): vLLM 0.13 serving gpt-oss-120b
# on H100, H200 and B200 runs faster than the model predicts; the median absolute error of the
# 12 output-throughput figures, and the ranges of the 8 on H100/H200 and the 4 on B200
# (docs/moe.md, "Judged: vLLM gpt-oss-120b")
VLLM_GPT_OSS_OUTPUT_SHORTFALL = "26%"
VLLM_GPT_OSS_HOPPER_SHORTFALL = "4-36%"
VLLM_GPT_OSS_B200_SHORTFALL = "36-57%"
JUDGED_ON_VLLM = "gpt-oss-120b"  # the one MoE model judged on vLLM; other models: unchecked
VLLM_GPT_OSS_NOTE = (
    "gpt-oss-120b: against vLLM 0.13 serving it with async scheduling (InferenceMAX; "
    "`cpu_time: overlap` here, which the vllm profile does not set) the figures are too slow, "
    f"throughput {VLLM_GPT_OSS_OUTPUT_SHORTFALL} low (median; {VLLM_GPT_OSS_HOPPER_SHORTFALL} "
    f"on H100/H200, {VLLM_GPT_OSS_B200_SHORTFALL} on B200): a plan for it on vLLM 0.13 asks "
    "for more GPUs than it needs, and --model-error's pessimistic side more still "
    "(docs/moe.md, Judged)"
)
SPEC_MEDIAN_ERROR = f"{SPEC_MEDIAN_SHARE:.1%}"
# what the MoE median covers: offline runs at saturation, both signs, one configuration's median
# far from another's (the table below), and no latency percentile
MOE_WORST_SHARE = 1.200
# the engines whose runs the vLLM gpt-oss-120b figures speak for (a run naming none is vLLM-like)
VLLM_ENGINES = (None, "vllm", "vllm-0.6")


@dataclass(frozen=True)
class CheckedConfiguration:
    """One model, precision, GPU count and layout among the MoE calibration cases, and how far
    simsched's output throughput was from the published on its figures (signed shares)."""

    label: str
    figures: int
    median: float  # of the absolute errors
    low: float
    high: float


# Each configuration of the TensorRT-LLM MoE cases (calibration/published.yaml; docs/moe.md,
# "Calibration", the table by configuration), as `simsched calibrate calibration/moe_experts.yaml
# --no-fit` computes them; the slow-tier test tests/studies/test_moe_experts_file.py recomputes
# every one. The key: (model, weight precision (naming experts held in another), KV precision,
# GPU, tp, ep, attention_dp, exchange, permute)
CHECKED_CONFIGURATIONS = {
    ("qwen3-235b-a22b", "fp4", "fp8", "b200", 8, 8, 8, "allgather", "kernel"):
        CheckedConfiguration("Qwen3-235B-A22B FP4 on 8 B200s, DEP8", 10, 0.264, -0.123, 0.392),
    ("qwen3-235b-a22b", "fp8", "fp8", "h200", 8, 8, 8, "allgather", "kernel"):
        CheckedConfiguration("Qwen3-235B-A22B FP8 on 8 H200s, DEP8", 10, 0.239, -0.147, 0.770),
    ("qwen3-30b-a3b", "fp4", "fp8", "b200", 1, 1, 1, "alltoall", "kernel"):
        CheckedConfiguration("Qwen3-30B-A3B FP4 on one B200", 16, 0.210, -0.305, 1.200),
    ("llama-4-maverick", "fp8", "fp8", "h200", 8, 8, 8, "allgather", "kernel"):
        CheckedConfiguration("Llama 4 Maverick FP8 on 8 H200s, DEP8", 10, 0.066, -0.274, 0.414),
    ("llama-4-scout", "fp8", "fp8", "h200", 4, 4, 4, "allgather", "kernel"):
        CheckedConfiguration("Llama 4 Scout FP8 on 4 H200s, DEP4", 10, 0.243, 0.125, 0.498),
    ("mixtral-8x7b", "fp8", "fp8", "h200", 1, 1, 1, "alltoall", "kernel"):
        CheckedConfiguration("Mixtral 8x7B FP8 on one H200", 9, 0.082, -0.188, -0.007),
    ("mixtral-8x7b", "fp8", "fp8", "h200", 2, 1, 1, "alltoall", "kernel"):
        CheckedConfiguration("Mixtral 8x7B FP8 on 2 H200s, TP2", 9, 0.037, -0.109, 0.010),
    ("mixtral-8x7b", "fp8", "fp8", "h100-80gb", 2, 1, 1, "alltoall", "kernel"):
        CheckedConfiguration("Mixtral 8x7B FP8 on 2 H100s, TP2", 9, 0.097, -0.183, 0.045),
    ("mixtral-8x7b", "fp8", "fp8", "h200", 4, 1, 1, "alltoall", "kernel"):
        CheckedConfiguration("Mixtral 8x7B FP8 on 4 H200s, TP4", 9, 0.070, -0.134, 0.015),
    ("mixtral-8x7b", "16-bit", "16-bit", "a100-80gb", 4, 1, 1, "alltoall", "kernel"):
        CheckedConfiguration("Mixtral 8x7B FP16 on 4 A100s, TP4", 9, 0.095, -0.167, -0.036),
    ("mixtral-8x7b", "fp8", "fp8", "h200", 8, 1, 1, "alltoall", "kernel"):
        CheckedConfiguration("Mixtral 8x7B FP8 on 8 H200s, TP8", 9, 0.073, -0.077, 0.161),
    ("mixtral-8x7b", "fp8", "fp8", "h100-80gb", 8, 1, 1, "alltoall", "kernel"):
        CheckedConfiguration("Mixtral 8x7B FP8 on 8 H100s, TP8", 9, 0.090, -0.034, 0.173),
    ("mixtral-8x22b", "fp8", "fp8", "h200", 8, 1, 1, "alltoall", "kernel"):
        CheckedConfiguration("Mixtral 8x22B FP8 on 8 H200s, TP8", 9, 0.047, -0.087, 0.088),
    ("deepseek-r1", "fp8", "fp8", "h200", 8, 8, 8, "allgather", "kernel"):
        CheckedConfiguration("DeepSeek-R1 FP8 on 8 H200s, DEP8", 5, 0.350, 0.218, 0.468),
    ("deepseek-r1", "fp8, fp4 experts, fp4 activations", "fp8",
     "b200", 4, 4, 4, "allgather", "kernel"):
        CheckedConfiguration("DeepSeek-R1, FP4 experts and inputs, 4 B200s, DEP4", 5, 0.185, -0.266,
                             0.241),
    ("gpt-oss-120b", "16-bit, fp4 experts", "16-bit", "h200", 1, 1, 1, "alltoall", "fused"):
        CheckedConfiguration("gpt-oss-120b on one H200, fused permute", 5, 0.121, -0.249, 0.406),
    ("gpt-oss-120b", "16-bit, fp4 experts", "16-bit", "h100-80gb", 4, 4, 4, "allgather", "fused"):
        CheckedConfiguration("gpt-oss-120b, 4 H100s, DEP4, fused permute", 5, 0.395, 0.130, 0.583),
    ("gpt-oss-20b", "16-bit, fp4 experts, fp8 activations", "fp8",
     "b200", 1, 1, 1, "alltoall", "kernel"):
        CheckedConfiguration("gpt-oss-20b, one B200, FP8 KV cache, FP8 expert inputs", 6, 0.093,
                             -0.129, 0.103),
    ("gpt-oss-20b", "16-bit, fp4 experts", "16-bit", "h100-80gb", 1, 1, 1, "alltoall", "fused"):
        CheckedConfiguration("gpt-oss-20b on one H100, fused permute", 5, 0.130, -0.169, 0.130),
    ("qwen3-235b-a22b", "fp4", "fp8", "b200", 4, 4, 4, "allgather", "kernel"):
        CheckedConfiguration("Qwen3-235B-A22B FP4 on 4 B200s, DEP4", 6, 0.176, -0.229, 0.272),
    ("qwen3-235b-a22b", "fp8", "fp8", "h100-80gb", 8, 8, 8, "allgather", "kernel"):
        CheckedConfiguration("Qwen3-235B-A22B FP8 on 8 H100s, DEP8", 3, 0.454, 0.272, 0.463),
}  # fmt: skip

_MEDIANS = [checked.median for checked in CHECKED_CONFIGURATIONS.values()]
MOE_AREA_SCOPE = (
    f"absolute errors of offline runs at saturation, both ways: {min(_MEDIANS):.1%} to "
    f"{max(_MEDIANS):.1%} by configuration, worst {MOE_WORST_SHARE:.1%}; latency percentiles "
    "are unchecked"
)


# the engines the TensorRT-LLM cases speak for: TensorRT-LLM itself, or none named (the cases
# state its facts key by key)
CHECKED_ENGINES = (None, "trtllm")
# the model names a check speaks for: a configuration's, or the vLLM judgement's
CHECKED_NAMES = {key[0] for key in CHECKED_CONFIGURATIONS} | {JUDGED_ON_VLLM}


def configuration_of(pool: Any) -> tuple[Any, ...] | None:
    """A pool's (model, weight precision (experts and their inputs named when they differ), KV
    precision, GPU, tp, ep, attention_dp, exchange, permute), the key of the table above; None
    when nothing there can speak for it: another engine, or a model whose shape differs from its
    preset's (a mapping that changes layers or experts keeps the name)."""
    return None if _unlike_the_cases(pool) else _facts(pool)


def _facts(pool: Any) -> tuple[Any, ...]:
    model, serving = pool.model, getattr(pool, "moe_serving", None)
    gpu = getattr(pool, "gpu", None)
    engine = getattr(pool, "engine", None)
    spec = with_engine_choices(serving or NO_EXPERT_PARALLELISM, engine, gpu, model)
    return (
        preset_name(model),
        _weight_precision(model, _written_inputs(model, spec)),
        _precision(model.kv_dtype),
        getattr(gpu, "name", gpu),
        pool.tp,
        spec.ep,
        spec.attention_dp,
        spec.dispatch,
        spec.permute,
    )


def _written_inputs(model: Any, spec: MoeServingSpec) -> str | None:
    """The experts' input precision when other than the model's own GEMM precision, written or
    the engine's choice (`spec` has the engine's choices; equal to the model's, it changes
    nothing and the run is the unset one)."""
    written = spec.expert_activations
    return None if written in (None, compute_dtype(model)) else written


def _weight_precision(model: Any, activations: str | None = None) -> str:
    """The weights' precision, naming routed experts held in another one (gpt-oss's MXFP4
    experts in a BF16 model, DeepSeek-R1's NVFP4 checkpoint: "fp8, fp4 experts") and the
    experts' input precision when given (`expert_activations`, written or the engine's:
    "..., fp8 activations")."""
    weights = _precision(model.weight_dtype)
    experts = getattr(getattr(model, "moe", None), "expert_dtype", None)
    text = weights
    if experts is not None and _precision(experts) != weights:
        text += f", {experts} experts"
    if activations is not None:
        text += f", {_precision(activations)} activations"
    return text


# the MoE settings every case leaves at their shipped values (the fitted ones among them): the
# expert settings but for the layout and what an engine chooses, which the key compares
TUNED_SETTINGS = tuple(
    s for s in EXPERT_SETTINGS if s not in ("ep", "dispatch", "permute", "expert_activations")
)


def _unlike_the_cases(pool: Any) -> list[str]:
    """What of the pool no MoE case shares whatever its configuration: its engine, its model's
    shape or GPU's spec, MoE settings moved from their shipped values, speculative decoding, a
    P/D role (the cases are mixed offline runs)."""
    engine = getattr(pool, "engine", None)
    unlike = []
    if getattr(engine, "name", None) not in CHECKED_ENGINES:
        unlike.append("engine")
    if not _is_its_preset(getattr(pool, "model", None)):
        unlike.append("model's shape")
    if not _gpu_is_its_preset(getattr(pool, "gpu", None)):
        unlike.append("GPU's spec")
    moved = moved_settings(pool)
    if moved:  # named, so that a user sees which of their settings the checks never ran
        unlike.append(f"MoE settings ({', '.join(moved)})")
    if getattr(pool, "speculative", None) is not None:
        unlike.append("speculative decoding")  # the throughput cases decode one token a step
    if getattr(pool, "role", "mixed") != "mixed":
        unlike.append("P/D role")
    if not _runs_offline_as_the_cases(pool):
        unlike.append("overheads (CPU time, front end)")
    return unlike


def moved_settings(pool: Any) -> list[str]:
    """The pool's MoE settings written away from their shipped values (the fitted ones and the
    assumptions they were fitted with), which no MoE case ran with."""
    serving = getattr(pool, "moe_serving", None) or NO_EXPERT_PARALLELISM
    defaults = MoeServingSpec.model_fields
    return [name for name in TUNED_SETTINGS if getattr(serving, name) != defaults[name].default]


def moved_settings_note(pool: Any) -> str | None:
    """A word on a run that moves MoE settings where no checked configuration's note names
    them: the area's median was measured with the shipped values."""
    moved = moved_settings(pool)
    if not moved:
        return None
    return (
        f"MoE settings moved from their shipped values ({', '.join(moved)}): the MoE median "
        "above was measured with the shipped ones, so this run's error is unchecked "
        "(docs/moe.md, Serving it)"
    )


# the per-iteration CPU costs and front-end delays every MoE case writes as 0: TensorRT-LLM's
# offline runs (trtllm-bench, no HTTP server) with its scheduler overlapping the CPU's work
CASES_ZEROED = ("overhead_ms", "per_seq_ms", "frontend_before_ms", "frontend_after_ms")


def _runs_offline_as_the_cases(pool: Any) -> bool:
    """Whether the pool's overheads are the cases': the CPU costs and front-end delays its GPU
    runs with (`gpu_overrides` applied) at 0, no API-server stage that costs anything, and no
    exposed time of an overlapped CPU (`engine: trtllm` leaves 1.2 ms an iteration). A served
    run, vLLM's serial CPU time or an engine profile's own overheads can take a saturated burst
    far from the checked figure (the API server alone caps it)."""
    latency = getattr(pool, "gpu_latency_model", None) or getattr(pool, "latency_model", None)
    frontend = getattr(pool, "frontend", None)  # an API-server stage replaces the fixed delays
    costs = CASES_ZEROED if frontend is None else CASES_ZEROED[:2]
    zeroed = all(getattr(latency, name, None) == 0 for name in costs)
    overlapped = getattr(pool, "cpu_time", None) == "overlap"
    exposed = getattr(pool, "overlap_exposed_ms", None) if overlapped else 0
    return zeroed and (frontend is None or frontend.costs_nothing) and not exposed


def _gpu_is_its_preset(gpu: Any) -> bool:
    """Whether `gpu` is its preset as shipped (a mapping that changes a rate keeps the name)."""
    return _as_shipped(gpu, presets.GPU_PRESETS, GpuSpec)


def _as_shipped(spec: Any, table: dict[str, dict], kind: type, **kept: Any) -> bool:
    """Whether a validated `spec` is the preset its name picks from `table`, built as `kind`,
    with the fields in `kept` taken as they are."""
    preset = table.get(getattr(spec, "name", None))
    if preset is None:
        return False
    return kind(name=spec.name, **{**preset, **kept}).model_dump() == spec.model_dump()


# the facts a checked configuration may differ in from a run of the same model, GPU and layout
DIFFERING = {
    1: "weight or expert-input precision",
    2: "KV cache precision",
    7: "exchange",
    8: "permute",
}
SAME_LAYOUT = (0, 3, 4, 5, 6)  # model, GPU, tp, ep, attention_dp


def nearest_note(pool: Any) -> str | None:
    """A word on a run of a checked model, GPU and layout that differs from the checked run in
    anything else (the shipped moe_capacity keeps a BF16 KV cache and the all-to-all where
    MX-D3 ran FP8 and TensorRT-LLM's gather): the check's figure is not the run's."""
    if getattr(getattr(pool, "model", None), "name", None) is None:
        return None
    facts = _facts(pool)
    for key, checked in CHECKED_CONFIGURATIONS.items():
        if [key[i] for i in SAME_LAYOUT] != [facts[i] for i in SAME_LAYOUT]:
            continue
        differs = [name for i, name in DIFFERING.items() if key[i] != facts[i]]
        differs += _unlike_the_cases(pool)
        if not differs:
            return None  # the run is the checked one: configuration_note speaks for it
        return (
            f"the MoE cases check {checked.label} ({_how_far(checked)}), which this run differs "
            f"from in its {_and(differs)}: its own error is unchecked and may differ "
            "(docs/moe.md, Capacity)"
        )
    return None


def _precision(dtype: str | None) -> str:
    # BF16 and FP16 are alike to the roofline; unset is the model's own 16-bit precision
    return "16-bit" if dtype in (None, "bf16", "fp16") else dtype


def _is_its_preset(model: Any) -> bool:
    """Whether `model` is a preset as shipped, up to its weight, experts' and KV precision."""
    return bool(_presets_alike(model))


def preset_name(model: Any) -> str | None:
    """The name the MoE checks know `model` by: a preset it is as shipped up to its precisions
    (`_presets_alike`), else its own name (None without a model)."""
    alike = _presets_alike(model)
    return alike[0] if alike else getattr(model, "name", None)


def _presets_alike(model: Any) -> list[str]:
    """The presets `model` is as shipped up to its precisions: one a case checks first, then
    its own name, then the table's order (a model read from its config.json, `hf_config`, is
    named after its folder; DeepSeek-V3 and -R1 share a shape, so R1's checks speak for V3, as
    named or imported)."""
    name = getattr(model, "name", None)
    if name is None:
        return []
    alike = [other for other in presets.MODEL_PRESETS if _is_preset(model, other)]
    return sorted(alike, key=lambda other: (other not in CHECKED_NAMES, other != name))


def _is_preset(model: Any, name: str) -> bool:
    """Whether `model` is preset `name` as shipped, up to its weight, experts' and KV precision
    (the experts' FP4 format with them) and its context, which changes no iteration's time (a
    config.json read without one, or a deployment's shorter --max-model-len, is the preset)."""
    preset = presets.MODEL_PRESETS.get(name)
    if preset is None:
        return False
    precision: dict[str, Any] = {"weight_dtype": model.weight_dtype, "kv_dtype": model.kv_dtype}
    precision["max_position_embeddings"] = model.max_position_embeddings
    moe = getattr(model, "moe", None)
    if isinstance(preset.get("moe"), dict) and moe is not None:
        formats = {"expert_dtype": moe.expert_dtype, "fp4_format": moe.fp4_format}
        precision["moe"] = {**preset["moe"], **formats}
    named = model.model_copy(update={"name": name})
    return _as_shipped(named, presets.MODEL_PRESETS, ModelSpec, **precision)


def configuration_note(pool: Any) -> str | None:
    """A word on the pool's own configuration when the MoE cases check exactly it: its error can
    be twice the area's median, and a plan's default margins use the area's."""
    key = configuration_of(pool)
    checked = None if key is None else CHECKED_CONFIGURATIONS.get(key)
    if checked is None:
        return None
    side = _side(checked)
    if checked.figures == 1:
        how = f"one TensorRT-LLM run: its throughput is off by {checked.low:+.1%} ({side})"
    else:
        how = (
            f"{checked.figures} TensorRT-LLM runs: its throughput is off by {checked.median:.1%} "
            f"(median; {checked.low:+.1%} to {checked.high:+.1%}, {side})"
        )
    likelier = {"too fast": "; read its pessimistic side", "too slow": "; read its optimistic side"}
    return (
        f"this configuration ({checked.label}) is checked on {how}, against the "
        f"{MOE_MEDIAN_ERROR} of all MoE runs the default margins use; "
        f"{_model_error_advice(checked)}"
        f"{likelier.get(side, '')} (it moves the roofline's shares only, capped at 1, "
        f"{MODEL_ERROR_LEAVES}; docs/moe.md, Calibration)"
    )


# --model-error takes a percent below 100: a correction of 100% or more cannot be asked for
LARGEST_MODEL_ERROR = 1.0


def _model_error_advice(checked: CheckedConfiguration) -> str:
    share = efficiency_error(checked)
    if share >= LARGEST_MODEL_ERROR:
        return (
            f"no --model-error cancels it (it would take efficiencies {1 + share:.1f} times "
            "as high): measure"
        )
    if _side(checked) == "both ways":
        return (
            f"--model-error {share * 100:.1f} plans with its own (its median: the error runs "
            "both ways, so no one change cancels it)"
        )
    return (
        f"--model-error {share * 100:.1f} plans with its own (the efficiency change that "
        "cancels its median)"
    )


def efficiency_error(checked: CheckedConfiguration) -> float:
    """The share by which the roofline's efficiencies would move to cancel the configuration's
    median throughput error m: too fast, throughput over (1 + m) asks for efficiencies 1 - 1/(1+m)
    lower; too slow, 1/(1-m) - 1 higher; both ways, m itself (no side to correct toward)."""
    side = _side(checked)
    if side == "too fast":
        return 1.0 - 1.0 / (1.0 + checked.median)
    if side == "too slow":
        return 1.0 / (1.0 - checked.median) - 1.0
    return checked.median


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _side(checked: CheckedConfiguration) -> str:
    # a bound stored as -0.000 is a figure a hair too slow: the side holds at zero
    return "too fast" if checked.low >= 0 else "too slow" if checked.high <= 0 else "both ways"


def _how_far(checked: CheckedConfiguration) -> str:
    if checked.figures == 1:
        return f"one TensorRT-LLM run, off by {checked.low:+.1%}"
    spread = f"{checked.low:+.1%} to {checked.high:+.1%}"
    side = _side(checked)
    return f"{checked.figures} TensorRT-LLM runs, off by {checked.median:.1%}, {spread}, {side}"


# engines whose own exchange under attention DP gathers, which `alltoall` stands in for here
# (docs/engines.md): vLLM's `allgather_reducescatter` all2all backend, SGLang's DP attention
# (`dp_gather_partial` before the MoE layer and `dp_scatter` after it, python/sglang/srt/layers/
# dp_attention.py, without DeepEP)
STAND_IN_EXCHANGE = {
    "vllm": "vLLM's own default exchange gathers",
    "vllm-0.6": "vLLM's own default exchange gathers",
    "sglang": "SGLang's DP attention gathers",
}


def engine_choices_note(pool: Any) -> str | None:
    """What a pool's engine runs its MoE layers with, each setting marked as written or as the
    engine's default, so that a comparison of engines says what differs (docs/engines.md); on an
    engine other than TensorRT-LLM, that no MoE case checks it."""
    engine = getattr(pool, "engine", None)
    if engine is None:
        return None
    written = getattr(pool, "moe_serving", None) or NO_EXPERT_PARALLELISM
    model = getattr(pool, "model", None)
    spec = with_engine_choices(written, engine, getattr(pool, "gpu", None), model)

    def whose(name: str) -> str:
        return "written" if getattr(written, name) is not None else f"{engine.name}'s default"

    exchange = whose("dispatch")
    gathering = written.dispatch is None and written.ep > 1 and written.attention_dp > 1
    if engine.name in STAND_IN_EXCHANGE and gathering:
        exchange = f"a stand-in: {STAND_IN_EXCHANGE[engine.name]}"
    how = "in a kernel of its own" if spec.permute == "kernel" else "inside the first GEMM"
    if spec.ep > 1:
        moves = f"exchange tokens by {spec.dispatch} ({exchange})"
    elif getattr(pool, "tp", 1) > 1:
        moves = "exchange no tokens (the experts are split by TP)"
    else:
        moves = "exchange no tokens (one GPU holds every expert)"
    note = (
        f"engine {engine.name}: its MoE layers {moves} and put them in expert order {how} "
        f"({whose('permute')})"
    )
    note += _inputs_clause(written, spec, engine, getattr(pool, "gpu", None), model)
    if engine.name != "trtllm":
        note += (
            "; the MoE cases are TensorRT-LLM runs, so on this engine an MoE model is unchecked "
            "but for gpt-oss-120b on vLLM 0.13"
        )
    return note + " (docs/engines.md; docs/moe.md, Calibration)"


# why an engine leaves FP4 experts on the model's precision (docs/moe.md, "Expert activations")
UNCHOSEN_INPUTS = {
    ("vllm", "mxfp4"): "vllm's default for MXFP4 experts",
    ("sglang", "mxfp4"): "sglang's choice for MXFP4 experts is not settled here",
}


def _inputs_clause(
    written: MoeServingSpec, spec: MoeServingSpec, engine: Any, gpu: Any, model: Any
) -> str:  # fmt: skip
    """What the experts' GEMMs take as inputs, and why: written, the engine's choice for their
    FP4 format, or (FP4 experts only) the model's own precision for want of a format, of FP4
    tensor cores or of an engine choice (docs/moe.md, "Expert activations")."""
    if written.expert_activations is not None:
        return f"; their experts take {written.expert_activations} inputs (written)"
    moe = getattr(model, "moe", None)
    if spec.expert_activations is not None:
        return (
            f"; their experts take {spec.expert_activations} inputs ({engine.name}'s default "
            f"for {moe.fp4_format.upper()} experts)"
        )
    if expert_precision(model) != "fp4":
        return ""  # 8- and 16-bit experts run at their weights' precision: nothing to choose
    choices = ENGINE_EXPERT_INPUTS.get(engine.name, {})
    if "fp4" not in getattr(gpu, "peak_tflops", {}):
        why = f"{getattr(gpu, 'name', 'the GPU')} has no FP4 tensor cores"
    elif moe.fp4_format is None and choices:
        formats = ", ".join(f"{choice} for {name}" for name, choice in choices.items())
        why = (
            f"moe.fp4_format unset; {engine.name} would take {formats} experts: write the "
            "checkpoint's format"
        )
    elif moe.fp4_format is None:
        why = f"{engine.name} chooses none"
    else:
        why = UNCHOSEN_INPUTS.get(
            (engine.name, moe.fp4_format),
            f"{engine.name} chooses none for {moe.fp4_format.upper()} experts",
        )
    return f"; their FP4 experts take the model's {compute_dtype(model)} inputs ({why})"


# docs/moe.md, "Attention-DP ranks": what the replica pools that the engines keep apart
ATTENTION_DP_NOTE = (
    "attention DP: the {ranks} ranks are simulated as one, each iteration's work shared "
    "evenly among them. Engines step them in lockstep, each rank with its own requests and KV, and "
    "pad every rank's MoE input to the busiest rank's, so with unequal prompts per rank the "
    "real iterations are longer: read TTFT and throughput here as optimistic, by an amount no "
    "published run checks and --model-error does not cover (docs/moe.md, Attention-DP ranks)"
)


def attention_dp_of(pool: Any) -> int:
    """A pool's attention-DP ranks (1 without `moe_serving`)."""
    return (getattr(pool, "moe_serving", None) or NO_EXPERT_PARALLELISM).attention_dp


def served(cluster: Any) -> list[tuple[Any, Any]]:
    """(model, speculative) of each pool of `cluster: {pools: [...]}`, or of the one cluster."""
    return [(getattr(p, "model", None), getattr(p, "speculative", None)) for p in pools_of(cluster)]


def _serial_clause(pool: Any) -> str:
    """What the vLLM judgement does not cover: a run whose CPU time is not overlapped (the vllm
    profile's serial default) has longer iterations than the judged runs had."""
    mode = getattr(pool, "cpu_time", None)
    if mode == "overlap":
        return ""
    return (
        f"; this run's CPU time is {mode or 'serial'}, not overlapped as theirs, so its figures "
        "are slower still than the judged ones (write cluster.cpu_time=overlap to run as they did)"
    )


def _vllm_judged(pool: Any) -> bool:
    """Whether the vLLM 0.13 gpt-oss-120b judgement speaks for the pool: that model on vLLM or
    no named engine, with vLLM's BF16 expert inputs, and not exactly a checked TensorRT-LLM
    configuration (whose own note would contradict it)."""
    model = getattr(pool, "model", None)
    engine = getattr(getattr(pool, "engine", None), "name", None)
    if preset_name(model) != JUDGED_ON_VLLM or engine not in VLLM_ENGINES:
        return False
    # the sweep served the MXFP4 checkpoint, its experts on BF16 inputs (vLLM's default)
    if expert_precision(model) != "fp4" or model.moe.fp4_format != "mxfp4":
        return False
    serving = getattr(pool, "moe_serving", None) or NO_EXPERT_PARALLELISM
    gpu = getattr(pool, "gpu", None)
    inputs = with_engine_choices(serving, getattr(pool, "engine", None), gpu, model)
    if inputs.expert_activations not in (None, "bf16"):
        return False
    return engine is not None or configuration_note(pool) is None


def moe_notes(resolved: dict[str, Any], variants: list[str], prefix: str = "variant ") -> list[str]:
    """One note per kind of figure that needs a word, naming the variants it concerns (or the
    plan's `--over` combinations, with `prefix` ""); a note about one pool's own configuration
    names the pool when the cluster has several."""
    found: dict[str, list[str]] = {}
    for variant in variants:
        pools = pools_of(resolved[variant].cluster)
        notes = [n for pool in pools for n in _notes_for(pool, named=len(pools) > 1)]
        for note in dict.fromkeys(notes):  # once per variant, whatever its pools
            found.setdefault(note, []).append(variant)
    every = len(variants)
    return [
        note if len(names) == every or every == 1 else f"{prefix}{', '.join(names)}: {note}"
        for note, names in found.items()
    ]


def _notes_for(pool: Any, named: bool = False) -> list[str]:
    model, speculative = getattr(pool, "model", None), getattr(pool, "speculative", None)
    notes = []
    vllm_judged = _vllm_judged(pool)  # once: it matches the pool against the checked cases
    if getattr(model, "moe", None) is not None:
        notes.append(
            "MoE model: against published MoE throughput its figures are off by "
            f"{MOE_MEDIAN_ERROR} (median of TensorRT-LLM runs; {MOE_AREA_SCOPE}; docs/moe.md, "
            "Calibration)"
        )
        # on vLLM, gpt-oss-120b has its own judged error (below), which a TensorRT-LLM check's
        # "unchecked" would contradict
        judged_on_vllm = (
            preset_name(model) == JUDGED_ON_VLLM
            and getattr(getattr(pool, "engine", None), "name", None) in VLLM_ENGINES[1:]
        )
        nearest = None if judged_on_vllm or vllm_judged else nearest_note(pool)
        # a checked layout's note names moved settings itself; any other run hears it here
        moved = moved_settings_note(pool) if nearest is None else None
        own = [configuration_note(pool), nearest, moved, engine_choices_note(pool)]
        pool_name = f"pool {getattr(pool, 'name', '?')}: " if named else ""
        notes += [pool_name + note for note in own if note is not None]
        if attention_dp_of(pool) > 1:
            notes.append(pool_name + ATTENTION_DP_NOTE.format(ranks=attention_dp_of(pool)))
    if vllm_judged:
        notes.append(VLLM_GPT_OSS_NOTE + _serial_clause(pool))
    if getattr(model, "sliding_window", None) is not None:
        notes.append(sliding_window_note(model))
    if speculative is not None:
        notes.append(
            "speculative decoding: a fixed mean acceptance for every request; its step is "
            "checked only against published MTP latencies of DeepSeek-R1 on B200 at batch 1, "
            f"off by {SPEC_MEDIAN_ERROR} (median) in-sample (the MoE kernel time was fitted "
            "on them): other models, drafters and loads are unchecked" + _cpu_clause(pool)
        )
    return notes


def _cpu_clause(pool: Any) -> str:
    """Where the replica pays CPU time per sequence, speculation pays it per verified token,
    which at high load can be most of what it costs (docs/moe.md, speculative decoding)."""
    if getattr(pool, "cpu_time", None) not in (None, "serial"):
        return ""  # overlapped or multi-step: the per-sequence time is hidden or shared
    latency = getattr(pool, "gpu_latency_model", None) or getattr(pool, "latency_model", None)
    per_seq = getattr(latency, "per_seq_ms", 0) or 0
    if per_seq <= 0:
        return ""
    return (
        f"; the CPU time per sequence ({per_seq:g} ms) is charged per verified token, k + 1 a "
        "step, an assumption no published figure checks, which at high load can be most of "
        "what speculation costs (rerun with latency_model.per_seq_ms 0 to see the GPU's part)"
    )


def sliding_window_note(model: Any) -> str:
    """What the sliding-window layers are charged, and what their uncounted cache amounts to:
    as many tokens of the counted (full layers') cache as it takes, so a sequence of L tokens
    holds that share more than its blocks say."""
    layers, window = moe_shapes.sliding_window(model)
    held = moe_shapes.sliding_cache_bytes(model)
    tokens = held / moe_shapes.kv_bytes_per_token(model)
    # a sequence shorter than the window holds L tokens a sliding layer: sliding / full layers
    shorter = layers / moe_shapes.full_attention_layers(model)
    return (
        f"sliding-window layers: {layers} attend to the last {window} tokens only (their "
        f"prefill attention is counted so); their cache, {held / 1e6:.3g} MB a sequence, is not "
        f"counted in the KV blocks nor read per iteration: as much as {tokens:.3g} tokens of "
        f"the counted cache, so a sequence of L >= {window} tokens holds {tokens:.3g} / L more "
        f"than its blocks say, a shorter one {shorter:.0%} more (docs/moe.md)"
    )
