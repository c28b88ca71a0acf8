"""`edf`: earliest deadline first, the deadline being arrival plus the class's TTFT target.

A request's deadline is `arrival_ms + ttft_slo_ms[lane]` (`slo.interactive_ttft_ms` or
`slo.batch_ttft_ms`); the queued request with the earliest deadline goes next, ties to the
earlier arrival (`seq`). Within a class deadlines follow arrival order, so each (lane, tenant)
queue's head is its earliest deadline and only the 2*T heads need comparing. Classes interleave:
a batch request that has waited long enough outranks a fresh interactive one. No fairness
between tenants.
"""

from __future__ import annotations

from simsched.sim.policies.base import Pick, Policy, PolicyContext, QueueView
from simsched.sim.policies.ordering import LANES, first_head
from simsched.sim.requests import Request


class EarliestDeadlineFirst(Policy):
    name = "edf"

    def __init__(self, context: PolicyContext) -> None:
        super().__init__(context)
        self.ttft_slo_ms = context.ttft_slo_ms

    def deadline_ms(self, request: Request) -> float:
        return request.arrival_ms + self.ttft_slo_ms[request.lane]

    def select(self, view: QueueView) -> Pick | None:
        return first_head(view, LANES, self._key)

    def _key(self, request: Request) -> tuple[float, int]:
        return self.deadline_ms(request), request.seq
