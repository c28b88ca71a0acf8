"""A driven process (SimEnvironment.drive, the scheduler's) against the same generator run by
SimPy's `process`: the same wake-ups at the same instants, in the same order among every other
event of those instants, on random mixes of timers, alarms, events succeeded later or already
processed, and failures thrown in."""

from __future__ import annotations

import random

import pytest

from simsched.sim.kernel import ARRIVAL, RELEASE, SCHEDULER, At, AtInstant, SimEnvironment

PRIORITIES = (RELEASE, ARRIVAL, SCHEDULER)


def run(seed: int, driven: bool) -> list[tuple]:
    """A process whose waits are drawn from `seed`, among other events at the same instants;
    every callback and wake-up logged with the clock."""
    rng = random.Random(seed)
    env = SimEnvironment()
    log: list[tuple] = []
    later: list = []  # events the process waits for, succeeded by an alarm later

    def succeed(event) -> None:
        log.append(("succeed", env.now))
        event.succeed()

    def process():
        for step in range(40):
            log.append(("wake", step, env.now))
            kind = rng.randrange(5)
            if kind == 0:
                event = AtInstant(env, env.now + rng.choice([0, 1, 2]), rng.choice(PRIORITIES))
            elif kind == 1:
                event = At(env, rng.choice([0.0, 1.0]), rng.choice(PRIORITIES))
            elif kind == 2:  # succeeded later by someone else, at NORMAL priority
                event = env.event()
                env.alarm_after(
                    rng.choice([0.0, 1.0]), rng.choice(PRIORITIES), lambda _a, e=event: succeed(e)
                )
                later.append(event)
            elif kind == 3 and later and later[-1].callbacks is None:  # processed already
                event = later[-1]
            else:  # a failure, caught inside
                event = env.event()
                event.fail(ValueError(f"boom {step}"))
                try:
                    yield event
                except ValueError as error:
                    log.append(("caught", str(error), env.now))
                continue
            yield event
        yield env.event()  # waits for good: a scheduler never ends

    # other events at the same instants, queued before and after the process starts
    for t in range(0, 30):
        for priority in PRIORITIES:
            env.alarm_at(
                float(t), priority, lambda _a, t=t, p=priority: log.append(("other", t, p))
            )
    if driven:
        env.drive(process())
    else:
        env.process(process())
    for t in range(0, 30):
        AtInstant(env, float(t), SCHEDULER).callbacks.append(lambda _e, t=t: log.append(("x", t)))
    env.run_bounded(1e9)
    return log


@pytest.mark.parametrize("seed", range(30))
def test_a_driven_process_wakes_as_a_simpy_process(seed: int) -> None:
    assert run(seed, driven=True) == run(seed, driven=False)


def callback_order(driven: bool) -> list[str]:
    """Who runs when one event fires: a callback added before the process waited, the process,
    and a callback added after it waited. SimPy appends a process's resume to the callbacks, so
    it runs between the two."""
    env = SimEnvironment()
    log: list[str] = []
    event = env.event()
    event.callbacks.append(lambda _e: log.append("before"))

    def process():
        yield event
        log.append("woken")
        yield env.event()  # never fires

    if driven:
        env.drive(process())
    else:
        env.process(process())
    env.alarm_after(
        1.0, SCHEDULER, lambda _a: event.callbacks.append(lambda _e: log.append("after"))
    )
    env.alarm_after(2.0, SCHEDULER, lambda _a: event.succeed())
    env.run_bounded(10.0)
    return log


def test_the_resume_takes_its_place_among_the_events_callbacks() -> None:
    assert (
        callback_order(driven=True) == callback_order(driven=False) == ["before", "woken", "after"]
    )
