"""Per-class, per-tenant FIFO queues with O(1) running totals.

The admission rules need "KV blocks queued in a lane" and "service tokens pending in a lane" on
every arrival; the reference sums over the queues each time. Here the sums are kept up to date on
every push and pop, so each arrival costs O(1) however long the queues grow.

A `Lanes` object is also the read-only view that policies get (see `policies.base.QueueView`).
"""

from __future__ import annotations

from collections import deque

from simsched.config.classes import CLASS_NAMES
from simsched.sim.requests import Request


class Lanes:
    def __init__(self, tenant_count: int) -> None:
        self.tenant_count = tenant_count
        self._queues = [[deque() for _ in range(tenant_count)] for _ in CLASS_NAMES]
        self._sizes = [0 for _ in CLASS_NAMES]
        self._kv_blocks = [0 for _ in CLASS_NAMES]
        self._service_tokens = [0 for _ in CLASS_NAMES]

    def push(self, request: Request) -> None:
        lane = request.lane
        self._queues[lane][request.tenant].append(request)
        self._sizes[lane] += 1
        self._kv_blocks[lane] += request.kv_blocks
        self._service_tokens[lane] += request.service_tokens

    def pop(self, lane: int, tenant: int) -> Request:
        request = self._queues[lane][tenant].popleft()
        self._sizes[lane] -= 1
        self._kv_blocks[lane] -= request.kv_blocks
        self._service_tokens[lane] -= request.service_tokens
        return request

    # --- the read-only view -------------------------------------------------------------------
    def lane_size(self, lane: int) -> int:
        return self._sizes[lane]

    def total_size(self) -> int:
        return sum(self._sizes)

    def queue_length(self, lane: int, tenant: int) -> int:
        return len(self._queues[lane][tenant])

    def head(self, lane: int, tenant: int) -> Request | None:
        queue = self._queues[lane][tenant]
        return queue[0] if queue else None

    def held_head(self, lane: int, tenant: int) -> Request | None:
        return None  # the lanes themselves hide nothing (see tenant_room.OpenTenantsView)

    def queued_kv_blocks(self, lane: int) -> int:
        return self._kv_blocks[lane]

    def pending_service_tokens(self, lane: int) -> int:
        return self._service_tokens[lane]
