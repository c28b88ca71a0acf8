"""Sampling the state of the cluster and the lanes over time, for timeline.csv and plots.

A SimPy process reads (never changes) the state every `interval_ms`: per replica the running
and waiting requests, KV blocks used and total, and the tokens in the current batch; and the
number of requests queued in each lane. The default interval gives about 2000 samples over the
arrival span; if draining the queues takes much longer than that, the interval doubles every
2000 samples, so a timeline stays small whatever the run's length. Sampling stops when the work
is done, or when no other event is scheduled (a stall), so that it never runs forever.
"""

from __future__ import annotations

import math
from collections.abc import Generator

import pandas as pd
import simpy

from simsched.config.autoscale import replica_slots
from simsched.config.classes import BATCH, INTERACTIVE
from simsched.errors import InputError
from simsched.sim.feed import Feed
from simsched.sim.lanes import Lanes

TIMELINE_COLUMNS = [
    "time_ms",
    "replica",
    "running",
    "waiting",
    "kv_blocks_used",
    "kv_blocks_total",
    "batch_tokens",
    "interactive_queued",
    "batch_queued",
]
TARGET_SAMPLES = 2000


def auto_interval_ms(
    first_arrival_ms: float, last_arrival_ms: float, replicas: int = 1, most_rows: float = math.inf
) -> float:
    """About TARGET_SAMPLES samples over the arrivals, no closer than 1 ms, and fewer when the
    replicas are so many that the rows (samples x replicas) would pass `most_rows`: the default
    must fit the default limit whatever the cluster's size."""
    span = last_arrival_ms - first_arrival_ms
    return max(span / TARGET_SAMPLES, 1.0, span * replicas / most_rows)


def check_timeline_size(scenario, span_ms: float, interval_ms: float) -> None:
    """Refuse an explicit `timeline.interval_ms` whose samples over the arrival span alone
    exceed the limit (the automatic interval is sized to fit it)."""
    rows = span_ms / interval_ms * replica_slots(scenario.cluster)
    most = scenario.limits.max_timeline_rows
    if rows > most:
        raise InputError(
            "",  # the caller names the scenario file
            "timeline.interval_ms",
            f"a sample every {interval_ms:g} ms gives about {rows:,.0f} timeline rows over "
            f"the arrivals, more than limits.max_timeline_rows ({most:,}); raise the interval "
            "(or leave it out for about 2000 samples), or raise the limit",
        )


class TimelineSampler:
    def __init__(
        self, env: simpy.Environment, cluster, lanes: Lanes, feed: Feed, interval_ms: float
    ) -> None:
        self.env = env
        self.cluster = cluster
        self.lanes = lanes
        self.feed = feed
        self.interval_ms = interval_ms
        self.last_arrival_ms = feed.last_arrival_ms
        self.rows: list[tuple] = []
        # prefix caching: free blocks holding cached prefixes, per replica, as a last column
        self.cached = cluster.cached_blocks if getattr(cluster, "prefix_caching", False) else None
        # autoscaling: each replica slot's state (off, warming, serving, draining), a column more
        states = getattr(cluster, "replica_states", None)
        self.states = states if states is not None and states() is not None else None

    def process(self) -> Generator[simpy.Event, None, None]:
        # Nothing happens before the first arrival: a trace stamped in epoch milliseconds
        # would otherwise be sampled from 0, a billion empty rows.
        first = self.feed.next_arrival_ms
        if first is not None and first > self.env.now:
            yield self.env.timeout(first - self.env.now)
        samples = 0
        while True:
            self._sample()
            samples += 1
            if self._finished():
                return
            if samples % TARGET_SAMPLES == 0 and self.env.now >= self.last_arrival_ms:
                # A long drain: keep the timeline's size bounded. Judged by the clock, not by
                # the feed: under scheduler_tick a busy scheduler leaves arrivals unread.
                self.interval_ms *= 2
            yield self.env.timeout(self.interval_ms)

    def _sample(self) -> None:
        queued = (self.lanes.lane_size(INTERACTIVE), self.lanes.lane_size(BATCH))
        for replica, state in enumerate(self.cluster.snapshot()):
            self.rows.append((self.env.now, replica, *state, *queued))
        if self.cached is not None:
            rows = self.rows
            for offset, cached in enumerate(reversed(self.cached())):
                rows[-1 - offset] += (cached,)
        if self.states is not None:
            rows = self.rows
            for offset, state in enumerate(reversed(self.states())):
                rows[-1 - offset] += (state,)

    def _finished(self) -> bool:
        """All work done, or nothing left that could ever do it: no other event is scheduled
        (a stalled cluster). Sampling on would then never end; the engine reports the stall."""
        done = (
            self.feed.next_arrival_ms is None
            and self.lanes.total_size() == 0
            and self.cluster.is_idle()
        )
        return done or self.env.peek() == math.inf

    def frame(self) -> pd.DataFrame:
        extra = ["cached_blocks"] if self.cached is not None else []
        extra += ["state"] if self.states is not None else []
        return pd.DataFrame(self.rows, columns=TIMELINE_COLUMNS + extra)
