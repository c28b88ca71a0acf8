"""The seams one at a time, with hand-computed numbers: LAS with decay, round robin, ordering,
the detectors and their stale view, usage-limit ceilings and the gate's hysteresis."""

from __future__ import annotations

import math

import pytest

from simsched.config.flow_control import FlowControl, Saturation, UsageLimit
from simsched.sim.flow.bands import flow_of, plan_bands
from simsched.sim.flow.fairness import GlobalStrict, LeastAttainedService, RoundRobin
from simsched.sim.flow.ordering import Edf, Fcfs, SloDeadline
from simsched.sim.flow.queues import FlowQueues
from simsched.sim.flow.saturation import (
    ConcurrencyDetector,
    NoDetector,
    ScrapedSaturation,
    UtilizationDetector,
    scraped_saturation,
)
from simsched.sim.flow.usage_limits import (
    BandGate,
    PriorityHoldBack,
    SoftReflectiveCeiling,
    StaticLimit,
    build_usage_limit,
)
from simsched.sim.requests import Request


class Named:
    def __init__(self, id: str, priority: str = "interactive") -> None:
        self.id, self.priority = id, priority


def request(seq: int, tenant: int, arrival: float, prefill: int = 10, decode: int = 5, lane=0):
    return Request(seq, tenant, lane, arrival, prefill, decode, prefill + 4 * decode, 1)


def queues_for(tenants: int, ordering=None, flow: FlowControl | None = None) -> FlowQueues:
    flow = flow or FlowControl()
    plan = plan_bands(flow, [Named(f"t{i}") for i in range(tenants)])
    return FlowQueues(plan, tenants, ordering or Fcfs(), 4.0)


# --- LAS ---------------------------------------------------------------------------------------
def test_las_decays_attained_service_by_half_lives() -> None:
    las = LeastAttainedService(2, output_weight=2.0, half_life_ms=100.0)
    las.dispatched(request(0, 0, 0.0, prefill=100, decode=50), now=0.0)  # 100 + 2 x 50 = 200
    las.dispatched(request(1, 1, 0.0, prefill=120, decode=0), now=100.0)  # 120
    assert las.attained(0, 100.0) == pytest.approx(100.0)  # one half-life
    assert las.attained(0, 300.0) == pytest.approx(25.0)  # three
    assert las.attained(1, 300.0) == pytest.approx(30.0)  # two


def test_las_picks_the_tenant_with_least_decayed_service() -> None:
    queues = queues_for(2)
    for seq, tenant in enumerate((0, 0, 1, 1)):
        queues.push(request(seq, tenant, float(seq)))
    las = LeastAttainedService(2, output_weight=2.0, half_life_ms=100.0)
    # tenant 0 served 200 at t=0, tenant 1 served 120 at t=150:
    # at t=200: tenant 0 has 200/4 = 50, tenant 1 has 120/sqrt(2) = 84.85 -> tenant 0
    las.dispatched(request(9, 0, 0.0, prefill=100, decode=50), now=0.0)
    las.dispatched(request(8, 1, 0.0, prefill=120, decode=0), now=150.0)
    assert las.pick(queues, 0, 200.0, [True]) == flow_of(0, 0)
    assert las.attained(1, 200.0) == pytest.approx(120.0 / math.sqrt(2))
    # without decay, tenant 1 (120) is below tenant 0 (200)
    flat = LeastAttainedService(2, output_weight=2.0, half_life_ms=0.0)
    flat.dispatched(request(9, 0, 0.0, prefill=100, decode=50), now=0.0)
    flat.dispatched(request(8, 1, 0.0, prefill=120, decode=0), now=150.0)
    assert flat.pick(queues, 0, 200.0, [True]) == flow_of(1, 0)


def test_las_ties_go_to_the_earliest_head() -> None:
    queues = queues_for(2)
    queues.push(request(0, 1, 0.0))
    queues.push(request(1, 0, 1.0))
    las = LeastAttainedService(2, output_weight=2.0, half_life_ms=100.0)
    assert las.pick(queues, 0, 5.0, [True]) == flow_of(1, 0)


