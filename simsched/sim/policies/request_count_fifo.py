"""`request_count_fifo`: the reference's naive baseline.

Tenants take turns in declaration order, one request per turn, whatever its size: fairness in
request counts, not in work. No priority lanes: within a tenant, the oldest request goes first
whichever class it has. The gateway does not screen arrivals for this policy, and the dispatch
KV gate (when admission is enabled) uses the interactive watermark for every request.
"""

from __future__ import annotations

from simsched.sim.policies.base import Pick, Policy, PolicyContext, QueueView
from simsched.sim.requests import BATCH, INTERACTIVE


class RequestCountFifo(Policy):
    name = "request_count_fifo"
    screens_arrivals = False
    class_blind = True

    def __init__(self, context: PolicyContext) -> None:
        super().__init__(context)
        self._next_tenant = 0  # where the round in progress resumes

    def select(self, view: QueueView) -> Pick | None:
        pick = self._scan(view, self._next_tenant)
        if pick is None and self._next_tenant:
            pick = self._scan(view, 0)  # the round is over; a new one starts at the first tenant
        self._next_tenant = pick.tenant + 1 if pick else 0
        return pick

    def _scan(self, view: QueueView, start: int) -> Pick | None:
        for tenant in range(start, view.tenant_count):
            lane = oldest_lane(view, tenant)
            if lane is not None:
                return Pick(lane, tenant)
        return None


def oldest_lane(view: QueueView, tenant: int) -> int | None:
    """The lane holding the tenant's oldest queued request (arrival order), if any."""
    interactive = view.head(INTERACTIVE, tenant)
    batch = view.head(BATCH, tenant)
    if interactive is None:
        return None if batch is None else BATCH
    if batch is None or interactive.seq < batch.seq:
        return INTERACTIVE
    return BATCH
