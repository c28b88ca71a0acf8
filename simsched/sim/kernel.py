"""Event ordering at equal timestamps, and exact absolute instants.

SimPy processes events at the same time in (priority, insertion) order. Three things can happen
at one instant and the reference fixes their order: KV blocks whose hold ends at t are free at t
(`held while release_time > now`), then requests arriving at t are seen, then the scheduler
looks for work at t. The priorities below encode that, through SimPy's documented
`Environment.schedule(event, priority, delay)`.

A P/D handoff is offered at `HANDOFF`, after `RELEASE`: a prefill replica's iteration that ends
at t hands its sequences to the decode side only once every iteration ending at t (the decode
replicas' included) is over and has picked its next batch. Offered within the prefill
iteration's own end event, the offer's order against a decode iteration ending at the same t
would be SimPy's insertion order, which differs between a replica that steps (one event per
iteration, queued when the iteration starts) and one that jumps (one event for many, queued when
the jump starts): fast_forward on and off would then book some transfers an iteration apart.

Two kernels run a variant, both with exactly these semantics (same instants, same order):

- `SimEnvironment`, SimPy's environment, for every model;
- `LeanEnvironment`, a specialised loop for runs whose processes only ever wait for a time (the
  token server behind a scheduler-tick gateway): a heap of (time, priority, insertion number,
  function, argument) with no event objects, no callbacks lists and no process machinery, about
  a third of SimPy's cost per event. Its processes yield `Wake`s, made by `timeout`,
  `at_instant` and `never`, which SimPy's environment makes as events; `call_later` runs a
  function at a time on both. `run_bounded` is the run loop of both.

The engine picks the lean one where every part of the run declares it can run on it
(`lean_kernel = True` on the service model and the gateway); tests/sim/test_kernels.py runs
scenarios on both and compares every recorded figure and timeline row.

This is SimPy's one door: the only module that touches SimPy's private state. `schedule_at`
pushes onto `Environment._queue` with `_eid` (SimPy has no public way to schedule at an absolute
instant), and `_init_triggered` sets an event's `_value` and `_ok` as SimPy's own `Timeout` does
(SimPy has no public way to create an already-triggered event with a priority). Both are SimPy 4
internals, which is why pyproject.toml bounds SimPy below 5; the tests of exact instants and
event order here (tests/sim) fail first if a SimPy release changes them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from heapq import heappop, heappush
from itertools import count
from typing import Any

import simpy
from simpy.events import NORMAL, URGENT

RELEASE = URGENT - 1
ARRIVAL = URGENT
HANDOFF = URGENT  # after every RELEASE at the instant (pools.Handoff)
SCHEDULER = NORMAL


class SimEnvironment(simpy.Environment):
    """A SimPy environment that can also schedule an event at an absolute instant.

    `schedule` puts an event at `now + delay`, and for some pairs of floats no delay lands
    exactly on a given instant (the sum rounds to a neighbour). Arrival instants come from
    traces as absolute times that the gateway compares with the clock, so they must be hit
    exactly; otherwise the same workload could give different results depending on what the
    clock happened to read when the wake-up was scheduled.

    `now` is a plain attribute here, not SimPy's property over `_now`: the model reads the
    clock millions of times a run (every KV read of a jumping replica), and a property is a
    call each time. The two loops that advance the clock, `step` and `run_bounded`, set both.
    """

    now: float = 0.0  # shadows simpy.Environment.now (a property); the instance's own value

    def __init__(self, initial_time: float = 0) -> None:
        super().__init__(initial_time)
        self.now = self._now

    def step(self) -> None:
        """SimPy's step, with `now` set to the instant of the event it pops (the head of the
        queue) before the event's callbacks run."""
        queue = self._queue
        if queue:
            self.now = queue[0][0]
        super().step()

    def schedule_at(self, event: simpy.Event, priority: int, when: float) -> None:
        if when < self._now:
            raise ValueError(f"cannot schedule at {when}, before now ({self._now})")
        heappush(self._queue, (when, priority, next(self._eid), event))

    # --- the protocol both kernels share -------------------------------------------------
    def at_instant(self, when: float, priority: int) -> simpy.Event:
        return AtInstant(self, when, priority)

    def never(self) -> simpy.Event:
        """An event that never fires (a process waiting on it waits for good)."""
        return self.event()

    def call_later(self, delay: float, priority: int, function: Callable[[Any], None], arg) -> None:
        """Run `function(arg)` after `delay`, at `priority`."""
        At(self, delay, priority).callbacks.append(lambda _event: function(arg))

    def drive(self, generator: Generator[simpy.Event, None, None]) -> None:
        """Run a process that never ends and that nothing waits for or interrupts (the
        scheduler): `process` without SimPy's `Process` around it. It starts where `process`
        starts one (an URGENT entry at now, as SimPy's `Initialize`), and each event it yields
        resumes it from that event's callbacks, where a `Process` waiting on the event would
        put its own resume: the same instants in the same order. The scheduler waits once or
        twice a request, and a `Process` resumption was about twice this one's work."""
        self.alarm_after(0.0, URGENT, Driven(generator).resume)

    def alarm_at(self, when: float, priority: int, callback: Callable[[Any], None]) -> Alarm:
        """Call `callback(alarm)` at exactly `when`: `AtInstant` with one callback, without
        building an event (a replica sets one per iteration or jump)."""
        if when < self._now:  # `schedule_at`, inlined: a replica sets one per iteration or jump
            raise ValueError(f"cannot schedule at {when}, before now ({self._now})")
        alarm = Alarm(callback)
        heappush(self._queue, (when, priority, next(self._eid), alarm))
        return alarm

    def alarm_after(self, delay: float, priority: int, callback: Callable[[Any], None]) -> Alarm:
        """Call `callback(alarm)` after `delay`: `At` with one callback, without an event."""
        alarm = Alarm(callback)
        self.schedule(alarm, priority, delay)  # type: ignore[arg-type]
        return alarm

    def run_bounded(self, limit: float) -> None:
        """Process every event up to `limit`; later ones stay queued (`peek` shows them).

        SimPy's `step`, inlined (one loop instead of a `peek` and a `step` call per event; the
        loop runs once per event of a run): pop the next entry, run its callbacks, and crash on a
        failed event nobody defused, as `Environment.step` does (SimPy 4.1). `run_bounded` is
        never given a `StopSimulation` event (that is `run(until=...)`'s), so its handling is
        not needed here."""
        queue = self._queue
        while queue and queue[0][0] <= limit:
            now, _, _, event = heappop(queue)
            self._now = self.now = now
            callbacks, event.callbacks = event.callbacks, None
            for callback in callbacks:
                callback(event)
            if not event._ok and not hasattr(event, "_defused"):
                exc = type(event._value)(*event._value.args)
                exc.__cause__ = event._value
                raise exc


