"""The replicas a cluster routes to: a fixed group, or one an autoscaler resizes.

`ContinuousBatching` routes only to `group.serving` and reads the group's KV total; the group
decides which replicas those are. `FixedGroup` is today's pool: every replica serves, always.
`AutoscaledGroup` keeps each replica slot in one of four states:

- `off`: not provisioned (no GPU paid for);
- `warming`: provisioned, loading weights and starting its engine; takes no traffic;
- `serving`: takes traffic (the router sees it);
- `draining`: being removed: takes no new request, runs what it holds to the end, then `off`.

A slot is paid for from the instant it leaves `off` to the instant it returns there
(`ProvisionedSpan`). Slots are built up front: `max` may be serving or warming while `max - min`
more drain, so a group has `2 max - min` slots. A slot that starts again gets an empty KV memory
(a new engine has no prefix cache).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from simsched.config.presets import weight_bytes
from simsched.sim.kernel import SCHEDULER, AtInstant

OFF, WARMING, SERVING, DRAINING = "off", "warming", "serving", "draining"


@dataclass(frozen=True)
class ProvisionedSpan:
    """One replica slot paid for from `start_ms` to `end_ms` (None: still up at the end)."""

    replica: int
    start_ms: float | None  # None: from the start of the run (the pool it began with)
    end_ms: float | None


@dataclass(frozen=True)
class ScaleEvent:
    """The replica counts after a change at `time_ms`: provisioned (warming, serving or
    draining), serving and warming."""

    time_ms: float
    provisioned: int
    serving: int
    warming: int


class ReplicaGroup(Protocol):
    serving: list[Any]  # replicas that take new requests, in index order (the router's list)
    kv_blocks_total: int  # KV blocks of the replicas that hold or may hold requests

    def snapshot(self) -> list[tuple[int, int, int, int, int]]:
        """Per slot: (running, waiting, kv_blocks_used, kv_blocks_total, batch_tokens)."""

    def states(self) -> list[str] | None:
        """Each slot's state for the timeline; None for a group that never changes."""

    def spans(self) -> list[ProvisionedSpan]:
        """What was paid for."""

    def events(self) -> list[ScaleEvent]:
        """Every change of the replica counts, in time order."""


class FixedGroup:
    """Every replica serves from start to end: today's pool."""

    def __init__(self, replicas: Sequence[Any]) -> None:
        self.serving = list(replicas)
        self.kv_blocks_total = sum(r.capacity for r in replicas)

    def snapshot(self) -> list[tuple[int, int, int, int, int]]:
        return [replica.snapshot() for replica in self.serving]

    def states(self) -> None:
        return None

    def spans(self) -> list[ProvisionedSpan]:
        return [ProvisionedSpan(r.index, None, None) for r in self.serving]

    def events(self) -> list[ScaleEvent]:
        return []


