"""Room per tenant (sim/tenant_room.py): one tenant's full pools never hold back another's.

The exact case: two one-replica pools, each seating one sequence (`max_num_seqs: 1`) with one
waiting place (`max_waiting_per_replica: 1`), batch pinned to `old`, chat to `new`. Every
request is a 100-token prompt and a 2-token answer, so with the linear latency model a request
runs one prefill iteration (BASE + PREFILL x 100) and one decode iteration of one sequence
(BASE + DECODE + ATTENTION x 101 / 1000). Batch requests arrive at 0, 1, 2 ms: the first runs,
the second waits on the replica, the third stays queued at the gateway (old is full). Chat
requests arrive at 5, 6, 7 ms into the idle `new` pool.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from simsched.config.classes import BATCH, INTERACTIVE
from simsched.config.loading import validate
from simsched.config.names import POLICY_NAMES
from simsched.config.scenario import Scheduler
from simsched.sim.engine import run_variant
from simsched.sim.lanes import Lanes
from simsched.sim.policies import POLICIES
from simsched.sim.policies.base import PolicyContext
from simsched.sim.requests import Request
from simsched.sim.tenant_room import OpenTenantsView
from simsched.workload.build import build_workload
from tests.sim.cluster.test_pools import ATTENTION, BASE, DECODE, LINEAR, PREFILL

PROMPT, ANSWER = 100, 2


def one_seat_pool(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "role": "mixed",
        "replicas": 1,
        "latency_model": LINEAR,
        "schedule_step_ms": 0.0,
        "max_num_seqs": 1,
        "max_waiting_per_replica": 1,
    }


def pinned_scenario(policy: str):
    def tenant(name: str, priority: str, start_ms: float, pool: str) -> dict[str, Any]:
        return {
            "id": name,
            "priority": priority,
            "arrivals": {"kind": "periodic", "start_ms": start_ms, "interval_ms": 1, "count": 3},
            "prefill_tokens": PROMPT,
            "decode_tokens": ANSWER,
            "pools": [pool],
        }

    raw = {
        "tenants": [
            tenant("batch", "batch", 0.0, "old"),
            tenant("chat", "interactive", 5.0, "new"),
        ],
        "cluster": {"pools": [one_seat_pool("old"), one_seat_pool("new")]},
        "admission": {"enabled": False},
        "scheduler": {"policy": policy},
    }
    return validate(raw, "room.yaml")


def lone_request_ms(start: float) -> float:
    """When a request that starts at `start` on an otherwise idle replica finishes."""
    first_token = start + (BASE + PREFILL * PROMPT)
    return first_token + (BASE + DECODE * 1 + ATTENTION * (PROMPT + 1) / 1000)


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_a_pinned_tenant_dispatches_when_its_own_pool_has_room(policy):
    scenario = pinned_scenario(policy)
    table = build_workload(scenario)
    run = run_variant(scenario, table)
    tenants = np.asarray(table.tenant)
    arrival = np.asarray(table.arrival_ms)
    dispatch = np.frombuffer(run.recorder.dispatch_ms)
    batch, chat = np.flatnonzero(tenants == 0), np.flatnonzero(tenants == 1)
    # chat: the first two go at arrival (the first runs, the second waits on the replica),
    # although the old pool is full from 1 ms; the third goes the instant the first finishes
    # and the second leaves the replica's waiting place
    assert dispatch[chat[0]] == arrival[chat[0]] == 5.0
    assert dispatch[chat[1]] == arrival[chat[1]] == 6.0
    assert dispatch[chat[2]] == lone_request_ms(5.0)
    # batch: the third waits for old's room, when the first finishes
    assert dispatch[batch[0]] == 0.0 and dispatch[batch[1]] == 1.0
    assert dispatch[batch[2]] == lone_request_ms(0.0)


# --- the policies' rule for a held tenant ------------------------------------------------------
def request(seq: int, tenant: int, lane: int, tokens: int) -> Request:
    return Request(seq, tenant, lane, float(seq), tokens, 1, tokens, 1)


def policy(name: str, quantum: int = 100):
    settings = Scheduler(policy=name, base_quantum_tokens=quantum)
    return POLICIES[name](PolicyContext((1.0, 1.0), settings, (500.0, 10_000.0)))


def test_drr_leaves_a_held_tenants_deficit_alone():
    drr = policy("service_token_drr", quantum=100)
    lanes = Lanes(2)
    for seq in range(4):
        lanes.push(request(seq, seq % 2, INTERACTIVE, 60))
    drr.deficits = [30.0, 30.0]
    # tenant 0 held: tenant 1 takes its turn (30 + 100 = 130 covers two heads of 60)
    view = OpenTenantsView(lanes, [False, True])
    picks = []
    for _ in range(2):
        pick = drr.select(view)
        picks.append(pick.tenant)
        lanes.pop(pick.lane, pick.tenant)
    assert picks == [1, 1]
    assert drr.deficits == [30.0, 130.0 - 120.0]  # the held tenant neither raised nor reset


def test_drr_serves_an_open_batch_tenant_while_interactive_work_is_held():
    drr = policy("service_token_drr")
    lanes = Lanes(2)
    lanes.push(request(0, 0, INTERACTIVE, 50))
    lanes.push(request(1, 1, BATCH, 50))
    pick = drr.select(OpenTenantsView(lanes, [False, True]))
    assert (pick.lane, pick.tenant) == (BATCH, 1)


def test_vtc_does_not_lift_a_held_tenant_as_if_it_returned_from_idle():
    vtc = policy("vtc")
    lanes = Lanes(2)
    lanes.push(request(0, 0, INTERACTIVE, 10))
    for seq in range(1, 4):
        lanes.push(request(seq, 1, INTERACTIVE, 100))
    vtc.counters = [0.0, 0.0]
    both = OpenTenantsView(lanes, [True, True])
    assert vtc.select(both).tenant == 0  # counter 0 -> 10
    lanes.pop(INTERACTIVE, 0)
    lanes.push(request(4, 0, INTERACTIVE, 10))
    vtc._stayed = [True, True]  # tenant 0's next request was queued before the decision
    held = OpenTenantsView(lanes, [False, True])
    for _ in range(2):  # tenant 1 goes twice while tenant 0 is held: 0 -> 100 -> 200
        lanes.pop(INTERACTIVE, vtc.select(held).tenant)
    assert vtc.counters == [10.0, 200.0]
    # open again: tenant 0 is not lifted to tenant 1's 200, and goes next at its own 10
    assert vtc.select(both).tenant == 0
    assert vtc.counters[0] == 20.0


def test_a_held_queue_is_reported_and_hidden():
    lanes = Lanes(2)
    lanes.push(request(0, 0, BATCH, 10))
    view = OpenTenantsView(lanes, [False, True])
    assert view.held_head(BATCH, 0) is lanes.head(BATCH, 0)
    assert view.held_head(INTERACTIVE, 0) is None
    assert view.head(BATCH, 0) is None and view.lane_size(BATCH) == 0
    assert view.queue_length(BATCH, 0) == 0 and lanes.queue_length(BATCH, 0) == 1


def test_wfq_tags_a_head_that_arrives_while_its_tenant_is_held():
    # Weights 1 and 100-token requests, so a finish tag is its start tag + 100. Tenant 1's
    # request 3 arrives while tenant 1 is held, and is tagged at the next decision like any
    # head: S = max(V = 0, F_prev = 0) = 0. Tenant 0 then goes three times (S = 100, 200, 300;
    # V follows to 300). When tenant 1 is open again its head still has S = 0 and goes; its next
    # request 9 gets S = max(V = 300, F = 100) = 300 < tenant 0's 400, so tenant 1 goes twice
    # before tenant 0. Tagged only when seen open (S = 300 then), request 9 would get S = 400,
    # tie with tenant 0 and lose to the tenant declared first: picks [1, 0, 1].
    wfq = policy("wfq")
    lanes = Lanes(2)
    both, held = OpenTenantsView(lanes, [True, True]), OpenTenantsView(lanes, [True, False])
    lanes.push(request(0, 0, INTERACTIVE, 100))
    lanes.pop(INTERACTIVE, wfq.select(both).tenant)
    for seq in (2, 4, 6):
        lanes.push(request(seq, 0, INTERACTIVE, 100))
    lanes.push(request(3, 1, INTERACTIVE, 100))
    for _ in range(3):
        assert wfq.select(held).tenant == 0
        lanes.pop(INTERACTIVE, 0)
    assert wfq.start_tags[1] == 0.0 and wfq.virtual_time == 300.0
    for seq, tenant in ((8, 0), (10, 0), (9, 1)):
        lanes.push(request(seq, tenant, INTERACTIVE, 100))
    picks = []
    for _ in range(3):
        picks.append(wfq.select(both).tenant)
        lanes.pop(INTERACTIVE, picks[-1])
    assert picks == [1, 1, 0]
    assert wfq.virtual_time == 400.0  # never below 300, though the held head's S was 0
