"""How firm a plan's answer is: the runner-up and its gap, near-ties within the model's error,
and what survives when the latency model's efficiencies move (`--model-error`).

The default tie margin is the calibration's median absolute error: 5.8% over the 102 published
figures of calibration/published.yaml with the shipped presets (docs/continuous_batching.md,
"Fidelity"; tests/studies/test_uncertainty.py checks that the docs still say so). Two options
whose costs differ by less than the model's typical error cannot be told apart by it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simsched.errors import InputError
from simsched.outputs.area_errors import DENSE_MEDIAN_SHARE, MOE_MEDIAN_SHARE, SPEC_MEDIAN_SHARE
from simsched.outputs.moe_notes import MODEL_ERROR_LEAVES, served
from simsched.studies.bisection import PlanResult
from simsched.studies.fleet import FleetPlan, gpu_count, shown, thinnest_margin
from simsched.studies.plan_numbers import share_text

CALIBRATION_MEDIAN_ERROR = DENSE_MEDIAN_SHARE
MARGIN_SOURCE = "the calibration's median absolute error, docs/continuous_batching.md, Fidelity"
# An MoE or speculative model is also checked against its own calibration area: its near-ties
# are judged at the largest median error of the areas that apply (dense, MoE, speculative).
AREA_MARGINS = {
    CALIBRATION_MEDIAN_ERROR: MARGIN_SOURCE,
    MOE_MEDIAN_SHARE: "the MoE cases' median absolute error, docs/continuous_batching.md, Fidelity",
    SPEC_MEDIAN_SHARE: "the speculative-decoding cases' median absolute error, "
    "docs/continuous_batching.md, Fidelity",
}


def default_tie_margin(resolved: Any) -> float:
    """The median error of the calibration area the judged variant's model falls in (on
    `cluster.pools`, the areas of every pool's model)."""
    margins = [CALIBRATION_MEDIAN_ERROR]
    for model, speculative in served(resolved.cluster):
        if getattr(model, "moe", None) is not None:
            margins.append(MOE_MEDIAN_SHARE)
        if speculative is not None:
            margins.append(SPEC_MEDIAN_SHARE)
    return max(margins)


def option(fleet: FleetPlan, plan: PlanResult) -> str:
    """`cluster.gpu=a100-80gb with cluster.replicas=5 ($13.50/hour)`."""
    where = f"{shown(plan.combo)} with " if plan.combo else ""
    cost = f" (${plan.cost_per_hour:.2f}/hour)" if plan.cost_per_hour is not None else ""
    return f"{where}{fleet.knob}={plan.answer}{cost}"


def runner_up(fleet: FleetPlan) -> PlanResult | None:
    """The next best combination with an answer, by the plan's own choice."""
    found = [p for p in fleet.plans if p.answer is not None and p is not fleet.best]
    return min(found, key=fleet.sort_key) if found and fleet.best is not None else None


def gap(best: PlanResult, other: PlanResult) -> float | None:
    """How much more the other costs, as a share of the answer's cost."""
    if best.cost_per_hour is None or other.cost_per_hour is None or not best.cost_per_hour:
        return None
    return other.cost_per_hour / best.cost_per_hour - 1


def worse_by(fleet: FleetPlan, other: PlanResult) -> float | None:
    """How much worse `other` is than the answer by what the plan minimizes, as a share of the
    answer's: its extra cost, its extra GPUs, or how much more of the knob it takes (for a
    largest-load plan, how much less it sustains). None where either has no such figure."""
    best = fleet.best
    if fleet.minimize == "cost":
        return gap(best, other)
    if fleet.minimize == "gpus":
        mine, theirs = best.gpus, other.gpus
    else:
        mine, theirs = best.answer, other.answer
    if not isinstance(mine, int | float) or not isinstance(theirs, int | float):
        return None
    if mine <= 0:
        return 0.0 if theirs == mine else None  # no share of nothing, but a tie is a tie
    more = theirs / mine - 1
    return -more if fleet.minimize == "value" and fleet.maximize else more


def _choosing(fleet: FleetPlan) -> bool:
    """A plan that chose between combinations (`--over`): a single search has no runner-up
    (its notes say `--minimize` had nothing to choose between)."""
    return fleet.best is not None and len(fleet.plans) > 1


