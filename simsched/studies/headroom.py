"""The headroom of a plan's answer: the largest `load_scale` at which the answer still meets
every SLO, by one bisection over LOAD_SCALES at the answer (its `--over` values and knob value
fixed, the same seeds and decision rule as the plan).

The interval is the pair of adjacent candidates the bisection ends on: the largest scale that
meets and the next one, which misses. Scales run from the scenario's own `load_scale` to
HEADROOM_TOP times it, in steps of HEADROOM_STEP of it; met at the top, the headroom is "at
least" the top.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simsched.studies.bisection import Bisection, PlanResult, Probe
from simsched.studies.plan_numbers import share_text
from simsched.studies.slo import Slo

KNOB = "load_scale"
HEADROOM_TOP = 2.0
HEADROOM_STEP = 0.05


@dataclass
class Headroom:
    base: float  # the scenario's own load_scale
    met: float | None  # the largest scale that meets every SLO (None: not even the base)
    missed: float | None  # the next candidate above, which misses (None: met at the top)
    probes: list[Probe]

    @property
    def text(self) -> str:
        if self.met is None:
            return f"headroom: none: the answer misses the SLOs at load_scale {self.base:g}"
        growth = share_text(self.met / self.base - 1, signed=True)
        if self.missed is None:
            return (
                f"headroom: at least {growth} load (load_scale {self.met:g}, the top of the "
                "search, meets every SLO)"
            )
        return (
            f"headroom: {growth} load; load_scale in [{self.met:g}, {self.missed:g}): "
            f"{self.met:g} meets every SLO, {self.missed:g} misses"
        )

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "knob": KNOB,
            "base": self.base,
            "met": self.met,
            "missed": self.missed,
            "probes": [p.to_json_dict() for p in self.probes],
        }


def load_scales(base: float) -> list[float]:
    steps = round((HEADROOM_TOP - 1) / HEADROOM_STEP)
    return [float(f"{base * (1 + i * HEADROOM_STEP):.12g}") for i in range(steps + 1)]


def headroom_search(base: float, combo: tuple, variant: str, slos: list[Slo]) -> Bisection:
    """The bisection, for the plan's runner; its probes run with `combo` (the answer's values)."""
    result = PlanResult(KNOB, variant, True, load_scales(base), slos, combo=combo)
    return Bisection(result)


def headroom_of(search: Bisection, base: float) -> Headroom:
    search.finish()
    result = search.result
    if result.answer is None:
        return Headroom(base, None, None, result.probes)
    above = [p.value for p in result.probes if not p.met and p.value > result.answer]
    return Headroom(base, result.answer, min(above, default=None), result.probes)
