"""The default router (llm-d's default weights, with simsched's queue scorer) against least_kv's
blind spot."""

from __future__ import annotations

from collections import deque

from simsched.config.loading import validate
from simsched.config.router import router_warning
from simsched.sim.cluster.router import Scored, build_router


class FakeReplica:
    def __init__(self, index: int, running: int, waiting: int, blocks: int) -> None:
        self.index, self.capacity = index, 100
        self.running = dict.fromkeys(range(running))
        self.waiting = deque(range(waiting))
        self.blocks = blocks

    def outstanding(self) -> int:
        return len(self.running) + len(self.waiting)

    def blocks_in_use(self) -> int:
        return self.blocks


def cluster(**settings):
    raw = {
        "tenants": [{"id": "a", "arrivals": {"kind": "periodic", "interval_ms": 1, "count": 1},
                     "prefill_tokens": 10, "decode_tokens": 2}],
        "cluster": {"service_model": "continuous_batching", **settings},
    }  # fmt: skip
    return validate(raw, "r.yaml").cluster


def test_the_default_is_llm_d_with_its_published_weights() -> None:
    config = cluster()
    assert config.router == "llm_d"
    router = build_router(config, [FakeReplica(0, 0, 0, 0)], seed=1)
    assert isinstance(router, Scored)
    assert [(type(s).__name__, w) for s, w in router.scored] == [
        ("QueueDepthScorer", 2.0),
        ("KvUtilizationScorer", 2.0),
    ]
    cached = build_router(cluster(prefix_caching=True), [FakeReplica(0, 0, 0, 0)], seed=1)
    assert [w for _, w in cached.scored] == [2.0, 2.0, 3.0]
    assert type(cached.scored[2][0]).__name__ == "ApproxPrefixScorer"


def test_llm_d_avoids_the_replica_whose_requests_all_wait() -> None:
    # Replica 0: 6 requests waiting, none running, so no KV blocks held. Replica 1: 1 running
    # with 10 of 100 blocks. least_kv sees 0 < 10 blocks and picks replica 0 (its blind spot).
    # llm_d: queue scores (max - q) / (max - min) = 0 and 1, KV scores 1 and 0.9, so
    # 2 * 0 + 2 * 1 = 2 against 2 * 1 + 2 * 0.9 = 3.8: replica 1.
    replicas = [FakeReplica(0, running=0, waiting=6, blocks=0), FakeReplica(1, 1, 0, 10)]
    config = cluster(max_waiting_per_replica=8)
    assert build_router(config, replicas, seed=1).pick(None).index == 1
    blind = cluster(max_waiting_per_replica=8, router="least_kv")
    assert build_router(blind, replicas, seed=1).pick(None).index == 0


def test_only_the_warned_router_gets_a_note() -> None:
    assert "waiting requests hold no KV blocks" in router_warning(cluster(router="least_kv"))
    for name in ("llm_d", "least_outstanding", "round_robin"):
        assert router_warning(cluster(router=name)) is None
    # weighted scorers: warned when none counts waiting requests, whatever the names
    blind = cluster(router={"scorers": [{"name": "kv_utilization", "weight": 1}]})
    assert "none counts waiting requests (no queue_depth)" in router_warning(blind)
    seeing = {"scorers": [{"name": "kv_utilization", "weight": 1}, {"name": "queue_depth"}]}
    assert router_warning(cluster(router=seeing)) is None
    assert router_warning(validate({"tenants": [{"id": "a", "arrivals": {
        "kind": "periodic", "interval_ms": 1, "count": 1}, "prefill_tokens": 1,
        "decode_tokens": 1}]}, "t.yaml").cluster) is None  # fmt: skip
