"""Weighted scoring in columns (scorers.weighted_choice) against the plain definition: for each
candidate, add weight x score over the scorers in order, take the highest sum, break ties with
the router's stream. Same choices and the same tie-break draws, on random scores."""

from __future__ import annotations

import random

import pytest

from simsched.sim.cluster.router import Scored
from simsched.sim.cluster.scorers import SCORERS, TieBreak, weighted_choice


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
