"""Exact pick sequences on small hand-built cases, worked out by hand from each policy's rules."""

from __future__ import annotations

from simsched.config.scenario import Scheduler
from simsched.sim.lanes import Lanes
from simsched.sim.policies import POLICIES, Pick, Policy, PolicyContext
from simsched.sim.requests import BATCH, INTERACTIVE, Request


class Queues:
    """Lanes plus a policy; requests get seqs in the order they are added."""

    def __init__(self, name: str, weights: tuple[float, ...], slo=(500.0, 10_000.0)) -> None:
        self.lanes = Lanes(len(weights))
        self.policy: Policy = POLICIES[name](PolicyContext(weights, Scheduler(), slo))
        self.seq = 0

    def add(
        self, tenant: int, tokens: int = 100, lane: int = INTERACTIVE, arrival_ms: float = 0.0
    ) -> int:
        self.lanes.push(Request(self.seq, tenant, lane, arrival_ms, tokens, 0, tokens, 1))
        self.seq += 1
        return self.seq - 1

    def pick(self) -> Request:
        pick = self.policy.select(self.lanes)
        assert isinstance(pick, Pick)
        return self.lanes.pop(pick.lane, pick.tenant)

    def tenants(self, count: int) -> list[int]:
        return [self.pick().tenant for _ in range(count)]

    def seqs(self, count: int) -> list[int]:
        return [self.pick().seq for _ in range(count)]


# --- vtc ----------------------------------------------------------------------------------------
def test_vtc_serves_the_smallest_counter() -> None:
    q = Queues("vtc", (1.0, 1.0))
    for tenant, tokens in [(0, 100), (1, 300), (0, 100), (1, 300), (0, 100), (0, 100)]:
        q.add(tenant, tokens)
    # counters (t0, t1): 0,0 tie->t0 | 100,0 ->t1 | 100,300 ->t0 | 200,300 ->t0
    # | 300,300 tie->t0 | t0 empty ->t1
    assert q.seqs(6) == [0, 1, 2, 4, 5, 3]
    assert q.policy.counters == [400.0, 600.0]


def test_vtc_weights_divide_the_charge() -> None:
    q = Queues("vtc", (2.0, 1.0))
    for tenant in (0, 0, 0, 0, 1, 1):
        q.add(tenant)
    # t0 is charged 50 a request, t1 100: 0,0->t0 | 50,0->t1 | 50,100->t0 | 100,100 tie->t0
    # | 150,100->t1 | 150,200->t0
    assert q.tenants(6) == [0, 1, 0, 0, 1, 0]


def test_vtc_lifts_a_tenant_returning_from_idle() -> None:
    q = Queues("vtc", (1.0, 1.0))
    for _ in range(5):
        q.add(0)
    assert q.tenants(3) == [0, 0, 0]  # t0's counter is 300, and it still has 2 queued
    for _ in range(3):
        q.add(1)
    # t1 is lifted from 0 to 300 (not served three times in a row): tie->t0 (400) | t1 (400)
    # | tie->t0 (500, empty) | t1 | t1
    assert q.tenants(5) == [0, 1, 0, 1, 1]
    assert q.policy.counters == [500.0, 600.0]


def test_vtc_lifts_a_tenant_emptied_by_its_own_pick() -> None:
    # t0 keeps exactly one small request queued, sending the next right after each pick: it is
    # idle after each of its picks, so it cannot bank the credit of its tiny requests.
    q = Queues("vtc", (1.0, 1.0))
    for _ in range(5):
        q.add(1, 1000)
    q.add(0, 10)
    picks = []
    for _ in range(8):
        request = q.pick()
        picks.append(request.tenant)
        if request.tenant == 0:
            q.add(0, 10)
    # 0,0 tie->t0 (10) | t0 lifted to max(10, 0) ->t1 (1000) | t0 stayed ->t0 (20)
    # | lifted to 1000, tie->t0 (1010) | ->t1 (2000) | ->t0 (1020) | lifted to 2000 ->t0 | ->t1
    assert picks == [0, 1, 0, 0, 1, 0, 0, 1]


def test_vtc_no_lift_when_no_one_stayed_backlogged() -> None:
    q = Queues("vtc", (1.0, 1.0))
    q.add(0, 500)
    assert q.tenants(1) == [0]
    q.add(1)
    q.add(0)
    q.add(1)
    # both return together: no lift, t1 (0) goes until it passes t0 (500)
    assert q.tenants(3) == [1, 1, 0]


