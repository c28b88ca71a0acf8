"""The answer's utilisation: the run at the answer with the scenario's own seed, summarised as
the console and summary.json summarise a scenario (`results.utilisation`), with a note when the
load is skewed across replicas.

That run is one of the plan's probes (the first seed is the scenario's own), so the probes at
that seed bring their run's `RunUsage` back from the worker and the answer's is read from its
probe; simulating the answer again cost one more run than the search (a twentieth of the
bench's plan, and with --jobs N a run while the other workers idle)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simsched.config.loading import resolve_variants
from simsched.outputs.api_server_notes import api_server_notes
from simsched.outputs.provisioned_table import autoscaled_variants
from simsched.results.simulate import SimulationResult, simulate
from simsched.results.utilisation import SKEW_LIMIT, skewed, skewed_pools, skewed_replicas
from simsched.studies.fleet import FleetPlan
from simsched.studies.plan_numbers import share_text


@dataclass(frozen=True)
class RunUsage:
    """What the answer's notes read from a run of one variant (small: it is sent back from a
    worker with the probe's rows)."""

    utilisation: dict[str, Any] | None  # None for a model without replicas
    autoscaled: bool  # some pool was resized: per-slot figures are partial
    # the run's API-server note, if its front end queued requests (outputs/api_server_notes.py):
    # the requests it is replayed from stay in the worker
    api_server: tuple[str, ...] = ()


def run_usage(result: SimulationResult, variant: str) -> RunUsage:
    resolved = {variant: dict(resolve_variants(result.scenario))[variant]}
    queued = api_server_notes(resolved, result.utilisation, result.requests)
    return RunUsage(
        result.utilisation.get(variant), variant in autoscaled_variants(result), tuple(queued)
    )


def answer_utilisation(
    fleet: FleetPlan, load_at: Callable[..., Any], flag: str
) -> tuple[dict[str, Any] | None, list[str]]:
    """(the utilisation block at the answer, notes); (None, []) for a model without replicas."""
    best = fleet.best
    scenario = load_at(best.combo, fleet.knob, best.answer, flag)
    ran = answer_probe_usage(fleet)
    if ran is None:  # no probe of the answer at this seed brought its usage back
        ran = run_usage(simulate(scenario, [fleet.variant]), fleet.variant)
    usage = ran.utilisation
    if usage is None:
        return None, []
    total = usage["total"]
    counts = " ".join(str(r["requests"]) for r in usage["replicas"].values())
    notes = [
        f"utilisation at the answer (seed {scenario.seed}, cluster): busy "
        f"{share_text(total['busy_share'])} of the time, {share_text(total['token_budget_share'])}"
        f" of the token budget per iteration, {total['mean_running']:.1f} sequences running, "
        f"{share_text(total['kv_held_share'])} of KV held;"
        f" requests per replica {counts} (max/mean {usage['request_skew']:.2f})"
    ]
    if ran.autoscaled:
        # slots that were off count 0 requests: their spread is the autoscaler's, not the router's
        notes.append(
            "autoscaled: the per-replica figures are over replica slots that served only part "
            "of the run, each over the whole run; the cost is over the time each was paid for"
        )
    elif skewed(usage):
        notes.append(skew_at_answer(usage))
    notes += [f"at the answer (seed {scenario.seed}), {note}" for note in ran.api_server]
    return usage, notes


def answer_probe_usage(fleet: FleetPlan) -> RunUsage | None:
    """The usage the answer's probe brought back from its run at the scenario's seed."""
    best = fleet.best
    for probe in fleet.probes:
        if probe.combo == best.combo and probe.value == best.answer and probe.usage is not None:
            return probe.usage
    return None


def skew_at_answer(usage: dict[str, Any]) -> str:
    """The skew note of a plan's answer, each skewed pool (or the run) with its own ratio."""
    where = "; ".join(
        f"across {skewed_replicas(pool)} (max/mean {skew:.2f})"
        for pool, skew in skewed_pools(usage)
    )
    return (
        f"load is skewed at the answer {where}, above {SKEW_LIMIT:g}: the router concentrates "
        "requests; the busiest replica sets the latency"
    )
