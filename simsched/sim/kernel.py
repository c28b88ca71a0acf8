"""Event ordering at equal timestamps, and exact absolute instants.

SimPy processes events at the same time in (priority, insertion) order. Three things can happen
at one instant and the reference fixes their order: KV blocks whose hold ends at t are free at t
(`held while release_time > now`), then requests arriving at t are seen, then the scheduler
looks for work at t. The priorities below encode that, through SimPy's documented
`Environment.schedule(event, priority, delay)`.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush
from typing import Any

import simpy
from simpy.events import NORMAL, URGENT

RELEASE = URGENT - 1
ARRIVAL = URGENT
SCHEDULER = NORMAL


class SimEnvironment(simpy.Environment):
    """A SimPy environment that can also schedule an event at an absolute instant.

    `schedule` puts an event at `now + delay`, and for some pairs of floats no delay lands
    exactly on a given instant (the sum rounds to a neighbour). Arrival instants come from
    traces as absolute times that the gateway compares with the clock, so they must be hit
    exactly; otherwise the same workload could give different results depending on what the
    clock happened to read when the wake-up was scheduled.
    """

    def schedule_at(self, event: simpy.Event, priority: int, when: float) -> None:
        if when < self._now:
            raise ValueError(f"cannot schedule at {when}, before now ({self._now})")
        heappush(self._queue, (when, priority, next(self._eid), event))


class At(simpy.Event):
    """An event that fires after `delay` with the given priority (a Timeout with a priority)."""

    def __init__(self, env: simpy.Environment, delay: float, priority: int) -> None:
        _init_triggered(self, env)
        env.schedule(self, priority, delay)


class AtInstant(simpy.Event):
    """An event that fires at exactly `when` (not `now + (when - now)`), with a priority."""

    def __init__(self, env: SimEnvironment, when: float, priority: int) -> None:
        _init_triggered(self, env)
        env.schedule_at(self, priority, when)


def _init_triggered(event: simpy.Event, env: simpy.Environment) -> None:
    # As SimPy's own Timeout does: an event that is triggered (ok, no value) when created.
    event.env = env
    event.callbacks: list[Callable[[Any], None]] = []
    event._value = None
    event._ok = True
