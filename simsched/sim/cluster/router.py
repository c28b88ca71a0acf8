"""Which replica a dispatched request goes to (`cluster.router`).

A router only chooses among replicas with room (a waiting queue under `max_waiting_per_replica`);
the scheduler dispatches only when one exists. Ties go to the lowest replica index, so runs are
deterministic.

- `round_robin`: the next replica with room after the last one chosen.
- `least_outstanding`: the fewest running plus waiting requests.
- `least_kv`: the fewest KV blocks in use (llm-d's KV-utilisation scorer), then the fewest
  outstanding requests: blocks are only taken when a request starts running, so a burst placed
  at one instant would otherwise all go to the same replica.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class Router:
    def __init__(self, replicas: Sequence[Any], max_waiting: int) -> None:
        self.replicas = replicas
        self.max_waiting = max_waiting

    def with_room(self) -> list[Any]:
        limit = self.max_waiting
        return [r for r in self.replicas if len(r.waiting) < limit]

    def pick(self) -> Any:
        candidates = self.with_room()
        if not candidates:
            raise AssertionError("no replica has room: the scheduler checks has_room first")
        return self.choose(candidates)

    def choose(self, candidates: list[Any]) -> Any:
        raise NotImplementedError


class RoundRobin(Router):
    def __init__(self, replicas: Sequence[Any], max_waiting: int) -> None:
        super().__init__(replicas, max_waiting)
        self.next_index = 0

    def choose(self, candidates: list[Any]) -> Any:
        after = [r for r in candidates if r.index >= self.next_index]
        chosen = (after or candidates)[0]
        self.next_index = (chosen.index + 1) % len(self.replicas)
        return chosen


class LeastOutstanding(Router):
    def choose(self, candidates: list[Any]) -> Any:
        return min(candidates, key=lambda r: (r.outstanding(), r.index))


class LeastKv(Router):
    def choose(self, candidates: list[Any]) -> Any:
        # A plain loop, not min() with a key: this runs once per dispatched request.
        best, best_key = None, None
        for replica in candidates:
            key = (replica.blocks_in_use(), replica.outstanding())
            if best_key is None or key < best_key:
                best, best_key = replica, key
        return best


ROUTERS: dict[str, type[Router]] = {
    "round_robin": RoundRobin,
    "least_outstanding": LeastOutstanding,
    "least_kv": LeastKv,
}