class AutoscaledGroup:
    """Slots that an autoscaler turns on (after a warm-up) and off (after a drain)."""

    def __init__(
        self,
        env: Any,
        replicas: Sequence[Any],
        initial: int,
        warmup_ms: float,
        on_room: Callable[[], None],
    ) -> None:
        self.env = env
        self.replicas = list(replicas)
        self.warmup_ms = warmup_ms
        self.on_room = on_room  # a replica began serving: the scheduler may dispatch again
        self.state = [SERVING if i < initial else OFF for i in range(len(replicas))]
        self.serving = [r for r in self.replicas[:initial]]
        self._since: dict[int, float | None] = dict.fromkeys(range(initial))
        self._spans: list[ProvisionedSpan] = []
        self._events: list[ScaleEvent] = []
        self._timers: dict[int, Any] = {}  # warming slot -> its warm-up timer
        for replica in self.replicas:
            replica.on_idle = lambda replica=replica: self._idle(replica)
        self.kv_blocks_total = self._ready_blocks()

    # --- what others read -------------------------------------------------------------
    def count(self, *states: str) -> int:
        return sum(1 for s in self.state if s in states)

    def states(self) -> list[str]:
        return list(self.state)

    def snapshot(self) -> list[tuple[int, int, int, int, int]]:
        """A slot that is off or warming has no KV memory to offer yet: its total reads 0."""
        rows = []
        for replica, state in zip(self.replicas, self.state, strict=True):
            running, waiting, used, total, batch = replica.snapshot()
            rows.append((running, waiting, used, total if state in READY else 0, batch))
        return rows

    def spans(self) -> list[ProvisionedSpan]:
        open_spans = [ProvisionedSpan(i, start, None) for i, start in self._since.items()]
        return sorted(self._spans + open_spans, key=_span_order)

    def events(self) -> list[ScaleEvent]:
        return list(self._events)

    # --- what the autoscaler asks -------------------------------------------------------
    def scale_to(self, desired: int) -> None:
        """Warming and serving replicas become `desired`: new slots start warming, or the
        newest warming ones stop, then the newest serving ones drain."""
        current = self.count(WARMING, SERVING)
        if desired > current:
            for _ in range(desired - current):
                self._add_one()
        elif desired < current:
            for _ in range(current - desired):
                self._stop_one()
        if desired != current:
            self._changed()

    # --- transitions ----------------------------------------------------------------------
    def _add_one(self) -> None:
        """A slot that is off starts warming. If every slot is taken (replicas still draining
        after scale-downs in quick succession), the first draining slot serves again at
        once: it is warm and still paid for, where Kubernetes would start one more pod."""
        if OFF in self.state:
            self._start(self.state.index(OFF))
            return
        index = self.state.index(DRAINING)
        self.state[index] = SERVING
        self.serving.append(self.replicas[index])
        self.serving.sort(key=lambda r: r.index)
        self.on_room()

    def _start(self, index: int) -> None:
        self.state[index] = WARMING
        self._since[index] = self.env.now
        self.replicas[index].fresh_memory()
        timer = AtInstant(self.env, self.env.now + self.warmup_ms, SCHEDULER)
        timer.callbacks.append(lambda _event, index=index: self._warm(index, timer))
        self._timers[index] = timer

    def _warm(self, index: int, timer: Any) -> None:
        if self._timers.get(index) is not timer:
            return  # stopped while warming (and perhaps started again since)
        del self._timers[index]
        self.state[index] = SERVING
        self.serving.append(self.replicas[index])
        self.serving.sort(key=lambda r: r.index)
        self._changed()
        self.on_room()

    def _stop_one(self) -> None:
        warming = [i for i, s in enumerate(self.state) if s == WARMING]
        if warming:  # a replica not yet serving goes first: it holds nothing
            index = max(warming, key=lambda i: (self._since[i], i))
            del self._timers[index]
            self._off(index)
            return
        replica = max(self.serving, key=lambda r: (self._since[r.index] or 0.0, r.index))
        self.serving.remove(replica)
        self.state[replica.index] = DRAINING
        if not replica.holds_work():  # a request in its API server's inbound stage counts
            self._off(replica.index)

    def _idle(self, replica: Any) -> None:
        if self.state[replica.index] == DRAINING and not replica.holds_work():
            self._off(replica.index)
            self._changed()

    def _off(self, index: int) -> None:
        self.state[index] = OFF
        self._spans.append(ProvisionedSpan(index, self._since.pop(index), self.env.now))

    def _changed(self) -> None:
        self.kv_blocks_total = self._ready_blocks()
        provisioned = self.count(WARMING, SERVING, DRAINING)
        event = ScaleEvent(self.env.now, provisioned, len(self.serving), self.count(WARMING))
        if self._events and self._events[-1].time_ms == event.time_ms:
            self._events[-1] = event  # one row per instant: the state after all its changes
        else:
            self._events.append(event)

    def _ready_blocks(self) -> int:
        # blocks of replicas that hold or may hold requests: the admission rule's total
        ready = (r for r, s in zip(self.replicas, self.state, strict=True) if s in READY)
        return sum(r.capacity for r in ready)


READY = (SERVING, DRAINING)


@dataclass(frozen=True)
class PoolGroups:
    """The replica groups of `cluster.pools`, one per pool in declaration order (what the
    results read of a pooled cluster, as they read `group` of a single pool)."""

    names: tuple[str, ...]
    groups: tuple[FixedGroup | AutoscaledGroup, ...]


def _span_order(span: ProvisionedSpan) -> tuple[float, int]:
    return (-1.0 if span.start_ms is None else span.start_ms, span.replica)


def build_group(
    env: Any, config: Any, replicas: Sequence[Any], on_room: Callable[[], None]
) -> FixedGroup | AutoscaledGroup:
    autoscale = getattr(config, "autoscale", None)
    if autoscale is None:
        return FixedGroup(replicas)
    warmup_ms = autoscale.warmup_s(weight_bytes(config.model)) * 1000.0
    return AutoscaledGroup(env, replicas, config.replicas, warmup_ms, on_room)
