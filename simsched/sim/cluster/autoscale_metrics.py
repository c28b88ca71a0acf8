"""What an autoscaler reads, over the replicas that serve, at the instant it reads.

- `queue_depth`: requests waiting per serving replica, counting those queued at the gateway
  (KEDA or llm-d scale on the engines' `num_requests_waiting`; in simsched the gateway holds
  the queue back from the replicas, so its queue is counted too, else the metric could never
  pass `max_waiting_per_replica`);
- `kv_utilization`: KV blocks in use over the blocks of the serving replicas (vLLM's
  `kv_cache_usage_perc`, averaged as the HPA averages a pods metric);
- `running`: running sequences per serving replica (vLLM's `num_requests_running`);
- `ttft_p90_ms`: the p90 (nearest rank) TTFT of the first tokens seen in the last interval;
  None when there were none.

All are exact at any instant in both fast-forward modes: KV use is the memory's own view
mid-jump, and a jump never changes which sequences run.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

from simsched.sim.cluster.replica_group import AutoscaledGroup


class Metric(Protocol):
    def read(self, now: float) -> float | None: ...


class QueueDepth:
    def __init__(self, group: AutoscaledGroup, lanes: Any) -> None:
        self.group, self.lanes = group, lanes

    def read(self, now: float) -> float:
        serving = self.group.serving
        waiting = sum(len(r.waiting) for r in serving) + self.lanes.total_size()
        return waiting / len(serving)


class KvUtilization:
    def __init__(self, group: AutoscaledGroup) -> None:
        self.group = group

    def read(self, now: float) -> float:
        serving = self.group.serving
        return sum(r.blocks_in_use() for r in serving) / sum(r.capacity for r in serving)


class Running:
    def __init__(self, group: AutoscaledGroup) -> None:
        self.group = group

    def read(self, now: float) -> float:
        serving = self.group.serving
        return sum(len(r.running) for r in serving) / len(serving)


class TtftP90:
    """Taps every replica's first tokens (a recorder in front of the recorder)."""

    def __init__(self, group: AutoscaledGroup, interval_ms: float) -> None:
        self.interval_ms = interval_ms
        self.seen: list[tuple[float, float]] = []  # (first-token instant, TTFT)
        for replica in group.replicas:
            replica.recorder = FirstTokenTap(replica.recorder, self.seen)

    def read(self, now: float) -> float | None:
        start = now - self.interval_ms
        window = sorted(ttft for at, ttft in self.seen if start < at <= now)
        self.seen[:] = [(at, ttft) for at, ttft in self.seen if at > now]
        if not window:
            return None
        return window[math.ceil(0.9 * len(window)) - 1]


class FirstTokenTap:
    """Passes every call to the recorder; notes each request's first first token."""

    def __init__(self, recorder: Any, seen: list[tuple[float, float]]) -> None:
        self._recorder = recorder
        self._seen = seen

    def first_token(self, request: Any, now: float) -> None:
        if math.isnan(self._recorder.ttft_ms[request.seq]):
            self._seen.append((now, now - request.arrival_ms))
        self._recorder.first_token(request, now)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._recorder, name)


def build_metric(name: str, group: AutoscaledGroup, lanes: Any, interval_ms: float) -> Metric:
    if name == "queue_depth":
        return QueueDepth(group, lanes)
    if name == "kv_utilization":
        return KvUtilization(group)
    if name == "running":
        return Running(group)
    return TtftP90(group, interval_ms)
