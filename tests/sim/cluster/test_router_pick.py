"""The default router's pick, which finds the replicas with room and counts their outstanding
requests in one pass (adding up `Replica.outstanding` itself when every replica counts as
`Replica` does), against the plain steps: `with_room`, then `load_choice` over those
candidates. Same replica and the same tie-break draws, over random replica states."""

from __future__ import annotations

import random
from collections import deque
from types import SimpleNamespace

import pytest

from simsched.sim.cluster.router import Scored
from simsched.sim.cluster.scorers import TieBreak, load_choice

MAX_WAITING = 3


class Spec:
    scorers = [
        SimpleNamespace(name="queue_depth", weight=2.0),
        SimpleNamespace(name="kv_utilization", weight=1.0),
    ]


class Counted:
    """A replica as the router reads it; `counts_plainly` as `Replica` sets it."""

    def __init__(self, index: int, plainly: bool) -> None:
        self.index, self.capacity, self.counts_plainly = index, 12, plainly
        self.running: dict[int, None] = {}
        self.waiting: deque[int] = deque()
        self.frontend = SimpleNamespace(entering=0)
        self.extra = 0  # what a replica that counts otherwise adds (the P/D decode side)
        self.blocks = 0

    def outstanding(self) -> int:
        return len(self.running) + len(self.waiting) + self.frontend.entering + self.extra

    def blocks_in_use(self) -> int:
        return self.blocks


def shuffle(replicas: list[Counted], rng: random.Random) -> None:
    # few distinct states, so that equal depths, tied sums and full replicas are frequent
    for replica in replicas:
        replica.running = dict.fromkeys(range(rng.randint(0, 3)))
        replica.waiting = deque(range(rng.randint(0, MAX_WAITING)))
        replica.frontend.entering = rng.choice([0, 0, 1])
        replica.extra = 0 if replica.counts_plainly else rng.choice([0, 2])
        replica.blocks = rng.choice([0, 3, 7, 12])


@pytest.mark.parametrize("plainly", [True, False], ids=["summed", "called"])
@pytest.mark.parametrize("seed", range(10))
def test_the_one_pass_pick_is_with_room_then_load_choice(seed: int, plainly: bool) -> None:
    rng = random.Random(seed)
    replicas = [Counted(i, plainly) for i in range(rng.randint(1, 8))]
    router = Scored(replicas, MAX_WAITING, TieBreak(seed), Spec, 16)
    assert router.plain_counts is plainly
    plain = TieBreak(seed)
    for _ in range(300):
        shuffle(replicas, rng)
        router.routable = [r for r in replicas if rng.random() < 0.9]  # some not serving
        candidates = [r for r in router.routable if len(r.waiting) < MAX_WAITING]
        if not candidates:
            continue
        assert router.pick(None) is load_choice(2.0, 1.0, candidates, plain)
    assert router.ties.pick(list(range(1000))) == plain.pick(list(range(1000)))


def test_one_replica_that_counts_otherwise_keeps_the_calls() -> None:
    replicas = [Counted(0, True), Counted(1, False)]
    assert Scored(replicas, MAX_WAITING, TieBreak(0), Spec, 16).plain_counts is False
