"""Sampling the state of the cluster and the lanes over time, for timeline.csv and plots.

A SimPy process reads (never changes) the state every `interval_ms`: per replica the running
and waiting requests, KV blocks used and total, and the tokens in the current batch; and the
number of requests queued in each lane. The default interval gives about 2000 samples over the
arrival span; if draining the queues takes much longer than that, the interval doubles every
2000 samples, so a timeline stays small whatever the run's length.
"""

from __future__ import annotations

from collections.abc import Generator

import pandas as pd
import simpy

from simsched.sim.feed import Feed
from simsched.sim.lanes import Lanes
from simsched.sim.requests import BATCH, INTERACTIVE

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


def auto_interval_ms(first_arrival_ms: float, last_arrival_ms: float) -> float:
    return max((last_arrival_ms - first_arrival_ms) / TARGET_SAMPLES, 1.0)


class TimelineSampler:
    def __init__(
        self, env: simpy.Environment, cluster, lanes: Lanes, feed: Feed, interval_ms: float
    ) -> None:
        self.env = env
        self.cluster = cluster
        self.lanes = lanes
        self.feed = feed
        self.interval_ms = interval_ms
        self.rows: list[tuple] = []

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
            if samples % TARGET_SAMPLES == 0 and self.feed.next_arrival_ms is None:
                self.interval_ms *= 2  # a long drain: keep the timeline's size bounded
            yield self.env.timeout(self.interval_ms)

    def _sample(self) -> None:
        queued = (self.lanes.lane_size(INTERACTIVE), self.lanes.lane_size(BATCH))
        for replica, state in enumerate(self.cluster.snapshot()):
            self.rows.append((self.env.now, replica, *state, *queued))

    def _finished(self) -> bool:
        return (
            self.feed.next_arrival_ms is None
            and self.lanes.total_size() == 0
            and self.cluster.is_idle()
        )

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=TIMELINE_COLUMNS)
