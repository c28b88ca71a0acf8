"""The scheduler process: when the cluster has room, ask the policy which request goes next.

Before a request reaches the cluster it passes a second KV gate (when admission is enabled): the
blocks the cluster holds now plus its own must stay within its class's watermark (the
interactive watermark for class-blind policies). A request the cluster could never hold (larger
than a continuous-batching replica's KV cache) is shed here too, admission or not. A request
shed here records its queue wait.
"""

from __future__ import annotations

from collections.abc import Generator

import simpy

from simsched.sim.gateway import Gateway
from simsched.sim.lanes import Lanes
from simsched.sim.policies.base import Policy
from simsched.sim.quotas import TokenBuckets
from simsched.sim.recorder import SHED_KV_WATERMARK, Recorder
from simsched.sim.requests import INTERACTIVE, Request


class DispatchGate:
    def __init__(self, admission, cluster, class_blind: bool) -> None:
        self.enabled = admission.enabled
        wm = (admission.interactive_kv_watermark, admission.batch_kv_watermark)
        self.watermarks = (wm[INTERACTIVE], wm[INTERACTIVE]) if class_blind else wm
        self.cluster = cluster

    def occupancy_with(self, request: Request) -> float:
        return (self.cluster.kv_blocks_in_use() + request.kv_blocks) / self.cluster.kv_blocks_total

    def blocks(self, occupancy: float, request: Request) -> bool:
        """Shed here: over the class watermark (with admission on), or too large for the
        cluster ever to hold, admission or not."""
        return (self.enabled and occupancy > self.watermarks[request.lane]) or not (
            self.cluster.fits(request)
        )


def scheduler_process(
    env: simpy.Environment,
    policy: Policy,
    lanes: Lanes,
    gateway: Gateway,
    gate: DispatchGate,
    cluster,
    buckets: TokenBuckets,
    recorder: Recorder,
) -> Generator[simpy.Event, None, None]:
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
        occupancy = gate.occupancy_with(request)
        wait_ms = max(0.0, now - request.arrival_ms)
        if gate.blocks(occupancy, request):
            recorder.shed(request.seq, SHED_KV_WATERMARK, wait_ms, occupancy)
            continue
        recorder.admitted(
            request.seq, now, wait_ms, occupancy, cluster.known_ttft_ms(request, wait_ms)
        )
        ready = cluster.start(request)
        if ready is not None:  # the cluster takes no more work until then
            yield ready
