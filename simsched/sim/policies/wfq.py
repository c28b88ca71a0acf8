"""`wfq`: weighted start-time fair queueing (Goyal et al.'s SFQ) over service tokens, per tenant.

- A tenant's queue is its two lanes merged by arrival: its oldest request goes first, whatever
  its class.
- When a request becomes its tenant's head it gets a start tag `S = max(V, F_prev)` and a
  finish tag `F = S + service_tokens / weight`, `F_prev` being the finish tag of the tenant's
  previous request (0 at first) and `V` the virtual time.
- The head with the smallest start tag goes next, ties to the tenant declared first, and `V`
  becomes its start tag (SFQ's "start tag of the request in service"), unless that is below
  `V`: `V` never decreases. Only a held head (next) can carry `S < V`.
- A tenant held because its pools are full (sim/tenant_room.py) cannot be picked, but its head
  is tagged like any other, the first time a decision sees it: a request that becomes its
  tenant's head during a hold keeps the start tag of that moment, so the hold does not cost
  it its place (as DRR keeps a held tenant's deficit and VTC its counter).

Tags live in per-tenant running state, never on the queues: a head is tagged the first time a
decision sees it, which gives the tag it would have had when it became the head, because `V`
only moves at decisions. A tenant returning from idle starts at `V`, so it gets no credit for
its idle time. A picked request shed at the dispatch KV gate keeps its tags (the policy cannot
tell).
"""

from __future__ import annotations

from simsched.sim.policies.base import Pick, Policy, PolicyContext, QueueView
from simsched.sim.policies.ordering import oldest_head, oldest_held_head
from simsched.sim.requests import Request

_UNTAGGED = -1  # no request seq is negative


class Wfq(Policy):
    name = "wfq"

    def __init__(self, context: PolicyContext) -> None:
        super().__init__(context)
        tenants = len(self.weights)
        self.virtual_time = 0.0
        self.start_tags = [0.0] * tenants  # start tag of each tenant's tagged head
        self.finish_tags = [0.0] * tenants  # finish tag of the tenant's latest tagged request
        self._tagged_seq = [_UNTAGGED] * tenants  # which request holds the start tag

    def select(self, view: QueueView) -> Pick | None:
        best: Pick | None = None
        for tenant in range(view.tenant_count):
            found = oldest_head(view, tenant)
            if found is None:
                self._tag_held(view, tenant)
                continue
            lane, head = found
            if head.seq != self._tagged_seq[tenant]:
                self._tag(tenant, head)
            if best is None or self.start_tags[tenant] < self.start_tags[best.tenant]:
                best = Pick(lane, tenant)
        if best is not None:
            self.virtual_time = max(self.virtual_time, self.start_tags[best.tenant])
            self._tagged_seq[best.tenant] = _UNTAGGED  # the picked head leaves the queue
        return best

    def _tag_held(self, view: QueueView, tenant: int) -> None:
        held = oldest_held_head(view, tenant)
        if held is not None and held[1].seq != self._tagged_seq[tenant]:
            self._tag(tenant, held[1])

    def _tag(self, tenant: int, head: Request) -> None:
        start = max(self.virtual_time, self.finish_tags[tenant])
        self.start_tags[tenant] = start
        self.finish_tags[tenant] = start + head.service_tokens / self.weights[tenant]
        self._tagged_seq[tenant] = head.seq
