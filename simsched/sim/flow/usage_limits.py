"""Usage-limit policies: a dispatch ceiling per band; a band dispatches while saturation < its
ceiling (llm-d's `usagelimits` plugins; bands by rank i, 0 the highest, N of them).

- `static`: `threshold` for every band (llm-d's default, 1.0: gate only at saturation >= 1).
- `priority_hold_back` (rank domain, linear): c_i = max - i * (max - min) / (N - 1).
- `soft_reflective`: band 0 gets 1.0; band i > 0 the reflective ceiling
  r_i = 1 - i * s / (N - 1). Open (1.0) while s < r_i; shut (0.0) at s >= 1; otherwise it
  alternates: with s >= 1 - s, period = max(1, round(s / (1 - s))), one tick shared by all
  bands counted on each such call, open on the calls whose tick is a multiple of the period.
A single band is always open (1.0; `priority_hold_back`: its max ceiling).
"""

from __future__ import annotations

from typing import Protocol

from simsched.config.flow_control import UsageLimit


class UsageLimitPolicy(Protocol):
    def __init__(self, spec: UsageLimit) -> None: ...

    def ceilings(self, saturation: float, bands: int) -> list[float]: ...


class StaticLimit:
    def __init__(self, spec: UsageLimit) -> None:
        self.threshold = spec.threshold

    def ceilings(self, saturation: float, bands: int) -> list[float]:
        return [self.threshold] * bands


class PriorityHoldBack:
    def __init__(self, spec: UsageLimit) -> None:
        self.low, self.high = spec.min_ceiling, spec.max_ceiling

    def ceilings(self, saturation: float, bands: int) -> list[float]:
        if bands == 1:
            return [self.high]
        step = (self.high - self.low) / (bands - 1)
        return [self.high - i * step for i in range(bands)]


class SoftReflectiveCeiling:
    def __init__(self, spec: UsageLimit) -> None:
        self.tick = 0

    def ceilings(self, saturation: float, bands: int) -> list[float]:
        if bands == 1:
            return [1.0]
        s = saturation
        is_open = False
        if 1.0 - s <= s < 1.0:  # the alternating regime
            period = max(1, round(s / (1.0 - s + 1e-9)))
            self.tick += 1
            is_open = self.tick % period == 0
        result = [1.0]
        for i in range(1, bands):
            reflective = 1.0 - i * s / (bands - 1)
            if s < reflective:
                result.append(1.0)
            elif s >= 1.0:
                result.append(0.0)
            else:
                result.append(1.0 if is_open else 0.0)
        return result


USAGE_LIMITS: dict[str, type[UsageLimitPolicy]] = {
    "static": StaticLimit,
    "priority_hold_back": PriorityHoldBack,
    "soft_reflective": SoftReflectiveCeiling,
}


def build_usage_limit(spec: UsageLimit) -> UsageLimitPolicy:
    return USAGE_LIMITS[spec.policy](spec)


class BandGate:
    """Which bands may dispatch now: saturation < ceiling, with hysteresis: a gated band opens
    again only when saturation < ceiling - hysteresis."""

    def __init__(self, policy: UsageLimitPolicy, bands: int, hysteresis: float) -> None:
        self.policy = policy
        self.bands = bands
        self.hysteresis = hysteresis
        self.gated = [False] * bands

    def open_bands(self, saturation: float) -> list[bool]:
        ceilings = self.policy.ceilings(saturation, self.bands)
        margin = self.hysteresis
        for band, ceiling in enumerate(ceilings):
            limit = ceiling - margin if self.gated[band] else ceiling
            self.gated[band] = saturation >= limit
        return [not gated for gated in self.gated]
