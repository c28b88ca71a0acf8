"""Which request within a tenant, and which head among many: helpers shared by the policies.

Every (lane, tenant) queue is FIFO, so the only requests a policy ever needs to look at are the
heads of the 2*T queues. These helpers walk those heads once, so a policy built on them costs
O(tenants) per call however long the queues grow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from simsched.config.classes import BATCH, INTERACTIVE
from simsched.sim.policies.base import Pick, QueueView
from simsched.sim.requests import Request

LANES = (INTERACTIVE, BATCH)


def arrival_order(request: Request) -> int:
    """A `first_head` key: global arrival order (unique, so ties cannot happen)."""
    return request.seq


def oldest_head(view: QueueView, tenant: int) -> tuple[int, Request] | None:
    """The tenant's oldest queued request (global arrival order) and its lane, whatever its class.

    This is class-blind ordering within a tenant: the tenant's two lanes merged by arrival.
    """
    return _oldest(view.head, tenant)


def oldest_held_head(view: QueueView, tenant: int) -> tuple[int, Request] | None:
    """As `oldest_head`, among the heads the view hides because their tenant is held."""
    return _oldest(view.held_head, tenant)


def _oldest(
    head_of: Callable[[int, int], Request | None], tenant: int
) -> tuple[int, Request] | None:
    best: tuple[int, Request] | None = None
    for lane in LANES:
        head = head_of(lane, tenant)
        if head is not None and (best is None or head.seq < best[1].seq):
            best = (lane, head)
    return best


def first_head(view: QueueView, lanes: Iterable[int], key: Callable[[Request], Any]) -> Pick | None:
    """The head with the smallest `key` among the given lanes' heads, or None if all are empty.

    Ties go to the lane listed first, then to the tenant declared first, so the answer never
    depends on anything but the view; callers append `seq` to their key to make it total.
    """
    best: Pick | None = None
    best_key: Any = None
    for lane in lanes:
        if not view.lane_size(lane):
            continue  # an empty lane needs no walk over its tenants
        for tenant in range(view.tenant_count):
            head = view.head(lane, tenant)
            if head is None:
                continue
            head_key = key(head)
            if best is None or head_key < best_key:
                best, best_key = Pick(lane, tenant), head_key
    return best
