"""The scheduler process: when the cluster has room, ask the policy which request goes next.

Before a request reaches the cluster it passes the KV gate a second time (`kv_gate.KvGate`,
when admission is enabled): the blocks the cluster holds now plus its own must stay within its
class's watermark (the interactive watermark for class-blind policies). A request the cluster
could never hold (larger than a continuous-batching replica's KV cache) is shed here too,
admission or not. A request shed here records its queue wait.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

import simpy

from simsched.sim.cluster.contract import ServiceModel
from simsched.sim.gateway import Gateway
from simsched.sim.kv_gate import KvGate
from simsched.sim.lanes import Lanes
from simsched.sim.policies.base import Policy
from simsched.sim.quotas import TokenBuckets
from simsched.sim.recorder import SHED_KV_WATERMARK, Recorder


@dataclass(frozen=True)
class Stages:
    """The parts of one variant's model that the scheduler process drives, wired by the engine."""

    env: simpy.Environment
    policy: Policy
    lanes: Lanes
    gateway: Gateway
    gate: KvGate
    cluster: ServiceModel
    buckets: TokenBuckets
    recorder: Recorder


def scheduler_process(stages: Stages) -> Generator[simpy.Event, None, None]:
    env, policy, lanes, gateway = stages.env, stages.policy, stages.lanes, stages.gateway
    gate, cluster, buckets, recorder = stages.gate, stages.cluster, stages.buckets, stages.recorder
    # bound once: this loop runs once per request
    tick, has_room, select, pop = gateway.tick, cluster.has_room, policy.select, lanes.pop
    refill, dispatch_occupancy, blocks_dispatch = (
        buckets.refill,
        gate.dispatch_occupancy,
        gate.blocks_dispatch,
    )
    admitted, known_ttft_ms, start = recorder.admitted, cluster.known_ttft_ms, cluster.start
    while True:
        now = env.now
        tick(now)
        if not has_room():
            yield cluster.room_available()
            continue
        pick = select(lanes)
        if pick is None:
            yield gateway.next_arrival()
            continue
        request = pop(pick.lane, pick.tenant)
        refill(now)
        occupancy = dispatch_occupancy(request)
        wait_ms = now - request.arrival_ms
        if not wait_ms > 0.0:  # as max(0.0, wait_ms), without the call
            wait_ms = 0.0
        if blocks_dispatch(occupancy, request):
            recorder.shed(request.seq, SHED_KV_WATERMARK, wait_ms, occupancy)
            continue
        admitted(request.seq, now, wait_ms, occupancy, known_ttft_ms(request, wait_ms))
        ready = start(request)
        if ready is not None:  # the cluster takes no more work until then
            yield ready


def dispatch_chosen(stages: Stages, request, now: float) -> simpy.Event | None:
    """Admit the request the scheduler chose, or shed it at the KV gate; the event to wait for
    before choosing again, or None. The schedulers with flow control and with per-tenant room
    share this; `scheduler_process` inlines the same steps with bound names (its hot loop)."""
    stages.buckets.refill(now)
    occupancy = stages.gate.dispatch_occupancy(request)
    wait_ms = max(0.0, now - request.arrival_ms)
    if stages.gate.blocks_dispatch(occupancy, request):
        stages.recorder.shed(request.seq, SHED_KV_WATERMARK, wait_ms, occupancy)
        return None
    known_ttft_ms = stages.cluster.known_ttft_ms(request, wait_ms)
    stages.recorder.admitted(request.seq, now, wait_ms, occupancy, known_ttft_ms)
    return stages.cluster.start(request)
