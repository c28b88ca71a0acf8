"""The fleet's running KV total (kv_level.py) against the replicas' own views.

By hand on two memories, one mid-jump; then over whole runs, at every read the KV gate makes
(each arrival and each dispatch, mid-jump included): the running total must equal the sum of
every replica's `blocks_in_use()` at that instant, with fast-forward on, with an evicting prefix
cache, and with an autoscaler that replaces a replica's memory.
"""

from __future__ import annotations

import random

import pytest
import simpy

from simsched.config.loading import validate
from simsched.results.simulate import simulate
from simsched.sim.cluster.continuous_batching import ContinuousBatching
from simsched.sim.cluster.fast_forward import Jump
from simsched.sim.cluster.kv_level import FleetKv
from simsched.sim.cluster.kv_memory import PlainKv
from simsched.sim.cluster.prefix_cache import PrefixCachedKv
from simsched.sim.cluster.replica import Replica


def advance(env: simpy.Environment, to: float) -> None:
    env.timeout(to - env.now)
    env.run(until=to)


@pytest.mark.parametrize("kind", [PlainKv, PrefixCachedKv])
def test_holds_releases_and_a_jump_by_hand(kind) -> None:
    env = simpy.Environment()
    fleet = FleetKv(env)
    a, b = (kind(env, 100, 16, None, fleet) for _ in range(2))
    a.hold(3)
    b.hold(5)
    assert fleet.in_use() == 8
    b.release(2)
    assert fleet.in_use() == 6  # 3 + 3
    # a jumps: iterations ending at 10, 20, 30 ms take 1, then 2, then 1 more block
    a.grow(Jump(0, [10.0, 20.0, 30.0], [1, 3, 4]))
    assert fleet.in_use() == 6 + 1  # the first iteration is in progress at 0
    advance(env, 15.0)
    assert fleet.in_use() == 6 + 3
    advance(env, 20.0)
    assert fleet.in_use() == 6 + 4  # the one that ended at 20 is over: the third runs
    assert fleet.in_use() == a.in_use() + b.in_use()
    a.end_growth()
    assert (fleet.in_use(), fleet.held, fleet.growing) == (10, 10, [])


def test_a_second_read_at_one_instant_sees_what_changed_since() -> None:
    # the fleet answers a read at the instant of the last one from it, unless blocks were held
    # or released, or a jump started or ended, in between
    env = simpy.Environment()
    fleet = FleetKv(env)
    a, b = (PlainKv(env, 100, 16, None, fleet) for _ in range(2))
    a.grow(Jump(0, [10.0, 20.0], [1, 3]))
    assert fleet.in_use() == 1
    b.hold(4)
    assert fleet.in_use() == 5  # held changed
    b.grow(Jump(0, [5.0, 20.0], [2, 7]))
    assert fleet.in_use() == 7  # a jump started
    a.end_growth()
    b.release(1)
    b.hold(1)  # b holds as before, but a's jump ended: a holds its 3, b 4, and b's jump took 2
    assert fleet.in_use() == 3 + 4 + 2
    advance(env, 10.0)
    assert fleet.in_use() == 3 + 4 + 7  # a later instant: b's second iteration runs
    assert fleet.in_use() == a.in_use() + b.in_use()


def test_a_jump_that_ended_is_not_counted_when_held_is_level_again_at_one_instant() -> None:
    # the memo's key (instant, held) is the same before and after: a's jump ends holding its
    # 2 blocks while b lets 2 go; only the jump's end tells the fleet that its sum changed
    env = simpy.Environment()
    fleet = FleetKv(env)
    a, b = (PlainKv(env, 100, 16, None, fleet) for _ in range(2))
    b.hold(2)
    a.grow(Jump(0, [10.0, 20.0], [2, 5]))
    b.grow(Jump(0, [10.0, 20.0], [1, 1]))
    assert fleet.in_use() == 2 + 2 + 1  # b's 2 held, each jump's first iteration
    a.growth.cut(0.0)  # a's jump ends with its first iteration: a then holds its 2 blocks
    a.end_growth()
    b.release(2)
    assert fleet.in_use() == 2 + 1  # a's 2 held and b's jump's 1
    assert fleet.in_use() == a.in_use() + b.in_use()