# --- round robin, global strict, ordering ----------------------------------------------------
def test_round_robin_cycles_over_backlogged_flows() -> None:
    queues = queues_for(3)
    for seq, tenant in enumerate((0, 0, 2, 2, 1)):
        queues.push(request(seq, tenant, float(seq)))
    rr, picked = RoundRobin(), []
    for _ in range(5):
        flow = rr.pick(queues, 0, 0.0, [True])
        picked.append(queues.take(flow).seq)
    assert picked == [0, 4, 2, 1, 3]  # t0, t1, t2, t0, t2


def test_global_strict_serves_the_best_head_across_flows() -> None:
    queues = queues_for(2, ordering=SloDeadline((500.0, 10_000.0)))
    queues.push(request(0, 0, 0.0, lane=1))  # batch: deadline 10000
    queues.push(request(1, 1, 50.0, lane=0))  # interactive: deadline 550
    flow = GlobalStrict().pick(queues, 0, 0.0, [True])
    assert flow == flow_of(1, 0)


def test_edf_orders_by_enqueue_plus_ttl_and_puts_no_ttl_last() -> None:
    edf = Edf()
    assert edf.key(request(0, 0, 10.0), 100.0) == 110.0
    assert edf.key(request(0, 0, 10.0), 0.0) == math.inf


def test_slo_deadline_orders_a_flow_by_class_targets() -> None:
    queues = queues_for(1, ordering=SloDeadline((500.0, 100.0)))
    # the same tenant and class: deadlines 0 + 500 and 300 + 500: arrival order
    queues.push(request(0, 0, 0.0))
    queues.push(request(1, 0, 300.0))
    assert queues.take(flow_of(0, 0)).seq == 0


# --- saturation --------------------------------------------------------------------------------
def test_utilization_is_the_mean_roofline_score() -> None:
    spec = Saturation(detector="utilization", queue_depth_threshold=5, kv_cache_util_threshold=0.8)
    # replica 1: max(2/5, 40/100/0.8) = 0.5; replica 2: max(10/5, 0.1/0.8) = 2.0 -> mean 1.25
    snapshot = [(3, 2, 40, 100, 0), (1, 10, 10, 100, 0)]
    assert UtilizationDetector(spec, 16).saturation(snapshot) == pytest.approx(1.25)


def test_concurrency_counts_in_flight_requests_or_kv_tokens() -> None:
    snapshot = [(3, 2, 40, 100, 0), (1, 4, 10, 100, 0)]
    requests = Saturation(detector="concurrency", max_concurrency=5)
    assert ConcurrencyDetector(requests, 16).saturation(snapshot) == pytest.approx(10 / 10)
    tokens = Saturation(detector="concurrency", mode="tokens", max_token_concurrency=1000)
    assert ConcurrencyDetector(tokens, 16).saturation(snapshot) == pytest.approx(800 / 2000)


class ChangingCluster:
    def __init__(self) -> None:
        self.waiting = 0

    def snapshot(self):
        return [(0, self.waiting, 0, 100, 0)]


def test_the_gateway_sees_metrics_at_most_refresh_ms_old() -> None:
    cluster = ChangingCluster()
    spec = Saturation(detector="utilization", queue_depth_threshold=10, refresh_ms=50.0)
    view = ScrapedSaturation(UtilizationDetector(spec, 16), cluster)
    assert view.read(0.0) == 0.0
    cluster.waiting = 10
    assert view.read(49.9) == 0.0  # stale
    assert view.next_scrape_ms(49.9) == 50.0
    assert view.read(50.0) == 1.0  # scraped
    cluster.waiting = 0
    assert view.read(80.0) == 1.0
    assert view.read(100.0) == 0.0


