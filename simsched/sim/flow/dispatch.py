"""The scheduler process with flow control: as `sim.dispatcher.scheduler_process`, but the
flow controller picks the request, and may hold dispatch (saturation, no endpoints) until the
next metrics scrape or arrival."""

from __future__ import annotations

from collections.abc import Generator

import simpy

from simsched.sim.dispatcher import Stages, dispatch_chosen
from simsched.sim.flow.controller import FlowController, Hold
from simsched.sim.kernel import SCHEDULER


def flow_scheduler_process(
    stages: Stages, controller: FlowController
) -> Generator[simpy.Event, None, None]:
    env, gateway, cluster = stages.env, stages.gateway, stages.cluster
    while True:
        now = env.now
        gateway.tick(now)
        if not cluster.has_room():
            yield cluster.room_available()
            continue
        choice = controller.select(now)
        if choice is None:
            yield gateway.next_arrival()
            continue
        if isinstance(choice, Hold):
            recheck = env.at_instant(max(choice.until_ms, now), SCHEDULER)
            yield env.any_of([gateway.next_arrival(), recheck])
            continue
        request = choice
        ready = dispatch_chosen(stages, request, now)
        if ready is not None:
            yield ready