def test_a_memory_built_alone_keeps_its_own_total() -> None:
    env = simpy.Environment()
    alone, other = PlainKv(env, 10, 16, None), PlainKv(env, 10, 16, None)
    alone.hold(4)
    assert (alone.fleet.in_use(), other.fleet.in_use()) == (4, 0)


def test_a_cut_jump_counts_what_it_took() -> None:
    env = simpy.Environment()
    memory = PlainKv(env, 100, 16, None)
    jump = Jump(0, [10.0, 20.0, 30.0], [2, 5, 9])
    memory.grow(jump)
    advance(env, 12.0)
    assert jump.cut(env.now) == 20.0  # ends with the second iteration
    advance(env, 20.0)
    assert memory.fleet.in_use() == 5  # index_at(20) is capped at the last kept iteration
    memory.end_growth()
    assert (memory.level, memory.fleet.held) == (5, 5)


@pytest.fixture
def checked_reads(monkeypatch) -> list[int]:
    """Every cluster-wide read, checked against the per-replica sum at the same instant."""
    reads: list[int] = []
    running_total = ContinuousBatching.kv_blocks_in_use

    def checked(self: ContinuousBatching) -> int:
        total = running_total(self)
        assert total == sum(replica.blocks_in_use() for replica in self.replicas)
        reads.append(len(self.fleet.growing))
        return total

    monkeypatch.setattr(ContinuousBatching, "kv_blocks_in_use", checked)
    return reads


# two bursts with a lull between them: an autoscaler adds replicas, lets them go and adds them
# again, which gives a reused slot a fresh memory
BURSTS = {
    "kind": "rate_schedule",
    "duration_s": 60,
    "points": [[0, 12.0], [15, 12.0], [16, 0.2], [35, 0.2], [36, 12.0], [60, 12.0]],
}


def scenario(cluster: dict) -> dict:
    return {
        "seed": 5,
        "tenants": [
            {
                "id": "chat",
                "arrivals": BURSTS,
                "prefill_tokens": {"dist": "lognormal", "median": 300, "sigma": 0.8},
                "decode_tokens": {"dist": "lognormal", "median": 200, "sigma": 0.8},
                "prefix": {"tokens": 1200, "groups": 6},
            }
        ],
        "cluster": {"service_model": "continuous_batching", "num_gpu_blocks": 400} | cluster,
        "admission": {"enabled": True},
    }


@pytest.mark.parametrize(
    "cluster",
    [
        {"replicas": 3},
        {"replicas": 2, "prefix_caching": True, "router": "least_kv"},
        {
            "replicas": 1,
            "autoscale": {
                "min": 1,
                "max": 3,
                "metric": "running",
                "target": 1,
                "interval_s": 1,
                "scale_up_delay_s": 1,
                "scale_down_cooldown_s": 0,
            },
        },
    ],
    ids=["plain", "prefix_cached", "autoscaled"],
)
def test_the_running_total_is_the_sum_of_the_replicas_at_every_read(
    checked_reads, cluster, monkeypatch
):
    fresh: list[int] = []
    restart = Replica.fresh_memory

    def counted(self: Replica) -> None:
        fresh.append(self.index)
        restart(self)

    monkeypatch.setattr(Replica, "fresh_memory", counted)
    simulate(validate(scenario(cluster), "x.yaml"))
    assert len(checked_reads) > 100
    assert max(checked_reads) >= 1  # some reads came while a replica was in a jump
    if "autoscale" in cluster:  # a slot started more than once: a memory was replaced
        assert len(fresh) > len(set(fresh))


def test_need_now_follows_a_clock_that_only_moves_forward() -> None:
    # the kept iteration in progress against a fresh search of the ends at every read, over
    # random jumps read at random non-decreasing instants (ends included), cut short on the way
    rng = random.Random(16)
    for _ in range(200):
        ends = sorted({round(rng.uniform(1, 100), 1) for _ in range(rng.randint(2, 12))})
        need = sorted(rng.randint(0, 50) for _ in ends)
        jump, now = Jump(0, ends, need), 0.0
        for _ in range(30):
            now = rng.choice([now, now + rng.uniform(0, 15), *[e for e in ends if e >= now][:1]])
            if rng.random() < 0.1:
                jump.cut(now)
            assert jump.need_now(now) == need[jump.index_at(now)]
