"""Fairness policies: which flow of a band goes next (llm-d's `fairness` plugins). A flow is a
tenant's requests of one class (bands.flow_of).

- `global_strict`: the flow whose head request comes first in the ordering policy's key, across
  the band (llm-d's global-strict / best-head); ties by arrival order.
- `round_robin`: the band's non-empty flows in turn, in flow order, from the one after the last
  served.
- `las`: least attained service, per tenant (llm-d's program): the weighted tokens it was
  dispatched, `prefill + output_weight * decode`, decayed by `2 ** (-elapsed / half_life)`;
  the flow whose tenant has the least goes first (ties: earliest head).
- `scheduler`: today's `scheduler.policy` (policies_as_fairness.py).
"""

from __future__ import annotations

import math
from typing import Protocol

from simsched.config.classes import CLASS_NAMES
from simsched.sim.flow.queues import FlowQueues
from simsched.sim.requests import Request


class FairnessPolicy(Protocol):
    def pick(self, queues: FlowQueues, band: int, now: float, is_open: list[bool]) -> int | None:
        """The flow to serve next in `band` (None: the band is empty)."""
        ...

    def dispatched(self, request: Request, now: float) -> None: ...


class GlobalStrict:
    def pick(self, queues: FlowQueues, band: int, now: float, is_open: list[bool]) -> int | None:
        flows = queues.flows_in_band(band)
        return min(flows, key=queues.head_key) if flows else None

    def dispatched(self, request: Request, now: float) -> None:
        pass


class RoundRobin:
    def __init__(self) -> None:
        self.last: dict[int, int] = {}  # band -> the flow served last

    def pick(self, queues: FlowQueues, band: int, now: float, is_open: list[bool]) -> int | None:
        flows = queues.flows_in_band(band)
        if not flows:
            return None
        last = self.last.get(band, -1)
        after = [f for f in flows if f > last]
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
        if elapsed > 0:
            if self.half_life_ms > 0:
                self.service[tenant] *= math.exp2(-elapsed / self.half_life_ms)
            self.anchor[tenant] = now
        return self.service[tenant]

    def pick(self, queues: FlowQueues, band: int, now: float, is_open: list[bool]) -> int | None:
        flows = queues.flows_in_band(band)
        if not flows:
            return None
        lanes = len(CLASS_NAMES)
        return min(flows, key=lambda f: (self.attained(f // lanes, now), *queues.head_key(f)))

    def dispatched(self, request: Request, now: float) -> None:
        tenant = request.tenant
        cost = request.prefill_tokens + self.output_weight * request.decode_tokens
        self.service[tenant] = self.attained(tenant, now) + cost
