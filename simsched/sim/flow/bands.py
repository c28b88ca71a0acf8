"""Priority bands: each distinct priority among the tenants is a band, highest first."""

from __future__ import annotations

from dataclasses import dataclass

from simsched.config.flow_control import FlowControl


@dataclass(frozen=True)
class BandPlan:
    priorities: tuple[int, ...]  # per band, highest first
    band_of_tenant: tuple[int, ...]  # per tenant (declaration order)
    sheddable: tuple[bool, ...]  # per tenant: llm-d's `sheddable` criticality

    @property
    def count(self) -> int:
        return len(self.priorities)


def plan_bands(flow: FlowControl, tenants) -> BandPlan:
    """`tenants`: the scenario's tenants (id and priority class)."""
    wanted = [flow.tenant_priority(t.id, t.priority) for t in tenants]
    priorities = tuple(sorted(set(wanted), reverse=True))
    index = {priority: band for band, priority in enumerate(priorities)}
    return BandPlan(
        priorities,
        tuple(index[p] for p in wanted),
        tuple(flow.is_sheddable(t.id) for t in tenants),
    )
