"""`cluster.autoscale`: a horizontal autoscaler for a group of replicas (no SimPy here).

The controller (`sim/cluster/autoscaler.py`) follows the Kubernetes Horizontal Pod Autoscaler:
every `interval_s` it reads one metric over the replicas that serve, proposes
`ceil(current x metric / target)` replicas unless the ratio is within `tolerance` of 1, clamps
to [min, max], and scales down only to the largest proposal of the last
`scale_down_cooldown_s` (the HPA's scale-down stabilisation window). A new replica takes traffic
after its warm-up: `scale_up_delay_s`, or with `cold_start` the weights' bytes over a load
bandwidth plus an engine start time. docs/autoscaling.md has the formulas and the sources.

The spec names no pool: the merger of `cluster.pools` attaches one per pool.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from simsched.config.spec_base import (
    NonNegativeFloat,
    PositiveFloat,
    Size,
    Spec,
    SubfieldError,
)

# What the controller can read (docs/autoscaling.md, "Metrics"): requests waiting per serving
# replica (at the replicas and at the gateway), mean KV blocks in use over blocks, mean running
# sequences per replica, and the p90 TTFT of the first tokens of the last interval.
AUTOSCALE_METRICS = ("queue_depth", "kv_utilization", "running", "ttft_p90_ms")

# Sources in docs/autoscaling.md, "Cold start": a vLLM cold start measured phase by phase
# (route179.dev, 2026-06-30, "Optimizing vLLM cold start with model streaming and compile
# caching"): 20+ GB of weights loaded in ~142 s from local NVMe (about 0.14 GB/s without
# concurrent streaming), torch.compile ~39 s.
DEFAULT_LOAD_GBPS = 0.14
DEFAULT_ENGINE_START_S = 39.0
# The HPA's defaults (kubernetes.io, "Horizontal Pod Autoscaling"): a 15 s sync period, a
# tolerance of 0.1 and a 300 s scale-down stabilisation window.
DEFAULT_INTERVAL_S = 15.0
DEFAULT_TOLERANCE = 0.1
DEFAULT_SCALE_DOWN_COOLDOWN_S = 300.0


class ColdStart(Spec):
    """Warm-up = weight bytes / (load_gbps x 1e9) + engine_start_s."""

    load_gbps: PositiveFloat = DEFAULT_LOAD_GBPS
    engine_start_s: NonNegativeFloat = DEFAULT_ENGINE_START_S


def _auto_is_the_defaults(value: Any) -> Any:
    """`cold_start: auto` is the measured defaults; a mapping overrides some of them."""
    if isinstance(value, str) and value != "auto":
        raise ValueError("expected auto or a mapping {load_gbps, engine_start_s}")
    return {} if value == "auto" else value


class AutoscaleSpec(Spec):
    min: Size
    max: Size
    metric: Literal["queue_depth", "kv_utilization", "running", "ttft_p90_ms"]
    target: PositiveFloat
    interval_s: PositiveFloat = DEFAULT_INTERVAL_S
    tolerance: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = DEFAULT_TOLERANCE
    scale_up_delay_s: NonNegativeFloat | None = None
    cold_start: Annotated[ColdStart | None, BeforeValidator(_auto_is_the_defaults)] = None
    scale_down_cooldown_s: NonNegativeFloat = DEFAULT_SCALE_DOWN_COOLDOWN_S

    @model_validator(mode="after")
    def _consistent(self) -> AutoscaleSpec:
        if self.min > self.max:
            raise SubfieldError("min", f"min ({self.min}) must not exceed max ({self.max})")
        if self.scale_up_delay_s is not None and self.cold_start is not None:
            raise SubfieldError("cold_start", "give scale_up_delay_s or cold_start, not both")
        return self

    def warmup_s(self, weight_bytes: int) -> float:
        """Seconds from the decision to add a replica until it takes traffic."""
        if self.scale_up_delay_s is not None:
            return self.scale_up_delay_s
        cold = ColdStart() if self.cold_start is None else self.cold_start
        return weight_bytes / (cold.load_gbps * 1e9) + cold.engine_start_s


def replica_slots(config: Any) -> int:
    """Replica slots a cluster builds: the pool's count (1 for a model without replicas), or
    every slot an autoscaler may fill, 2 max - min (a draining slot and its replacement may
    coexist: sim/cluster/replica_group.py); for `cluster.pools`, the sum over the pools."""
    pools = getattr(config, "pools", None)
    if pools is not None:
        return sum(replica_slots(pool) for pool in pools)
    autoscale = getattr(config, "autoscale", None)
    if autoscale is None:
        return getattr(config, "replicas", 1)
    return 2 * autoscale.max - autoscale.min
