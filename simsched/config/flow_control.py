"""The `flow_control` section: llm-d-style flow control at the gateway (docs/flow_control.md).

Absent, the gateway is today's two lanes and `scheduler.policy`, unchanged. Present, queued
requests wait in priority bands (one per distinct priority), a fairness policy picks the flow
(a tenant within a band) and an ordering policy the request within the flow; a saturation
detector and a usage-limit policy hold dispatch back; guardrails and a queue TTL shed.

Defaults follow llm-d's code (gateway-api-inference-extension commit 2b19f01e, the last with
`pkg/epp/flowcontrol`, and llm-d-router commit ebab6879), cited per field in the docs.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from simsched.config.spec_base import NonNegativeFloat, PositiveFloat

# llm-d's criticality levels as band priorities (higher first); llm-d calls any priority below
# 0 sheddable (pkg/epp/util/request.IsSheddable), so `sheddable` is -1.
CRITICALITY = {"critical": 1, "standard": 0, "sheddable": -1}
# Today's classes as bands when no priority is given: interactive before batch.
CLASS_PRIORITY = {"interactive": 1, "batch": 0}

Priority = (
    Annotated[int, Field(ge=-(2**31), le=2**31 - 1)] | Literal["critical", "standard", "sheddable"]
)
Count = Annotated[int, Field(gt=0, le=2**40)]
ClassName = Literal["interactive", "batch"]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class BandSelection(_Spec):
    """Which band is served next: `strict` (highest priority first, always) or `wfq` (weighted
    fair queueing in service tokens across bands while saturation >= `activate_at`)."""

    policy: Literal["strict", "wfq"] = "strict"
    weights: dict[int, PositiveFloat] = Field(default_factory=dict)  # per priority; default 1
    activate_at: Annotated[float, Field(ge=0, le=1)] = 0.0


class Las(_Spec):
    """Least attained service: weighted tokens `prefill + output_weight * decode`, halved every
    `half_life_ms` (0: no decay). llm-d: weightOutputToken = 2, lasHalfLifeSeconds = 60."""

    output_weight: Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)] = 2.0
    half_life_ms: NonNegativeFloat = 60_000.0


class Saturation(_Spec):
    """llm-d's saturation detectors. `utilization`: mean over replicas of
    max(waiting / queue_depth_threshold, kv_used / kv_total / kv_cache_util_threshold);
    `concurrency`: in-flight (running + waiting) requests, or KV-held tokens in `tokens` mode,
    over replicas x max. The gateway reads the replicas at most once per `refresh_ms`.
    `none` (what an absent section means): the pool never reads as saturated."""

    detector: Literal["none", "utilization", "concurrency"]
    queue_depth_threshold: Annotated[int, Field(gt=0, le=2**31)] = 5
    kv_cache_util_threshold: Annotated[float, Field(gt=0, le=1)] = 0.8
    mode: Literal["requests", "tokens"] = "requests"
    max_concurrency: Count = 100
    max_token_concurrency: Count = 1_000_000
    refresh_ms: PositiveFloat = 50.0
    # simsched's addition (llm-d lists hysteresis as future work): a gated band opens again
    # only when saturation falls below its ceiling minus this margin.
    hysteresis: Annotated[float, Field(ge=0, le=1)] = 0.0

    @model_validator(mode="after")
    def _settings_need_a_detector(self) -> Saturation:
        # by value, not by fields set: a checked copy re-validates every field from a dump
        fields = type(self).model_fields
        changed = [n for n in fields if n != "detector" and getattr(self, n) != fields[n].default]
        if self.detector == "none" and changed:
            raise ValueError(f"detector none reads nothing: {', '.join(changed)} would do nothing")
        return self


NO_SATURATION = Saturation(detector="none")


class UsageLimit(_Spec):
    """Per-band dispatch ceilings on saturation (a band dispatches while saturation < ceiling):
    `static` (`threshold` for all), `priority_hold_back` (rank-linear from `max_ceiling` down to
    `min_ceiling`), `soft_reflective` (1 - i * saturation / (N - 1), alternating when gated)."""

    policy: Literal["static", "priority_hold_back", "soft_reflective"] = "static"
    threshold: Annotated[float, Field(gt=0, le=1)] = 1.0
    min_ceiling: Annotated[float, Field(ge=0, lt=1)] = 0.0
    max_ceiling: Annotated[float, Field(gt=0, le=1)] = 1.0

    @model_validator(mode="after")
    def _ordered(self) -> UsageLimit:
        if self.min_ceiling > self.max_ceiling:
            raise ValueError("min_ceiling must not exceed max_ceiling")
        return self


class BandLimits(_Spec):
    """A band's guardrails: queued requests and bytes (0: no limit)."""

    priority: int
    max_requests: Annotated[int, Field(ge=0, le=2**40)] = 0
    max_bytes: Annotated[int, Field(ge=0, le=2**62)] = 0


class FlowControl(_Spec):
    # tenant id -> priority (an integer, higher first, or a criticality), for all its requests
    # or per request class ({interactive: P, batch: P}); what is not named takes its class's
    # band (interactive 1, batch 0): today's two lanes
    priorities: dict[str, Priority | dict[ClassName, Priority]] = Field(default_factory=dict)
    band_selection: BandSelection = Field(default_factory=BandSelection)
    # `scheduler`: today's `scheduler.policy` picks the flow, one instance per band (or, when
    # the bands are exactly today's two classes, one over both, as without flow control)
    fairness: Literal["global_strict", "round_robin", "las", "scheduler"] = "global_strict"
    las: Las = Field(default_factory=Las)
    ordering: Literal["fcfs", "edf", "slo_deadline"] = "fcfs"
    saturation: Saturation = NO_SATURATION  # frozen: one shared instance is safe
    usage_limit: UsageLimit = Field(default_factory=UsageLimit)
    max_requests: Annotated[int, Field(ge=0, le=2**40)] = 0  # queued, all bands; 0: none
    max_bytes: Annotated[int, Field(ge=0, le=2**62)] = 0
    bands: list[BandLimits] = Field(default_factory=list)
    # a request's bytes: its prompt tokens times this (about 4 characters a token in English)
    bytes_per_prompt_token: PositiveFloat = 4.0
    request_ttl_ms: NonNegativeFloat = 0.0  # 0: no TTL (llm-d's built-in default is 60 s)
    no_endpoint_request_ttl_ms: NonNegativeFloat | None = None  # None: request_ttl_ms
    # the pool has no endpoints before this instant (a scale-from-zero start): dispatch holds
    pool_empty_until_ms: NonNegativeFloat = 0.0

    @model_validator(mode="after")
    def _unique_band_limits(self) -> FlowControl:
        priorities = [band.priority for band in self.bands]
        if len(set(priorities)) != len(priorities):
            raise ValueError("bands: a priority is listed twice")
        return self

    def flow_priority(self, tenant_id: str, priority_class: str) -> int | str:
        """The priority (or criticality) of a tenant's requests of one class."""
        given = self.priorities.get(tenant_id)
        if isinstance(given, dict):
            given = given.get(priority_class)
        return CLASS_PRIORITY[priority_class] if given is None else given

    def ttl_ms(self, pool_empty: bool) -> float:
        if pool_empty and self.no_endpoint_request_ttl_ms is not None:
            return self.no_endpoint_request_ttl_ms
        return self.request_ttl_ms