# A lean process's wait: (instant, priority, insertion number), or None for "never".
Wake = tuple[float, int, int] | None


class LeanEnvironment:
    """The specialised event loop: SimPy's ordering (time, priority, insertion) without its
    event objects. A process is a generator of `Wake`s; nothing is ever sent into it."""

    def __init__(self) -> None:
        self.now = 0.0
        self._queue: list[tuple[float, int, int, Callable[[Any], None], Any]] = []
        self._eid = count()
        self._resumer = self._resume  # bound once: a process resumes once per dispatch

    def process(self, generator: Generator[Wake, None, None]) -> None:
        # as SimPy's Initialize: the process starts at once, before anything else now
        heappush(self._queue, (self.now, URGENT, next(self._eid), self._resumer, generator))

    def timeout(self, delay: float) -> Wake:
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        return (self.now + delay, NORMAL, next(self._eid))

    def at_instant(self, when: float, priority: int) -> Wake:
        if when < self.now:
            raise ValueError(f"cannot schedule at {when}, before now ({self.now})")
        return (when, priority, next(self._eid))

    def never(self) -> Wake:
        return None

    def drive(self, generator: Generator[Wake, None, None]) -> None:
        """A process that never ends (SimEnvironment.drive); here every process is lean."""
        self.process(generator)

    def call_later(self, delay: float, priority: int, function: Callable[[Any], None], arg) -> None:
        heappush(self._queue, (self.now + delay, priority, next(self._eid), function, arg))

    def peek(self) -> float:
        return self._queue[0][0] if self._queue else math.inf

    def step(self) -> None:
        self.now, _, _, function, arg = heappop(self._queue)
        function(arg)

    def run_bounded(self, limit: float) -> None:
        queue = self._queue
        while queue and queue[0][0] <= limit:
            self.now, _, _, function, arg = heappop(queue)
            function(arg)

    def _resume(self, generator: Generator[Wake, None, None]) -> None:
        wake = next(generator, None)  # a finished process, like one that waits for good, is gone
        if wake is not None:
            heappush(self._queue, (*wake, self._resumer, generator))


class Driven:
    """A generator resumed as SimPy's `Process._resume` resumes one (an event's value sent in,
    a failed event's exception thrown in as a copy, an event already processed passed at
    once), for `SimEnvironment.drive`. Its processes never end: a return is a bug."""

    __slots__ = ("generator", "resume")

    def __init__(self, generator: Generator[simpy.Event, None, None]) -> None:
        self.generator = generator
        self.resume = self._resume  # bound once: appended to every event it waits for

    def _resume(self, event: Any) -> None:
        generator = self.generator
        while True:
            if event._ok:
                event = generator.send(event._value)
            else:  # as Process._resume: the failure is handled here, thrown in as a copy
                event._defused = True
                exc = type(event._value)(*event._value.args)
                exc.__cause__ = event._value
                event = generator.throw(exc)
            if event.callbacks is not None:  # not processed yet: wait for it
                event.callbacks.append(self.resume)
                return


class Alarm:
    """A timed call on SimPy's queue: SimPy's `step` reads only an entry's `callbacks` (set to
    None once run) and `_ok`, so an object with those two is processed exactly as a triggered
    event would be, at the same (time, priority, insertion) place, without an event's fields
    and constructor. Nothing can wait for it: it is for callbacks only."""

    __slots__ = ("callbacks",)
    _ok = True  # as a triggered event's: nothing to crash on
    _value = None  # what a driven process is sent when an alarm resumes it (`Driven`)

    def __init__(self, callback: Callable[[Any], None]) -> None:
        self.callbacks: list[Callable[[Any], None]] | None = [callback]


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
