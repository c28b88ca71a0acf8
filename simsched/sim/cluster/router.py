"""Which replica a dispatched request goes to (`cluster.router`).

A router only chooses among replicas with room (a waiting queue under `max_waiting_per_replica`);
the scheduler dispatches only when one exists. Ties are broken at random from the scenario's
seed (scorers.TieBreak): deterministic, and a light load spreads over every replica instead of
piling onto the lowest index.

- `round_robin`: the next replica with room after the last one chosen.
- `least_outstanding`: the fewest running plus waiting requests.
- `least_kv`: the fewest KV blocks in use (llm-d's KV-utilisation scorer), then the fewest
  outstanding requests: blocks are only taken when a request starts running, so a burst placed
  at one instant would otherwise all go to the same replica.
  Production-faithful, blind spot included: a replica whose requests all wait holds no blocks.
- `llm_d` (the default): llm-d's default weights, with simsched's queue scorer: weighted
  scorers (`config.router.llm_d_profile` has the weights and their source).
- `{scorers: [...]}`: weighted scorers (scorers.py), e.g. prefix-cache affinity against load.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simsched.config.router import llm_d_profile
from simsched.sim.cluster.scorers import (
    SCORERS,
    KvUtilizationScorer,
    PromptKeys,
    QueueDepthScorer,
    TieBreak,
    load_choice,
    load_pick,
    weighted_choice,
)


class Router:
    def __init__(self, replicas: Sequence[Any], max_waiting: int, ties: TieBreak) -> None:
        self.replicas = replicas
        # the replicas it may choose: all, unless an autoscaler keeps some cold or draining
        self.routable: Sequence[Any] = replicas
        self.max_waiting = max_waiting
        self.ties = ties

    def with_room(self) -> list[Any]:
        limit = self.max_waiting
        return [r for r in self.routable if len(r.waiting) < limit]

    def pick(self, request: Any = None) -> Any:
        candidates = self.with_room()
        if not candidates:
            raise AssertionError("no replica has room: the scheduler checks has_room first")
        return self.choose(candidates, request)

    def choose(self, candidates: list[Any], request: Any) -> Any:
        raise NotImplementedError


class RoundRobin(Router):
    def __init__(self, replicas: Sequence[Any], max_waiting: int, ties: TieBreak) -> None:
        super().__init__(replicas, max_waiting, ties)
        self.next_index = 0

    def choose(self, candidates: list[Any], request: Any) -> Any:
        after = [r for r in candidates if r.index >= self.next_index]
        chosen = (after or candidates)[0]
        self.next_index = (chosen.index + 1) % len(self.replicas)
        return chosen


class LeastOutstanding(Router):
    def choose(self, candidates: list[Any], request: Any) -> Any:
        fewest = min(r.outstanding() for r in candidates)
        return self.ties.pick([r for r in candidates if r.outstanding() == fewest])


class LeastKv(Router):
    def choose(self, candidates: list[Any], request: Any) -> Any:
        # A plain loop, not min() with a key: this runs once per dispatched request.
        best: list[Any] = []
        best_key = None
        for replica in candidates:
            key = (replica.blocks_in_use(), replica.outstanding())
            if best_key is None or key < best_key:
                best, best_key = [replica], key
            elif key == best_key:
                best.append(replica)
        return self.ties.pick(best)


class Scored(Router):
    """Weighted scorers (`router: {scorers: [...]}`)."""

    def __init__(self, replicas, max_waiting: int, ties: TieBreak, spec, block_size: int) -> None:
        super().__init__(replicas, max_waiting, ties)
        keys = PromptKeys(block_size)  # shared: each request's keys are computed once
        self.scored = [(SCORERS[s.name](replicas, keys), s.weight) for s in spec.scorers]
        # only the scorers with state of their own hear where a request went
        self.noted = [scorer.routed for scorer, _ in self.scored if scorer.remembers]
        # llm_d's load scorers alone (the default router) are folded in one pass
        kinds = [type(scorer) for scorer, _ in self.scored]
        self.load_weights = (
            (self.scored[0][1], self.scored[1][1])
            if kinds == [QueueDepthScorer, KvUtilizationScorer]
            else None
        )
        # whether every replica counts its outstanding requests as `Replica.outstanding` does
        # (running + waiting + entering), so that `pick` adds them up itself
        self.plain_counts = all(getattr(r, "counts_plainly", False) for r in replicas)

    def pick(self, request: Any = None) -> Any:
        if self.load_weights is None:
            return super().pick(request)
        # the default router: `with_room` and `load_choice` in one pass over the replicas
        return load_pick(
            *self.load_weights, self.routable, self.max_waiting, self.plain_counts, self.ties
        )

    def choose(self, candidates: list[Any], request: Any) -> Any:
        if self.load_weights is not None:
            return load_choice(*self.load_weights, candidates, self.ties)  # it notes nothing
        chosen = weighted_choice(self.scored, candidates, request, self.ties)
        for routed in self.noted:
            routed(request, chosen)
        return chosen


ROUTERS: dict[str, type[Router]] = {
    "round_robin": RoundRobin,
    "least_outstanding": LeastOutstanding,
    "least_kv": LeastKv,
}


# Named routers that stand for a scorer profile, from the cluster's settings
PROFILES = {"llm_d": lambda config: llm_d_profile(config.prefix_caching)}


def build_router(config: Any, replicas: Sequence[Any], seed: int) -> Router:
    """The router `cluster.router` names, or the weighted scorers it lists or stands for."""
    ties = TieBreak(seed)
    setting = config.router
    if isinstance(setting, str) and setting in ROUTERS:
        return ROUTERS[setting](replicas, config.max_waiting_per_replica, ties)
    spec = PROFILES[setting](config) if isinstance(setting, str) else setting
    return Scored(replicas, config.max_waiting_per_replica, ties, spec, config.block_size)
