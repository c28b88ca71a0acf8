"""Ordering policies: which request of a flow goes first (llm-d's `ordering` plugins).

Each gives a request a sort key; a flow is a heap on it, ties broken by `seq` (arrival order).

- `fcfs`: arrival order.
- `edf`: deadline = enqueue instant + the request's TTL; with no TTL, a far-future deadline
  (llm-d's edf-ordering-policy), so FCFS among them.
- `slo_deadline`: deadline = arrival + the TTFT target of the request's class (simsched's
  stand-in for llm-d's `x-llm-d-slo-ttft-ms` header).
"""

from __future__ import annotations

import math
from typing import Protocol

from simsched.sim.requests import Request


class OrderingPolicy(Protocol):
    def key(self, request: Request, ttl_ms: float) -> float: ...


class Fcfs:
    def key(self, request: Request, ttl_ms: float) -> float:
        return request.arrival_ms


class Edf:
    def key(self, request: Request, ttl_ms: float) -> float:
        return request.arrival_ms + ttl_ms if ttl_ms > 0 else math.inf


class SloDeadline:
    def __init__(self, ttft_slo_ms: tuple[float, float]) -> None:
        self.ttft_slo_ms = ttft_slo_ms

    def key(self, request: Request, ttl_ms: float) -> float:
        return request.arrival_ms + self.ttft_slo_ms[request.lane]


def build_ordering(name: str, ttft_slo_ms: tuple[float, float]) -> OrderingPolicy:
    if name == "edf":
        return Edf()
    if name == "slo_deadline":
        return SloDeadline(ttft_slo_ms)
    return Fcfs()
