"""One autoscaler per pool of `cluster.pools` (docs/autoscaling.md, "Pools").

Each pool with `autoscale` gets the single-pool controller (autoscaler.py) over its own replica
group (replica_group.py); what differs is only what its metric reads, always that pool's serving
replicas and never another pool's:

- `queue_depth`: requests waiting per serving replica of the pool: in its replicas' waiting
  queues, plus, on a decode pool, the handed-off requests waiting to book blocks there; plus, on
  an entry pool (mixed or prefill), the requests queued at the gateway by the tenants that may
  start on it (a tenant with two entry pools counts for both: either could take them);
- `kv_utilization`, `running`: as for a single pool, over the pool's serving replicas;
- `ttft_p90_ms`: on a mixed pool, the client's TTFT of the first tokens its replicas emitted;
  on a prefill pool, the prefill-side TTFT (the first token as the prefill replica computed
  it, DistServe's TTFT: what the prefill pool's size governs). A decode pool refuses it
  (config/pools.py): there the client's first token comes after the prefill pool's queue and
  the transfer, which adding decode replicas does not shorten.

A controller stops when the whole cluster is done, not only its pool: a decode pool idle while
the prefill pool still computes prompts has work coming.
"""

from __future__ import annotations

from typing import Any

from simsched.config.classes import BATCH, INTERACTIVE
from simsched.sim.cluster.autoscale_metrics import Metric, TtftP90, build_metric
from simsched.sim.cluster.autoscaler import Autoscaler
from simsched.sim.cluster.replica_group import AutoscaledGroup
from simsched.sim.flow.bands import flow_of
from simsched.sim.lanes import Lanes


class PoolQueueDepth:
    """Waiting per serving replica of one pool (the module's docstring says what counts)."""

    def __init__(self, group: AutoscaledGroup, lanes: Any, tenants: list[int]) -> None:
        self.group, self.lanes, self.tenants = group, lanes, tenants

    def read(self, now: float) -> float:
        serving = self.group.serving
        waiting = sum(len(r.waiting) + len(getattr(r, "bookings", ())) for r in serving)
        for tenant in self.tenants:
            waiting += queued_of(self.lanes, tenant)
        return waiting / len(serving)


def queued_of(lanes: Any, tenant: int) -> int:
    """Requests a tenant has queued at the gateway: in its two lanes, or in its two flows under
    `flow_control` (sim/flow/queues.py)."""
    if isinstance(lanes, Lanes):
        return lanes.queue_length(INTERACTIVE, tenant) + lanes.queue_length(BATCH, tenant)
    return sum(lanes.flow_sizes[flow_of(tenant, lane)] for lane in (INTERACTIVE, BATCH))


class PrefillTtftP90(TtftP90):
    """The p90 TTFT of first tokens computed on a prefill pool's replicas: those handed off
    (taken at the handoff, where the prefill replica's API server would stream the token) and
    one-token answers, which the prefill replica finishes itself (the recorder tap)."""

    def __init__(self, group: AutoscaledGroup, interval_ms: float) -> None:
        super().__init__(group, interval_ms)
        for replica in group.replicas:
            replica.handoff = HandoffTap(replica.handoff, self.seen)


class HandoffTap:
    """Passes every handoff on; notes the prefill-side first token and its TTFT."""

    def __init__(self, handoff: Any, seen: list[tuple[float, float]]) -> None:
        self._handoff = handoff
        self._seen = seen

    def __call__(self, source: Any, seq: Any, end: float) -> None:
        at = source.frontend.first_token_ms(end)
        self._seen.append((at, at - seq.request.arrival_ms))
        self._handoff(source, seq, end)


def pool_metric(pool: Any, cluster: Any, lanes: Any, interval_ms: float) -> Metric:
    name = pool.spec.autoscale.metric
    if name == "queue_depth":
        entry = cluster.entry_pools
        tenants = [t for t, pools in enumerate(entry) if any(p is pool for p in pools)]
        return PoolQueueDepth(pool.group, lanes, tenants)
    if name == "ttft_p90_ms" and pool.role == "prefill":
        return PrefillTtftP90(pool.group, interval_ms)
    return build_metric(name, pool.group, lanes, interval_ms)


def pool_autoscalers(cluster: Any, lanes: Any, feed: Any) -> list[Autoscaler]:
    """The controllers of the pools with `autoscale`, in declaration order."""
    controllers = []
    for pool in cluster.pools:
        spec = pool.spec.autoscale
        if spec is None:
            continue
        metric = pool_metric(pool, cluster, lanes, spec.interval_s * 1000.0)
        # it watches every replica of the cluster to know when the run is done
        controller = Autoscaler(cluster.env, spec, pool.group, lanes, feed, metric)
        controller.watched = cluster.replicas
        controllers.append(controller)
    return controllers
