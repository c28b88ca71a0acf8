"""A plan's notes after the search: the decision rule, the margins at each answer and one step
before it, and (for one search) its fleet and a `--minimize` with nothing to choose."""

from __future__ import annotations

from simsched.results.tenants import SHARE_METRICS
from simsched.studies.bisection import PlanResult, Probe, is_latency, sheds
from simsched.studies.fleet import FleetPlan, gpu_count, shown
from simsched.studies.plan_numbers import margin_text, share_text
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
        text = f"{where}margins at {result.knob}={result.answer}: {_margins(at, result)}"
        if result.below is not None:
            text += f"; at {result.below.value}: {_margins(result.below, result)}"
        notes.append(text)
    notes += [note for result in fleet.plans if (note := shedding_note(result))]
    return notes


def shedding_note(result: PlanResult) -> str | None:
    """Probes that shed, when an SLO judges a latency: their latencies cover the admitted
    requests only, and can be lower than at a larger fleet that admits everything (which is why
    the monotonicity check leaves them out of the latency series)."""
    if not any(is_latency(slo.metric) for slo in result.slos):
        return None
    rates = sorted((p.value, p.shed["all"]) for p in result.probes if sheds(p))
    if not rates:
        return None
    values, shares = [v for v, _ in rates], sorted(r for _, r in rates)
    where = f"{shown(result.combo)}: " if result.combo else ""
    at = _span(values)
    share = _span([share_text(shares[0]), share_text(shares[-1])])
    verb = "probes" if len(values) > 1 else "the probe"
    sheds_ = "shed" if len(values) > 1 else "sheds"
    return (
        f"{where}{verb} at {result.knob}={at} {sheds_} {share}: "
        "latency there covers admitted requests only"
    )


def _span(items: list) -> str:
    first, last = items[0], items[-1]
    return f"{first}" if first == last else f"{first}-{last}"


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
        notes.append(f"at {fleet.knob}={best.answer}: {gpu_count(best.gpus)}, {cost}")
    return notes


def _margins(probe: Probe, result: PlanResult) -> str:
    """Each SLO's margin in its unit and as a share of its target, or in percentage points
    for a metric that is a share itself (`plan_numbers`)."""
    slos = {slo.key: slo for slo in result.slos}
    return ", ".join(
        f"{key} {margin_text(m, slos[key].limit, slos[key].metric in SHARE_METRICS)}"
        for key, m in probe.margins.items()
    )
