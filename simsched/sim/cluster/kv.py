"""KV-cache blocks as a plain counter that refuses to go below zero or above its capacity.

Nothing waits on the pool: the scheduler and replicas check the free blocks themselves and wait on
their own events, so a `simpy.Container` would only add an event per hold and release. The token
server makes two of these per request, and a pair of SimPy events per request would cost a third
of the simulation's time. A violation is a simulation bug, so it raises at once.
"""

from __future__ import annotations

import math


class KvPool:
    def __init__(self, capacity: float = math.inf) -> None:
        if capacity < 0:
            raise ValueError(f"KV pool capacity must be >= 0, got {capacity}")
        self.capacity = capacity
        self.level = 0
        self.peak = 0  # the most blocks ever held at once

    def hold(self, blocks: int) -> None:
        """Take `blocks` now; the caller has checked that they are free."""
        if blocks < 0:
            raise RuntimeError(f"KV pool: cannot hold a negative number of blocks ({blocks})")
        if self.level + blocks > self.capacity:
            raise RuntimeError(f"KV pool overflow: {self.level} + {blocks} > {self.capacity}")
        self.level += blocks
        if self.level > self.peak:
            self.peak = self.level

    def release(self, blocks: int) -> None:
        if blocks < 0 or blocks > self.level:
            raise RuntimeError(f"KV pool underflow: releasing {blocks} of {self.level}")
        self.level -= blocks
