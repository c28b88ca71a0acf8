"""Capacity planning: the smallest capacity (or the largest load) that meets every SLO.

The knob takes the values LO, LO+S, ..., HI (HI is always a candidate, even off the step), and
the search bisects them, assuming that meeting the SLOs is monotone in the knob: once a capacity
knob (`cluster.total_kv_blocks`, `cluster.service_tokens_per_ms`) is large enough, larger values
are too. `maximize` looks for the largest value that still meets them, for a load knob whose
larger values mean more load; which direction a knob goes is the user's call (a larger
`arrivals.interval_ms` is *less* load, so one maximizes a rate, not an interval). After the
search every probe is checked for that monotonicity, and the result says plainly when it fails.

An SLO reads `TARGET.METRIC OP LIMIT`: TARGET is a tenant id or `all`, METRIC a column of the
metrics row (`simsched.metrics`), OP one of <=, <, >=, >.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simsched.errors import InputError
from simsched.loading import load_scenario, resolve_variants, select_variants
from simsched.metrics import ALL, METRIC_COLUMNS, metrics_rows
from simsched.overrides import OverrideError, split_path
from simsched.scenario import Scenario
from simsched.simulation import simulate
from simsched.sweep import relabel

OPERATORS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt}
SLO_PATTERN = re.compile(
    r"^\s*(?P<target>\S+?)\.(?P<metric>[A-Za-z_]\w*)\s*(?P<op><=|>=|<|>)\s*(?P<limit>\S+)\s*$"
)
FLOAT_STEPS = 64  # a float knob's default step is (HI - LO) / FLOAT_STEPS
Number = int | float


@dataclass(frozen=True)
class Slo:
    text: str
    target: str
    metric: str
    op: str
    limit: float

    @property
    def key(self) -> str:
        return f"{self.target}.{self.metric}"

    def met(self, value: float | None) -> bool:
        # a metric with no value (no TTFT for a tenant that sent nothing, say) meets nothing
        return value is not None and not math.isnan(value) and OPERATORS[self.op](value, self.limit)


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


def plan(
    path: str | Path,
    knob: str,
    range_: str | tuple[Number, Number],
    slos: list[str],
    *,
    step: Number | None = None,
    maximize: bool = False,
    variant: str | None = None,
    overrides: list[str] | None = None,
    on_probe: Callable[[Probe], None] | None = None,
) -> PlanResult:
    """Search `knob` over the range for the boundary of the SLOs, judged on `variant`."""
    label = str(path)
    overrides = list(overrides or [])
    scenario = load_scenario(path, overrides)
    chosen, resolved = _variant(scenario, variant, label)
    parsed = [parse_slo(text, label) for text in slos]
    if not parsed:
        raise InputError(label, "--slo", "give at least one SLO")
    _check_targets(parsed, resolved, label)
    flag = "--maximize" if maximize else "--vary"
    values = knob_values(scenario, knob, range_, step, label, flag)
    result = PlanResult(knob, chosen, maximize, values, parsed)
    _load_at(path, overrides, knob, values[0], flag)  # a range the scenario rejects fails
    _load_at(path, overrides, knob, values[-1], flag)  # now, whichever end the search skips
    probe = _prober(path, overrides, knob, chosen, parsed, flag)
    _search(result, probe, on_probe)
    result.warnings = monotonicity_warnings(result)
    return result


# -- SLOs ---------------------------------------------------------------------------------------


def parse_slo(text: str, label: str = "") -> Slo:
    match = SLO_PATTERN.match(text)
    if not match:
        raise InputError(label, f"--slo {text}", "expected TENANT.METRIC<=LIMIT (or <, >=, >)")
    metric = match["metric"]
    if metric not in METRIC_COLUMNS:
        known = ", ".join(METRIC_COLUMNS)
        raise InputError(label, f"--slo {text}", f"unknown metric {metric!r} (known: {known})")
    try:
        limit = float(match["limit"])
    except ValueError:
        limit = math.nan
    if not math.isfinite(limit):
        raise InputError(label, f"--slo {text}", f"the limit {match['limit']!r} is not a number")
    return Slo(text.strip(), match["target"], metric, match["op"], limit)


def _variant(scenario: Scenario, name: str | None, label: str) -> tuple[str, Scenario]:
    variants = resolve_variants(scenario, label)
    return select_variants(variants, [name], label)[0] if name else variants[-1]


def _check_targets(slos: list[Slo], scenario: Scenario, label: str) -> None:
    tenants = scenario.tenant_ids()
    for slo in slos:
        if slo.target != ALL and slo.target not in tenants:
            known = ", ".join([ALL, *tenants])
            raise InputError(label, f"--slo {slo.text}", f"no tenant {slo.target!r} ({known})")


# -- the knob's values --------------------------------------------------------------------------


def knob_values(
    scenario: Scenario,
    knob: str,
    range_: str | tuple[Number, Number],
    step: Number | None,
    label: str = "",
    flag: str = "--vary",
) -> list[Number]:
    """The candidate values, LO to HI; integers when the knob is an integer setting."""
    lo, hi = parse_range(range_, label) if isinstance(range_, str) else range_
    if lo > hi:
        raise InputError(label, "--range", f"LO ({lo}) is above HI ({hi})")
    if step is not None and not step > 0:
        raise InputError(label, "--step", f"must be positive, got {step}")
    if _is_integer_knob(scenario, knob, (lo, hi, step), label, flag):
        return _integer_values(lo, hi, step, label)
    step = step if step is not None else (hi - lo) / FLOAT_STEPS
    count = math.floor((hi - lo) / step + 1e-9) + 1 if step else 1
    values = [float(f"{lo + i * step:.12g}") for i in range(count)]
    return values if math.isclose(values[-1], hi) else [*values, float(hi)]


def parse_range(text: str, label: str = "") -> tuple[Number, Number]:
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        lo, hi = (_number(part) for part in parts)
    except ValueError:
        raise InputError(label, f"--range {text}", "expected LO:HI, two numbers") from None
    return lo, hi


def _number(text: str) -> Number:
    value = float(text)  # ValueError for anything else
    if not math.isfinite(value):
        raise ValueError(text)
    return int(value) if re.fullmatch(r"\s*[-+]?\d+\s*", text) else value


def _integer_values(lo: Number, hi: Number, step: Number | None, label: str) -> list[int]:
    for flag, value in (("--range", lo), ("--range", hi), ("--step", step)):
        if value is not None and not float(value).is_integer():
            raise InputError(label, flag, f"the knob is an integer setting; {value} is not one")
    lo, hi, step = int(lo), int(hi), int(step or 1)
    values = list(range(lo, hi + 1, step))
    return values if values[-1] == hi else [*values, hi]


def _is_integer_knob(scenario, knob, numbers, label, flag) -> bool:
    current = scenario_value(scenario, knob, label, flag)
    if current is None:  # unset (null) in the file: the range's own numbers decide
        return all(isinstance(n, int) for n in numbers if n is not None)
    if isinstance(current, bool) or not isinstance(current, (int, float)):
        raise InputError(label, f"{flag} {knob}", f"is {current!r}, not a number")
    return isinstance(current, int)


def scenario_value(scenario: Scenario, path: str, label: str = "", flag: str = "--vary") -> Any:
    """The value at a dotted path of the scenario, defaults included (`tenants.<id>.weight`)."""
    try:
        node: Any = scenario.model_dump(mode="python")
        for segment in split_path(path):
            node = _child(node, segment)
    except OverrideError as exc:
        raise InputError(label, f"{flag} {path}", exc.problem) from None
    except LookupError:
        raise InputError(label, f"{flag} {path}", "no such setting in the scenario") from None
    return node


def _child(node: Any, segment: str) -> Any:
    if isinstance(node, dict):
        return node[segment]
    if isinstance(node, list):
        if segment.isdecimal():
            return node[int(segment)]
        for item in node:  # a tenant by id, a variant by name, as overrides find them
            if isinstance(item, dict) and segment in (item.get("id"), item.get("name")):
                return item
    raise LookupError(segment)


# -- the search ---------------------------------------------------------------------------------


def _load_at(path, overrides: list[str], knob: str, value: Number, flag: str) -> Scenario:
    text = f"{knob}={json.dumps(value)}"
    try:
        return load_scenario(path, [*overrides, text])
    except InputError as exc:  # a value in the range the scenario rejects
        raise relabel(exc, {text: f"{flag} {knob}={value}"}) from None


def _prober(path, overrides, knob, variant, slos, flag) -> Callable[[Number], Probe]:
    def probe(value: Number) -> Probe:
        scenario = _load_at(path, overrides, knob, value, flag)
        rows = {row["tenant"]: row for row in metrics_rows(simulate(scenario, [variant]))}
        metrics = {slo.key: _plain(rows[slo.target][slo.metric]) for slo in slos}
        return Probe(value, all(slo.met(metrics[slo.key]) for slo in slos), metrics)

    return probe


def _plain(value: Any) -> float | None:
    """A JSON-friendly number: NaN and NA become None, booleans 1 and 0."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value) if isinstance(value, bool) else value


def _search(result: PlanResult, probe_value, on_probe) -> None:
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
    result.message = _found(result, order, found, cache)


def _found(result: PlanResult, order: list[Number], found: int, cache: dict) -> str:
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
