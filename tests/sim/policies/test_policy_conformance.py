"""One suite, run over every registered policy: the contract the scheduler process relies on."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched import load_scenario, simulate
from simsched.config.scenario import Scheduler
from simsched.sim.lanes import Lanes
from simsched.sim.policies import POLICIES, Policy, PolicyContext
from simsched.sim.requests import BATCH, INTERACTIVE, Request
from simsched.workload import build_workload

SCENARIO = Path(__file__).resolve().parents[3] / "scenarios" / "noisy_neighbor.yaml"
NAMES = sorted(POLICIES)


def make_policy(name: str, weights: tuple[float, ...]) -> Policy:
    return POLICIES[name](PolicyContext(weights, Scheduler(policy=name), (500.0, 10_000.0)))


def make_request(seq: int, tenant: int, lane: int, tokens: int, arrival_ms: float) -> Request:
    return Request(seq, tenant, lane, arrival_ms, tokens, 0, tokens, 1)


def pick_and_pop(policy: Policy, lanes: Lanes) -> Request | None:
    """One scheduler decision, checked against the contract; the popped request, if any."""
    pick = policy.select(lanes)
    if lanes.total_size() == 0:
        assert pick is None, "a pick on empty queues"
        return None
    assert pick is not None, "None while work is queued: the scheduler would stall"
    assert lanes.queue_length(pick.lane, pick.tenant) > 0, f"{pick} names an empty queue"
    return lanes.pop(pick.lane, pick.tenant)


# One arrival: (tenant index modulo the tenant count, lane, service tokens, picks after it).
arrivals = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.sampled_from((INTERACTIVE, BATCH)),
        st.integers(1, 5000),
        st.integers(0, 2),
    ),
    min_size=1,
    max_size=60,
)
weight_lists = st.lists(st.floats(0.25, 8.0), min_size=1, max_size=4)


def run(name: str, weights: list[float], events: list[tuple[int, int, int, int]]) -> list[int]:
    """Fill the lanes with arrivals interleaved with decisions, then drain; the served seqs."""
    policy = make_policy(name, tuple(weights))
    lanes = Lanes(len(weights))
    served: list[int] = []
    for seq, (tenant, lane, tokens, picks) in enumerate(events):
        lanes.push(make_request(seq, tenant % len(weights), lane, tokens, 10.0 * seq))
        for _ in range(picks):
            request = pick_and_pop(policy, lanes)
            if request is not None:
                served.append(request.seq)
    while (request := pick_and_pop(policy, lanes)) is not None:
        served.append(request.seq)
    return served


@pytest.mark.parametrize("name", NAMES)
def test_empty_queues_give_none(name: str) -> None:
    policy = make_policy(name, (1.0, 2.0))
    assert policy.select(Lanes(2)) is None
    assert policy.select(Lanes(2)) is None  # and again: nothing in its state invents work


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("lane", [INTERACTIVE, BATCH])
def test_a_single_request_is_picked(name: str, lane: int) -> None:
    lanes = Lanes(3)
    lanes.push(make_request(0, 2, lane, 700, 0.0))
    policy = make_policy(name, (1.0, 1.0, 1.0))
    assert pick_and_pop(policy, lanes).seq == 0
    assert policy.select(lanes) is None


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("lane", [INTERACTIVE, BATCH])
def test_a_full_tie_goes_to_the_first_tenant(name: str, lane: int) -> None:
    # Same class, size, arrival time and weight: declaration order and arrival order agree.
    for _ in range(2):  # fresh instances and views answer the same
        lanes = Lanes(3)
        for tenant in range(3):
            lanes.push(make_request(tenant, tenant, lane, 300, 0.0))
        policy = make_policy(name, (1.0, 1.0, 1.0))
        assert [pick_and_pop(policy, lanes).tenant for _ in range(3)] == [0, 1, 2]


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=60, deadline=None)
@given(weights=weight_lists, events=arrivals)
def test_every_request_is_served_exactly_once(
    name: str, weights: list[float], events: list[tuple[int, int, int, int]]
) -> None:
    served = run(name, weights, events)
    assert sorted(served) == list(range(len(events)))


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=30, deadline=None)
@given(weights=weight_lists, events=arrivals)
def test_fresh_instances_make_the_same_picks(
    name: str, weights: list[float], events: list[tuple[int, int, int, int]]
) -> None:
    assert run(name, weights, events) == run(name, weights, events)


@pytest.mark.parametrize("name", NAMES)
def test_end_to_end_every_request_gets_one_outcome(name: str) -> None:
    scenario = load_scenario(SCENARIO, [f"scheduler.policy={name}"])
    assert scenario.scheduler.policy == name
    result = simulate(scenario)
    requests = result.requests
    assert requests["status_code"].isin([200, 429]).all()
    for variant, frame in requests.groupby("variant"):
        assert frame["request_id"].is_unique, variant
    sent = len(build_workload(scenario))
    assert sent > 0
    assert requests.groupby("variant").size().to_dict() == dict.fromkeys(result.variants, sent)
