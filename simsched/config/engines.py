"""Engine profiles: `cluster.engine: vllm | vllm-0.6 | sglang | trtllm` (no SimPy here).

A profile fills in the settings a user of that engine gets without asking: the batching limits
(vLLM V1's depend on the GPU and on served versus offline use), how the CPU's scheduling time
adds to the GPU's (`cpu_time`), which requests the capacity scheduler admits
(`capacity_scheduler`) and the API server (`frontend`). Explicit settings win: the profile only
fills keys the cluster section leaves out, before validation, so a `--set` or a plan's `--over`
that swaps the GPU gets that GPU's defaults. Every value and its source is in
docs/engines.md; without `engine` nothing here runs and a scenario behaves as before.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict

from simsched.config import presets

EngineName = Literal["vllm", "vllm-0.6", "sglang", "trtllm"]
CpuTime = Literal["serial", "multi_step", "overlap"]
CapacityScheduler = Literal["admit_then_preempt", "guaranteed_no_evict"]

# vLLM V1's rule (vllm/engine/arg_utils.py, get_batch_defaults): a GPU with at least 70 GiB that
# is not an A100 gets the large defaults (PR #17885 keeps A100s small: larger budgets cost them
# throughput). Values: (max_num_batched_tokens, max_num_seqs) for served and offline use.
VLLM_LARGE_GPU_GIB = 70.0
VLLM_V1_BATCHING = {
    ("large", "served"): (8192, 1024),
    ("large", "offline"): (16384, 1024),
    ("small", "served"): (2048, 256),
    ("small", "offline"): (8192, 256),
}
# TensorRT-LLM's LLM API / trtllm-serve build defaults: max_num_tokens 8192, max_batch_size 2048.
TRTLLM_BATCHING = (8192, 2048)

# The API server of each served engine (docs/engines.md, "The API server"): one process unless
# told, and per-request CPU time derived from published low-load and short-request runs.
VLLM_FRONTEND = {"processes": 1, "per_request_ms": 26.9}
SGLANG_FRONTEND = {"processes": 1, "per_request_ms": 15.0}
TRTLLM_FRONTEND = {"processes": 1, "per_request_ms": 32.2}
# Offline runs (vLLM's LLM class, trtllm-bench, SGLang's offline engine) have no HTTP server.
OFFLINE_FRONTEND = {"processes": 1, "per_request_ms": 0.0}

ENGINE_RULES = {
    "vllm": ("serial", "admit_then_preempt", VLLM_FRONTEND),
    "vllm-0.6": ("multi_step", "admit_then_preempt", VLLM_FRONTEND),
    "sglang": ("overlap", "admit_then_preempt", SGLANG_FRONTEND),
    "trtllm": ("overlap", "guaranteed_no_evict", TRTLLM_FRONTEND),
}


# TensorRT-LLM's scheduler is C++ and hidden by its overlap scheduler: the calibration set's
# TensorRT-LLM rows are fitted with no CPU time per iteration (calibration/published.yaml's
# engine facts), against the roofline's Python-scheduler costs fitted on vLLM.
NO_CPU_COST = {"overhead_ms": 0.0, "per_seq_ms": 0.0}
ENGINE_CPU_COSTS = {"trtllm": NO_CPU_COST}
# Per-step time the overlap schedulers leave exposed (docs/engines.md, "CPU time"): at 4 clients
# the published TPOTs (moe_specdec_pd.md EN-G2, EN-G3) are this much longer than the GPU step;
# each value a one-parameter search on that engine's TPOT figure.
OVERLAP_EXPOSED_MS = {"sglang": 0.763, "trtllm": 1.205}


class EngineSpec(BaseModel):
    """The engine and how it is used: served (an HTTP API server in front) or offline."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: EngineName
    offline: bool = False


def _engine_mapping(value: Any) -> Any:
    return {"name": value} if isinstance(value, str) else value


