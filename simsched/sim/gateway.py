"""The gateway: admission rules in front of the lanes, and when they are evaluated.

Rules, in the reference's order (each may shed the request with a 429):

1. KV watermark (`kv_gate.KvGate`, the rule the dispatcher applies too): blocks held by the
   cluster + blocks queued in the interactive lane (+ the batch lane too, for a batch request)
   + the request's own, over the total, must not exceed the request class's watermark.
2. Queue-wait SLO: pending service tokens in the request's lane / cluster throughput must not
   exceed the class's wait limit.
3. Quota (batch only): the tenant's token bucket must hold the request's service tokens.

An admitted request of any class draws its service tokens from its tenant's bucket.

Timing (`admission.evaluate_at`): with `scheduler_tick`, the reference's, arrivals wait unseen
until the scheduler next looks for work (when it goes idle, and after each dispatch) and are then
judged in arrival order; with `arrival` each request is judged at its arrival instant, as a real
gateway does.
"""

from __future__ import annotations

import simpy

from simsched.config.classes import BATCH
from simsched.config.scenario import Admission
from simsched.sim.feed import Feed
from simsched.sim.kernel import ARRIVAL
from simsched.sim.kv_gate import KvGate
from simsched.sim.lanes import Lanes
from simsched.sim.quotas import TokenBuckets
from simsched.sim.recorder import SHED_KV_WATERMARK, SHED_QUEUE_WAIT, SHED_TOKEN_QUOTA, Recorder
from simsched.sim.requests import Request


class AdmissionRules:
    """The three rules; `judge` returns None to admit, or (reason, occupancy) to shed."""

    def __init__(
        self, admission: Admission, gate: KvGate, lanes: Lanes, buckets: TokenBuckets, tput: float
    ) -> None:
        self.wait_limits = (admission.max_interactive_wait_ms, admission.max_batch_wait_ms)
        self.gate = gate
        self.lanes = lanes
        self.buckets = buckets
        self.tput = tput

    def judge(self, request: Request) -> tuple[str, float] | None:
        lane = request.lane
        gate = self.gate
        occupancy = gate.arrival_occupancy(request)
        if gate.over_at_arrival(occupancy, lane):
            return SHED_KV_WATERMARK, gate.recorded_at_arrival(occupancy, lane)
        if self.lanes.pending_service_tokens(lane) / self.tput > self.wait_limits[lane]:
            return SHED_QUEUE_WAIT, gate.recorded_at_arrival(occupancy, lane)
        if lane == BATCH and not self.buckets.holds(request.tenant, request.service_tokens):
            return SHED_TOKEN_QUOTA, gate.recorded_at_arrival(occupancy, lane)
        return None


class AdmitAll:
    """The do-nothing rules: admission disabled, or a policy that does not screen arrivals."""

    def judge(self, request: Request) -> None:
        return None


class Gateway:
    """Screens requests into the lanes; subclasses decide when requests are screened."""

    lean_kernel = False  # whether it runs on kernel.LeanEnvironment (waits only for times)

    def __init__(
        self,
        env: simpy.Environment,
        feed: Feed,
        rules: AdmissionRules | AdmitAll,
        lanes: Lanes,
        buckets: TokenBuckets,
        recorder: Recorder,
    ) -> None:
        self.env = env
        self.feed = feed
        self.rules = rules
        self.lanes = lanes
        self.buckets = buckets
        self.recorder = recorder
        self._screener = self._screen  # bound once: the scheduler's tick hands it every arrival

    def tick(self, now: float) -> None:
        """The scheduler is about to look for work."""

    def next_arrival(self) -> simpy.Event:
        """An event that fires when the next request reaches the gateway."""
        raise NotImplementedError

    def _screen(self, request: Request) -> None:
        buckets = self.buckets
        buckets.refill(request.arrival_ms)
        verdict = self.rules.judge(request)
        if verdict is None:
            buckets.draw(request.tenant, request.service_tokens)
            self.lanes.push(request)
        else:
            reason, occupancy = verdict
            self.recorder.shed(request.seq, reason, 0.0, occupancy)


class TickGateway(Gateway):
    """`evaluate_at: scheduler_tick`: arrivals are judged when the scheduler looks for work."""

    lean_kernel = True  # the scheduler waits for the next arrival's instant, nothing else

    def tick(self, now: float) -> None:
        self.feed.deliver_until(now, self._screener)

    def next_arrival(self) -> simpy.Event:
        arrival = self.feed.next_arrival_ms
        if arrival is None:
            return self.env.never()  # the workload is over
        return self.env.at_instant(arrival, ARRIVAL)


class ArrivalGateway(Gateway):
    """`evaluate_at: arrival`: each request is judged at its arrival instant."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._wake: simpy.Event | None = None
        self.env.process(self.feed.process(self.env, self._receive))

    def next_arrival(self) -> simpy.Event:
        self._wake = self.env.event()
        return self._wake

    def _receive(self, request: Request) -> None:
        self._screen(request)
        if self._wake is not None:
            self._wake.succeed()
            self._wake = None
