"""`vtc`: the Virtual Token Counter (Sheng et al., "Fairness in Serving Large Language Models",
OSDI 2024), counting service tokens.

- Every tenant has a counter, 0 at the start. The backlogged tenant (anything queued, either
  lane) with the smallest counter goes next, ties to the tenant declared first; its counter
  advances by the picked request's service tokens divided by the tenant's weight. So the
  counter is the tenant's weight-normalised service, and two continuously backlogged tenants
  never drift apart by more than one request's worth.
- A tenant returning from idle is lifted to `max(own, min of the counters of the tenants that
  stayed backlogged)`, so it cannot bank credit while it had nothing queued. "Idle" means
  nothing queued once the previous pick left the queues, as in the paper's reference code,
  where the lift happens whenever a tenant's queue goes from empty to non-empty: a tenant
  whose last queued request was the one just picked, and whose next request arrives before the
  next decision, is idle too. When no tenant stayed backlogged there is no lift (also as in
  that code): tenants returning together are not lifted against each other.
- A tenant held because its pools are full (sim/tenant_room.py) is passed over with its
  counter untouched, and counts as backlogged (never lifted as returning from idle).
- Within the chosen tenant, its oldest request goes first whatever its class (VTC is about
  tenants; priority classes only matter to the gateway and the dispatch KV gate).

The paper charges output tokens as they are generated; here a request's whole cost (prefill
and decode, weighted) is charged when it is picked, since the simulator knows it up front.
A picked request shed at the dispatch KV gate is still charged: the policy cannot tell.
"""

from __future__ import annotations

from simsched.sim.policies.base import Pick, Policy, PolicyContext, QueueView
from simsched.sim.policies.ordering import LANES, oldest_head
from simsched.sim.requests import Request


class Vtc(Policy):
    name = "vtc"

    def __init__(self, context: PolicyContext) -> None:
        super().__init__(context)
        self.counters = [0.0] * len(self.weights)
        # Who still had work queued once the previous pick left; the rest are idle.
        self._stayed = [False] * len(self.weights)

    def select(self, view: QueueView) -> Pick | None:
        heads = [oldest_head(view, tenant) for tenant in range(view.tenant_count)]
        self._lift_returning(heads)
        tenant = self._smallest_counter(heads)
        if tenant is None:
            self._stayed = [_held(view, t) for t in range(view.tenant_count)]
            return None
        lane, request = heads[tenant]
        self.counters[tenant] += request.service_tokens / self.weights[tenant]
        self._stayed = [head is not None or _held(view, t) for t, head in enumerate(heads)]
        self._stayed[tenant] = sum(view.queue_length(ln, tenant) for ln in LANES) > 1
        return Pick(lane, tenant)

    def _lift_returning(self, heads: list[tuple[int, Request] | None]) -> None:
        stayed = [t for t, head in enumerate(heads) if head is not None and self._stayed[t]]
        if not stayed:
            return
        floor = min(self.counters[t] for t in stayed)
        for tenant, head in enumerate(heads):
            if head is not None and not self._stayed[tenant]:
                self.counters[tenant] = max(self.counters[tenant], floor)

    def _smallest_counter(self, heads: list[tuple[int, Request] | None]) -> int | None:
        best: int | None = None
        for tenant, head in enumerate(heads):
            if head is not None and (best is None or self.counters[tenant] < self.counters[best]):
                best = tenant
        return best


def _held(view: QueueView, tenant: int) -> bool:
    """Queued but held (its pools full, sim/tenant_room.py): still backlogged, so not lifted."""
    return any(view.held_head(lane, tenant) is not None for lane in LANES)