def _near(fleet: FleetPlan, margin: float) -> list[tuple[PlanResult, float]]:
    """The other answers within `margin` of the answer, each with how much worse it is."""
    found = []
    for plan in fleet.plans:
        if plan.answer is not None and plan is not fleet.best:
            share = worse_by(fleet, plan)
            if share is not None and share <= margin:
                found.append((plan, share))
    return found


def runner_up_document(fleet: FleetPlan, margin: float) -> dict[str, Any] | None:
    """The runner-up and near-ties as JSON (the notes in words): scripts that read `--format
    json` get them without parsing notes. `gap` is how much worse each is by what the plan
    minimizes (`worse_by`)."""
    if not _choosing(fleet):
        return None
    other = runner_up(fleet)
    return {
        "runner_up": None if other is None else _option_document(fleet, other),
        "tie_margin": margin,
        "near_ties": [_option_document(fleet, plan) for plan, _ in _near(fleet, margin)],
    }


def _option_document(fleet: FleetPlan, plan: PlanResult) -> dict[str, Any]:
    return {
        "over": dict(plan.combo),
        "answer": plan.answer,
        "gpus": plan.gpus,
        "cost_per_hour": plan.cost_per_hour,
        "gap": worse_by(fleet, plan),
    }


def runner_up_notes(fleet: FleetPlan, margin: float) -> list[str]:
    """The runner-up and how much worse it is; a near-tie (or a tie) when within `margin`: the
    answer of a plan that chose between combinations is then not the model's to call."""
    if not _choosing(fleet):
        return []
    other = runner_up(fleet)
    if other is None:
        return ["runner-up: none (no other combination meets every SLO in the range)"]
    notes = [f"runner-up: {option(fleet, other)}, {_worse_text(fleet, other)}"]
    best = option(fleet, fleet.best)
    for plan, share in _near(fleet, margin):
        if share == 0:
            notes.append(
                f"tie: {option(fleet, plan)} does as well as the answer {best} by "
                f"{_MEASURES[fleet.minimize]} ({_measure_text(fleet, plan)}); "
                f"{_why_the_answer(fleet, plan)}: weigh both"
            )
        else:
            notes.append(
                f"near-tie: {option(fleet, plan)} {_gap_text(fleet, share)} against the answer "
                f"{best}, within the {share_text(margin)} margin ({_source(margin)}); "
                "the model cannot tell them apart: weigh both"
            )
    return notes


_MEASURES = {"cost": "cost", "gpus": "GPUs", "value": "the knob's value"}


def _gap_text(fleet: FleetPlan, share: float) -> str:
    """`costs +3.7%`, `needs +12.5% GPUs`, `needs +20.0% cluster.replicas`, `sustains -3.3%
    load_scale`: how much worse, signed the way the measure moves."""
    if fleet.minimize == "cost":
        return f"costs {share_text(share, signed=True)}"
    if fleet.minimize == "gpus":
        return f"needs {share_text(share, signed=True)} GPUs"
    if fleet.maximize:
        return f"sustains {share_text(-share, signed=True)} {fleet.knob}"
    return f"needs {share_text(share, signed=True)} {fleet.knob}"


def _why_the_answer(fleet: FleetPlan, other: PlanResult) -> str:
    """Why the answer, not its equal, was named: under `--minimize gpus` the lower cost (an
    option with a price before one without), else only --over's order."""
    mine, theirs = fleet.best.cost_per_hour, other.cost_per_hour
    if fleet.minimize == "gpus" and mine is not None and theirs is None:
        return "the answer has a price and the other none"
    if fleet.minimize == "gpus" and mine is not None and mine < theirs:
        if round(mine, 2) == round(theirs, 2):
            return f"the answer costs less, by under a cent an hour (${mine:.2f})"
        return f"the answer costs less (${mine:.2f} against ${theirs:.2f}/hour)"
    wider, narrower = thinnest_margin(fleet.best), thinnest_margin(other)
    if wider > narrower:
        return (
            f"the answer's thinnest SLO margin is wider ({share_text(wider, signed=True)} "
            f"against {share_text(narrower, signed=True)} of its target)"
        )
    return "the answer is the first in --over's order, not a better one"


def _measure_text(fleet: FleetPlan, plan: PlanResult) -> str:
    if fleet.minimize == "cost":
        return f"${plan.cost_per_hour:.2f}/hour"
    if fleet.minimize == "gpus":
        return gpu_count(plan.gpus)
    return f"{fleet.knob}={plan.answer}"


