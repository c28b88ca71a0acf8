"""The flow queues: one heap per flow (a tenant's requests of one class), in the ordering
policy's key, ties by arrival order.

Also the lanes' read-only totals (`lane_size`, `queued_kv_blocks`, `pending_service_tokens`,
`total_size`), so that the gateway's admission rules, the KV gate and the timeline sampler work
on it unchanged. A request can leave from anywhere (a TTL expiry): it is marked gone and dropped
when it reaches the top of its heap, while every total is updated at once.
"""

from __future__ import annotations

import heapq

from simsched.config.classes import CLASS_NAMES
from simsched.sim.flow.bands import BandPlan, flow_of
from simsched.sim.flow.ordering import OrderingPolicy
from simsched.sim.requests import Request


class FlowQueues:
    def __init__(
        self, plan: BandPlan, tenant_count: int, ordering: OrderingPolicy, bytes_per_token: float
    ) -> None:
        self.plan = plan
        self.tenant_count = tenant_count
        self.flow_count = tenant_count * len(CLASS_NAMES)
        self.ordering = ordering
        self.bytes_per_token = bytes_per_token
        self._heaps: list[list[tuple[float, int, Request]]] = [[] for _ in range(self.flow_count)]
        self._queued: dict[int, Request] = {}  # seq -> request, while queued
        self._ttl: dict[int, float] = {}  # seq -> the TTL it was queued with
        self.band_requests = [0] * plan.count
        self.band_bytes = [0] * plan.count
        self.flow_sizes = [0] * self.flow_count
        self.total_bytes = 0
        self._sizes = [0 for _ in CLASS_NAMES]
        self._kv_blocks = [0 for _ in CLASS_NAMES]
        self._service_tokens = [0 for _ in CLASS_NAMES]
        self.ttl_for_next = 0.0  # the TTL of the next push (set by the controller)

    def bytes_of(self, request: Request) -> int:
        return int(request.prefill_tokens * self.bytes_per_token)

    def band_of(self, request: Request) -> int:
        return self.plan.band_of_flow[flow_of(request.tenant, request.lane)]

    def push(self, request: Request) -> None:
        ttl = self.ttl_for_next
        key = self.ordering.key(request, ttl)
        flow = flow_of(request.tenant, request.lane)
        heapq.heappush(self._heaps[flow], (key, request.seq, request))
        self._queued[request.seq] = request
        self._ttl[request.seq] = ttl
        self._count(request, 1)

    def take(self, flow: int) -> Request:
        """The flow's first request, out of its queue."""
        request = self.head(flow)
        assert request is not None, "take() from an empty flow"
        heapq.heappop(self._heaps[flow])
        self._leave(request)
        return request

    def remove(self, request: Request) -> bool:
        """Out of its queue from anywhere (TTL); False if it already left."""
        if request.seq not in self._queued:
            return False
        self._leave(request)
        return True

    def head(self, flow: int) -> Request | None:
        heap = self._heaps[flow]
        queued = self._queued
        while heap and heap[0][1] not in queued:
            heapq.heappop(heap)  # left by TTL
        return heap[0][2] if heap else None

    def head_key(self, flow: int) -> tuple[float, int]:
        """The flow's head's (ordering key, seq); the flow must not be empty."""
        head = self.head(flow)
        assert head is not None
        return self.ordering.key(head, self._ttl[head.seq]), head.seq

    def ttl_of(self, request: Request) -> float:
        return self._ttl[request.seq]

    def is_queued(self, request: Request) -> bool:
        return request.seq in self._queued

    def flows_in_band(self, band: int) -> list[int]:
        band_of, sizes = self.plan.band_of_flow, self.flow_sizes
        return [f for f in range(self.flow_count) if band_of[f] == band and sizes[f]]

    def _leave(self, request: Request) -> None:
        del self._queued[request.seq]
        del self._ttl[request.seq]
        self._count(request, -1)

    def _count(self, request: Request, sign: int) -> None:
        band, size = self.band_of(request), self.bytes_of(request)
        self.band_requests[band] += sign
        self.band_bytes[band] += sign * size
        self.total_bytes += sign * size
        lane = request.lane
        self.flow_sizes[flow_of(request.tenant, lane)] += sign
        self._sizes[lane] += sign
        self._kv_blocks[lane] += sign * request.kv_blocks
        self._service_tokens[lane] += sign * request.service_tokens

    # --- the lanes' read-only totals --------------------------------------------------------
    def lane_size(self, lane: int) -> int:
        return self._sizes[lane]

    def total_size(self) -> int:
        return sum(self._sizes)

    def queued_kv_blocks(self, lane: int) -> int:
        return self._kv_blocks[lane]

    def pending_service_tokens(self, lane: int) -> int:
        return self._service_tokens[lane]
