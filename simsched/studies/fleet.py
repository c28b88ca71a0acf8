"""A plan over combinations (`--over cluster.gpu=a100-80gb,h100-80gb`): a search per combination
and the answer among them, the cheapest (`--minimize cost`), the fewest GPUs, or the best value
of the knob itself (the default).

Cost is GPU-hours at the GPU's price: replicas x tp GPUs at `price_per_gpu_hour` (the scenario's,
else the preset's list price, `simsched.config.prices`), per hour of service.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from simsched.studies.bisection import PlanResult, Probe
from simsched.studies.slo import Slo

MINIMIZE = ("value", "cost", "gpus")
Combo = tuple[tuple[str, Any], ...]


def combinations(over: dict[str, list] | None) -> list[Combo]:
    """Every combination of the `--over` values, the first path varying slowest; one empty
    combination without `--over`."""
    if not over:
        return [()]
    paths = list(over)
    return [tuple(zip(paths, values, strict=True)) for values in itertools.product(*over.values())]


def shown(combo: Combo) -> str:
    return ", ".join(f"{path}={value}" for path, value in combo)


@dataclass(repr=False)
class FleetPlan:
    knob: str
    variant: str
    maximize: bool
    slos: list[Slo]
    rule: str
    seeds: int
    minimize: str
    plans: list[PlanResult]
    probes: list[Probe] = field(default_factory=list)  # in the order they ran
    best: PlanResult | None = None
    message: str = ""
    notes: list[str] = field(default_factory=list)
    scenario: str = ""  # the scenario's name, for reports
    headroom: Any = None  # headroom.Headroom of the answer, unless turned off
    model_error: list[Any] = field(default_factory=list)  # uncertainty.Shifted, -P% and +P%
    utilisation: dict[str, Any] | None = None  # at the answer, the scenario's seed
    choice: dict[str, Any] | None = None  # runner-up and near-ties (uncertainty.py), cost only

    def __repr__(self) -> str:
        """A short summary (the dataclass's would print every probe)."""
        over = f" over {shown(self.best.combo)}" if self.best and self.best.combo else ""
        return (
            f"<FleetPlan {self.knob}={self.answer}{over}: {len(self.plans)} combination(s), "
            f"{len(self.probes)} probes, {self.seeds} seed(s), minimize {self.minimize}>"
        )

    @property
    def answer(self) -> Any:
        return self.best.answer if self.best else None

    @property
    def warnings(self) -> list[str]:
        return [w for plan in self.plans for w in _prefixed(plan)]

    def choose(self) -> None:
        """The best combination that meets every SLO, and the message saying so."""
        found = [plan for plan in self.plans if plan.answer is not None]
        if len(self.plans) == 1:
            self.best = found[0] if found else None
            self.message = self.plans[0].message or f"{self.plans[0].error}"
            return
        if not found:
            self.message = f"no combination meets every SLO within the range of {self.knob}"
            return
        self.best = min(found, key=self.sort_key)  # min keeps the first of equals: --over order
        best = self.best
        what = {
            "value": f"the {_goal(self)} {self.knob}",
            "cost": "the cheapest",
            "gpus": "the fewest GPUs",
        }[self.minimize]
        fleet = f" ({gpu_count(best.gpus)}, {_price(best.cost_per_hour)})" if best.gpus else ""
        self.message = (
            f"{what} meeting every SLO: {shown(best.combo)} with {self.knob}={best.answer}{fleet}"
        )

    def sort_key(self, plan: PlanResult) -> tuple[float, ...]:
        """What the plan minimizes, then (equal GPUs) the cost, then the wider thinnest SLO
        margin: of two equal options the one further from its targets, so that one seed's
        luck near a target does not pick the answer (`thinnest_margin`)."""
        if self.minimize == "cost":
            first: tuple[float, ...] = (plan.cost_per_hour,)
        elif self.minimize == "gpus":  # equal GPUs: the cheaper first (no price: last)
            cost = plan.cost_per_hour
            first = (plan.gpus, math.inf if cost is None else cost)
        else:
            first = (-plan.answer if self.maximize else plan.answer,)
        return (*first, -thinnest_margin(plan))

    def to_json_dict(self) -> dict[str, Any]:
        if len(self.plans) == 1:  # one search: its document, as without --over
            document = self.plans[0].to_json_dict()
        else:
            document = {
                "answer": self.answer,
                "over": dict(self.best.combo) if self.best else None,
                "gpus": self.best.gpus if self.best else None,
                "cost_per_hour": self.best.cost_per_hour if self.best else None,
                "combinations": [plan.to_json_dict() for plan in self.plans],
                "knob": self.knob,
                "variant": self.variant,
                "minimize": self.minimize,
                "slos": [slo.text for slo in self.slos],
                "message": self.message,
                "warnings": self.warnings,
            }
        extra: dict[str, Any] = {"rule": self.rule, "seeds": self.seeds, "notes": self.notes}
        if self.headroom is not None:
            extra["headroom"] = self.headroom.to_json_dict()
        if self.model_error:
            extra["model_error"] = [m.to_json_dict() for m in self.model_error]
        if self.utilisation is not None:
            extra["utilisation"] = self.utilisation
        if self.choice is not None:
            extra |= self.choice
        return ({"scenario": self.scenario} if self.scenario else {}) | document | extra

    def to_frame(self):
        """Every probe of every combination as a row (`simsched.studies.plan_frame`)."""
        from simsched.studies.plan_frame import probes_frame

        return probes_frame(self.plans)


def _goal(fleet: FleetPlan) -> str:
    return "largest" if fleet.maximize else "smallest"


def _prefixed(plan: PlanResult) -> list[str]:
    return [f"{shown(plan.combo)}: {w}" if plan.combo else w for w in plan.warnings]


def _price(cost_per_hour: float | None) -> str:
    # a GPU without a list price (b200, or a mapping with none) has a size but no cost
    return "no list price" if cost_per_hour is None else f"${cost_per_hour:.2f}/hour"


def thinnest_margin(plan: PlanResult) -> float:
    """The answer's smallest SLO margin as a share of its target (0 where unknown): how close
    the answer came to missing. A target of 0 (`all.shed_rate<=0`) has no share to give and
    plays no part (its margin is 0 whenever it is met)."""
    probe = plan.at_answer
    shares = []
    for slo in plan.slos:
        margin = None if probe is None else probe.margins.get(slo.key)
        if margin is not None and not math.isnan(margin) and slo.limit:
            shares.append(margin / abs(slo.limit))
    return min(shares, default=0.0)


def gpu_count(gpus: int) -> str:
    """`1 GPU`, `16 GPUs`."""
    return f"{gpus} GPU{'s' * (gpus != 1)}"
