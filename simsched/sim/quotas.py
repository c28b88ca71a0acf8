"""Per-tenant token buckets in service tokens.

All buckets refill together at each refill instant (one shared clock), as in the reference:
refilling a bucket in one step or in several gives different floating-point sums, and the
admission decisions must come out the same as the reference's, request by request.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol


class QuotaSpec(Protocol):
    burst_service_tokens: float
    sustained_service_tokens_per_sec: float


class TokenBuckets:
    def __init__(self, quotas: Sequence[QuotaSpec | None]) -> None:
        # A tenant without a quota has a bucket that is always full (an infinite one).
        self.burst = [float(q.burst_service_tokens) if q else math.inf for q in quotas]
        self.rate = [float(q.sustained_service_tokens_per_sec) if q else 0.0 for q in quotas]
        self.level = list(self.burst)
        # (tenant, burst, rate) of each tenant with a quota: the refill runs twice a request
        self._limits = [(i, self.burst[i], self.rate[i]) for i, q in enumerate(quotas) if q]
        self._last_refill_ms = 0.0

    def refill(self, now_ms: float) -> None:
        if now_ms <= self._last_refill_ms:
            return
        dt_sec = (now_ms - self._last_refill_ms) / 1000.0
        if dt_sec <= 0.0:  # a gap too small to survive the division
            return
        level = self.level
        for tenant, burst, rate in self._limits:
            refilled = level[tenant] + dt_sec * rate
            level[tenant] = refilled if refilled < burst else burst  # min(burst, refilled)
        self._last_refill_ms = now_ms

    def holds(self, tenant: int, tokens: int) -> bool:
        return self.level[tenant] >= tokens

    def draw(self, tenant: int, tokens: int) -> None:
        left = self.level[tenant] - tokens
        self.level[tenant] = left if left > 0.0 else 0.0  # max(0.0, left), without the call
