"""Room per tenant: the scheduler process for clusters whose tenants may use different replicas.

With `cluster.pools`, a tenant is served only by its eligible pools (its model, narrowed by
`tenants[].pools`). "The cluster has room" then depends on the tenant: when the batch tenant's
A100 pool is full, the chat tenant's idle H100 pool still has room. A single cluster-wide
`has_room()` would let one tenant's full pools stop dispatch for everyone (head-of-line blocking
across tenants), so a cluster that runs this scheduler (sim/schedulers.py: `pools`) answers
`open_tenants() -> list[bool]` (may the tenant's next request be placed now?), and the scheduler
here shows the policy only the open tenants' queues (`OpenTenantsView`).

The rule for the policies, each seeing a held tenant (queued work, pools full) as absent for
this decision but keeping its state for it (`QueueView.held_head`):

- priority lanes are respected within what can go: interactive work that cannot be placed does
  not stop an open tenant's batch work (`service_token_drr`, `strict_priority`);
- `service_token_drr`: a held tenant's turn is skipped with its deficit untouched (neither the
  quantum added nor the reset of an empty tenant), and a no-dispatch round's boost skips it;
- `vtc`: a held tenant's counter is untouched and it still counts as backlogged, so it is not
  lifted as a tenant returning from idle when its pools have room again;
- `wfq`: a held tenant's head is tagged as any head when a decision first sees it, and its
  tags are then untouched (a head that arrives during the hold keeps that start tag);
- `request_count_fifo`, `fcfs`, `edf`: a held tenant is passed over, as if empty.

Clusters with one pool of replicas for everyone (token_server, continuous_batching) keep
`dispatcher.scheduler_process`, so their runs are unchanged.
"""

from __future__ import annotations

from collections.abc import Generator

import simpy

from simsched.sim.dispatcher import Stages, dispatch_chosen
from simsched.sim.lanes import Lanes
from simsched.sim.requests import Request


class OpenTenantsView:
    """A `QueueView` of the lanes in which held tenants' queues look empty."""

    def __init__(self, lanes: Lanes, open_tenants: list[bool]) -> None:
        self.lanes = lanes
        self.open = open_tenants
        self.tenant_count = lanes.tenant_count

    def lane_size(self, lane: int) -> int:
        total = 0
        for tenant in range(self.tenant_count):
            if self.open[tenant]:
                total += self.lanes.queue_length(lane, tenant)
        return total

    def queue_length(self, lane: int, tenant: int) -> int:
        return self.lanes.queue_length(lane, tenant) if self.open[tenant] else 0

    def head(self, lane: int, tenant: int) -> Request | None:
        return self.lanes.head(lane, tenant) if self.open[tenant] else None

    def held_head(self, lane: int, tenant: int) -> Request | None:
        return None if self.open[tenant] else self.lanes.head(lane, tenant)


def per_tenant_scheduler_process(stages: Stages) -> Generator[simpy.Event, None, None]:
    """As `dispatcher.scheduler_process`, with the policy choosing among open tenants only."""
    env, policy, lanes, gateway = stages.env, stages.policy, stages.lanes, stages.gateway
    cluster = stages.cluster
    while True:
        now = env.now
        gateway.tick(now)
        if not cluster.has_room():  # no pool has room: no tenant can go
            yield cluster.room_available()
            continue
        view = OpenTenantsView(lanes, cluster.open_tenants())
        pick = policy.select(view)
        if pick is None:
            if lanes.total_size():  # held work goes when its pools have room
                yield env.any_of([cluster.room_available(), gateway.next_arrival()])
            else:
                yield gateway.next_arrival()
            continue
        request = lanes.pop(pick.lane, pick.tenant)
        ready = dispatch_chosen(stages, request, now)
        if ready is not None:
            yield ready