def _worse_text(fleet: FleetPlan, other: PlanResult) -> str:
    """`+$0.50/hour (+3.7%)`, `+8 GPUs (+50.0%)`, `needs +20.0% cluster.replicas`: the
    runner-up against the answer."""
    share = worse_by(fleet, other)
    percent = "" if share is None else f" ({share_text(share, signed=True)})"
    best = fleet.best
    if share == 0:
        return f"the same {_MEASURES[fleet.minimize] if fleet.minimize != 'value' else fleet.knob}"
    if fleet.minimize == "cost":
        return f"+${other.cost_per_hour - best.cost_per_hour:.2f}/hour{percent}"
    if fleet.minimize == "gpus" and other.gpus is not None and best.gpus is not None:
        return f"{other.gpus - best.gpus:+d} GPUs{percent}"
    if share is None:
        return f"not comparable by {_MEASURES[fleet.minimize]}"
    return _gap_text(fleet, share)


def _source(margin: float) -> str:
    return AREA_MARGINS.get(margin, "--tie-margin")


@dataclass(frozen=True)
class Shifted:
    """The plan's answer with the latency model's efficiencies moved by `shift` (e.g. -0.1)."""

    shift: float
    answer: Any
    combo: tuple
    cost_per_hour: float | None
    text: str  # the option in words, or why there is none

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "efficiency_shift": round(self.shift, 9),  # -0.246, not -0.24600000000000002
            "answer": self.answer,
            "over": dict(self.combo) if self.combo else None,
            "cost_per_hour": self.cost_per_hour,
            "option": self.text,
        }


def shifted(fleet: FleetPlan, shift: float) -> Shifted:
    best = fleet.best
    if best is None:
        return Shifted(shift, None, (), None, "nothing searched meets every SLO (widen the search)")
    return Shifted(shift, best.answer, best.combo, best.cost_per_hour, option(fleet, best))


def model_error_note(fleet: FleetPlan, error: float, moved: list[Shifted]) -> str:
    """Whether the answer survives efficiencies moved by -error and +error."""
    best = fleet.best
    same = [
        m for m in moved if best is not None and (m.answer, m.combo) == (best.answer, best.combo)
    ]
    verdict = (
        "the answer survives"
        if len(same) == len(moved)
        else "the answer does not survive: size for the pessimistic case, or measure"
    )
    parts = "; ".join(f"efficiencies {share_text(m.shift, signed=True)}: {m.text}" for m in moved)
    # say what the shift leaves alone: a plan sensitive to those (an unfitted MoE link share,
    # CPU time) is not covered by it
    scope = f" (it moves the roofline's compute and memory efficiencies only, {MODEL_ERROR_LEAVES})"
    return f"model error +-{share_text(error)}: {parts}; {verdict}{scope}"


EFFICIENCY_SCALE = "cluster.efficiency_scale"


def moved_efficiency(shift: float) -> str:
    """The override that moves every efficiency of the roofline model by `shift` (-0.1: 10%
    lower, a slower model)."""
    return f"{EFFICIENCY_SCALE}={1 + shift:.12g}"


def check_uncertainty(
    tie_margin: float, model_error: float | None, scenario: Any, label: str
) -> None:
    """Both shares in range, and a latency model with efficiencies to move. In Python both are
    shares (0.058 is 5.8%); the command line takes percent and checks its own range first
    (`cli.plan`), so a percent given to Python (5.8) is refused here, naming the unit."""
    if not 0 <= tie_margin < 1:
        raise InputError(label, "tie_margin", _share_message(tie_margin, "[0, 1)", "--tie-margin"))
    if model_error is None:
        return
    if not 0 < model_error < 1:
        raise InputError(
            label, "model_error", _share_message(model_error, "(0, 1)", "--model-error")
        )
    latency = getattr(scenario.cluster, "latency_model", None)
    kind = getattr(latency, "kind", scenario.cluster.service_model)
    if kind != "roofline":
        raise InputError(
            label,
            "model_error (--model-error)",
            f"moves the roofline latency model's efficiencies; this scenario's model is {kind}",
        )


def _share_message(value: float, bounds: str, flag: str) -> str:
    return (
        f"is a share in {bounds} (0.058 is 5.8%), got {value:g}; the command line's {flag} "
        "takes percent, Python's keyword a share"
    )
