"""The library entry point: `simulate(scenario)` runs every variant on the same workload."""

from __future__ import annotations

import json
from collections.abc import Callable

import pandas as pd

from simsched.config.loading import resolve_variants, select_variants
from simsched.config.scenario import Scenario
from simsched.errors import InputError
from simsched.results.fairness import fairness_summary
from simsched.results.frames import (
    REQUEST_COLUMNS,
    SimulationResult,
    capacity_summary,
    slo_verdict,
    summarize,
    variant_frame,
)
from simsched.results.tenants import tenant_metric_rows
from simsched.sim.engine import request_costs, run_variant
from simsched.sim.timeline import TIMELINE_COLUMNS
from simsched.workload import RequestTable, build_workload

# Called as progress(variant, requests delivered so far, requests in all) while a variant runs.
Progress = Callable[[str, int, int], None]


def simulate(
    scenario: Scenario, variants: list[str] | None = None, progress: Progress | None = None
) -> SimulationResult:
    """Run the scenario's variants (all, or those named) and collect their results."""
    chosen = select_variants(resolve_variants(scenario), variants, scenario.name)
    workloads: dict[str, RequestTable] = {}
    frames, tenants, timelines = [], [], []
    summaries, slo, fairness, capacity = {}, {}, {}, {}
    for name, resolved in chosen:
        table = variant_workload(name, resolved, workloads, scenario)
        tick = (lambda done, total, name=name: progress(name, done, total)) if progress else None
        run = run_variant(resolved, table, tick)
        frame = variant_frame(name, resolved, table, request_costs(resolved, table), run.recorder)
        timelines.append(run.timeline.assign(variant=name))
        summaries[name] = summarize(frame)
        rows = tenant_metric_rows(name, resolved, frame, include_all=True)
        capacity[name] = capacity_summary(run.timeline, rows[-1])
        slo[name] = slo_verdict(resolved, frame, summaries[name], rows)
        fairness[name] = fairness_summary(frame, {t.id: t.weight for t in resolved.tenants})
        frames.append(frame.sort_values("_seq", kind="stable"))
        tenants.extend(rows)
    requests = pd.concat(frames, ignore_index=True)[REQUEST_COLUMNS]
    return SimulationResult(
        scenario=scenario,
        variants=[name for name, _ in chosen],
        requests=requests,
        tenants=pd.DataFrame(tenants),
        summaries=summaries,
        slo=slo,
        fairness=fairness,
        capacity=capacity,
        timeline=pd.concat(timelines, ignore_index=True)[["variant", *TIMELINE_COLUMNS]],
    )


def variant_workload(
    name: str, scenario: Scenario, cache: dict[str, RequestTable], base: Scenario
) -> RequestTable:
    """The variant's requests. Variants that leave the workload's settings alone share one
    generated workload; a problem with a variant's own workload settings names the variant."""
    key = _workload_key(scenario)
    if key not in cache:
        try:
            cache[key] = build_workload(scenario)
        except InputError as exc:
            if key == _workload_key(base):  # the scenario's own problem, not the variant's
                raise
            where = _join(f"variant {name!r}", exc.where)
            raise InputError(exc.source, where, exc.message) from None
    return cache[key]


def _workload_key(scenario: Scenario) -> str:
    return json.dumps(
        scenario.model_dump(mode="json", include={"seed", "tenants", "trace"}), sort_keys=True
    )


def _join(context: str, where: str) -> str:
    return f"{context}: {where}" if where else context
