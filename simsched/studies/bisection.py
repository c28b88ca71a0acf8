"""A plan's search: bisection over the candidates, its answer in words, and a check afterwards.

Bisection assumes that meeting the SLOs is monotone in the knob: met from some candidate on
(a capacity knob, minimized) or up to some candidate (a load knob, maximized). After the search
every probe is checked for that monotonicity, and the result says plainly when it fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simsched.studies.knob import Number
from simsched.studies.slo import Slo


@dataclass(frozen=True)
class Probe:
    value: Number
    met: bool
    metrics: dict[str, float | None]


@dataclass
class PlanResult:
    knob: str
    variant: str
    maximize: bool
    values: list[Number]
    slos: list[Slo]
    answer: Number | None = None
    probes: list[Probe] = field(default_factory=list)
    message: str = ""
    warnings: list[str] = field(default_factory=list)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "probes": [{"value": p.value, "met": p.met, "metrics": p.metrics} for p in self.probes],
            "knob": self.knob,
            "variant": self.variant,
            "direction": "maximize" if self.maximize else "minimize",
            "slos": [slo.text for slo in self.slos],
            "message": self.message,
            "warnings": self.warnings,
        }


def search(
    result: PlanResult,
    probe_value: Callable[[Number], Probe],
    on_probe: Callable[[Probe], None] | None,
) -> None:
    """Fill in `result`'s answer, probes and message; each candidate is probed at most once."""
    # candidates ordered so that the SLOs are met from some index on (bisection's invariant)
    order = result.values[::-1] if result.maximize else result.values
    cache: dict[int, Probe] = {}

    def good(index: int) -> bool:
        if index not in cache:
            cache[index] = probe_value(order[index])
            result.probes.append(cache[index])
            if on_probe:
                on_probe(cache[index])
        return cache[index].met

    last = len(order) - 1
    if not good(last):
        result.message = _nothing_meets(result, cache[last])
        return
    bad, found = (-1, 0) if good(0) else (0, last)  # order[found] meets, order[bad] does not
    while found - bad > 1:
        middle = (bad + found) // 2
        bad, found = (bad, middle) if good(middle) else (middle, found)
    result.answer = order[found]
    result.message = _found(result, found, cache)


def _found(result: PlanResult, found: int, cache: dict[int, Probe]) -> str:
    goal = "largest" if result.maximize else "smallest"
    text = f"the {goal} {result.knob} meeting every SLO is {result.answer}"
    if found == 0:
        end = "top" if result.maximize else "bottom"
        return f"{text} (the {end} of the range: the SLOs may be met beyond it)"
    # bisection ends on adjacent candidates, both probed: the answer meets, the one before misses
    neighbour = cache[found - 1]
    assert cache[found].met and not neighbour.met
    failing = _failing(result.slos, neighbour)
    return f"{text}; at {neighbour.value} the SLOs are missed ({failing})"


def _nothing_meets(result: PlanResult, probe: Probe) -> str:
    lo, hi = result.values[0], result.values[-1]
    return (
        f"no value of {result.knob} in {lo}..{hi} meets every SLO; even at {probe.value}: "
        f"{_failing(result.slos, probe)}"
    )


def _failing(slos: list[Slo], probe: Probe) -> str:
    missed = [s for s in slos if not s.met(probe.metrics[s.key])]
    return ", ".join(f"{s.key} = {probe.metrics[s.key]} (want {s.op} {s.limit:g})" for s in missed)


def monotonicity_warnings(result: PlanResult) -> list[str]:
    """Plain words for every way the probes contradict the monotonicity bisection assumes."""
    probes = sorted(result.probes, key=lambda p: p.value)
    warnings = []
    met = [p.met for p in probes]
    if met != sorted(met, reverse=result.maximize):
        seen = ", ".join(f"{p.value}: {'met' if p.met else 'missed'}" for p in probes)
        warnings.append(
            f"meeting the SLOs is not monotone in {result.knob} over the probes ({seen}); "
            "the answer may not be the boundary"
        )
    for slo in result.slos:
        series = [p.metrics[slo.key] for p in probes if p.metrics[slo.key] is not None]
        if series not in (sorted(series), sorted(series, reverse=True)):
            shown = ", ".join(f"{p.value}: {p.metrics[slo.key]}" for p in probes)
            warnings.append(f"{slo.key} is not monotone in {result.knob} over the probes ({shown})")
    return warnings