EngineSetting = Annotated[EngineSpec, BeforeValidator(_engine_mapping)]


def profile_defaults(engine: EngineSpec, gpu: Any) -> dict[str, Any]:
    """The settings the engine gives a cluster on this GPU (before the user's own)."""
    cpu_time, capacity, frontend = ENGINE_RULES[engine.name]
    values: dict[str, Any] = {"cpu_time": cpu_time, "capacity_scheduler": capacity}
    if engine.name in OVERLAP_EXPOSED_MS:
        values["overlap_exposed_ms"] = OVERLAP_EXPOSED_MS[engine.name]
    values["frontend"] = dict(OFFLINE_FRONTEND if engine.offline else frontend)
    batching = _batching(engine, gpu)
    if batching is not None:
        values["max_num_batched_tokens"], values["max_num_seqs"] = batching
    return values


def _batching(engine: EngineSpec, gpu: Any) -> tuple[int, int] | None:
    if engine.name == "vllm":
        name, memory = _gpu_name_and_memory(gpu)
        large = memory is not None and memory >= VLLM_LARGE_GPU_GIB and "a100" not in name
        use = "offline" if engine.offline else "served"
        return VLLM_V1_BATCHING[("large" if large else "small", use)]
    if engine.name == "trtllm":
        return TRTLLM_BATCHING
    # vLLM 0.6 (without chunked prefill its budget is max(max_model_len, 2048), which this
    # chunked model cannot mirror) and SGLang (limits derived from memory) keep simsched's own.
    return None


def _gpu_name_and_memory(gpu: Any) -> tuple[str, float | None]:
    """The GPU's name and memory as written (a preset name, a mapping or a validated spec)."""
    if gpu is None:
        gpu = "h100-80gb"  # the cluster's default GPU
    if isinstance(gpu, str):
        spec = presets.GPU_PRESETS.get(gpu, {})
        return gpu.lower(), spec.get("memory_gib")
    if isinstance(gpu, dict):
        name = str(gpu.get("preset") or gpu.get("name") or "custom")
        memory = gpu.get("memory_gib", presets.GPU_PRESETS.get(name, {}).get("memory_gib"))
        return name.lower(), memory if isinstance(memory, int | float) else None
    return str(gpu.name).lower(), gpu.memory_gib


def fill_engine_profile(data: Any) -> tuple[Any, set[str]]:
    """The cluster section with the profile's values for keys not given, and those keys."""
    if not isinstance(data, dict) or data.get("engine") is None:
        return data, set()
    try:
        engine = EngineSpec.model_validate(_engine_mapping(data["engine"]))
    except ValueError:
        return data, set()  # the field's own validation names the error
    defaults = profile_defaults(engine, data.get("gpu"))
    if data.get("cpu_time", "overlap") != "overlap":  # an explicit serial or multi-step CPU time
        defaults.pop("overlap_exposed_ms", None)  # charges the whole CPU time: nothing to expose
    filled = {**defaults, **data}
    latency = _with_cpu_costs(engine, data.get("latency_model", "roofline"))
    if latency is not None:
        filled["latency_model"] = latency
        if "latency_model" not in data:
            defaults["latency_model"] = latency
    if isinstance(data.get("frontend"), dict):  # `frontend: {processes: 4}` keeps the costs
        filled["frontend"] = {**defaults["frontend"], **data["frontend"]}
    return filled, set(defaults) - set(data)


def _with_cpu_costs(engine: EngineSpec, latency: Any) -> dict[str, Any] | None:
    """The roofline with the engine's CPU costs where the user gave none; None: unchanged."""
    costs = ENGINE_CPU_COSTS.get(engine.name)
    if costs is None:
        return None
    if latency == "roofline":
        latency = {"kind": "roofline"}
    if not isinstance(latency, dict) or latency.get("kind") != "roofline":
        return None  # the linear model has no CPU term; anything else is reported as it is
    return {**costs, **latency}
