"""`continuous_batching`: replicas with paged KV caches and iteration-level batching.

The cluster front: the router places each dispatched request on a replica, where it waits for
the replica's next iteration (replica.py has the batching itself). The scheduler dispatches while
some replica's waiting queue is under `max_waiting_per_replica`; once all are full it waits for
`room_available()`, which fires when a request leaves a waiting queue to start running. Queues
therefore build up in the gateway's lanes, where the fairness policy orders them, not here.

Cluster-wide figures are sums over replicas: KV blocks (the admission rules read occupancy as
blocks in use over the total; a running total that the replicas' memories keep, kv_level.py)
and the sustained token rate (`tput`, the gateway's wait estimate; see
`latency.sustained_tokens_per_ms`). TTFT is not known at dispatch: the recorder takes it
from the first token.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import simpy

from simsched.config.autoscale import replica_slots
from simsched.sim.cluster.attribution import NO_ATTRIBUTION, IterationObserver
from simsched.sim.cluster.cpu_time import build_engine_latency
from simsched.sim.cluster.kv_level import FleetKv
from simsched.sim.cluster.latency import sustained_tokens_per_ms
from simsched.sim.cluster.replica import NoObserver, Replica
from simsched.sim.cluster.replica_group import build_group
from simsched.sim.cluster.router import build_router
from simsched.sim.cluster.sequences import ceil_div
from simsched.sim.cluster.utilisation import ReplicaUsage
from simsched.sim.recorder import Recorder
from simsched.sim.requests import Request


class ContinuousBatching:
    uses_seed = True  # the engine passes the scenario seed (the router breaks ties with it)

    def __init__(
        self,
        env: simpy.Environment,
        config: Any,
        recorder: Recorder,
        observer: Any = None,
        seed: int = 0,
        attribution: Callable[[Any], IterationObserver] = lambda latency: NO_ATTRIBUTION,
    ) -> None:
        self.env = env
        self.recorder = recorder
        latency = build_engine_latency(config)  # the roofline with the engine's CPU time
        # one observer for all replicas: per-tenant chargeback sums over the fleet
        self.attribution = attribution(latency)
        slots = replica_slots(config)  # autoscaling builds every slot it may ever use
        # the blocks all replicas hold, kept up to date by their memories (kv_level.py)
        self.fleet = FleetKv(env)
        self.replicas = [
            Replica(env, i, config, latency, recorder, self.attribution, self.fleet)
            for i in range(slots)
        ]
        for replica in self.replicas:
            replica.on_room = self._room_appeared
            replica.observer = observer or NoObserver()
        # the replicas that take requests: all of them, or those an autoscaler keeps serving
        self.group = build_group(env, config, self.replicas, self._room_appeared)
        self.block_size = config.block_size
        self.blocks_per_replica = config.blocks_per_replica
        self.tput = config.replicas * sustained_tokens_per_ms(latency, config)
        self.max_waiting = config.max_waiting_per_replica
        self.prefix_caching = config.prefix_caching
        self.router = build_router(config, self.replicas, seed)
        self.router.routable = self.group.serving  # the same list: the group resizes it
        self._room: simpy.Event | None = None

    @property
    def kv_blocks_total(self) -> int:
        """KV blocks of the replicas that hold or may hold requests (all, without autoscaling)."""
        return self.group.kv_blocks_total

    @staticmethod
    def sustained_tokens_per_ms(config: Any) -> float:
        # the module's function of the same name, for one replica (methods do not see class names)
        return config.replicas * sustained_tokens_per_ms(build_engine_latency(config), config)

    def kv_blocks_in_use(self) -> int:
        # every slot's memory, serving or not (one that is off holds nothing), as a sum of the
        # replicas' views would count them, at the cost of the replicas in a jump
        return self.fleet.in_use()

    def kv_peak_ratio(self) -> float:
        # Per replica: a replica's level only grows during a fast-forward jump, so its pool's
        # peak is exact in both modes (a cluster-wide sum of lagging levels would not be).
        return max(replica.kv.peak / replica.capacity for replica in self.replicas)

    def known_ttft_ms(self, request: Request, wait_ms: float) -> float:
        return math.nan  # known at the first token

    def has_room(self) -> bool:
        limit = self.max_waiting
        for replica in self.group.serving:  # noqa: SIM110 (a loop, not any(): once per dispatch)
            if len(replica.waiting) + replica.frontend.entering < limit:
                return True
        return False

    def room_available(self) -> simpy.Event:
        if self._room is None:
            self._room = self.env.event()
        return self._room

    def _room_appeared(self) -> None:
        if self._room is not None:
            room, self._room = self._room, None
            room.succeed()

    def start(self, request: Request) -> None:
        replica = self.router.pick(request)
        self.recorder.placed(request, replica.index)
        replica.submit(request)
        return None  # the scheduler goes on at once; has_room says when to stop

    def fits(self, request: Request) -> bool:
        """Whether a replica could hold the request even alone; one that cannot would preempt
        itself forever, so the dispatch gate sheds it. The last token's KV is never computed,
        so a request peaks at prefill + decode - 1 tokens."""
        prefill, decode = request.prefill_tokens, request.decode_tokens
        # max(1, prefill) + max(1, decode) - 1, without the calls (asked once a dispatch)
        peak = (prefill if prefill > 1 else 1) + (decode if decode > 1 else 1) - 1
        return ceil_div(peak, self.block_size) <= self.blocks_per_replica

    def snapshot(self) -> list[tuple[int, int, int, int, int]]:
        """Per replica: (running, waiting, kv_blocks_used, kv_blocks_total, batch_tokens)."""
        return self.group.snapshot()

    def utilisation(self) -> list[ReplicaUsage]:
        """Per replica: what its GPU did over the run (utilisation.py)."""
        return [replica.meter.usage() for replica in self.replicas]

    def chargeback(self) -> Any:
        """The attribution's ledger at the end of the run (None unless chargeback asks)."""
        return self.attribution.ledger()

    def replica_states(self) -> list[str] | None:
        """Per replica slot: off, warming, serving or draining; None without autoscaling."""
        return self.group.states()

    def cached_blocks(self) -> list[int]:
        """Per replica: free blocks that hold cached prefixes (evictable), with prefix caching."""
        return [replica.kv.cached_free() for replica in self.replicas]

    def close(self) -> None:
        """Drop the prefix caches and routing indexes at the end of a run: they are the bulk of
        its memory and sit in reference cycles, which Python frees only at a full collection."""
        for replica in self.replicas:
            replica.kv.clear()
        for scorer, _ in getattr(self.router, "scored", []):
            for index in getattr(scorer, "index", []):
                index.clear()

    def is_idle(self) -> bool:
        return not any(replica.busy or replica.frontend.entering for replica in self.replicas)
