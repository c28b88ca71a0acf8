"""The `continuous_batching` service model's settings (no SimPy here).

vLLM-like replicas (docs/continuous_batching.md): a replica count, the hardware and LLM model of
each, given as preset names or mappings, its batching limits and its latency model.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from simsched.config import presets
from simsched.config.autoscale import AutoscaleSpec
from simsched.config.engines import (
    OFFLINE_FRONTEND,
    CapacityScheduler,
    CpuTime,
    EngineSetting,
    fill_engine_profile,
)
from simsched.config.frontend import FrontendSpec
from simsched.config.gpu_overrides import GpuLatencyOverrides, check_overrides, latency_for_gpu
from simsched.config.hardware import (
    GpuSpec,
    LatencyConfig,
    ModelSpec,
    RooflineLatencyConfig,
)
from simsched.config.moe import MoeSpec
from simsched.config.moe_serving import (
    MoeServingSpec,
    check_expert_activations,
    check_layout,
    kv_copies,
    replicated_attention_bytes,
)
from simsched.config.router import CACHE_SCORERS, DEFAULT_ROUTER, RouterSetting
from simsched.config.spec_base import NonNegativeFloat, Size, Small, SubfieldError
from simsched.config.speculative import SpeculativeSpec


def _preset(
    table: dict[str, dict[str, Any]], what: str, blocks: dict[str, type[BaseModel]] | None = None
) -> Any:
    """A before-validator: a preset name becomes its mapping (with the name kept in it).
    `blocks`: the nested mappings a preset may hold, by key, with the spec each validates as."""

    def resolve(value: Any) -> Any:
        if isinstance(value, dict) and "hf_config" in value:  # {hf_config: path, ...overrides}
            rest = {k: v for k, v in value.items() if k != "hf_config"}
            stated = _states_precision(rest)  # the file's quantization aside
            base = presets.from_hf_config(str(value["hf_config"]), precision_stated=stated)
            return _overridden(base, rest, blocks, f"the hf_config file {value['hf_config']}")
        if isinstance(value, dict) and "preset" in value:  # {preset: name, ...overrides}
            rest = {k: v for k, v in value.items() if k != "preset"}
            base = resolve(value["preset"])
            return _overridden(base, rest, blocks, f"preset {value['preset']!r}")
        if isinstance(value, dict) and value.get("name") in table:
            # a preset with some fields overridden
            return _overridden(table[value["name"]], value, blocks, f"preset {value['name']!r}")
        if not isinstance(value, str):
            return value
        if value not in table:
            raise ValueError(f"unknown {what} preset {value!r} (known: {', '.join(table)})")
        return {"name": value, **table[value]}

    return resolve


def _states_precision(mapping: dict[str, Any]) -> bool:
    """Whether a model mapping beside `hf_config` states the weights' precision: a
    `weight_dtype`, or a `moe` block with an `expert_dtype` (a key present but null, or a block
    without it, states nothing)."""
    moe = mapping.get("moe")
    experts = moe.get("expert_dtype") if isinstance(moe, dict) else None
    return mapping.get("weight_dtype") is not None or experts is not None


def _overridden(
    base: dict[str, Any], written: dict[str, Any], blocks: dict[str, type[BaseModel]] | None,
    source: str,
) -> dict[str, Any]:  # fmt: skip
    """`base` (a preset's mapping) with the `written` keys in place of its own.

    A nested mapping written beside a preset replaces the preset's whole block: its unwritten
    keys take the block's defaults, not the preset's. (A key-by-key merge would silently change
    runs written before that rely on those defaults.) Where the written block lacks a key that
    has no default, the run cannot go on anyway: say so, and give the preset's block with the
    written keys in it, ready to paste, instead of a bare "Field required"."""
    for key, spec in (blocks or {}).items():
        mine, theirs = written.get(key), base.get(key)
        if not (isinstance(mine, dict) and isinstance(theirs, dict)):
            continue
        fields = spec.model_fields.items()
        missing = [name for name, field in fields if field.is_required() and name not in mine]
        if missing:
            merged = {**theirs, **mine}  # in the spec's order, then any key it does not know
            weights = {**base, **written}.get("weight_dtype")
            if (merged.get("expert_dtype") or weights) != "fp4":
                merged.pop("fp4_format", None)  # the preset's FP4 format of experts now wider
            ordered = {name: merged.pop(name) for name in spec.model_fields if name in merged}
            whole = yaml.safe_dump({**ordered, **merged}, default_flow_style=True, sort_keys=False)
            raise ValueError(
                f"a {key} mapping beside {source} replaces its whole {key} block, and this "
                f"one lacks {', '.join(missing)}; write the whole block with your keys in it: "
                f"{key}: {whole.strip()}"
            )
    return {**base, **written}


def _earlier(info: ValidationInfo, *keys: str) -> tuple[Any, ...] | None:
    """The values of fields declared before the one being validated, or None if any failed.

    pydantic leaves a field that failed its own validation out of `info.data`: a validator that
    reads another field must not assume it is there (that was a KeyError traceback).
    """
    if any(info.data.get(key) is None for key in keys):
        return None
    return tuple(info.data[key] for key in keys)


class ContinuousBatchingConfig(BaseModel):
    """Replicas with paged KV caches and iteration-level batching; see docs/continuous_batching.md.

    Field order matters: validators read fields declared before them (gpu before tp, both before
    model, all before num_gpu_blocks), so each error names the field to change.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    service_model: Literal["continuous_batching"]
    replicas: Size = 1
    gpu: Annotated[GpuSpec, BeforeValidator(_preset(presets.GPU_PRESETS, "gpu"))] = Field(
        default_factory=lambda: GpuSpec(name="h100-80gb", **presets.GPU_PRESETS["h100-80gb"])
    )
    tp: Small = 1
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] = 0.9
    model: Annotated[
        ModelSpec, BeforeValidator(_preset(presets.MODEL_PRESETS, "model", {"moe": MoeSpec}))
    ] = Field(  # Llama 3 8B's shape with Llama 3.1's 131,072-token context: what is served now
        default_factory=lambda: ModelSpec(
            name="llama-3.1-8b", **presets.MODEL_PRESETS["llama-3.1-8b"]
        )
    )
    block_size: Small = 16
    num_gpu_blocks: Annotated[Size | None, Field(validate_default=True)] = None
    max_num_batched_tokens: Size = 2048
    max_num_seqs: Size = 256
    max_waiting_per_replica: Size = 8
    latency_model: LatencyConfig = Field(
        default_factory=lambda: RooflineLatencyConfig(kind="roofline")
    )
    # the roofline's efficiencies (the latency model's or the GPU's) times this, capped at 1:
    # `plan --model-error` moves it to see which answers survive the model's error
    efficiency_scale: Annotated[float, Field(gt=0, le=10, allow_inf_nan=False)] = 1.0
    router: RouterSetting = DEFAULT_ROUTER
    fast_forward: bool = True
    prefix_caching: bool = False  # vLLM's automatic prefix caching (cluster/prefix_cache.py)
    # vLLM's --num-scheduler-steps: the scheduler runs (and new requests join) every k steps
    num_scheduler_steps: Annotated[int, Field(gt=0)] = 1
    # An engine profile (config/engines.py, docs/engines.md) fills the four settings below and
    # the batching limits; each left unset without an engine is today's vLLM-like behaviour:
    # CPU time serial, admit-then-preempt, the latency model's fixed front-end delays.
    engine: EngineSetting | None = None
    cpu_time: CpuTime | None = None
    # with `cpu_time: overlap`, ms per iteration the overlap cannot hide (the step's sampled
    # tokens reach the host before the next step launches; docs/engines.md, "CPU time")
    overlap_exposed_ms: Annotated[float, Field(ge=0, le=1000, allow_inf_nan=False)] | None = None
    capacity_scheduler: CapacityScheduler | None = None
    frontend: FrontendSpec | None = None
    # An idle replica picks its first batch this long after a request wakes it, so what is
    # placed on it meanwhile is batched together (docs/continuous_batching.md, "Waking up").
    schedule_step_ms: NonNegativeFloat = 0.5
    # vLLM's block-manager watermark: a waiting request starts only if the free blocks left
    # after its whole prompt stay >= floor(block_watermark * blocks); vLLM's default (0.01).
    block_watermark: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = 0.01
    # $/GPU-hour by GPU preset name, for `plan --minimize cost`: kept when `--over cluster.gpu=...`
    # replaces the gpu mapping (a price inside that mapping goes with it); config/prices.py
    gpu_prices: dict[str, NonNegativeFloat] = Field(default_factory=dict)
    # roofline settings by GPU preset name, kept when `--over cluster.gpu=...` swaps the GPU, so
    # each GPU keeps its own calibration (config/gpu_overrides.py)
    gpu_overrides: dict[str, GpuLatencyOverrides] = Field(default_factory=dict)
    # Mixture-of-Experts serving (expert / attention parallelism) and speculative decoding:
    # config/moe_serving.py, config/speculative.py; unset, neither changes anything
    moe_serving: MoeServingSpec | None = None
    speculative: SpeculativeSpec | None = None

    @model_validator(mode="wrap")
    @classmethod
    def _engine_profile(cls, data: Any, handler: Any) -> Any:
        # The profile's values count as defaults, not as settings: a variant or `--over` that
        # swaps the GPU re-derives them (vLLM's budget depends on the GPU).
        filled, added = fill_engine_profile(data)
        _profile_budget_fits(filled, added)
        config = handler(filled)
        config.__pydantic_fields_set__.difference_update(added)
        _multi_step_needs_steps(config)
        _exposed_needs_overlap(config)
        return config

    # a horizontal autoscaler over the replicas (config/autoscale.py, docs/autoscaling.md);
    # `replicas` is then the count the run starts with, within [min, max]
    autoscale: AutoscaleSpec | None = None

    @field_validator("gpu_overrides")
    @classmethod
    def _overrides_need_the_roofline(
        cls, overrides: dict[str, GpuLatencyOverrides], info: ValidationInfo
    ) -> dict[str, GpuLatencyOverrides]:
        latency, gpu = info.data.get("latency_model"), info.data.get("gpu")
        if latency is not None:
            check_overrides(latency, overrides)
        known = [*presets.GPU_PRESETS, *([gpu.name] if gpu is not None else [])]
        unknown = sorted(set(overrides) - set(known))
        if unknown:  # a misspelt name would silently apply to nothing
            raise ValueError(f"no GPU {unknown[0]!r} (known: {', '.join(dict.fromkeys(known))})")
        return overrides

    @field_validator("autoscale")
    @classmethod
    def _start_within_bounds(
        cls, autoscale: AutoscaleSpec | None, info: ValidationInfo
    ) -> AutoscaleSpec | None:
        replicas = info.data.get("replicas")
        inside = autoscale is None or replicas is None or autoscale.min <= replicas <= autoscale.max
        if not inside:
            raise SubfieldError(
                "min" if replicas < autoscale.min else "max",
                f"replicas ({replicas}) is the count the run starts with: it must lie in "
                f"[min, max] = [{autoscale.min}, {autoscale.max}]",
            )
        return autoscale

    @property
    def gpu_latency_model(self) -> Any:
        """The latency model this cluster's GPU runs: `latency_model` with its overrides."""
        return latency_for_gpu(self.latency_model, self.gpu.name, self.gpu_overrides)

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
        earlier = _earlier(info, "gpu", "tp", "gpu_memory_utilization")
        if earlier is None:
            return model  # an earlier field is invalid and already reported
        gpu, tp, share = earlier
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
        earlier = _earlier(info, "gpu", "tp", "gpu_memory_utilization", "model", "block_size")
        if blocks is not None or earlier is None:
            return blocks  # given, or an earlier field is invalid and already reported
        gpu, tp, share, model, block_size = earlier
        derived = presets.blocks_from_memory(gpu, model, tp, share, block_size)
        if derived == 0:
            raise ValueError(
                "the memory left beside the weights holds no KV block of "
                f"{block_size} tokens; raise gpu_memory_utilization or tp, or set it"
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

    @model_validator(mode="after")
    def _v1_has_no_multi_step(self) -> ContinuousBatchingConfig:
        if self.engine is not None and self.engine.name == "vllm" and self.num_scheduler_steps > 1:
            raise SubfieldError(  # located at the setting: cluster.num_scheduler_steps
                "num_scheduler_steps",
                "vLLM V1 (engine vllm) has no multi-step scheduling; "
                "use engine vllm-0.6 or leave num_scheduler_steps at 1",
            )
        return self

    @model_validator(mode="after")
    def _one_front_end(self) -> ContinuousBatchingConfig:
        # `frontend` (given, or an engine's API server) replaces the latency model's fixed
        # front-end delays: fixed delays changed beside it would be ignored without a word (a
        # changed value, not a set one: a checked or dumped scenario states every default)
        if self.frontend is None:
            return self
        fixed = ("frontend_before_ms", "frontend_after_ms")
        fields = type(self.latency_model).model_fields
        written = [  # (where, value)
            (f"latency_model.{k}", getattr(self.latency_model, k))
            for k in fixed
            if k in fields and getattr(self.latency_model, k) != fields[k].default
        ]
        for gpu, overrides in self.gpu_overrides.items():
            written += [
                (f"gpu_overrides.{gpu}.{k}", getattr(overrides, k))
                for k in fixed
                if getattr(overrides, k) is not None
            ]
        offline = self.engine is not None and self.engine.offline
        # no HTTP front end: a delay written as 0 says just that
        given = [where for where, value in written if not (offline and value == 0)]
        if given and offline:
            raise ValueError(
                f"{given[0]}: an offline engine (cluster.engine offline: true) has no HTTP front "
                "end, so no front-end delay; drop it, or serve (offline: false)"
            )
        if given:
            raise ValueError(
                f"{given[0]}: not used with an API server (cluster.frontend, or the one "
                "cluster.engine sets); state the front end in cluster.frontend, or drop the engine"
            )
        return self

    @model_validator(mode="after")
    def _offline_has_no_api_server(self) -> ContinuousBatchingConfig:
        # an offline engine's front end costs nothing (no HTTP server): a written one would be
        # accepted and replaced by the offline profile's without a word (compared by value: a
        # checked or dumped scenario states the profile's as if written)
        offline = self.engine is not None and self.engine.offline
        if offline and self.frontend not in (None, FrontendSpec(**OFFLINE_FRONTEND)):
            raise SubfieldError(
                "frontend",
                "an offline engine (cluster.engine offline: true) has no API server; drop "
                "cluster.frontend, or serve (offline: false)",
            )
        return self

    @model_validator(mode="after")
    def _scale_needs_efficiencies(self) -> ContinuousBatchingConfig:
        if self.efficiency_scale != 1 and self.latency_model.kind != "roofline":
            raise ValueError(
                "efficiency_scale: scales the roofline latency model's efficiencies; "
                f"the {self.latency_model.kind} model has none"
            )
        return self

    @model_validator(mode="after")
    def _cache_scorers_need_caches(self) -> ContinuousBatchingConfig:
        scorers = getattr(self.router, "scorers", [])
        wanted = [s.name for s in scorers if s.name in CACHE_SCORERS]
        if wanted and not self.prefix_caching:
            raise ValueError(
                f"router: scorer {wanted[0]!r} reads the replicas' prefix caches; "
                "set prefix_caching: true (or use prefix_cache_approx)"
            )
        return self

    @model_validator(mode="after")
    def _mtp_needs_the_models_module(self) -> ContinuousBatchingConfig:
        # MTP drafts with the checkpoint's own prediction module; on a model without one the
        # drafter's cost and acceptance would describe a module that does not exist
        spec, model = self.speculative, self.model
        if spec is not None and spec.method == "mtp" and not getattr(model, "mtp_modules", 0):
            raise SubfieldError(  # located at the setting: cluster.speculative.method
                "speculative.method",
                "mtp drafts with the model's multi-token-prediction module, and model "
                f"{model.name!r} has none (config.json num_nextn_predict_layers); use eagle, "
                "draft_model or ngram, or give the model mtp_modules",
            )
        return self

    @model_validator(mode="after")
    def _moe_layout_fits(self) -> ContinuousBatchingConfig:
        if self.moe_serving is not None:
            try:
                check_layout(self.moe_serving, self.tp, self.model)
                check_expert_activations(self.moe_serving, self.gpu, self.model)
            except SubfieldError as exc:  # located at the setting: cluster.moe_serving.ep
                raise SubfieldError(f"moe_serving.{exc.field}", str(exc)) from None
        if self.num_gpu_blocks is None and self.blocks_per_replica == 0:
            # MLA's latent copies under attention TP, or the attention weights replicated under
            # attention DP, can leave no block where one copy fit
            copies = kv_copies(self.model, self.tp, self.moe_serving)
            replicated = replicated_attention_bytes(self.model, self.moe_serving) / 1e9
            raise ValueError(
                f"the memory left beside the weights holds no KV block of {self.block_size} "
                f"tokens with {copies} copies of each MLA latent (attention TP) and "
                f"{replicated:.1f} GB of attention weights replicated (attention DP); change "
                "moe_serving.attention_dp or raise gpu_memory_utilization"
            )
        return self

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
            self.gpu,
            self.model,
            self.tp,
            self.gpu_memory_utilization,
            self.block_size,
            kv_copies(self.model, self.tp, self.moe_serving),
            replicated_attention_bytes(self.model, self.moe_serving),
        )

    @property
    def total_kv_blocks(self) -> int:
        return self.blocks_per_replica * self.replicas


