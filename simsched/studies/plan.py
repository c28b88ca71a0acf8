"""Capacity planning: the smallest capacity (or the largest load) that meets every SLO.

The knob takes the values LO, LO+S, ..., HI (HI is always a candidate, even off the step), and
the search bisects them, assuming that meeting the SLOs is monotone in the knob: once a capacity
knob (`cluster.total_kv_blocks`, `cluster.service_tokens_per_ms`) is large enough, larger values
are too. `maximize` looks for the largest value that still meets them, for a load knob whose
larger values mean more load; which direction a knob goes is the user's call (a larger
`arrivals.interval_ms` is *less* load, so one maximizes a rate, not an interval). After the
search every probe is checked for that monotonicity, and the result says plainly when it fails.

An SLO reads `TARGET.METRIC OP LIMIT`: TARGET is a tenant id or `all`, METRIC a column of the
metrics row (`simsched.results.metrics`), OP one of <=, <, >=, >.

The parts live in `simsched.analysis`: `slo` (the expressions), `knob` (the candidates) and
`bisection` (the search and its messages); their public names are importable from here too.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from simsched.config.loading import (
    load_scenario,
    resolve_variants,
    select_variants,
    shadowing_variants,
)
from simsched.config.overrides import format_assignment
from simsched.config.scenario import Scenario
from simsched.errors import InputError
from simsched.results.metrics import metrics_rows
from simsched.results.simulate import simulate
from simsched.studies.bisection import PlanResult, Probe, monotonicity_warnings, search
from simsched.studies.grid import relabel
from simsched.studies.knob import FLOAT_STEPS, Number, knob_values, parse_range, scenario_value
from simsched.studies.slo import OPERATORS, SLO_PATTERN, Slo, check_targets, parse_slo

__all__ = [
    "FLOAT_STEPS",
    "OPERATORS",
    "SLO_PATTERN",
    "Number",
    "PlanResult",
    "Probe",
    "Slo",
    "knob_values",
    "monotonicity_warnings",
    "parse_range",
    "parse_slo",
    "plan",
    "scenario_value",
]


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
    flag = "--maximize" if maximize else "--vary"
    shadowed = shadowing_variants(scenario, knob, [chosen])
    if shadowed:  # the variant's own value would win at every probe
        name, key = shadowed[0]
        raise InputError(
            label,
            f"{flag} {knob}",
            f"variant {name!r} sets {key} itself, so the search could not change it; "
            "judge another variant (--variant) or take the setting out of this one",
        )
    parsed = [parse_slo(text, label) for text in slos]
    if not parsed:
        raise InputError(label, "--slo", "give at least one SLO")
    check_targets(parsed, resolved, label)
    values = knob_values(scenario, knob, range_, step, label, flag)
    result = PlanResult(knob, chosen, maximize, values, parsed)
    _load_at(path, overrides, knob, values[0], flag)  # a range the scenario rejects fails
    _load_at(path, overrides, knob, values[-1], flag)  # now, whichever end the search skips
    search(result, _prober(path, overrides, knob, chosen, parsed, flag), on_probe)
    result.warnings = monotonicity_warnings(result)
    return result


def _variant(scenario: Scenario, name: str | None, label: str) -> tuple[str, Scenario]:
    variants = resolve_variants(scenario, label)
    return select_variants(variants, [name], label)[0] if name else variants[-1]


def _load_at(path, overrides: list[str], knob: str, value: Number, flag: str) -> Scenario:
    text = format_assignment(knob, value)
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