# --- usage limits and the gate ---------------------------------------------------------------
def test_priority_hold_back_steps_linearly_by_rank() -> None:
    assert PriorityHoldBack(
        UsageLimit(policy="priority_hold_back", min_ceiling=0.4, max_ceiling=0.9)
    ).ceilings(0.5, 3) == pytest.approx([0.9, 0.65, 0.4])
    assert PriorityHoldBack(
        UsageLimit(policy="priority_hold_back", min_ceiling=0.4, max_ceiling=0.9)
    ).ceilings(0.5, 1) == [0.9]


def test_soft_reflective_ceiling_opens_under_the_reflective_ceiling() -> None:
    # s = 0.3 with 3 bands: r1 = 1 - 0.15 = 0.85, r2 = 1 - 0.3 = 0.7: both above s, all open
    assert SoftReflectiveCeiling(UsageLimit(policy="soft_reflective")).ceilings(0.3, 3) == [
        1.0,
        1.0,
        1.0,
    ]


def test_soft_reflective_ceiling_alternates_when_gated() -> None:
    # s = 0.7: r1 = 0.65, r2 = 0.3, both <= s; 0.7 >= 1 - 0.7, so alternating with
    # period round(0.7 / 0.3) = 2: closed on tick 1, open on tick 2, closed on tick 3
    policy = SoftReflectiveCeiling(UsageLimit(policy="soft_reflective"))
    assert policy.ceilings(0.7, 3) == [1.0, 0.0, 0.0]
    assert policy.ceilings(0.7, 3) == [1.0, 1.0, 1.0]
    assert policy.ceilings(0.7, 3) == [1.0, 0.0, 0.0]
    # s >= 1: lower bands shut
    assert policy.ceilings(1.0, 3) == [1.0, 0.0, 0.0]


def test_soft_reflective_with_one_band_is_open() -> None:
    assert SoftReflectiveCeiling(UsageLimit(policy="soft_reflective")).ceilings(0.99, 1) == [1.0]


def test_the_gate_closes_at_the_ceiling_and_reopens_below_it_minus_hysteresis() -> None:
    gate = BandGate(StaticLimit(UsageLimit(threshold=0.8)), bands=1, hysteresis=0.1)
    trace = [(s, gate.open_bands(s)[0]) for s in (0.5, 0.8, 0.75, 0.705, 0.69, 0.79, 0.8)]
    assert trace == [
        (0.5, True),
        (0.8, False),  # saturation >= ceiling
        (0.75, False),  # still above 0.8 - 0.1
        (0.705, False),  # not below 0.7
        (0.69, True),
        (0.79, True),  # open again: the plain ceiling applies
        (0.8, False),
    ]


def test_without_hysteresis_the_gate_follows_the_ceiling() -> None:
    gate = BandGate(StaticLimit(UsageLimit(threshold=0.8)), bands=1, hysteresis=0.0)
    assert [gate.open_bands(s)[0] for s in (0.8, 0.79, 0.8)] == [False, True, False]


# --- every setting is a spec object: no None branch in the builders ---------------------------
def test_an_absent_saturation_section_is_the_none_detector_spec() -> None:
    flow = FlowControl()
    assert flow.saturation.detector == "none"
    view = scraped_saturation(flow.saturation, ChangingCluster(), 16)
    assert isinstance(view.detector, NoDetector)
    assert (view.refresh_ms, view.fresh) == (0.0, False)


def test_each_detector_name_builds_its_class_with_its_staleness() -> None:
    for name, cls, fresh in [
        ("utilization", UtilizationDetector, False),
        ("concurrency", ConcurrencyDetector, True),
    ]:
        view = scraped_saturation(Saturation(detector=name, refresh_ms=70.0), ChangingCluster(), 16)
        assert isinstance(view.detector, cls)
        assert (view.refresh_ms, view.fresh) == (70.0, fresh)


def test_each_usage_limit_name_builds_its_class() -> None:
    expected = {
        "static": StaticLimit,
        "priority_hold_back": PriorityHoldBack,
        "soft_reflective": SoftReflectiveCeiling,
    }
    for name, cls in expected.items():
        assert isinstance(build_usage_limit(UsageLimit(policy=name)), cls)
