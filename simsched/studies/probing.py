"""A plan's probes: run a knob value (within an `--over` combination) with every seed, and judge
each SLO on the runs by a stated decision rule.

Probes go to the sweep's runners (`simsched.studies.runners`): in this process, on local worker
processes kept for the whole plan, or on a Dask cluster, several probes (and their seeds) at once.

Decision rules, for an SLO `METRIC OP LIMIT` over N seeds:
- `interval` (the default): the SLO must hold at the pessimistic end of the metric's 95%
  Student-t interval of the mean (its upper bound for `<=`, its lower bound for `>=`);
- `every`: the SLO must hold in every seed;
- `mean`: the mean must meet it.
With one seed the three agree. A probe's margin per SLO is how far the judged value is inside
the target (positive) or outside it (negative), in the metric's unit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from simsched.config.overrides import format_assignment
from simsched.errors import InputError
from simsched.results.confidence import INTERVAL, Estimate, estimate
from simsched.studies.bisection import Probe
from simsched.studies.knob import Number
from simsched.studies.runners import ContextProblem, InputProblem, Outcome, Task
from simsched.studies.slo import Slo
from simsched.workload.context_limits import ContextError

RULES = {
    "interval": f"each SLO holds at the pessimistic end of its {INTERVAL}",
    "every": "each SLO holds in every seed",
    "mean": "each SLO holds for the mean across seeds",
}
Combo = tuple[tuple[str, Any], ...]
Runner = Callable[[list[Task]], list[Outcome]]


@dataclass(frozen=True)
class ProbeSpec:
    """What every probe of a plan shares."""

    path: str  # resolved, for workers in another folder
    label: str  # the file as the user named it
    raw: str | None  # a scenario given as an object, as JSON
    overrides: tuple[str, ...]
    knob: str
    variant: str
    slos: tuple[Slo, ...]
    tenants: tuple[str, ...]
    seeds: tuple[int | None, ...]  # (None,): the scenario's own seed, once
    rule: str
    study: str = ""  # an id shared by the plan's tasks (workload reuse, runners.Task)


def tasks_for(spec: ProbeSpec, combo: Combo, value: Number, start: int) -> list[Task]:
    """One task per seed: the overrides, the combination's values, the knob's value, the seed."""
    texts = [*spec.overrides, *(format_assignment(p, v) for p, v in combo)]
    texts.append(format_assignment(spec.knob, value))
    tasks = []
    for offset, seed in enumerate(spec.seeds):
        mine = [*texts, f"seed={seed}"] if seed is not None else texts
        labels = tuple((t, f"--vary {spec.knob}={value}") for t in mine[len(spec.overrides) :])
        tasks.append(
            Task(
                start + offset,
                spec.path,
                spec.label,
                tuple(mine),
                labels,
                spec.raw,
                (spec.variant,),
                True,
                study=spec.study,  # workloads are reused within this plan only
                usage=offset == 0,  # the scenario's own seed (or the only run): its usage too
            )  # fmt: skip
        )
    return tasks


def run_probes(spec: ProbeSpec, wanted: list[tuple[Combo, Number]], runner: Runner) -> list[Probe]:
    """Every wanted probe, all seeds, in one batch for the runner; probes in `wanted` order."""
    tasks = []
    for combo, value in wanted:
        tasks += tasks_for(spec, combo, value, len(tasks))
    outcomes = runner(tasks)
    n = len(spec.seeds)
    probes = []
    for i, (combo, value) in enumerate(wanted):
        runs = outcomes[i * n : (i + 1) * n]
        errors = [run.error for run in runs if run.error]
        if errors:  # the values were loaded before: this is a failure while running
            raise _probe_failure(spec, value, errors[0])
        probe = judge(spec, combo, value, [_by_target(run.rows) for run in runs])
        probes.append(replace(probe, usage=runs[0].usage))
    return probes


def _probe_failure(spec: ProbeSpec, value: Number, error: str) -> Exception:
    """A value in the range that the scenario cannot run (a request budget, a clock bound, a
    timeline size, found only while running) is bad input: exit 2, one line naming the value.
    Anything else is a bug and stays one."""
    where = f"the probe at --vary {spec.knob}={value}"
    if not isinstance(error, InputProblem):
        return RuntimeError(f"{where} failed: {error}")
    message = error.removeprefix(f"{spec.label}: ")
    if isinstance(error, ContextProblem):  # the workload there, not the range, is the problem
        return ContextError(spec.label, where, message)
    return InputError(spec.label, where, f"{message} (narrow --range to values that can run)")


def _by_target(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    # class rows come after the tenants' and `all`; a tenant named like a class wins
    by_target: dict[str, dict[str, Any]] = {}
    for row in reversed(rows):
        by_target[row["tenant"]] = row
    return by_target


def judge(spec: ProbeSpec, combo: Combo, value: Number, runs: list[dict]) -> Probe:
    metrics, estimates, margins, verdicts = {}, {}, {}, {}
    for slo in spec.slos:
        values = [_value(run, slo) for run in runs]
        found = estimate(values)
        judged = _judged(slo, values, found, spec.rule)
        estimates[slo.key] = found
        metrics[slo.key] = values[0] if len(values) == 1 else found.mean
        verdicts[slo.key] = slo.met(judged)
        margins[slo.key] = _margin(slo, judged)
    shed = {
        target: estimate([run[target]["shed_rate"] for run in runs]).mean
        for target in ("all", *spec.tenants)
    }
    return Probe(value, all(verdicts.values()), metrics, estimates, margins, verdicts, shed, combo)


def _judged(slo: Slo, values: list, found: Estimate, rule: str) -> float | None:
    if found.mean is None:
        return None
    upward = slo.op in ("<=", "<")  # a larger value is worse
    if rule == "every":
        return max(values) if upward else min(values)
    if rule == "mean":
        return found.mean
    return found.high if upward else found.low


def _margin(slo: Slo, judged: float | None) -> float | None:
    if judged is None:
        return None
    slack = slo.limit - judged if slo.op in ("<=", "<") else judged - slo.limit
    return round(slack, 6)


def _value(run: dict[str, dict[str, Any]], slo: Slo) -> float | None:
    # a class that sent nothing in this run (a combination emptied it) has no row: no value,
    # which meets no SLO (`Slo.met`), rather than a crash
    row = run.get(slo.target)
    return None if row is None else _plain(row[slo.metric])


def _plain(value: Any) -> float | None:
    """A JSON-friendly number: NaN and NA become None, booleans 1 and 0."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value) if isinstance(value, bool) else value
