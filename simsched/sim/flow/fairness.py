"""Fairness policies: which flow (tenant) of a band goes next (llm-d's `fairness` plugins).

- `global_strict`: the flow whose head request comes first in the ordering policy's key, across
  the band (llm-d's global-strict / best-head); ties by arrival order.
- `round_robin`: the band's non-empty flows in turn, in declaration order, from the one after
  the last served.
- `las`: least attained service. A flow's service is the weighted tokens it was dispatched,
  `prefill + output_weight * decode`, decayed by `2 ** (-elapsed / half_life)`; the flow with
  the least decayed service goes first (ties: earliest head, then declaration order).
"""

from __future__ import annotations

import math
from typing import Protocol

from simsched.config.flow_control import FlowControl
from simsched.sim.flow.queues import FlowQueues
from simsched.sim.requests import Request


class FairnessPolicy(Protocol):
    def pick(self, queues: FlowQueues, band: int, now: float) -> int | None: ...

    def dispatched(self, request: Request, now: float) -> None: ...


def _head_key(queues: FlowQueues, tenant: int) -> tuple[float, int]:
    head = queues.head(tenant)
    assert head is not None
    return queues.ordering.key(head, queues.ttl_of(head)), head.seq


class GlobalStrict:
    def pick(self, queues: FlowQueues, band: int, now: float) -> int | None:
        flows = queues.flows_in_band(band)
        return min(flows, key=lambda t: _head_key(queues, t)) if flows else None

    def dispatched(self, request: Request, now: float) -> None:
        pass


class RoundRobin:
    def __init__(self, tenant_count: int) -> None:
        self.tenant_count = tenant_count
        self.last: dict[int, int] = {}  # band -> the tenant served last

    def pick(self, queues: FlowQueues, band: int, now: float) -> int | None:
        flows = queues.flows_in_band(band)
        if not flows:
            return None
        last = self.last.get(band, -1)
        after = [t for t in flows if t > last]
        choice = after[0] if after else flows[0]
        self.last[band] = choice
        return choice

    def dispatched(self, request: Request, now: float) -> None:
        pass


class LeastAttainedService:
    def __init__(self, tenant_count: int, output_weight: float, half_life_ms: float) -> None:
        self.output_weight = output_weight
        self.half_life_ms = half_life_ms
        self.service = [0.0] * tenant_count
        self.anchor = [0.0] * tenant_count  # the instant up to which decay is folded in

    def attained(self, tenant: int, now: float) -> float:
        """The decayed service at `now`, folded in (as llm-d's lasState.Service)."""
        elapsed = now - self.anchor[tenant]
        if elapsed > 0 and self.half_life_ms > 0:
            self.service[tenant] *= math.exp2(-elapsed / self.half_life_ms)
        self.anchor[tenant] = max(self.anchor[tenant], now)
        return self.service[tenant]

    def pick(self, queues: FlowQueues, band: int, now: float) -> int | None:
        flows = queues.flows_in_band(band)
        if not flows:
            return None
        return min(flows, key=lambda t: (self.attained(t, now), *_head_key(queues, t)))

    def dispatched(self, request: Request, now: float) -> None:
        tenant = request.tenant
        cost = request.prefill_tokens + self.output_weight * request.decode_tokens
        self.service[tenant] = self.attained(tenant, now) + cost


def build_fairness(flow: FlowControl, tenant_count: int) -> FairnessPolicy:
    if flow.fairness == "round_robin":
        return RoundRobin(tenant_count)
    if flow.fairness == "las":
        return LeastAttainedService(tenant_count, flow.las.output_weight, flow.las.half_life_ms)
    return GlobalStrict()
