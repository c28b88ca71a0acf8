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
    while True:
        gateway.tick(env.now)
        if not cluster.has_room():
            yield cluster.room_available()
            continue
        pick = policy.select(lanes)
        if pick is None:
            yield gateway.next_arrival()
            continue
        request = lanes.pop(pick.lane, pick.tenant)
        now = env.now
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
        if ready is not None:  # the cluster takes no more work until then
            yield ready
