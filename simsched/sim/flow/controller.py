"""The flow controller: composes the seams (bands, band selection, fairness, ordering,
saturation, usage limits, guardrails, TTL) into the two questions the gateway asks: may this
request queue (`judge`), and which queued request goes next (`select`)."""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import simpy

from simsched.config.flow_control import FlowControl
from simsched.sim.flow.band_selection import build_band_selection
from simsched.sim.flow.bands import BandPlan, flow_of
from simsched.sim.flow.fairness import FairnessPolicy
from simsched.sim.flow.guardrails import Guardrails
from simsched.sim.flow.queues import FlowQueues
from simsched.sim.flow.saturation import scraped_saturation
from simsched.sim.flow.usage_limits import BandGate, build_usage_limit
from simsched.sim.kernel import RELEASE
from simsched.sim.recorder import Recorder
from simsched.sim.requests import Request

SHED_SHEDDABLE = "shed_sheddable_saturated"
SHED_TTL = "shed_queue_ttl"
SHED_TTL_NO_ENDPOINTS = "shed_queue_ttl_no_endpoints"
# llm-d-router's translateFlowControlOutcome: 429 while the pool has endpoints (capacity exists
# but is contended), 503 when it has none.
FLOW_SHED_STATUS = {
    "shed_queue_capacity": 429,
    "shed_band_capacity": 429,
    SHED_SHEDDABLE: 429,
    SHED_TTL: 429,
    SHED_TTL_NO_ENDPOINTS: 503,
}
FLOW_SHED_REASONS = tuple(FLOW_SHED_STATUS)


@dataclass
class Hold:
    """Nothing may dispatch now although work is queued; look again at `until_ms`."""

    until_ms: float


class FlowController:
    def __init__(
        self,
        flow: FlowControl,
        plan: BandPlan,
        queues: FlowQueues,
        fairness: FairnessPolicy,
        env: simpy.Environment,
        cluster,
        recorder: Recorder,
        kv_block_tokens: int,
    ) -> None:
        self.flow, self.plan, self.queues = flow, plan, queues
        self.env, self.cluster, self.recorder = env, cluster, recorder
        self.fairness = fairness
        self.band_selection = build_band_selection(plan, flow.band_selection)
        self.saturation = scraped_saturation(flow.saturation, cluster, kv_block_tokens)
        limit = build_usage_limit(flow.usage_limit)
        self.gate = BandGate(limit, plan.count, flow.saturation.hysteresis)
        self.guardrails = Guardrails(flow, plan)
        self._expiries: list[tuple[float, int, Request]] = []
        self._wake: simpy.Event | None = None

    def pool_empty(self, now: float) -> bool:
        return now < self.flow.pool_empty_until_ms

    # --- arrival ------------------------------------------------------------------------------
    def judge(self, request: Request, now: float) -> str | None:
        """A shed reason, or None to queue it (then `queued` must follow)."""
        sheddable = self.plan.sheddable[flow_of(request.tenant, request.lane)]
        if sheddable and self.saturation.read(now) >= 1.0:
            return SHED_SHEDDABLE
        verdict = self.guardrails.verdict(request, self.queues)
        if verdict is None:
            self.queues.ttl_for_next = self.flow.ttl_ms(self.pool_empty(now))
        return verdict

    def queued(self, request: Request) -> None:
        ttl = self.queues.ttl_of(request)
        if ttl > 0:
            heapq.heappush(self._expiries, (request.arrival_ms + ttl, request.seq, request))
            if self._wake is not None and not self._wake.triggered:
                self._wake.succeed()

    # --- dispatch -----------------------------------------------------------------------------
    def select(self, now: float) -> Request | Hold | None:
        queues = self.queues
        backlogged = [b for b in range(self.plan.count) if queues.band_requests[b]]
        if not backlogged:
            return None
        if self.pool_empty(now):
            return Hold(self.flow.pool_empty_until_ms)
        saturation = self.saturation.read(now)
        is_open = self.gate.open_bands(saturation)
        for band in self.band_selection.order(backlogged, saturation):
            if not is_open[band]:
                continue
            request = self._take(band, now, is_open)
            if request is not None:
                self.band_selection.dispatched(queues.band_of(request), request.service_tokens)
                return request
        if not any(queues.band_requests):  # every queued request had expired
            return None
        return Hold(self.saturation.next_scrape_ms(now))

    def _take(self, band: int, now: float, is_open: list[bool]) -> Request | None:
        """The band's next request, expiring those whose TTL has run out on the way."""
        while True:
            flow = self.fairness.pick(self.queues, band, now, is_open)
            if flow is None:
                return None
            head = self.queues.head(flow)
            assert head is not None
            if self._expired(head, now):
                self._expire(head, now)
                continue
            request = self.queues.take(flow)
            self.fairness.dispatched(request, now)
            return request

    # --- TTL ----------------------------------------------------------------------------------
    def _expired(self, request: Request, now: float) -> bool:
        ttl = self.queues.ttl_of(request)
        return ttl > 0 and now >= request.arrival_ms + ttl

    def _expire(self, request: Request, now: float) -> None:
        if not self.queues.remove(request):
            return
        reason = SHED_TTL_NO_ENDPOINTS if self.pool_empty(now) else SHED_TTL
        cluster = self.cluster
        occupancy = cluster.kv_blocks_in_use() / cluster.kv_blocks_total
        self.recorder.shed(request.seq, reason, now - request.arrival_ms, occupancy)

    def expiry_process(self):
        """Evicts each queued request at exactly arrival + TTL."""
        env, expiries = self.env, self._expiries
        while True:
            if not expiries:
                self._wake = env.event()
                yield self._wake
                continue
            when, _seq, request = expiries[0]
            if when > env.now:
                self._wake = env.event()
                yield env.any_of([env.at_instant(when, RELEASE), self._wake])
                continue
            heapq.heappop(expiries)
            self._expire(request, env.now)
