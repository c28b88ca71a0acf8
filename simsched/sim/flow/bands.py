"""Priority bands and flows. A flow is a tenant's requests of one class (index
`tenant * 2 + lane`); each distinct priority among the flows is a band, highest first."""

from __future__ import annotations

from dataclasses import dataclass

from simsched.config.classes import CLASS_NAMES
from simsched.config.flow_control import CLASS_PRIORITY, CRITICALITY, FlowControl

LANES = len(CLASS_NAMES)


@dataclass(frozen=True)
class BandPlan:
    priorities: tuple[int, ...]  # per band, highest first
    band_of_flow: tuple[int, ...]  # per flow
    sheddable: tuple[bool, ...]  # per flow: a priority below 0, as llm-d's IsSheddable

    @property
    def count(self) -> int:
        return len(self.priorities)

    def is_two_classes(self) -> bool:
        """The bands are exactly today's lanes: every interactive flow in the first band, every
        batch flow in the second."""
        lanes = [flow % LANES for flow in range(len(self.band_of_flow))]
        return self.count == LANES and list(self.band_of_flow) == lanes


def flow_of(tenant: int, lane: int) -> int:
    return tenant * LANES + lane


def plan_bands(flow: FlowControl, tenants, active: set[int] | None = None) -> BandPlan:
    """`tenants`: the scenario's tenants (their ids); `active`: the flows that send requests
    (None: all). Only active flows make bands, as llm-d counts only active priorities."""
    given = [
        flow.flow_priority(t.id, name) for t in tenants for name in CLASS_NAMES
    ]  # flow order: tenant by tenant, interactive then batch
    wanted = [CRITICALITY[g] if isinstance(g, str) else g for g in given]
    used = range(len(wanted)) if active is None else sorted(active)
    priorities = tuple(sorted({wanted[f] for f in used}, reverse=True)) or (0,)
    sheddable = tuple(w < 0 for w in wanted)
    wanted = [w if w in priorities else priorities[-1] for w in wanted]  # idle flows: any band
    index = {priority: band for band, priority in enumerate(priorities)}
    return BandPlan(
        priorities,
        tuple(index[p] for p in wanted),
        sheddable,
    )


__all__ = ["CLASS_PRIORITY", "BandPlan", "flow_of", "plan_bands"]
