"""Scenario models: immutable, validated descriptions of a study (no SimPy, no pandas here).

Every key is part of the scenario-file contract (docs/scenario.md); every default is the
reference study's value. Models forbid unknown keys so that a typo is an error, not a silently
ignored setting.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)

from simsched.config.arrival_kinds import ArrivalSpec
from simsched.config.autoscale import replica_slots
from simsched.config.chargeback import ChargebackSpec, chargeback_problem
from simsched.config.cluster import ClusterConfig, TokenServerConfig
from simsched.config.fairness_metrics import FairnessMetrics, reactive_tenant
from simsched.config.flow_control import FlowControl
from simsched.config.length_specs import LengthSpec
from simsched.config.limits import Limits
from simsched.config.load_scale import unscalable_tenant
from simsched.config.names import POLICY_NAMES
from simsched.config.pools import check_pool_slots, check_tenant_pools
from simsched.config.spec_base import PositiveFloat
from simsched.config.trace_specs import TenantTrace

MAX_LOAD_SCALE = 1000.0  # beyond it, a request budget or a clock bound stops the run anyway

PriorityClass = Literal["interactive", "batch"]


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Quota(Model):
    """A token bucket in service tokens: it starts full and refills continuously."""

    burst_service_tokens: PositiveFloat
    sustained_service_tokens_per_sec: PositiveFloat


def _at_least_a_millionth(weight: float) -> float:
    if weight < 1e-6:
        raise ValueError("must be at least 1e-06")
    return weight


class SystemPrompt(Model):
    """A system prompt of `tokens` tokens in front of each request; one of `groups` distinct ones,
    drawn per request (workload/prefix_sources.py)."""

    tokens: Annotated[int, Field(gt=0, le=2**24)]
    groups: Annotated[int, Field(gt=0, le=1_000_000)] = 1


def _printable(text: str) -> str:
    # A NUL or another control character would be written into traces and CSV files that
    # simsched (and other tools) then cannot read back.
    if any(ord(c) < 32 or 127 <= ord(c) <= 159 for c in text):  # C0, DEL and C1 (\x80-\x9f)
        raise ValueError(
            "must not contain control characters (a NUL, a tab, a line break, U+0080-U+009F)"
        )
    return text


class Tenant(Model):
    id: Annotated[str, Field(min_length=1, pattern=r"\S"), AfterValidator(_printable)]
    # Bounded so that weight-normalised service stays a finite float.
    weight: Annotated[
        float, Field(gt=0, le=1e6, allow_inf_nan=False), AfterValidator(_at_least_a_millionth)
    ] = 1.0
    priority: PriorityClass = "interactive"
    quota: Quota | None = None
    arrivals: ArrivalSpec | None = None
    trace: TenantTrace | None = None  # replay a trace: every row is this tenant's
    prefill_tokens: LengthSpec | None = None
    decode_tokens: LengthSpec | None = None
    prefix: SystemPrompt | None = None  # a shared system prompt, for prefix caching
    # the model it calls (default: the only one served) and the pools it may use
    # (default: every pool serving that model); config/pools.py, docs/fleets.md
    model: Annotated[str, Field(min_length=1)] | None = None
    pools: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _generated_requests_need_sizes(self) -> Tenant:
        if self.arrivals is not None and self.trace is not None:
            raise ValueError("give either arrivals or trace, not both")
        if self.arrivals is not None:
            for key in ("prefill_tokens", "decode_tokens"):
                if getattr(self, key) is None:
                    raise ValueError(f"{key} is required when arrivals are given")
        return self


class TraceSource(Model):
    """Requests replayed from a CSV file; `path` is relative to the scenario file."""

    path: Annotated[str, Field(min_length=1)]


class Scheduler(Model):
    policy: str = "service_token_drr"
    # Bounded so that service tokens (weights x token counts) stay well inside int64.
    prefill_weight: Annotated[int, Field(gt=0, le=1_000_000)] = 1
    decode_weight: Annotated[int, Field(gt=0, le=1_000_000)] = 4
    base_quantum_tokens: Annotated[int, Field(gt=0, le=2**40)] = 1200

    @model_validator(mode="after")
    def _known_policy(self) -> Scheduler:
        if self.policy not in POLICY_NAMES:
            known = ", ".join(sorted(POLICY_NAMES))
            raise ValueError(f"unknown policy {self.policy!r} (known: {known})")
        return self


Watermark = Annotated[float, Field(gt=0, le=1)]
ShedReason = Literal["shed_kv_watermark", "shed_queue_wait_slo", "shed_tenant_token_quota"]


class Admission(Model):
    enabled: bool = True
    evaluate_at: Literal["scheduler_tick", "arrival"] = "scheduler_tick"
    interactive_kv_watermark: Watermark = 0.90
    batch_kv_watermark: Watermark = 0.65
    max_interactive_wait_ms: PositiveFloat = 420.0
    max_batch_wait_ms: PositiveFloat = 3500.0
    # The HTTP status a shed request gets, per reason; gateways often answer overload with 503.
    shed_status_codes: dict[ShedReason, Annotated[int, Field(ge=400, le=599)]] = Field(
        default_factory=dict
    )

    @model_validator(mode="after")
    def _batch_below_interactive(self) -> Admission:
        if self.batch_kv_watermark > self.interactive_kv_watermark:
            raise ValueError("batch_kv_watermark must not exceed interactive_kv_watermark")
        return self


class Timeline(Model):
    """Sampling of cluster and queue state over time (timeline.csv, report plots)."""

    enabled: bool = True
    # Sampling period; null chooses one giving about 2000 samples over the workload's span.
    # At least a microsecond, so that every sample moves the clock on.
    interval_ms: Annotated[float, Field(ge=0.001, allow_inf_nan=False)] | None = None


class Slo(Model):
    """Per-class targets. A request is good (counts toward goodput) when it meets its class's
    TTFT target and, where one is set, its TPOT target (mean time per output token)."""

    interactive_ttft_ms: PositiveFloat = 500.0
    batch_ttft_ms: PositiveFloat = 10_000.0
    interactive_tpot_ms: PositiveFloat | None = None
    batch_tpot_ms: PositiveFloat | None = None


MAX_SEED = 2**62


class Variant(Model):
    name: Annotated[str, Field(min_length=1)]
    set: dict[str, Any] = Field(default_factory=dict)


class Scenario(Model):
    name: Annotated[str, Field(min_length=1)] = "scenario"
    description: str = ""
    # below 2**62: seeds are int64 in result tables, and a study adds up to limits.max_seeds
    seed: Annotated[int, Field(ge=0, lt=MAX_SEED)] = 0
    # every tenant's arrival rate times this (config/load_scale.py); traces are time-scaled
    load_scale: Annotated[float, Field(gt=0, le=MAX_LOAD_SCALE, allow_inf_nan=False)] = 1.0
    tenants: Annotated[list[Tenant], Field(min_length=1)]
    trace: TraceSource | None = None
    cluster: ClusterConfig = Field(default_factory=TokenServerConfig)
    scheduler: Scheduler = Field(default_factory=Scheduler)
    admission: Admission = Field(default_factory=Admission)
    flow_control: FlowControl | None = None  # llm-d flow control (docs/flow_control.md)
    slo: Slo = Field(default_factory=Slo)
    timeline: Timeline = Field(default_factory=Timeline)
    limits: Limits = Field(default_factory=Limits)
    variants: list[Variant] = Field(default_factory=list)
    # per-tenant cost and energy (config/chargeback.py); None: not measured, outputs unchanged
    chargeback: ChargebackSpec | None = None
    # dispersion and blast-radius measures (config/fairness_metrics.py); None: not computed
    fairness: FairnessMetrics | None = None
    # The folder relative paths in the file are read from (not a setting: `load_scenario` sets
    # it), so that `with_overrides` resolves a new relative path exactly as `--set` does.
    # None for a scenario built in Python: its relative paths stay relative to the working folder.
    _folder: Path | None = PrivateAttr(default=None)

    @field_validator("tenants")
    @classmethod
    def _unique_tenant_ids(cls, tenants: list[Tenant]) -> list[Tenant]:
        _reject_duplicates([t.id for t in tenants], "tenant id")
        return tenants

    @model_validator(mode="after")
    def _someone_sends_requests(self) -> Scenario:
        if self.trace is None and all(t.arrivals is None and t.trace is None for t in self.tenants):
            raise ValueError("no tenant sends requests (no arrivals, no trace, no scenario trace)")
        return self

    @model_validator(mode="after")
    def _flow_priorities_name_tenants(self) -> Scenario:
        flow, known = self.flow_control, set(self.tenant_ids())
        unknown = sorted(set(flow.priorities) - known) if flow is not None else []
        if unknown:
            raise ValueError(f"flow_control.priorities: unknown tenant {unknown[0]!r}")
        if flow is not None:
            _check_band_priorities(flow, self.tenant_ids())
        return self

    @model_validator(mode="after")
    def _load_scale_applies(self) -> Scenario:
        why = unscalable_tenant(self) if self.load_scale != 1 else None
        if why is not None:
            raise ValueError(f"load_scale {self.load_scale:g} cannot apply to {why}")
        return self

    @model_validator(mode="after")
    def _replicas_within_limits(self) -> Scenario:
        replicas, most = getattr(self.cluster, "replicas", 1), self.limits.max_replicas
        if replicas > most:
            raise ValueError(
                f"cluster.replicas ({replicas:,}) exceeds limits.max_replicas ({most:,}); "
                "raise that limit if the machine can simulate them"
            )
        autoscale = getattr(self.cluster, "autoscale", None)
        # an autoscaler builds 2 x max - min replica slots up front, each with its memory
        slots = replica_slots(self.cluster) if autoscale is not None else 0
        if slots > most:
            raise ValueError(
                f"cluster.autoscale.max ({autoscale.max:,}) needs {slots:,} replica slots, more "
                f"than limits.max_replicas ({most:,}); raise that limit if the machine can "
                "simulate them"
            )
        check_pool_slots(getattr(self.cluster, "pools", None) or [], most)
        return self

    @model_validator(mode="after")
    def _chargeback_applies(self) -> Scenario:
        problem = chargeback_problem(self.chargeback, self.cluster)
        if problem is not None:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _blast_radius_replays(self) -> Scenario:
        # sessions and closed-loop clients react to what they are served: without the noisiest
        # tenant they would not send the same requests, so there is no like-for-like run
        reactive = [t.id for t in self.tenants if reactive_tenant(t)]
        if self.fairness is not None and self.fairness.blast_radius and reactive:
            raise ValueError(
                f"fairness.blast_radius: tenant {reactive[0]!r} has sessions or a closed loop, "
                "which react to what they are served; a run without the noisiest tenant would "
                "not send the same requests"
            )
        return self

    @model_validator(mode="after")
    def _tenants_reach_their_pools(self) -> Scenario:
        check_tenant_pools(self.cluster, self.tenants)
        return self

    @field_validator("variants")
    @classmethod
    def _unique_variant_names(cls, variants: list[Variant]) -> list[Variant]:
        _reject_duplicates([v.name for v in variants], "variant name")
        return variants

    def with_overrides(self, overrides: dict[str, Any] | list[str]) -> Scenario:
        """A copy with settings changed (`{"cluster.replicas": 3}` or `["cluster.replicas=3"]`),
        validated exactly as `--set` is; a bad value raises `InputError`."""
        from simsched.config.loading import override_scenario  # loading imports this module

        return override_scenario(self, overrides)

    @property
    def folder(self) -> Path | None:
        """The scenario file's folder (None: not read from a file)."""
        return self._folder

    def located_in(self, folder: Path | None) -> Scenario:
        """This scenario, remembering the folder its relative paths are read from."""
        self._folder = folder
        return self

    def tenant_ids(self) -> list[str]:
        return [t.id for t in self.tenants]


def _reject_duplicates(names: list[str], what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"duplicate {what} {name!r}")
        seen.add(name)


def _check_band_priorities(flow: Any, tenant_ids: list[str]) -> None:
    """`bands[].priority` and `band_selection.weights` name a priority some flow has: a limit or
    weight for a band no tenant is in would never apply (a silent typo)."""
    from simsched.config.classes import CLASS_NAMES
    from simsched.config.flow_control import CRITICALITY

    given = [flow.flow_priority(t, name) for t in tenant_ids for name in CLASS_NAMES]
    known = {CRITICALITY[g] if isinstance(g, str) else g for g in given}
    named = [("flow_control.bands", band.priority) for band in flow.bands]
    named += [("flow_control.band_selection.weights", p) for p in flow.band_selection.weights]
    for field, priority in named:
        if priority not in known:
            bands = ", ".join(str(p) for p in sorted(known, reverse=True))
            raise ValueError(f"{field}: no flow has priority {priority} (the bands are {bands})")
