"""What sessions and closed-loop clients will send, drawn up front (session_specs.py).

Only the instants of later turns depend on the simulation (session_feed.py); every size, turn
count, think time and system-prompt choice is drawn here from the tenant's own streams, in bulk:
arrivals (session starts; then turns and think times from its children), lengths (each turn's
message and answer) and the prefix stream, as for generated tenants (build.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simsched.config.arrival_kinds import REACTIVE_KINDS
from simsched.config.classes import CLASS_INDEX
from simsched.workload.arrivals import arrival_times
from simsched.workload.lengths import DECODE, draw_lengths, draw_token_lengths
from simsched.workload.limits import check_times
from simsched.workload.session_horizon import check_session_horizon


@dataclass
class SessionPlan:
    """One tenant's pre-drawn sessions (for closed loop: one request per 'session')."""

    tenant: int
    tenant_id: str
    lane: int
    kind: str
    starts_ms: np.ndarray  # sessions: when each begins; closed loop: empty
    first_turn: np.ndarray  # per session, the index of its first turn in the arrays below
    turns: np.ndarray  # per session
    message: list[int]  # per turn: new prompt tokens
    answer: list[int]  # per turn: output tokens
    think_ms: list[float]  # per turn: the pause before it (after the previous turn's end)
    group: list[int]  # per session: which system prompt (-1: none)
    system_tokens: int
    spec: object  # the arrivals spec


def is_reactive(tenant) -> bool:
    return tenant.arrivals is not None and tenant.arrivals.kind in REACTIVE_KINDS


def session_plans(scenario, tenant_rng, prefix_rng) -> list[SessionPlan]:
    return [
        _plan(
            tenant,
            index,
            tenant_rng(scenario.seed, tenant.id),
            prefix_rng(scenario.seed, tenant.id),
        )
        for index, tenant in enumerate(scenario.tenants)
        if is_reactive(tenant)
    ]


def planned_turns(scenario, tenant_rng) -> dict[str, np.ndarray]:
    """Per tenant with `sessions` arrivals, each session's planned turns: what `_plan` draws,
    from the same streams, without the sizes (the turn-level metrics compare answers to it)."""
    planned = {}
    for index, tenant in enumerate(scenario.tenants):
        if is_reactive(tenant) and tenant.arrivals.kind == "sessions":
            arrival_rng = tenant_rng(scenario.seed, tenant.id).spawn(2)[0]
            turns_rng = arrival_rng.spawn(2)[0]
            planned[tenant.id] = _sessions(tenant.arrivals, index, arrival_rng, turns_rng)[1]
    return planned


def _sessions(
    spec, index: int, arrival_rng: np.random.Generator, turns_rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(starts, turns) of each session, or for closed loop (no starts, one turn per request).

    `arrival_rng` draws the starts, `turns_rng` (its first child) the turns."""
    where = f"tenants[{index}].arrivals"
    if spec.kind == "sessions":
        starts = arrival_times(spec.start, arrival_rng)
        check_times(starts, "", f"{where}.start")  # the caller names the scenario file
        return starts, draw_lengths(spec.turns, len(starts), turns_rng)
    # closed loop: `count` single-turn "sessions", started as clients come free; the first
    # requests leave at start_ms, and beyond the clock bound the run could only end by
    # blaming the cluster's speed
    check_times(np.array([spec.start_ms]), "", f"{where}.start_ms")
    return np.zeros(0), np.ones(spec.count, dtype=np.int64)


def _plan(tenant, index: int, rng: np.random.Generator, prefix_rng) -> SessionPlan:
    arrival_rng, length_rng = rng.spawn(2)
    spec = tenant.arrivals
    turns_rng, think_rng = arrival_rng.spawn(2)  # once: a second spawn gives other children
    starts, turns = _sessions(spec, index, arrival_rng, turns_rng)
    total = int(turns.sum())
    message, answer = draw_token_lengths(
        tenant.prefill_tokens, tenant.decode_tokens, total, length_rng
    )
    think = (
        draw_lengths(spec.think_time_ms, total, think_rng, DECODE)
        if spec.think_time_ms is not None
        else np.zeros(total, dtype=np.int64)
    )
    if spec.kind == "sessions":
        check_session_horizon(spec, starts, turns, think, f"tenants[{index}].arrivals")
    system = tenant.prefix
    sessions = len(turns)
    if system is None:
        group = np.full(sessions, -1)
    else:
        group = (
            prefix_rng.integers(0, system.groups, sessions)
            if system.groups > 1
            else np.zeros(sessions, dtype=np.int64)
        )
    return SessionPlan(
        tenant=index,
        tenant_id=tenant.id,
        lane=CLASS_INDEX[tenant.priority],
        kind=spec.kind,
        starts_ms=starts,
        first_turn=np.concatenate([[0], np.cumsum(turns)[:-1]]).astype(np.int64),
        turns=turns,
        message=message.tolist(),
        answer=answer.tolist(),
        think_ms=think.astype(np.float64).tolist(),
        group=group.tolist(),
        system_tokens=system.tokens if system is not None else 0,
        spec=spec,
    )


def reactive_summary(scenario, tenant_rng, prefix_rng) -> dict[str, str]:
    """Per session or closed-loop tenant, what it will send (its requests are made as the run
    goes, so a pre-generated count of 0 must not be read as 'nothing')."""
    out = {}
    for plan in session_plans(scenario, tenant_rng, prefix_rng):
        if plan.kind == "sessions":
            out[plan.tenant_id] = (
                f"sessions: {len(plan.turns):,} sessions, {int(plan.turns.sum()):,} turns, "
                "each sent after the previous one's answer"
            )
        else:
            spec = plan.spec
            out[plan.tenant_id] = (
                f"closed_loop: {spec.count:,} requests from {spec.concurrency} clients, "
                "each sent after the client's previous one"
            )
    return out
