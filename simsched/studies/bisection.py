"""A plan's search: bisection over the candidates, its answer in words, and a check afterwards.

Bisection assumes that meeting the SLOs is monotone in the knob: met from some candidate on
(a capacity knob, minimized) or up to some candidate (a load knob, maximized). `Bisection` is a
stepper, so that the plan can run the probes several searches want (one per `--over`
combination), or several points of one interval, at once: with one probe a round it is the
classic order (HI, then LO, then halving); with more, free slots probe more points of the
interval (with LO, and in place of each halving). The answer is the same for a monotone metric
whatever the width; for one that is not monotone, the probes run, and so the boundary found,
can depend on `--jobs` (the warning after the search says when the probes disagree). After the
search every probe is checked for that monotonicity, and the result says plainly when it fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simsched.results.confidence import Estimate
from simsched.results.metric_ranges import rounded_interval
from simsched.studies.knob import Number
from simsched.studies.plan_numbers import rounded, value_text
from simsched.studies.slo import Slo


@dataclass(frozen=True)
class Probe:
    value: Number
    met: bool
    metrics: dict[str, float | None]  # per SLO key: the mean across seeds (the value, one seed)
    estimates: dict[str, Estimate] = field(default_factory=dict)  # per SLO key, across seeds
    margins: dict[str, float | None] = field(default_factory=dict)  # per SLO key, by the rule
    verdicts: dict[str, bool] = field(default_factory=dict)  # per SLO key, by the rule
    shed: dict[str, float | None] = field(default_factory=dict)  # shed rate: all, per tenant
    combo: tuple[tuple[str, Any], ...] = ()  # the --over values this probe ran with
    # the run at the scenario's own seed: its utilisation (plan_usage.RunUsage), not shown
    usage: Any = field(default=None, compare=False, repr=False)

    def to_json_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {"value": self.value, "met": self.met, "metrics": self.metrics}
        if self.combo:
            document = {"over": dict(self.combo), **document}
        if self.estimates and next(iter(self.estimates.values())).n > 1:
            document["intervals"] = {k: e.to_json_dict() for k, e in self.estimates.items()}
        document["margins"] = self.margins
        document["shed_rate"] = self.shed
        return document


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
    combo: tuple[tuple[str, Any], ...] = ()
    below: Probe | None = None  # the probe one step on the missing side of the answer
    gpus: int | None = None  # at the answer
    cost_per_hour: float | None = None  # at the answer, dollars
    error: str | None = None  # a combination the scenario rejects

    def to_frame(self):
        """Its probes as a DataFrame, a row each (`simsched.studies.plan_frame`)."""
        from simsched.studies.plan_frame import probes_frame

        return probes_frame([self])

    @property
    def at_answer(self) -> Probe | None:
        return next((p for p in self.probes if p.value == self.answer), None)

    def to_json_dict(self) -> dict[str, Any]:
        document = {
            "answer": self.answer,
            "probes": [p.to_json_dict() for p in self.probes],
            "knob": self.knob,
            "variant": self.variant,
            "direction": "maximize" if self.maximize else "minimize",
            "slos": [slo.text for slo in self.slos],
            "message": self.message,
            "warnings": self.warnings,
        }
        if self.combo:
            document["over"] = dict(self.combo)
        if self.gpus is not None:
            document |= {"gpus": self.gpus, "cost_per_hour": self.cost_per_hour}
        if self.error:
            document["error"] = self.error
        return document


class Bisection:
    """One combination's search. Candidates are kept in the order in which the SLOs are met from
    some index on; `wanted(width)` names up to `width` indices to probe next, `record` takes
    their probes, and `done` says when the answer (or its absence) is known."""

    def __init__(self, result: PlanResult) -> None:
        self.result = result
        self.order = result.values[::-1] if result.maximize else result.values
        self.cache: dict[int, Probe] = {}

    def record(self, index: int, probe: Probe) -> None:
        self.cache[index] = probe
        self.result.probes.append(probe)

    def _bounds(self) -> tuple[int, int]:
        """(the largest failing index below `found`, the smallest meeting index)."""
        found = min(i for i, p in self.cache.items() if p.met)
        bad = max((i for i, p in self.cache.items() if not p.met and i < found), default=-1)
        return bad, found

    def wanted(self, width: int) -> list[int]:
        last = len(self.order) - 1
        if last not in self.cache:
            return [last] if width == 1 or last == 0 else [last, 0]
        if not self.cache[last].met:
            return []
        if 0 not in self.cache:
            # LO, and with free slots the interval below HI split evenly by the others
            _, found = self._bounds()
            picks = {found * k // width for k in range(1, width)}
            return [0, *sorted(i for i in picks if 0 < i < found and i not in self.cache)]
        bad, found = self._bounds()
        if found - bad <= 1:
            return []
        # `width` points splitting (bad, found) evenly; with one, the classic middle
        picks = {bad + (found - bad) * k // (width + 1) for k in range(1, width + 1)}
        return sorted(i for i in picks if bad < i < found)

    @property
    def done(self) -> bool:
        return not self.wanted(1)

    def finish(self) -> None:
        """The answer and its message, once `done`."""
        result, last = self.result, len(self.order) - 1
        if not self.cache[last].met:
            result.message = _nothing_meets(result, self.cache[last])
            return
        bad, found = self._bounds()
        result.answer = self.order[found]
        result.below = self.cache.get(found - 1)
        result.message = _found(result, found)


def _found(result: PlanResult, found: int) -> str:
    goal = "largest" if result.maximize else "smallest"
    text = f"the {goal} {result.knob} meeting every SLO is {result.answer}"
    if found == 0:
        end = "top" if result.maximize else "bottom"
        return f"{text} (the {end} of the range: the SLOs may be met beyond it)"
    # bisection ends on adjacent candidates, both probed: the answer meets, the one before misses
    neighbour = result.below
    assert neighbour is not None and not neighbour.met
    return f"{text}; at {neighbour.value} the SLOs are missed ({failing(result.slos, neighbour)})"


def _nothing_meets(result: PlanResult, probe: Probe) -> str:
    lo, hi = result.values[0], result.values[-1]
    return (
        f"no value of {result.knob} in {lo}..{hi} meets every SLO; even at {probe.value}: "
        f"{failing(result.slos, probe)}"
    )


def failing(slos: list[Slo], probe: Probe) -> str:
    """The SLOs a probe misses, with the value judged (by the decision rule) and the target."""
    missed = [s for s in slos if not _met(s, probe)]
    return ", ".join(f"{s.key} = {_judged(s, probe)} (want {s.op} {s.limit:g})" for s in missed)


def _met(slo: Slo, probe: Probe) -> bool:
    verdict = probe.verdicts.get(slo.key)
    return slo.met(probe.metrics[slo.key]) if verdict is None else verdict


def _judged(slo: Slo, probe: Probe) -> Any:
    estimate = probe.estimates.get(slo.key)
    if estimate is None or estimate.n <= 1:
        return probe.metrics[slo.key]
    return rounded_interval(slo.metric, estimate.mean, estimate.low, estimate.high)


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
        # a latency at a probe that sheds covers the admitted requests only (the plan's notes
        # say so), so it is no evidence against monotonicity: those probes are left out
        judged = [p for p in probes if not (is_latency(slo.metric) and sheds(p))]
        # judged as the warning shows them: a wiggle below the shown digits is seed noise
        series = [rounded(p.metrics[slo.key]) for p in judged if p.metrics[slo.key] is not None]
        if series not in (sorted(series), sorted(series, reverse=True)):
            shown = ", ".join(f"{p.value}: {_shown(p.metrics[slo.key])}" for p in judged)
            admitting = " that admit every request" if len(judged) < len(probes) else ""
            warnings.append(
                f"{slo.key} is not monotone in {result.knob} over the probes{admitting} ({shown})"
            )
    return warnings


def _shown(value: float | None) -> str:
    return "no value" if value is None else value_text(value)


def is_latency(metric: str) -> bool:
    return metric.endswith("_ms")


def sheds(probe: Probe) -> bool:
    """Whether the probe shed any request (mean shed rate across seeds above 0)."""
    return bool(probe.shed.get("all"))
