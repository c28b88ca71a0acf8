"""The autoscaler: a controller that resizes a replica group (replica_group.py) as the HPA does.

Every `interval_s` from the first arrival it reads its metric over the serving replicas
(autoscale_metrics.py) and calls `decide`:

    proposal = ceil(serving x metric / target)   unless |metric / target - 1| <= tolerance
    desired  = proposal                           if proposal > current (scale up at once)
             = max(proposals of the last scale_down_cooldown_s), if that is < current
             = current                            otherwise

clamped to [min, max], where `current` counts warming and serving replicas (the Deployment's
replica count) and `serving` the ready ones (the HPA's ready pods). The formula, the tolerance
and the stabilisation window are the Kubernetes HPA's (docs/autoscaling.md). A metric with no
value (no first token in the interval, for `ttft_p90_ms`) leaves the count as it is, as the HPA
skips a metric it cannot read. The controller stops once every request is done.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Generator
from typing import Any

from simsched.config.autoscale import AutoscaleSpec
from simsched.sim.cluster.autoscale_metrics import Metric, build_metric
from simsched.sim.cluster.replica_group import SERVING, WARMING, AutoscaledGroup


class ScaleDecision:
    """The HPA's arithmetic, with its memory of recent proposals (no SimPy)."""

    def __init__(self, spec: AutoscaleSpec) -> None:
        self.spec = spec
        self.window_ms = spec.scale_down_cooldown_s * 1000.0
        self._proposals: deque[tuple[float, int]] = deque()

    def proposal(self, serving: int, current: int, metric: float | None) -> int:
        spec = self.spec
        if metric is None:
            return current
        ratio = metric / spec.target
        if abs(ratio - 1.0) <= spec.tolerance:
            return current
        return min(spec.max, max(spec.min, math.ceil(serving * ratio)))

    def decide(self, now: float, serving: int, current: int, metric: float | None) -> int:
        proposal = self.proposal(serving, current, metric)
        proposals = self._proposals
        proposals.append((now, proposal))
        while proposals[0][0] < now - self.window_ms:
            proposals.popleft()
        if proposal > current:
            return proposal
        stabilised = max(p for _, p in proposals)
        return stabilised if stabilised < current else current


class Autoscaler:
    def __init__(
        self,
        env: Any,
        spec: AutoscaleSpec,
        group: AutoscaledGroup,
        lanes: Any,
        feed: Any,
        metric: Metric | None = None,
    ) -> None:
        self.env = env
        self.group = group
        self.lanes = lanes
        self.feed = feed
        self.interval_ms = spec.interval_s * 1000.0
        # what it reads: the metric over its group (a pool's own, pool_autoscaling.py)
        self.metric = metric or build_metric(spec.metric, group, lanes, self.interval_ms)
        # whose work must be over for the run to be done: its group's replicas, or every pool's
        self.watched: list[Any] = group.replicas
        self.decision = ScaleDecision(spec)
        # read before the run starts: by the time the process first runs, the scheduler may
        # already have taken the first arrival from the feed
        self.first_arrival_ms = feed.next_arrival_ms

    def process(self) -> Generator[Any, None, None]:
        first = self.first_arrival_ms
        if first is not None and first > self.env.now:
            yield self.env.timeout(first - self.env.now)
        while True:
            yield self.env.timeout(self.interval_ms)
            if self._done():
                return
            self.tick()

    def tick(self) -> None:
        group = self.group
        serving = group.count(SERVING)
        current = group.count(WARMING, SERVING)
        value = self.metric.read(self.env.now)
        group.scale_to(self.decision.decide(self.env.now, serving, current, value))

    def _done(self) -> bool:
        """Every request is done (or nothing else could happen: a stalled run ends too)."""
        idle = not any(replica.holds_work() for replica in self.watched)
        done = self.feed.next_arrival_ms is None and self.lanes.total_size() == 0 and idle
        return done or self.env.peek() == math.inf


def start_autoscaler(env: Any, config: Any, cluster: Any, lanes: Any, feed: Any) -> None:
    """Start the controllers a cluster's settings ask for: the cluster's own (`autoscalers`,
    one per autoscaled pool of `cluster.pools`), or a single pool's (`cluster.autoscale`)."""
    for controller in autoscalers(config, cluster, lanes, feed):
        env.process(controller.process())


def autoscalers(config: Any, cluster: Any, lanes: Any, feed: Any) -> list[Autoscaler]:
    own = getattr(cluster, "autoscalers", None)  # a cluster of pools builds one per pool
    if own is not None:
        return own(lanes, feed)
    spec = getattr(config, "autoscale", None)
    if spec is None:
        return []
    return [Autoscaler(cluster.env, spec, cluster.group, lanes, feed)]
