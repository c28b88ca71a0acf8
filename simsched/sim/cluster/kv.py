"""KV-cache blocks as a `simpy.Container`, with a non-blocking fast path.

The level is the number of blocks in use. `hold` and `release` change it at once, without an
event each: the token server makes two of these per request, and a pair of SimPy events per
request would cost a third of the simulation's time. They then call the Container's own
triggers, so processes that `yield pool.put(n)` (wait for room) or `yield pool.get(n)` still
work as with any Container.
"""

from __future__ import annotations

import math

import simpy


class KvPool(simpy.Container):
    def __init__(self, env: simpy.Environment, capacity: float = math.inf) -> None:
        super().__init__(env, capacity=capacity, init=0)
        self.peak = 0

    def hold(self, blocks: int) -> None:
        """Take `blocks` now; the caller has checked there is room (see `room_for`)."""
        if self._level + blocks > self._capacity:
            raise RuntimeError(f"KV pool overflow: {self._level} + {blocks} > {self._capacity}")
        self._level += blocks
        self.peak = max(self.peak, self._level)
        self._trigger_get(None)

    def release(self, blocks: int) -> None:
        self._level -= blocks
        self._trigger_put(None)

    def room_for(self, blocks: int) -> bool:
        return self._level + blocks <= self._capacity
