"""Band selection: the order in which bands are offered a dispatch.

- `strict` (llm-d's only order): highest priority first, always, so a busy high band starves
  the bands below it.
- `wfq`: weighted fair queueing across bands while saturation >= `activate_at` (strict below
  it). Each band counts the service tokens dispatched from it over its weight; the backlogged
  band with the least goes first (ties: higher priority). A band that becomes backlogged again
  starts at the least count among the backlogged ones (as VTC lifts a returning tenant), so an
  idle band banks no credit.
"""

from __future__ import annotations

from typing import Protocol

from simsched.config.flow_control import BandSelection
from simsched.sim.flow.bands import BandPlan


class BandSelectionPolicy(Protocol):
    def order(self, backlogged: list[int], saturation: float) -> list[int]: ...

    def dispatched(self, band: int, service_tokens: float) -> None: ...


class StrictBands:
    def order(self, backlogged: list[int], saturation: float) -> list[int]:
        return backlogged  # already highest first

    def dispatched(self, band: int, service_tokens: float) -> None:
        pass


class WeightedFairBands:
    def __init__(self, plan: BandPlan, spec: BandSelection) -> None:
        self.weights = [spec.weights.get(p, 1.0) for p in plan.priorities]
        self.activate_at = spec.activate_at
        self.counts = [0.0] * plan.count
        self.was_backlogged = [False] * plan.count

    def order(self, backlogged: list[int], saturation: float) -> list[int]:
        self._lift_returning(backlogged)
        if saturation < self.activate_at:
            return backlogged
        return sorted(backlogged, key=lambda band: (self.counts[band], band))

    def dispatched(self, band: int, service_tokens: float) -> None:
        self.counts[band] += service_tokens / self.weights[band]

    def _lift_returning(self, backlogged: list[int]) -> None:
        active = [b for b in backlogged if self.was_backlogged[b]]
        floor = min((self.counts[b] for b in active), default=None)
        now_backlogged = [False] * len(self.counts)
        for band in backlogged:
            now_backlogged[band] = True
            if not self.was_backlogged[band] and floor is not None:
                self.counts[band] = max(self.counts[band], floor)
        self.was_backlogged = now_backlogged


def build_band_selection(plan: BandPlan, spec: BandSelection) -> BandSelectionPolicy:
    return WeightedFairBands(plan, spec) if spec.policy == "wfq" else StrictBands()
