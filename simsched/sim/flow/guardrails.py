"""Guardrails: queue capacity at the gateway, global and per band (llm-d's `maxRequests` and
`maxBytes`, priority bands' too). A request that would take the queued count past a limit
(count + 1 > max) or the queued bytes past one (bytes + its own > max) is rejected with a 429,
as llm-d's ShardProcessor.hasCapacity does; 0 means no limit."""

from __future__ import annotations

from simsched.config.flow_control import FlowControl
from simsched.sim.flow.bands import BandPlan
from simsched.sim.flow.queues import FlowQueues
from simsched.sim.requests import Request

SHED_QUEUE_CAPACITY = "shed_queue_capacity"
SHED_BAND_CAPACITY = "shed_band_capacity"


class Guardrails:
    def __init__(self, flow: FlowControl, plan: BandPlan) -> None:
        self.max_requests, self.max_bytes = flow.max_requests, flow.max_bytes
        limits = {band.priority: band for band in flow.bands}
        self.band_limits = [
            (limits[p].max_requests, limits[p].max_bytes) if p in limits else (0, 0)
            for p in plan.priorities
        ]

    def verdict(self, request: Request, queues: FlowQueues) -> str | None:
        size = queues.bytes_of(request)
        if _over(queues.total_size(), queues.total_bytes, size, self.max_requests, self.max_bytes):
            return SHED_QUEUE_CAPACITY
        band = queues.band_of(request)
        most_requests, most_bytes = self.band_limits[band]
        count, held = queues.band_requests[band], queues.band_bytes[band]
        if _over(count, held, size, most_requests, most_bytes):
            return SHED_BAND_CAPACITY
        return None


def _over(count: int, held: int, size: int, most_requests: int, most_bytes: int) -> bool:
    if most_requests and count + 1 > most_requests:
        return True
    return bool(most_bytes and held + size > most_bytes)
