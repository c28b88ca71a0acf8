"""Today's scheduling policies (sim/policies/) as a band's fairness policy.

A policy sees a `QueueView`; here the view is of flow queues. Two ways:

- `OnePolicyOverClasses`, when the bands are exactly today's two classes and bands are strict:
  one policy instance sees both bands as its two lanes (gated bands look empty), so it runs
  exactly as it does without flow control (tests/sim/flow/test_two_lanes.py checks it
  byte for byte);
- `PolicyPerBand` otherwise: one instance per band, seeing only that band's flows, in their
  classes' lanes.
"""

from __future__ import annotations

from simsched.sim.flow.bands import flow_of
from simsched.sim.flow.queues import FlowQueues
from simsched.sim.policies import POLICIES
from simsched.sim.policies.base import PolicyContext
from simsched.sim.requests import Request


class FlowView:
    """A `QueueView` of the flows in the bands `shown` (a band -> bool mask)."""

    def __init__(self, queues: FlowQueues, shown: list[bool]) -> None:
        self.queues = queues
        self.tenant_count = queues.tenant_count
        self.shown = shown

    def _visible(self, lane: int, tenant: int) -> int | None:
        flow = flow_of(tenant, lane)
        return flow if self.shown[self.queues.plan.band_of_flow[flow]] else None

    def lane_size(self, lane: int) -> int:
        return sum(self.queue_length(lane, t) for t in range(self.tenant_count))

    def queue_length(self, lane: int, tenant: int) -> int:
        flow = self._visible(lane, tenant)
        return 0 if flow is None else self.queues.flow_sizes[flow]

    def head(self, lane: int, tenant: int) -> Request | None:
        flow = self._visible(lane, tenant)
        return None if flow is None else self.queues.head(flow)

    def held_head(self, lane: int, tenant: int) -> Request | None:
        return None  # a gated band's flows look empty, as without flow control


class OnePolicyOverClasses:
    def __init__(self, name: str, context: PolicyContext) -> None:
        self.policy = POLICIES[name](context)

    def pick(self, queues: FlowQueues, band: int, now: float, is_open: list[bool]) -> int | None:
        choice = self.policy.select(FlowView(queues, is_open))
        return None if choice is None else flow_of(choice.tenant, choice.lane)

    def dispatched(self, request: Request, now: float) -> None:
        pass


class PolicyPerBand:
    def __init__(self, name: str, context: PolicyContext, bands: int) -> None:
        self.policies = [POLICIES[name](context) for _ in range(bands)]

    def pick(self, queues: FlowQueues, band: int, now: float, is_open: list[bool]) -> int | None:
        shown = [b == band for b in range(len(self.policies))]
        choice = self.policies[band].select(FlowView(queues, shown))
        return None if choice is None else flow_of(choice.tenant, choice.lane)

    def dispatched(self, request: Request, now: float) -> None:
        pass


__all__ = ["FlowView", "OnePolicyOverClasses", "PolicyPerBand"]
