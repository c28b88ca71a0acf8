"""`cluster.pools`: groups of replicas, routing across them, and the P/D handoff between them.

A `Pool` is a group of replicas built from one `PoolSpec` (today's continuous-batching settings)
with its own router; its replicas are numbered within the pool, so every router works on it
unchanged, and `offset` turns their numbers into the run's replica numbers (pools in declaration
order). A dispatched request goes to one of its tenant's entry pools (`mixed` or `prefill`
serving its model, narrowed by `tenants[].pools`), the one with the least work per unit of
capacity (`PoolPicker`), then to a replica by that pool's router. A prefill replica hands the
request off after the first token (`Handoff`): a decode pool is picked the same way, its router
picks the replica, the replica books the prompt's blocks, the link carries them, the prefill side
lets its blocks go and the decode replica takes the sequence into its batch.

Room is per tenant (`open_tenants`; sim/schedulers.py gives pools tenant_room's scheduler
process): the scheduler offers the policy only
the tenants with an entry pool that has room (sim/tenant_room.py), so one tenant's full pools
never hold back another tenant's idle ones, and a request is placed as it is dispatched.
`parked` holds a request dispatched without room: with `flow_control`, whose dispatcher
(sim/flow/dispatch.py) still asks the cluster-wide `has_room()`, one at most waits here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import simpy

from simsched.config.autoscale import replica_slots
from simsched.config.pool_eligibility import eligible_pools
from simsched.config.pools import ENTRY_ROLES
from simsched.sim.cluster.cpu_time import build_engine_latency
from simsched.sim.cluster.kv_link import DedicatedLink, KvLink, prompt_kv_bytes
from simsched.sim.cluster.latency import sustained_tokens_per_ms
from simsched.sim.cluster.pd_replicas import DecodeReplica, PrefillReplica
from simsched.sim.cluster.pool_autoscaling import pool_autoscalers
from simsched.sim.cluster.replica import NoObserver, Replica
from simsched.sim.cluster.replica_group import (
    AutoscaledGroup,
    FixedGroup,
    PoolGroups,
    build_group,
)
from simsched.sim.cluster.router import Router, build_router
from simsched.sim.cluster.sequences import Seq, ceil_div
from simsched.sim.cluster.utilisation import ReplicaUsage
from simsched.sim.kernel import HANDOFF
from simsched.sim.recorder import Recorder
from simsched.sim.requests import Request

REPLICA_KINDS: dict[str, type[Replica]] = {
    "mixed": Replica,
    "prefill": PrefillReplica,
    "decode": DecodeReplica,
}


@dataclass
class Pool:
    name: str
    role: str
    model: str
    spec: Any
    offset: int  # the run's number of its first replica slot
    replicas: list[Replica]  # every slot (an autoscaled pool builds all it may ever use)
    router: Router
    rate: float  # sustained prefill tokens per ms of one replica (latency.sustained_tokens_per_ms)
    # the slots that take work: all of them, or those the pool's autoscaler keeps serving
    # (replica_group.py); the router's `routable` is the same list
    group: FixedGroup | AutoscaledGroup

    def load(self) -> float:
        """Work per unit of capacity: (outstanding requests + 1) / (serving replicas x rate).
        The +1 counts the request being placed, so an idle fast pool beats an idle slow one."""
        outstanding = 0
        serving = self.group.serving
        for replica in serving:
            outstanding += replica.outstanding()
        return (outstanding + 1) / (len(serving) * self.rate)

    def has_room(self) -> bool:
        limit = self.spec.max_waiting_per_replica
        for replica in self.group.serving:  # noqa: SIM110 (a loop: once per dispatch)
            if len(replica.waiting) + replica.frontend.entering < limit:
                return True
        return False


class PoolPicker:
    """The pool with the least `load()`; equal loads go to the pool declared first."""

    def pick(self, pools: Sequence[Pool]) -> Pool:
        return min(pools, key=lambda pool: pool.load())


@dataclass
class TransferLog:
    """Per handed-off request: transfer time (ms), bytes and the decode pool, for the results."""

    start_ms: list[float] = field(default_factory=list)  # when the blocks were booked
    ms: list[float] = field(default_factory=list)
    nbytes: list[int] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)
    # per handed-off request (by seq): when the prefill replica computed the first token, as
    # the client would see it there (DistServe's TTFT); the client's TTFT comes from decode
    prefill_token_ms: dict[int, float] = field(default_factory=dict)


class Handoff:
    """A prefill replica's sequence travels to a decode replica through the link: offered at
    the instant of its first token, at `HANDOFF` priority; booked when the decode replica has
    blocks and a seat; carried for `link.transfer_ms`; then released and joined."""

    def __init__(self, env: simpy.Environment, link: KvLink, cluster: PooledCluster) -> None:
        self.env = env
        self.link = link
        self.cluster = cluster
        self.log = TransferLog()
        self.in_flight = 0
        self.pending: list[tuple[PrefillReplica, Seq]] = []  # handed off now, not yet offered

    def __call__(self, source: PrefillReplica, seq: Seq, end: float) -> None:
        self.log.prefill_token_ms[seq.request.seq] = source.frontend.first_token_ms(end)
        self.in_flight += 1
        # Offered at this instant but after every iteration ending now (kernel.py, HANDOFF): the
        # decode pool's picker, its router and the replica then see those iterations over, the
        # same whether the decode replicas step or jump. The handoffs of one instant are offered
        # together in request order: the order prefill replicas' iterations end in at one
        # instant is SimPy's insertion order, which a decode replica's jump can change upstream.
        if not self.pending:
            self.env.call_later(0.0, HANDOFF, self._offer_pending, None)
        self.pending.append((source, seq))

    def _offer_pending(self, _: None) -> None:
        pending, self.pending = self.pending, []
        pending.sort(key=lambda handed: handed[1].request.seq)
        for source, seq in pending:
            self._offer(source, seq)

    def _offer(self, source: PrefillReplica, seq: Seq) -> None:
        pool = self.cluster.decode_pool(seq.request)
        # only a warm replica that is not draining takes a new transfer
        target = pool.router.choose(list(pool.group.serving), seq.request)
        target.offer(
            seq,
            lambda copy: self._start(source, target, pool, seq, copy),
            source.frontend.first_token_ms(0.0),  # the entry front end's shift of every instant
        )

    def _start(
        self,
        source: PrefillReplica,
        target: DecodeReplica,
        pool: Pool,
        seq: Seq,
        copy: Seq,
    ) -> None:
        nbytes = prompt_kv_bytes(pool.spec.model, seq.target)
        duration = self.link.transfer_ms(nbytes, self.env.now)
        self.log.start_ms.append(self.env.now)
        self.log.ms.append(duration)
        self.log.nbytes.append(nbytes)
        self.log.seqs.append(seq.request.seq)
        self.cluster.recorder_transfer(seq.request, target, pool)
        done = self.env.timeout(duration)
        done.callbacks.append(lambda _: self._end(source, target, seq, copy))

    def _end(self, source: PrefillReplica, target: DecodeReplica, seq: Seq, copy: Seq) -> None:
        self.in_flight -= 1
        source.release(seq)
        target.arrive(copy)


class PooledCluster:
    """The `pools` service model (contract.ServiceModel)."""

    uses_seed = True
    uses_tenants = True  # the engine passes the scenario's tenants (their model and pools)

    def __init__(
        self,
        env: simpy.Environment,
        config: Any,
        recorder: Recorder,
        observer: Any = None,
        seed: int = 0,
        tenants: Sequence[Any] = (),
    ) -> None:
        self.env = env
        self.recorder = recorder
        self.pools = self._build_pools(env, config, recorder, observer, seed, self._room_appeared)
        self.replicas = [replica for pool in self.pools for replica in pool.replicas]
        # what was provisioned and when, per pool (the results' GPU-hours)
        self.group = PoolGroups(
            tuple(pool.name for pool in self.pools), tuple(pool.group for pool in self.pools)
        )
        self.block_size = config.block_size
        entry = [p for p in self.pools if p.role in ENTRY_ROLES]
        # the replicas a pool starts with (all it has, without an autoscaler): the gateway's
        # wait estimate, as a single autoscaled pool's
        self.tput = sum(p.spec.replicas * p.rate for p in entry)
        self.prefix_caching = any(p.spec.prefix_caching for p in self.pools)
        self.picker = PoolPicker()
        self.handoff = Handoff(env, DedicatedLink(config.kv_transfer), self)
        for pool in self.pools:
            for replica in pool.replicas:
                replica.on_room = self._room_appeared
                if isinstance(replica, PrefillReplica):
                    replica.handoff = self.handoff
        self.entry_pools, self.decode_pools = self._tenant_pools(tenants)
        self.parked: Request | None = None
        self._room: simpy.Event | None = None

    @property
    def kv_blocks_total(self) -> int:
        """KV blocks of the replicas that hold or may hold requests (all, without autoscaling)."""
        total = 0
        for pool in self.pools:
            total += pool.group.kv_blocks_total
        return total

    @staticmethod
    def _build_pools(env, config, recorder, observer, seed, on_room) -> list[Pool]:
        pools, offset = [], 0
        for index, spec in enumerate(config.pools):
            latency = build_engine_latency(spec)  # the roofline with the engine's CPU time
            kind = REPLICA_KINDS[spec.role]
            slots = replica_slots(spec)  # an autoscaled pool builds every slot it may use
            replicas = [kind(env, i, spec, latency, recorder) for i in range(slots)]
            for replica in replicas:
                replica.observer = observer or NoObserver()
            # each pool's tie-breaks draw from their own stream, so adding a pool moves no other
            router = build_router(spec, replicas, seed + index)
            group = build_group(env, spec, replicas, on_room)
            router.routable = group.serving  # the same list: the group resizes it
            rate = sustained_tokens_per_ms(latency, spec)
            pools.append(
                Pool(
                    spec.name,
                    spec.role,
                    spec.model.name,
                    spec,
                    offset,
                    replicas,
                    router,
                    rate,
                    group,
                )
            )
            offset += slots
        return pools

    def _tenant_pools(self, tenants: Sequence[Any]) -> tuple[list[list[Pool]], list[list[Pool]]]:
        """Per tenant: its entry pools and its decode pools, in declaration order."""
        by_name = {pool.name: pool for pool in self.pools}
        eligible = eligible_pools(tenants, [pool.spec for pool in self.pools])
        entry = [[by_name[name] for name in names] for names, _ in eligible]
        decode = [[by_name[name] for name in names] for _, names in eligible]
        return entry, decode

    @staticmethod
    def sustained_tokens_per_ms(config: Any) -> float:
        total = 0.0
        for spec in config.pools:
            if spec.role in ENTRY_ROLES:
                total += spec.replicas * sustained_tokens_per_ms(build_engine_latency(spec), spec)
        return total

    # --- the scheduler's questions --------------------------------------------------------------
    def kv_blocks_in_use(self) -> int:
        total = 0
        for replica in self.replicas:
            total += replica.blocks_in_use()
        return total

    def kv_peak_ratio(self) -> float:
        return max(replica.kv.peak / replica.capacity for replica in self.replicas)

    def known_ttft_ms(self, request: Request, wait_ms: float) -> float:
        return math.nan

    def fits(self, request: Request) -> bool:
        """The whole sequence fits every pool it may use alone (prefill + decode - 1 tokens)."""
        peak = max(1, request.prefill_tokens) + max(1, request.decode_tokens) - 1
        blocks = ceil_div(peak, self.block_size)
        pools = self.entry_pools[request.tenant] + self.decode_pools[request.tenant]
        return all(blocks <= pool.spec.blocks_per_replica for pool in pools)

    def has_room(self) -> bool:
        if self.parked is not None:
            return False
        for pool in self.pools:  # noqa: SIM110 (a loop: once per dispatch)
            if pool.role in ENTRY_ROLES and pool.has_room():
                return True
        return False

    def open_tenants(self) -> list[bool]:
        """Per tenant: whether one of its entry pools has room now (each pool asked once)."""
        if self.parked is not None:
            return [False] * len(self.entry_pools)
        room = {id(pool): pool.has_room() for pool in self.pools if pool.role in ENTRY_ROLES}
        return [any(room[id(pool)] for pool in pools) for pools in self.entry_pools]

    def room_available(self) -> simpy.Event:
        if self._room is None:
            self._room = self.env.event()
        return self._room

    def _room_appeared(self) -> None:
        if self.parked is not None:
            request, self.parked = self.parked, None
            if not self._place(request):
                self.parked = request
                return
        if self._room is not None:
            room, self._room = self._room, None
            room.succeed()

    def start(self, request: Request) -> None:
        if not self._place(request):
            self.parked = request
        return None

    def _place(self, request: Request) -> bool:
        open_pools = [p for p in self.entry_pools[request.tenant] if p.has_room()]
        if not open_pools:
            return False
        pool = self.picker.pick(open_pools)
        replica = pool.router.pick(request)
        self.recorder.placed(request, pool.offset + replica.index)
        replica.submit(request)
        return True

    def decode_pool(self, request: Request) -> Pool:
        return self.picker.pick(self.decode_pools[request.tenant])

    def recorder_transfer(self, request: Request, target: Replica, pool: Pool) -> None:
        """Hook for what watches transfers; the results read the handoff's log."""

    # --- what the timeline and the results read --------------------------------------------------
    def snapshot(self) -> list[tuple[int, int, int, int, int]]:
        """Per replica slot; a slot that is off or warming offers no KV blocks (its total 0)."""
        return [row for pool in self.pools for row in pool.group.snapshot()]

    def replica_states(self) -> list[str] | None:
        """Per replica slot: off, warming, serving or draining; None when no pool autoscales."""
        states = [pool.group.states() for pool in self.pools]
        if all(state is None for state in states):
            return None
        return [
            s
            for pool, state in zip(self.pools, states, strict=True)
            for s in (state or ["serving"] * len(pool.replicas))
        ]

    def autoscalers(self, lanes: Any, feed: Any) -> list[Any]:
        """One controller per pool with `autoscale` (pool_autoscaling.py)."""
        return pool_autoscalers(self, lanes, feed)

    def utilisation(self) -> list[ReplicaUsage]:
        return [replica.meter.usage() for replica in self.replicas]

    def cached_blocks(self) -> list[int]:
        return [replica.kv.cached_free() for replica in self.replicas]

    def layout(self) -> list[tuple[str, str, int]]:
        """Each pool's (name, role, replicas), in the order the replicas are numbered."""
        return [(pool.name, pool.role, len(pool.replicas)) for pool in self.pools]

    def transfers(self) -> TransferLog:
        return self.handoff.log

    def close(self) -> None:
        for replica in self.replicas:
            replica.kv.clear()
        for pool in self.pools:
            for scorer, _ in getattr(pool.router, "scored", []):
                for index in getattr(scorer, "index", []):
                    index.clear()

    def is_idle(self) -> bool:
        return self.handoff.in_flight == 0 and not any(r.busy for r in self.replicas)
