"""The answer's utilisation: one run at the answer with the scenario's own seed, summarised as
the console and summary.json summarise a scenario (`results.utilisation`), with a note when the
load is skewed across replicas."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from simsched.outputs.provisioned_table import autoscaled_variants
from simsched.results.simulate import simulate
from simsched.results.utilisation import SKEW_LIMIT, skewed
from simsched.studies.fleet import FleetPlan
from simsched.studies.plan_numbers import share_text


def answer_utilisation(
    fleet: FleetPlan, load_at: Callable[..., Any], flag: str
) -> tuple[dict[str, Any] | None, list[str]]:
    """(the utilisation block at the answer, notes); (None, []) for a model without replicas."""
    best = fleet.best
    scenario = load_at(best.combo, fleet.knob, best.answer, flag)
    result = simulate(scenario, [fleet.variant])
    usage = result.utilisation.get(fleet.variant)
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
    if fleet.variant in autoscaled_variants(result):
        # slots that were off count 0 requests: their spread is the autoscaler's, not the router's
        notes.append(
            "autoscaled: the per-replica figures are over replica slots that served only part "
            "of the run, each over the whole run; the cost is over the time each was paid for"
        )
    elif skewed(usage):
        notes.append(
            f"load is skewed across replicas at the answer (max/mean above {SKEW_LIMIT:g}): "
            "the router concentrates requests; the busiest replica sets the latency"
        )
    return usage, notes
