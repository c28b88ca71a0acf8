"""A session's conversation is shared between its turns (a parent pointer per segment), not
copied into each turn's prompt: a session of n turns holds 2n segments, not n(n+1)."""

from __future__ import annotations

import numpy as np

from simsched.sim.session_state import Session
from simsched.workload.prefixes import ChainIds, block_keys
from simsched.workload.session_plans import SessionPlan


def plan(turns: int, message: int = 3, answer: int = 2) -> SessionPlan:
    return SessionPlan(
        tenant=0,
        tenant_id="chat",
        lane=0,
        kind="sessions",
        starts_ms=np.zeros(1),
        first_turn=np.zeros(1, dtype=np.int64),
        turns=np.array([turns]),
        message=[message] * turns,
        answer=[answer] * turns,
        think_ms=[0.0] * turns,
        group=[0],
        system_tokens=10,
        spec=None,
    )


def converse(turns: int) -> list:
    interner = ChainIds()
    session = Session(plan(turns), 0, (interner.chain(0, "system"), 10))
    prefixes = []
    for _ in range(turns):
        prefixes.append(session.segments(interner))
        session.answered()
    return prefixes


def test_every_turn_repeats_the_whole_conversation_by_hand() -> None:
    # system prompt 10 tokens; each turn a message of 3 and an answer of 2: turn k's prompt
    # ends at 10 + 5(k-1) + 3, its answer 2 later, after every earlier message and answer
    prefixes = converse(4)
    assert prefixes[0].ends == [10, 13, 15]
    assert prefixes[3].ends == [10, 13, 15, 18, 20, 23, 25, 28, 30]
    assert prefixes[3].tokens == 30
    # the same chain ids as the earlier turn's, then two new ones
    assert prefixes[3].ids[:7] == prefixes[2].ids
    assert len(set(prefixes[3].ids)) == 9


def test_the_history_is_shared_not_copied() -> None:
    turns = 300
    prefixes = converse(turns)
    segments = set()
    for prefix in prefixes:
        node = prefix.last
        while node is not None:
            segments.add(id(node))
            node = node.parent
    # the system prompt, then a message and an answer per turn: 2n + 1 objects in all, where
    # a list per turn would hold n(n+1) + n entries
    assert len(segments) == 2 * turns + 1
    for before, after in zip(prefixes, prefixes[1:], strict=False):
        assert after.last.parent.parent is before.last


def test_block_keys_are_those_of_the_segment_lists() -> None:
    for prefix in converse(40)[::7]:
        assert prefix.keys(4) == block_keys(prefix.ids, prefix.ends, 4)
        assert len(prefix.keys(4)) == prefix.tokens // 4
