"""Saturation detectors (llm-d's `saturationdetector` plugins) and the stale view of them.

A detector turns the replicas' state into a pool saturation (1.0: full):

- `utilization`: the mean over replicas of max(waiting / queue_depth_threshold,
  (kv_used / kv_total) / kv_cache_util_threshold), the roofline score per endpoint;
- `concurrency`: in-flight load over capacity, summed over replicas: requests (running +
  waiting) over replicas x max_concurrency, or, in `tokens` mode, tokens held in KV over
  replicas x max_token_concurrency.

`ScrapedSaturation` reads the replicas at most once per `refresh_ms`: a read within
`refresh_ms` of the last scrape returns the value then computed (metrics as production
scrapes them; llm-d's --refresh-metrics-interval is 50 ms). The concurrency detector counts
what the gateway itself dispatched and saw finish, so llm-d reads it synchronously: it is never
stale (`fresh`), and `refresh_ms` is only how often a held dispatch looks again.
"""

from __future__ import annotations

from typing import Protocol

from simsched.config.flow_control import Saturation

Snapshot = list[tuple[int, int, int, int, int]]  # (running, waiting, kv used, kv total, tokens)


class SaturationDetector(Protocol):
    fresh: bool  # read synchronously (never stale)
    refresh_ms: float  # how long a read stays current (how often a held dispatch looks again)

    def __init__(self, spec: Saturation, kv_block_tokens: int) -> None: ...

    def saturation(self, snapshot: Snapshot) -> float: ...


class UtilizationDetector:
    fresh = False  # scraped from the replicas: stale for up to refresh_ms

    def __init__(self, spec: Saturation, kv_block_tokens: int) -> None:
        self.queue_threshold = spec.queue_depth_threshold
        self.kv_threshold = spec.kv_cache_util_threshold
        self.refresh_ms = spec.refresh_ms

    def saturation(self, snapshot: Snapshot) -> float:
        scores = [
            max(waiting / self.queue_threshold, used / total / self.kv_threshold)
            for _running, waiting, used, total, _tokens in snapshot
        ]
        return sum(scores) / len(scores)


class ConcurrencyDetector:
    fresh = True  # the gateway's own counts of what it dispatched and saw finish

    def __init__(self, spec: Saturation, kv_block_tokens: int) -> None:
        self.tokens = spec.mode == "tokens"
        self.capacity = spec.max_token_concurrency if self.tokens else spec.max_concurrency
        self.kv_block_tokens = kv_block_tokens
        self.refresh_ms = spec.refresh_ms  # how often a held dispatch looks again

    def saturation(self, snapshot: Snapshot) -> float:
        if self.tokens:
            load = sum(used for _r, _w, used, _t, _b in snapshot) * self.kv_block_tokens
        else:
            load = sum(running + waiting for running, waiting, _u, _t, _b in snapshot)
        return load / (self.capacity * len(snapshot))


class NoDetector:
    """`detector: none` (no `saturation` section): the pool never reads as saturated."""

    fresh = False
    refresh_ms = 0.0  # nothing to scrape

    def __init__(self, spec: Saturation, kv_block_tokens: int) -> None:
        pass

    def saturation(self, snapshot: Snapshot) -> float:
        return 0.0


DETECTORS: dict[str, type[SaturationDetector]] = {
    "none": NoDetector,
    "utilization": UtilizationDetector,
    "concurrency": ConcurrencyDetector,
}


class ScrapedSaturation:
    def __init__(self, detector: SaturationDetector, cluster) -> None:
        self.detector = detector
        self.cluster = cluster
        self.refresh_ms = detector.refresh_ms
        self.fresh = detector.fresh
        self.scraped_at: float | None = None
        self.value = 0.0

    def read(self, now: float) -> float:
        due = self.fresh or self.scraped_at is None or now >= self.scraped_at + self.refresh_ms
        if due:
            self.value = self.detector.saturation(self.cluster.snapshot())
            self.scraped_at = now
        return self.value

    def next_scrape_ms(self, now: float) -> float:
        """The first instant after `now` at which a read sees new metrics."""
        if self.scraped_at is None:
            return now
        return (now if self.fresh else self.scraped_at) + self.refresh_ms


def scraped_saturation(spec: Saturation, cluster, kv_block_tokens: int) -> ScrapedSaturation:
    return ScrapedSaturation(DETECTORS[spec.detector](spec, kv_block_tokens), cluster)
