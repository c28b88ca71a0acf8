"""The scheduler process with flow control: as `sim.dispatcher.scheduler_process`, but the
flow controller picks the request, and may hold dispatch (saturation, no endpoints) until the
next metrics scrape or arrival."""

from __future__ import annotations

from collections.abc import Generator

import simpy

from simsched.sim.dispatcher import Stages
from simsched.sim.flow.controller import FlowController, Hold
from simsched.sim.kernel import SCHEDULER
from simsched.sim.recorder import SHED_KV_WATERMARK


def flow_scheduler_process(
    stages: Stages, controller: FlowController
) -> Generator[simpy.Event, None, None]:
    env, gateway, gate, cluster = stages.env, stages.gateway, stages.gate, stages.cluster
    buckets, recorder = stages.buckets, stages.recorder
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
        buckets.refill(now)
        occupancy = gate.dispatch_occupancy(request)
        wait_ms = max(0.0, now - request.arrival_ms)
        if gate.blocks_dispatch(occupancy, request):
            recorder.shed(request.seq, SHED_KV_WATERMARK, wait_ms, occupancy)
            continue
        recorder.admitted(
            request.seq, now, wait_ms, occupancy, cluster.known_ttft_ms(request, wait_ms)
        )
        ready = cluster.start(request)
        if ready is not None:
            yield ready
