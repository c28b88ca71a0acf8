"""A plan's probes as a pandas DataFrame: a row per probe, in the order of the knob within each
`--over` combination (the order they ran is `FleetPlan.probes`).

Columns: the `--over` paths, the knob, `met`, `answer` (the probe is its combination's
answer), then per SLO key its value (the mean across seeds), `KEY.low` and `KEY.high` (the 95%
interval, clipped to the metric's range; with one seed, the value itself) and `KEY.margin`,
then `shed_rate` (all tenants).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from simsched.results.metric_ranges import clip
from simsched.studies.bisection import PlanResult, Probe


def probes_frame(plans: list[PlanResult]) -> pd.DataFrame:
    rows = [
        _row(plan, probe) for plan in plans for probe in sorted(plan.probes, key=lambda p: p.value)
    ]
    columns = _columns(plans)
    return pd.DataFrame(rows, columns=columns)


def _columns(plans: list[PlanResult]) -> list[str]:
    first = plans[0]
    over = [path for path, _ in first.combo]
    keys = [slo.key for slo in first.slos]
    per_slo = [name for key in keys for name in (key, f"{key}.low", f"{key}.high", f"{key}.margin")]
    return [*over, first.knob, "met", "answer", *per_slo, "shed_rate"]


def _row(plan: PlanResult, probe: Probe) -> dict[str, Any]:
    row: dict[str, Any] = dict(plan.combo)
    row |= {plan.knob: probe.value, "met": probe.met, "answer": probe.value == plan.answer}
    for slo in plan.slos:
        value = probe.metrics.get(slo.key)
        found = probe.estimates.get(slo.key)
        low, high = (found.low, found.high) if found and found.n > 1 else (value, value)
        row[slo.key] = value
        row[f"{slo.key}.low"] = None if low is None else clip(slo.metric, low)
        row[f"{slo.key}.high"] = None if high is None else clip(slo.metric, high)
        row[f"{slo.key}.margin"] = probe.margins.get(slo.key)
    row["shed_rate"] = probe.shed.get("all")
    return row
