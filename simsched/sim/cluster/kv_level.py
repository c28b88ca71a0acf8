"""The KV blocks a fleet of replicas holds now, kept up to date by the replicas' KV memories.

The KV gate reads the cluster's blocks in use at every arrival and every dispatch (sim/kv_gate.py),
so summing every replica's view on each read cost two passes over the replicas a request.
Instead each memory (kv_memory.py) adds what it holds and releases to its fleet's `held` as it
changes, and tells the fleet when a fast-forward jump starts and ends. A read is then

    in_use(now) = held + sum over jumping memories m of m.growth.need[m.growth.index_at(now)]

which is the sum of the replicas' own views `level + need[index_at(now)]` term by term: exact
at the instant it is read, mid-jump included (the memories' contract), and O(jumping replicas).
Integers, so the order of the additions changes nothing. tests/sim/cluster/test_kv_level.py
checks it by hand and against the per-replica sum at every read of whole runs.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import simpy

    from simsched.sim.cluster.fast_forward import Jump


class Growing(Protocol):
    """A memory in a fast-forward jump: its iterations take `growth.need` blocks as they start."""

    growth: Jump | None


class FleetKv:
    """Blocks held across the memories that report to it; a memory alone reports to its own."""

    __slots__ = ("env", "held", "growing", "_read")

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.held = 0  # blocks held at the memories' last iteration boundaries
        self.growing: list[Growing] = []  # memories in a jump, in the order their jumps began
        # the last read of a fleet with jumps: (now, held, blocks in use); see `in_use`
        self._read: tuple[float, int, int] = (math.nan, 0, 0)

    def jump_started(self, memory: Growing) -> None:
        self.growing.append(memory)
        self._read = (math.nan, 0, 0)

    def jump_ended(self, memory: Growing) -> None:
        self.growing.remove(memory)
        self._read = (math.nan, 0, 0)

    def in_use(self) -> int:
        """Blocks held now, what each jumping memory's iterations have taken so far included.

        The gate reads it at an arrival's screening and again at its dispatch, mostly at one
        instant: a read at the same instant, with the same `held` and no jump started or ended
        since (a jump cut short keeps the iteration in progress now), is the same sum, so it is
        answered from the last one instead of walking the jumps again."""
        held = self.held
        if not self.growing:
            return held
        now = self.env.now
        then, held_then, total = self._read
        if now == then and held == held_then:
            return total
        total = held
        for memory in self.growing:
            total += memory.growth.need_now(now)  # need[index_at(now)]
        self._read = (now, held, total)
        return total
