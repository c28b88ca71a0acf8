"""Exact event traces of the two reference policies, derived by hand from the reference semantics.

Part (a) drives a policy alone over a ten-line fake queue view: call `select`, pop the picked
head, repeat, and compare the whole list of picks (and DRR deficits) with a hand-derived list.
Part (b) runs small scenarios through the engine and compares the complete decision sequence
with one computed by hand from the `token_server` model:

    exec_ms = service_tokens / service_tokens_per_ms
    KV blocks held from dispatch until dispatch + kv_hold_factor * exec_ms (free at that instant)
    ttft = queue_wait + max(min_prefill_ms, prefill / prefill_tokens_per_ms)

The engine scenarios use round numbers (10 tokens per ms, 10 tokens per block, 100 blocks,
decode weight 1) so every figure in the expected lists can be checked with mental arithmetic.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from simsched.config.classes import BATCH, INTERACTIVE
from simsched.config.scenario import Scheduler
from simsched.sim.policies import POLICIES
from simsched.sim.policies.base import Pick, Policy, PolicyContext

# --------------------------------------------------------------------------------------------
# (a) policies alone, over a fake view
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    name: str
    service_tokens: int
    seq: int


@dataclass
class FakeView:
    """The read-only `QueueView` a policy sees: queues[lane][tenant] of `Item`s."""

    tenant_count: int
    queues: list[list[deque[Item]]] = field(init=False)

    def __post_init__(self) -> None:
        self.queues = [[deque() for _ in range(self.tenant_count)] for _ in (INTERACTIVE, BATCH)]

    def lane_size(self, lane: int) -> int:
        return sum(len(q) for q in self.queues[lane])

    def queue_length(self, lane: int, tenant: int) -> int:
        return len(self.queues[lane][tenant])

    def head(self, lane: int, tenant: int) -> Item | None:
        queue = self.queues[lane][tenant]
        return queue[0] if queue else None

    def held_head(self, lane: int, tenant: int) -> Item | None:
        return None

    def push(self, lane: int, tenant: int, name: str, service_tokens: int, seq: int) -> None:
        self.queues[lane][tenant].append(Item(name, service_tokens, seq))


def make_policy(name: str, weights: tuple[float, ...], quantum: int = 1200) -> Policy:
    settings = Scheduler(policy=name, base_quantum_tokens=quantum)
    return POLICIES[name](PolicyContext(weights, settings, (500.0, 10_000.0)))


Arrivals = dict[int, Callable[[FakeView], None]]


def drain(policy: Policy, view: FakeView, arrivals: Arrivals | None = None) -> list[tuple]:
    """Select and pop until the policy answers None; `arrivals[k]` runs after the k-th pick.

    Each entry is (lane, tenant, request name, deficits after the pick or None for FIFO).
    """
    arrivals = arrivals or {}
    picks: list[tuple] = []
    for _ in range(100):  # a policy that never says None is a bug, not a hang
        pick = policy.select(view)
        if pick is None:
            return picks
        assert isinstance(pick, Pick)
        item = view.queues[pick.lane][pick.tenant].popleft()
        deficits = list(policy.deficits) if hasattr(policy, "deficits") else None
        picks.append((pick.lane, pick.tenant, item.name, deficits))
        if len(picks) in arrivals:
            arrivals[len(picks)](view)
    raise AssertionError(f"policy never ran out of work: {picks}")


def test_drr_weighted_turns_and_a_boost_when_a_round_sends_nothing() -> None:
    # quantum 100, weights (1, 2).
    # Round 1: A 0+100=100 < a1 150; B 0+200=200 < b1 250: nothing sent, so every backlogged
    #   tenant gets boost max(100, ceil(min((150-100)/1, (250-200)/2))) = 100 times its weight:
    #   A 100+100*1 = 200, B 200+100*2 = 400.
    # Round 2: A 200+100 = 300 -> a1 (150), a2 (100), a3 (0); B 400+200 = 600 -> b1 (350), b2 (250).
    view = FakeView(2)
    for name, tokens in (("a1", 150), ("a2", 50), ("a3", 100)):
        view.push(INTERACTIVE, 0, name, tokens, seq=0)
    for name, tokens in (("b1", 250), ("b2", 100)):
        view.push(INTERACTIVE, 1, name, tokens, seq=0)
    policy = make_policy("service_token_drr", (1.0, 2.0), quantum=100)
    assert drain(policy, view) == [
        (INTERACTIVE, 0, "a1", [150.0, 400.0]),
        (INTERACTIVE, 0, "a2", [100.0, 400.0]),
        (INTERACTIVE, 0, "a3", [0.0, 400.0]),
        (INTERACTIVE, 1, "b1", [0.0, 350.0]),
        (INTERACTIVE, 1, "b2", [0.0, 250.0]),
    ]
    # B's unspent deficit survives while nothing is queued; it is reset at B's next empty turn.
    assert policy.deficits == [0.0, 250.0]


def test_drr_boost_is_rounded_up_and_scaled_by_weight() -> None:
    # quantum 100, weights (1.5, 1); heads A 1000, B 700.
    # Round 1: A 150, B 100, nothing fits. Need min((1000-150)/1.5, (700-100)/1) = 566.67,
    #   boost max(100, ceil(566.67)) = 567: A 150 + 567*1.5 = 1000.5, B 100 + 567 = 667.
    # Round 2: A 1000.5+150 = 1150.5 -> a (150.5); then B's turn: 667+100 = 767 -> b (67).
    view = FakeView(2)
    view.push(INTERACTIVE, 0, "a", 1000, seq=0)
    view.push(INTERACTIVE, 1, "b", 700, seq=1)
    policy = make_policy("service_token_drr", (1.5, 1.0), quantum=100)
    assert drain(policy, view) == [
        (INTERACTIVE, 0, "a", [150.5, 667.0]),
        (INTERACTIVE, 1, "b", [150.5, 67.0]),
    ]


def test_drr_boost_is_at_least_one_quantum() -> None:
    # quantum 100, weight 1, head 120: round 1 gives 100, need 20 -> boost max(100, 20) = 100
    # (200); round 2 adds 100 (300) and sends the 120-token head, leaving 180.
    view = FakeView(1)
    view.push(INTERACTIVE, 0, "a", 120, seq=0)
    policy = make_policy("service_token_drr", (1.0,), quantum=100)
    assert drain(policy, view) == [(INTERACTIVE, 0, "a", [180.0])]


def test_drr_interactive_first_shared_deficit_and_reset_on_empty_turn() -> None:
    # quantum 100, weights (1, 1). Batch requests are the oldest (lower seq): lanes beat age.
    # Interactive round: A 100 -> ai (50); B 100 -> bi (70).
    # Batch round: A 50+100 = 150 < ab 300 (the deficit left from the interactive lane carries
    #   over: one counter per tenant); B 70+100 = 170 -> bb (90).
    # Batch round: A 250 < 300; B has no batch work -> reset to 0. Nothing sent: boost
    #   max(100, 300-250) = 100 for the only backlogged tenant: A 350.
    # Batch round: A 450 -> ab (150); B empty -> 0.
    view = FakeView(2)
    view.push(BATCH, 0, "ab", 300, seq=0)
    view.push(BATCH, 1, "bb", 80, seq=1)
    view.push(INTERACTIVE, 0, "ai", 50, seq=2)
    view.push(INTERACTIVE, 1, "bi", 30, seq=3)
    policy = make_policy("service_token_drr", (1.0, 1.0), quantum=100)
    assert drain(policy, view) == [
        (INTERACTIVE, 0, "ai", [50.0, 0.0]),
        (INTERACTIVE, 1, "bi", [50.0, 70.0]),
        (BATCH, 1, "bb", [150.0, 90.0]),
        (BATCH, 0, "ab", [150.0, 0.0]),
    ]
    assert policy.deficits == [150.0, 0.0]


def test_drr_batch_round_is_abandoned_when_interactive_work_arrives() -> None:
    # quantum 300, weights (1, 1); A has three 100-token batch requests, B one.
    # Batch round: A 300 -> a1 (200). Now B's interactive request arrives, mid-turn: A could
    #   still afford a2, but the batch round is dropped.
    # Interactive round: A has no interactive work -> reset to 0; B 0+300 -> bi (250).
    # Batch round: A 0+300 -> a2 (200), a3 (100); B 250+300 = 550 -> b1 (450).
    view = FakeView(2)
    for seq, name in enumerate(("a1", "a2", "a3")):
        view.push(BATCH, 0, name, 100, seq=seq)
    view.push(BATCH, 1, "b1", 100, seq=3)

    def interactive_arrives(v: FakeView) -> None:
        v.push(INTERACTIVE, 1, "bi", 50, seq=4)

    policy = make_policy("service_token_drr", (1.0, 1.0), quantum=300)
    assert drain(policy, view, {1: interactive_arrives}) == [
        (BATCH, 0, "a1", [200.0, 0.0]),
        (INTERACTIVE, 1, "bi", [0.0, 250.0]),
        (BATCH, 0, "a2", [200.0, 250.0]),
        (BATCH, 0, "a3", [100.0, 250.0]),
        (BATCH, 1, "b1", [100.0, 450.0]),
    ]


def test_drr_says_none_on_empty_queues_and_keeps_deficits() -> None:
    policy = make_policy("service_token_drr", (1.0, 2.0), quantum=100)
    assert policy.select(FakeView(2)) is None
    assert policy.deficits == [0.0, 0.0]


def test_fifo_one_request_per_tenant_per_round_oldest_first_across_lanes() -> None:
    # Tenants in declaration order, one request each per round; within a tenant the lowest
    # seq wins whichever lane it is in.
    # Round 1: A s0 (I), B s1 (B), C s2 (I). Round 2: A s3 (B), B empty, C s4 (I).
    # Round 3: A s5 (I).
    view = FakeView(3)
    view.push(INTERACTIVE, 0, "s0", 9999, seq=0)
    view.push(BATCH, 1, "s1", 1, seq=1)
    view.push(INTERACTIVE, 2, "s2", 5, seq=2)
    view.push(BATCH, 0, "s3", 5, seq=3)
    view.push(INTERACTIVE, 2, "s4", 5, seq=4)
    view.push(INTERACTIVE, 0, "s5", 5, seq=5)
    policy = make_policy("request_count_fifo", (5.0, 1.0, 1.0))
    assert [(lane, tenant, name) for lane, tenant, name, _ in drain(policy, view)] == [
        (INTERACTIVE, 0, "s0"),
        (BATCH, 1, "s1"),
        (INTERACTIVE, 2, "s2"),
        (BATCH, 0, "s3"),
        (INTERACTIVE, 2, "s4"),
        (INTERACTIVE, 0, "s5"),
    ]


def test_fifo_round_in_progress_serves_a_later_tenant_that_just_got_work() -> None:
    # After A's turn in round 2, B receives s6: the round goes on to B (s6) and C (s4) before
    # A's next turn (s5) in round 3. The reference visits tenants in one loop per round.
    view = FakeView(3)
    view.push(INTERACTIVE, 0, "s0", 5, seq=0)
    view.push(BATCH, 1, "s1", 5, seq=1)
    view.push(INTERACTIVE, 2, "s2", 5, seq=2)
    view.push(BATCH, 0, "s3", 5, seq=3)
    view.push(INTERACTIVE, 2, "s4", 5, seq=4)
    view.push(INTERACTIVE, 0, "s5", 5, seq=5)

    def b_gets_work(v: FakeView) -> None:
        v.push(INTERACTIVE, 1, "s6", 5, seq=6)

    policy = make_policy("request_count_fifo", (1.0, 1.0, 1.0))
    picks = drain(policy, view, {4: b_gets_work})
    assert [name for _, _, name, _ in picks] == ["s0", "s1", "s2", "s3", "s6", "s4", "s5"]


def test_fifo_new_round_starts_at_the_first_tenant() -> None:
    # Round 1 ends with C; A's and C's new work arrive meanwhile: the next round starts at A.
    view = FakeView(3)
    view.push(INTERACTIVE, 2, "c1", 5, seq=0)

    def more_work(v: FakeView) -> None:
        v.push(INTERACTIVE, 2, "c2", 5, seq=1)
        v.push(INTERACTIVE, 0, "a1", 5, seq=2)

    policy = make_policy("request_count_fifo", (1.0, 1.0, 1.0))
    picks = drain(policy, view, {1: more_work})
    assert [name for _, _, name, _ in picks] == ["c1", "a1", "c2"]


# --------------------------------------------------------------------------------------------
# (b) the engine: complete decision sequences
# --------------------------------------------------------------------------------------------

# 10 service tokens per ms, prefill at 10 tokens per ms (first token after at least 8 ms),
# 10 tokens per KV block, 100 blocks: a request of p prefill + d decode tokens costs p + d
# service tokens (decode weight 1), runs (p + d) / 10 ms and holds ceil((p + d) / 10) blocks.
CLUSTER = {
    "total_kv_blocks": 100,
    "kv_block_tokens": 10,
    "service_tokens_per_ms": 10.0,
    "prefill_tokens_per_ms": 10.0,
    "min_prefill_ms": 8.0,
}
GENEROUS_WAITS = {"max_interactive_wait_ms": 10_000, "max_batch_wait_ms": 10_000}

MakeScenario = Callable[..., Any]
Decisions = Callable[[Any], list]


def sections(
    policy: str,
    *,
    hold: float,
    admission: dict[str, Any] | None = None,
    quantum: int = 10_000,
) -> dict[str, Any]:
    return {
        "cluster": {**CLUSTER, "kv_hold_factor": hold},
        "scheduler": {"policy": policy, "decode_weight": 1, "base_quantum_tokens": quantum},
        "admission": admission or {"enabled": False},
    }


def test_idle_server_jumps_to_the_next_arrival_and_rounds_continue(
    make_scenario: MakeScenario, decisions: Decisions
) -> None:
    # FIFO, no admission, KV held for 2 x exec.
    # a1 @0: 100 tokens, 10 ms, 10 blocks (held to 20); ttft max(8, 10) = 10.
    # The server idles 10..50. a2 @50: 60 tokens (40+20), 6 ms, 6 blocks (held to 62), ttft 8.
    # b1 @52 and a3 @53 arrive while a2 runs; the round that served A goes on to B:
    # b1 @56: wait 4, 200 tokens, 20 ms, held 6+20 -> 0.26, ttft 4+20 = 24 (held to 96).
    # Next round, A: a3 @76: wait 23, ttft 23+8 = 31; a2's blocks freed at 62 -> (20+1)/100.
    rows = [
        ("a1", "A", 0, 100, 0),
        ("a2", "A", 50, 40, 20),
        ("b1", "B", 52, 200, 0),
        ("a3", "A", 53, 10, 0),
    ]
    scenario = make_scenario(
        rows, [{"id": "A"}, {"id": "B"}], **sections("request_count_fifo", hold=2.0)
    )
    assert decisions(scenario) == [
        ("a1", 200, "admitted", 0.0, 0.0, 10.0, 0.1),
        ("a2", 200, "admitted", 50.0, 0.0, 8.0, 0.06),
        ("b1", 200, "admitted", 56.0, 4.0, 24.0, 0.26),
        ("a3", 200, "admitted", 76.0, 23.0, 31.0, 0.21),
    ]


def test_kv_blocks_are_free_at_exactly_their_release_instant(
    make_scenario: MakeScenario, decisions: Decisions
) -> None:
    # FIFO with admission: only the dispatch gate, at the interactive watermark 0.5.
    # Each request holds 40 blocks for exactly its 40 ms run (hold factor 1). b1 arrives at
    # 40, the instant a1 ends and frees its blocks: b1 is seen at that tick and finds 0 held
    # (40 + 40 = 0.8 would be shed). a2 goes at 80, the instant b1's blocks are freed.
    rows = [("a1", "A", 0, 400, 0), ("b1", "B", 40, 400, 0), ("a2", "A", 40, 400, 0)]
    admission = {"enabled": True, "interactive_kv_watermark": 0.5, "batch_kv_watermark": 0.5}
    scenario = make_scenario(
        rows,
        [{"id": "A"}, {"id": "B"}],
        **sections("request_count_fifo", hold=1.0, admission=admission),
    )
    assert decisions(scenario) == [
        ("a1", 200, "admitted", 0.0, 0.0, 40.0, 0.4),
        ("b1", 200, "admitted", 40.0, 0.0, 40.0, 0.4),
        ("a2", 200, "admitted", 80.0, 40.0, 80.0, 0.4),
    ]


def test_fifo_dispatch_gate_is_class_blind_and_records_the_queue_wait(
    make_scenario: MakeScenario, decisions: Decisions
) -> None:
    # FIFO with admission (watermarks: interactive 0.5, batch 0.3), KV held 5 x exec.
    # a1 @0: 30 blocks, 30 ms (held to 150).
    # b1 (batch) @30: 30+15 = 0.45 -> admitted: FIFO gates every class at 0.5, not at 0.3.
    #   wait 29, ttft 29+15 = 44, runs 15 ms (held to 105).
    # a2 @45: 45+10 = 0.55 > 0.5 -> shed at dispatch, with its 43 ms wait.
    # b2 @45 (same instant, the round goes on to B): 45+5 = 0.5 -> admitted, wait 42, ttft 50.
    rows = [
        ("a1", "A", 0, 300, 0),
        ("b1", "B", 1, 150, 0, "batch"),
        ("a2", "A", 2, 100, 0),
        ("b2", "B", 3, 50, 0),
    ]
    admission = {"enabled": True, "interactive_kv_watermark": 0.5, "batch_kv_watermark": 0.3}
    scenario = make_scenario(
        rows,
        [{"id": "A"}, {"id": "B"}],
        **sections("request_count_fifo", hold=5.0, admission=admission),
    )
    assert decisions(scenario) == [
        ("a1", 200, "admitted", 0.0, 0.0, 30.0, 0.3),
        ("b1", 200, "admitted", 30.0, 29.0, 44.0, 0.45),
        ("a2", 429, "shed_kv_watermark", None, 43.0, 0.0, 0.55),
        ("b2", 200, "admitted", 45.0, 42.0, 50.0, 0.5),
    ]


def test_drr_dispatch_gate_sheds_batch_behind_interactive_work(
    make_scenario: MakeScenario, decisions: Decisions
) -> None:
    # DRR with admission (interactive 0.5, batch 0.4), KV held 5 x exec, judged at ticks.
    # r1 (batch) @0: 0+20 = 0.2 <= 0.4, admitted and sent: 20 ms, held to 100.
    # Tick @20 judges r2 (batch, 20 held + 15 = 0.35) and r3 (interactive, 20 + 10 = 0.3): both
    # queued. Interactive first: r3 @20, wait 18, ttft 18+10 = 28, held 30 (to 70), runs 10 ms.
    # r2 @30: 20+10+15 = 0.45 > 0.4 -> shed at dispatch (the interactive check ignores queued
    # batch work, so its blocks were not reserved), recording its 29 ms wait and 0.45.
    rows = [
        ("r1", "Bt", 0, 200, 0),
        ("r2", "Bt", 1, 150, 0),
        ("r3", "In", 2, 100, 0),
    ]
    admission = {
        "enabled": True,
        "interactive_kv_watermark": 0.5,
        "batch_kv_watermark": 0.4,
        **GENEROUS_WAITS,
    }
    tenants = [{"id": "In"}, {"id": "Bt", "priority": "batch"}]
    scenario = make_scenario(
        rows, tenants, **sections("service_token_drr", hold=5.0, admission=admission)
    )
    assert decisions(scenario) == [
        ("r1", 200, "admitted", 0.0, 0.0, 20.0, 0.2),
        ("r3", 200, "admitted", 20.0, 18.0, 28.0, 0.3),
        ("r2", 429, "shed_kv_watermark", None, 29.0, 0.0, 0.45),
    ]


def test_arrival_rules_kv_watermark_wait_slo_and_token_quota(
    make_scenario: MakeScenario, decisions: Decisions
) -> None:
    # DRR with admission: watermarks 0.6 / 0.6, interactive wait limit 15 ms, KV held 1 x exec.
    # Tenant Bt (batch) has a bucket of 300 service tokens refilled at 1000 per s (1 per ms).
    # a1 @0 is judged and sent at once: 10 blocks, 10 ms, freed at 10.
    # Tick @10 (a1's blocks already free) judges, in arrival order:
    #   a2 @1: 20 blocks -> 0.2; 0 tokens pending -> admitted (20 blocks, 200 tokens queued)
    #   a3 @2: (20+5) = 0.25 ok; wait 200/10 = 20 ms > 15 -> shed_queue_wait_slo, 0.25
    #   a4 @3: (20+45) = 0.65 > 0.6 -> shed_kv_watermark (checked first), recorded as min = 0.6
    #   b1 @4: (20+0+25) = 0.45 ok; no batch pending; bucket 300 >= 250 -> admitted, 50 left
    #   b2 @5: (20+25+10) = 0.55 ok; 250/10 = 25 ms ok; bucket 50+1 = 51 < 100 -> quota, 0.55
    # a2 @10: wait 9, ttft 9+20 = 29, runs 20 ms, 0.2. b1 @30 (a2's blocks freed at 30): 0.25,
    # wait 26, ttft 26+25 = 51.
    rows = [
        ("a1", "A", 0, 100, 0),
        ("a2", "A", 1, 200, 0),
        ("a3", "A", 2, 50, 0),
        ("a4", "A", 3, 450, 0),
        ("b1", "Bt", 4, 250, 0),
        ("b2", "Bt", 5, 100, 0),
    ]
    tenants = [
        {"id": "A"},
        {
            "id": "Bt",
            "priority": "batch",
            "quota": {"burst_service_tokens": 300, "sustained_service_tokens_per_sec": 1000},
        },
    ]
    admission = {
        "enabled": True,
        "interactive_kv_watermark": 0.6,
        "batch_kv_watermark": 0.6,
        "max_interactive_wait_ms": 15,
        "max_batch_wait_ms": 1000,
    }
    scenario = make_scenario(
        rows, tenants, **sections("service_token_drr", hold=1.0, admission=admission)
    )
    assert decisions(scenario) == [
        ("a1", 200, "admitted", 0.0, 0.0, 10.0, 0.1),
        ("a3", 429, "shed_queue_wait_slo", None, 0.0, 0.0, 0.25),
        ("a4", 429, "shed_kv_watermark", None, 0.0, 0.0, 0.6),
        ("b2", 429, "shed_tenant_token_quota", None, 0.0, 0.0, 0.55),
        ("a2", 200, "admitted", 10.0, 9.0, 29.0, 0.2),
        ("b1", 200, "admitted", 30.0, 26.0, 51.0, 0.25),
    ]


# a1 (A) and b1 (B) arrive at 0: a1 holds 40 blocks for 40 ms (hold 1 x exec), b1 10 blocks.
# b2 (B) arrives at 10, while a1 still holds its blocks and b1 is queued.
TIMING_ROWS = [("a1", "A", 0, 400, 0), ("b1", "B", 0, 100, 0), ("b2", "B", 10, 200, 0)]
TIMING_ADMISSION = {
    "enabled": True,
    "interactive_kv_watermark": 0.5,
    "batch_kv_watermark": 0.5,
    **GENEROUS_WAITS,
}


@pytest.mark.parametrize(
    ("evaluate_at", "expected"),
    [
        # Judged at the tick @40, when a1's blocks are free: 0 + 10 queued + 20 = 0.3, admitted.
        # B's turn sends b1 @40 (0.1, wait 40, ttft 50) then b2 @50 (b1 freed at 50: 0.2,
        # wait 40, ttft 40+20 = 60).
        (
            "scheduler_tick",
            [
                ("a1", 200, "admitted", 0.0, 0.0, 40.0, 0.4),
                ("b1", 200, "admitted", 40.0, 40.0, 50.0, 0.1),
                ("b2", 200, "admitted", 50.0, 40.0, 60.0, 0.2),
            ],
        ),
        # Judged @10: 40 held + 10 queued + 20 = 0.7 > 0.5, shed (recorded at the watermark).
        (
            "arrival",
            [
                ("a1", 200, "admitted", 0.0, 0.0, 40.0, 0.4),
                ("b2", 429, "shed_kv_watermark", None, 0.0, 0.0, 0.5),
                ("b1", 200, "admitted", 40.0, 40.0, 50.0, 0.1),
            ],
        ),
    ],
)
def test_evaluate_at_scheduler_tick_versus_arrival(
    make_scenario: MakeScenario, decisions: Decisions, evaluate_at: str, expected: list
) -> None:
    admission = {**TIMING_ADMISSION, "evaluate_at": evaluate_at}
    scenario = make_scenario(
        TIMING_ROWS,
        [{"id": "A"}, {"id": "B"}],
        **sections("service_token_drr", hold=1.0, admission=admission),
    )
    assert decisions(scenario) == expected