def _exposed_needs_overlap(config: ContinuousBatchingConfig) -> None:
    """`overlap_exposed_ms` is part of the overlapped CPU time: with serial or multi-step CPU
    time the whole CPU time is already charged, and the linear model runs as given (no CPU
    time applies to it, cpu_time.py), so the setting would do nothing. The value an engine
    profile fills in is left out with an explicit other `cpu_time` (engines.py)."""
    written = "overlap_exposed_ms" in config.model_fields_set
    if not written or config.overlap_exposed_ms is None:
        return
    if config.cpu_time != "overlap":
        raise SubfieldError(
            "overlap_exposed_ms",
            "the part of an overlapped step the overlap cannot hide; cpu_time is "
            f"{config.cpu_time or 'serial'}: set cpu_time: overlap or remove it",
        )
    if config.latency_model.kind != "roofline":
        raise SubfieldError(
            "overlap_exposed_ms",
            f"the {config.latency_model.kind} latency model runs as given, with no CPU time "
            "to overlap: use the roofline or remove it",
        )


def _profile_budget_fits(filled: Any, added: set[str]) -> None:
    """Every running sequence decodes in each iteration, so the sequences must fit the token
    budget (`_decodes_fit_the_budget`). Where one of the two is the engine profile's and the
    other the user's, say which, so a budget written below the profile's sequences is not
    blamed on a `max_num_seqs` the user never wrote (vLLM refuses the pair the same way)."""
    if not isinstance(filled, dict) or len({"max_num_seqs", "max_num_batched_tokens"} & added) != 1:
        return
    budget, seqs = filled.get("max_num_batched_tokens"), filled.get("max_num_seqs")
    numbers = all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (budget, seqs))
    if not numbers or seqs <= budget:
        return  # within the budget, or a bad value its own field reports
    if "max_num_seqs" in added:  # the budget is the user's: blame it
        raise SubfieldError(
            "max_num_batched_tokens",
            f"{budget} is below the engine profile's {seqs} sequences (each decodes a token an "
            f"iteration); write max_num_seqs at {budget} or less as well",
        )
    raise SubfieldError(
        "max_num_seqs",
        f"must not exceed the engine profile's max_num_batched_tokens ({budget}); write "
        f"max_num_batched_tokens at {seqs} or more as well",
    )


def _multi_step_needs_steps(config: ContinuousBatchingConfig) -> None:
    """`cpu_time: multi_step` written with one scheduler step is serial (the CPU time / 1): a
    setting that silently does nothing, so it is refused. From `engine: vllm-0.6` it stays: one
    step is vLLM 0.6's own default (`--num-scheduler-steps 1`, multi-step off)."""
    written = "cpu_time" in config.model_fields_set
    if written and config.cpu_time == "multi_step" and config.num_scheduler_steps == 1:
        raise SubfieldError(  # located at the setting: cluster.cpu_time
            "cpu_time",
            "multi_step amortises the CPU time over num_scheduler_steps iterations, and "
            "num_scheduler_steps is 1 (serial); set num_scheduler_steps > 1 or cpu_time: serial",
        )
