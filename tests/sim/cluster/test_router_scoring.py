"""Weighted scoring in columns (scorers.weighted_choice) against the plain definition: for each
candidate, add weight x score over the scorers in order, take the highest sum, break ties with
the router's stream. Same choices and the same tie-break draws, on random scores."""

from __future__ import annotations

import random

import pytest

from simsched.sim.cluster.router import Scored
from simsched.sim.cluster.scorers import SCORERS, TieBreak, load_choice, weighted_choice


class Column:
    """A scorer whose scores are given."""

    def __init__(self, scores: list[float]) -> None:
        self.given = scores

    def scores(self, request, candidates) -> list[float]:
        return self.given


def by_definition(scored, candidates, ties: TieBreak):
    totals = []
    for i in range(len(candidates)):
        total = 0.0
        for scorer, weight in scored:
            total += weight * scorer.scores(None, candidates)[i]
        totals.append(total)
    best = max(totals)
    return ties.pick([c for c, total in zip(candidates, totals, strict=True) if total == best])


@pytest.mark.parametrize("seed", range(20))
def test_the_same_choices_and_draws_as_the_definition(seed: int) -> None:
    rng = random.Random(seed)
    fast, plain = TieBreak(seed), TieBreak(seed)
    for _ in range(300):
        n = rng.randint(1, 8)
        candidates = list(range(n))
        # coarse scores, so that ties are frequent; weights as a profile sets them
        scored = [
            (Column([rng.choice([0.0, 0.25, 0.5, 1.0, 1 / 3]) for _ in range(n)]), weight)
            for weight in rng.sample([1.0, 2.0, 3.0, 0.7], rng.randint(1, 3))
        ]
        assert weighted_choice(scored, candidates, None, fast) == by_definition(
            scored, candidates, plain
        )
    # both drew the same tie-break numbers: the streams are still in step
    assert fast.pick(list(range(1000))) == plain.pick(list(range(1000)))


def test_only_scorers_with_state_hear_where_a_request_went() -> None:
    remembering = {name for name, kind in SCORERS.items() if kind.remembers}
    assert remembering == {"prefix_cache_approx"}  # the one that indexes routed keys

    class Spec:
        scorers = [type("S", (), {"name": name, "weight": 1.0}) for name in SCORERS]

    class Replica:
        capacity = 10

    router = Scored([Replica()], 4, TieBreak(0), Spec, 16)
    assert [hook.__self__ for hook in router.noted] == [
        scorer for scorer, _ in router.scored if type(scorer).__name__ == "ApproxPrefixScorer"
    ]


class Loaded:
    """A replica as the load scorers read it: requests outstanding and blocks in use."""

    def __init__(self, outstanding: int, blocks: int, capacity: int) -> None:
        self.load, self.blocks, self.capacity = outstanding, blocks, capacity

    def outstanding(self) -> int:
        return self.load

    def blocks_in_use(self) -> int:
        return self.blocks


@pytest.mark.parametrize("seed", range(20))
def test_the_load_scorers_folded_in_one_pass_choose_as_the_definition(seed: int) -> None:
    rng = random.Random(seed)
    fast, plain = TieBreak(seed), TieBreak(seed)
    queue, kv = SCORERS["queue_depth"](None, None), SCORERS["kv_utilization"](None, None)
    for _ in range(300):
        # few distinct loads and block counts, so that equal depths and tied sums are frequent
        candidates = [
            Loaded(rng.randint(0, 3), rng.choice([0, 3, 7, 12]), 12)
            for _ in range(rng.randint(1, 8))
        ]
        weights = rng.sample([1.0, 2.0, 0.7, 1 / 3], 2)
        scored = list(zip([queue, kv], weights, strict=True))
        assert load_choice(*weights, candidates, fast) is by_definition(scored, candidates, plain)
    assert fast.pick(list(range(1000))) == plain.pick(list(range(1000)))


def test_the_default_router_folds_its_load_scorers() -> None:
    class Spec:
        scorers = [
            type("S", (), {"name": n, "weight": w})
            for n, w in [("queue_depth", 2.0), ("kv_utilization", 1.0)]
        ]

    assert Scored([], 8, TieBreak(0), Spec, 16).load_weights == (2.0, 1.0)
    Spec.scorers = Spec.scorers[::-1]  # another order is another fold: the general one
    assert Scored([], 8, TieBreak(0), Spec, 16).load_weights is None
