"""The gateway's rules with flow control: today's admission rules first (when enabled), then
the flow controller's (sheddable traffic under saturation, guardrails)."""

from __future__ import annotations

from simsched.sim.flow.controller import FlowController
from simsched.sim.flow.queues import FlowQueues
from simsched.sim.requests import Request


class FlowAdmission:
    def __init__(self, rules, controller: FlowController) -> None:
        self.rules = rules
        self.controller = controller

    def judge(self, request: Request) -> tuple[str, float] | None:
        verdict = self.rules.judge(request)
        if verdict is not None:
            return verdict
        controller = self.controller
        reason = controller.judge(request, controller.env.now)
        if reason is None:
            return None
        cluster = controller.cluster
        return reason, cluster.kv_blocks_in_use() / cluster.kv_blocks_total


class QueueingFlows:
    """The lanes the gateway pushes into: the flow queues, and the TTL clock started on push."""

    def __init__(self, queues: FlowQueues) -> None:
        self.queues = queues
        self.controller: FlowController | None = None  # attached once the cluster exists

    def push(self, request: Request) -> None:
        self.queues.push(request)
        self.controller.queued(request)

    def lane_size(self, lane: int) -> int:
        return self.queues.lane_size(lane)

    def total_size(self) -> int:
        return self.queues.total_size()

    def queued_kv_blocks(self, lane: int) -> int:
        return self.queues.queued_kv_blocks(lane)

    def pending_service_tokens(self, lane: int) -> int:
        return self.queues.pending_service_tokens(lane)
