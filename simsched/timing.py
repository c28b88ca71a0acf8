"""Event ordering at equal timestamps, and exact arrival instants.

SimPy processes events at the same time in (priority, insertion) order. Three things can happen
at one instant and the reference fixes their order: KV blocks whose hold ends at t are free at t
(`held while release_time > now`), then requests arriving at t are seen, then the scheduler
looks for work at t. The priorities below encode that, through SimPy's documented
`Environment.schedule(event, priority, delay)`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import simpy
from simpy.events import NORMAL, URGENT

RELEASE = URGENT - 1
ARRIVAL = URGENT
SCHEDULER = NORMAL


class At(simpy.Event):
    """An event that fires after `delay` with the given priority (a Timeout with a priority)."""

    def __init__(self, env: simpy.Environment, delay: float, priority: int) -> None:
        self.env = env
        self.callbacks: list[Callable[[Any], None]] = []
        self._value = None
        self._ok = True
        env.schedule(self, priority, delay)


def delay_until(now: float, target: float) -> float:
    """A delay `d` with `now + d == target` exactly, wherever floating point allows one.

    Arrival times come from traces as absolute instants; `target - now` can round so that the
    event would land one ulp away from the arrival time the gateway compares against.
    """
    delay = target - now
    for _ in range(4):
        reached = now + delay
        if reached == target:
            break
        delay = math.nextafter(delay, math.inf if reached < target else -math.inf)
    return max(delay, 0.0)
