"""A plan's notes after the search: the decision rule, the margins at each answer and one step
before it, and (for one search) its fleet and a `--minimize` with nothing to choose."""

from __future__ import annotations

from typing import Any

from simsched.studies.bisection import Probe
from simsched.studies.fleet import FleetPlan, shown
from simsched.studies.probing import RULES


def rule_notes(fleet: FleetPlan) -> list[str]:
    notes = []
    if fleet.seeds > 1:
        notes.append(f"{fleet.seeds} seeds per probe; decision rule: {RULES[fleet.rule]}")
    for result in fleet.plans:
        at = result.at_answer
        if at is None:
            continue
        where = f"{shown(result.combo)}: " if result.combo else ""
        text = f"{where}margins at {result.knob}={result.answer}: {_margins(at)}"
        if result.below is not None:
            text += f"; at {result.below.value}: {_margins(result.below)}"
        notes.append(text)
    return notes


def fleet_notes(fleet: FleetPlan) -> list[str]:
    """One search: its fleet at the answer (several have a table), and a `--minimize` that had
    nothing to choose between."""
    if len(fleet.plans) > 1:
        return []
    notes = []
    if fleet.minimize != "value":
        notes.append(
            f"--minimize {fleet.minimize} had nothing to choose between (one combination): "
            "give --over with two values or more, e.g. --over cluster.gpu=a100-80gb,h100-80gb"
        )
    best = fleet.best
    if best is not None and best.gpus is not None:
        cost = "no price" if best.cost_per_hour is None else f"${best.cost_per_hour:.2f}/hour"
        notes.append(f"at {fleet.knob}={best.answer}: {best.gpus} GPUs, {cost}")
    return notes


def _margins(probe: Probe) -> str:
    return ", ".join(f"{key} {_signed(m)}" for key, m in probe.margins.items())


def _signed(margin: Any) -> str:
    return "no value" if margin is None else f"{margin:+g}"