def test_vtc_takes_the_tenants_oldest_request_whatever_its_class() -> None:
    q = Queues("vtc", (1.0,))
    q.add(0, lane=BATCH)
    q.add(0, lane=INTERACTIVE)
    q.add(0, lane=BATCH)
    assert [q.pick().lane for _ in range(3)] == [BATCH, INTERACTIVE, BATCH]


# --- wfq ----------------------------------------------------------------------------------------
def test_wfq_weights() -> None:
    q = Queues("wfq", (2.0, 1.0))
    for tenant in (0, 0, 0, 1, 1):
        q.add(tenant)
    # (S, F): t0 (0, 50), t1 (0, 100): tie->t0, V=0 | t0 (50, 100) vs t1 S=0 ->t1, V=0
    # | t1 (100, 200) vs t0 S=50 ->t0, V=50 | t0 (100, 150) tie with t1 ->t0 | t1
    assert q.tenants(5) == [0, 1, 0, 0, 1]
    assert q.policy.virtual_time == 100.0
    assert q.policy.finish_tags == [150.0, 200.0]


def test_wfq_returning_tenant_starts_at_virtual_time() -> None:
    q = Queues("wfq", (1.0, 1.0))
    for _ in range(4):
        q.add(0)
    assert q.tenants(3) == [0, 0, 0]  # start tags 0, 100, 200: V = 200
    q.add(1)
    q.add(1)
    # t0's head S = 300; t1's S = max(V=200, 0) = 200 ->t1 | t1 S = 300 tie ->t0 | t1
    assert q.tenants(3) == [1, 0, 1]


def test_wfq_big_requests_wait_in_proportion() -> None:
    q = Queues("wfq", (1.0, 1.0))
    q.add(0, 1000)
    q.add(0, 1000)
    for _ in range(12):
        q.add(1, 100)
    # t0's second request starts at 1000: t1 gets 10 requests (S = 0..900) before it
    assert q.tenants(12) == [0] + [1] * 10 + [0]


# --- fcfs and strict_priority -------------------------------------------------------------------
def mixed(name: str) -> Queues:
    q = Queues(name, (1.0, 1.0))
    q.add(0, lane=BATCH)  # seq 0
    q.add(1, lane=INTERACTIVE)  # seq 1
    q.add(0, lane=INTERACTIVE)  # seq 2
    q.add(1, lane=BATCH)  # seq 3
    return q


def test_fcfs_is_one_global_arrival_order() -> None:
    q = mixed("fcfs")
    assert q.seqs(4) == [0, 1, 2, 3]
    assert POLICIES["fcfs"].class_blind
    assert POLICIES["fcfs"].screens_arrivals


def test_strict_priority_serves_interactive_first() -> None:
    q = mixed("strict_priority")
    assert q.seqs(3) == [1, 2, 0]
    q.add(1, lane=INTERACTIVE)  # seq 4 jumps ahead of the queued batch request
    assert q.seqs(2) == [4, 3]
    assert not POLICIES["strict_priority"].class_blind


# --- edf ----------------------------------------------------------------------------------------
def test_edf_deadlines_across_classes() -> None:
    q = Queues("edf", (1.0, 1.0), slo=(500.0, 10_000.0))
    q.add(0, lane=BATCH, arrival_ms=0.0)  # seq 0, deadline 10 000
    q.add(1, lane=INTERACTIVE, arrival_ms=9400.0)  # seq 1, deadline 9 900
    q.add(0, lane=INTERACTIVE, arrival_ms=9500.0)  # seq 2, deadline 10 000: ties with seq 0
    q.add(1, lane=INTERACTIVE, arrival_ms=9600.0)  # seq 3, deadline 10 100
    q.add(1, lane=BATCH, arrival_ms=9600.0)  # seq 4, deadline 19 600
    assert q.seqs(5) == [1, 0, 2, 3, 4]


def test_edf_uses_the_scenarios_targets() -> None:
    q = Queues("edf", (1.0,), slo=(500.0, 200.0))  # a batch target tighter than interactive
    q.add(0, lane=INTERACTIVE, arrival_ms=0.0)  # deadline 500
    q.add(0, lane=BATCH, arrival_ms=100.0)  # deadline 300
    assert [q.pick().lane for _ in range(2)] == [BATCH, INTERACTIVE]
