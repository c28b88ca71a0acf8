"""Utilisation per replica and in total, against figures worked out by hand."""

from __future__ import annotations

import math
import random

import pytest

from simsched.config.loading import validate
from simsched.results.pools import add_pool_figures
from simsched.results.simulate import simulate
from simsched.results.utilisation import skewed
from simsched.sim.cluster.utilisation import UtilisationMeter

# every iteration: 1 ms + 0.01 ms per prefill token + 0.1 ms per decoding sequence
LINEAR = {"kind": "linear", "base_ms": 1.0, "prefill_ms_per_token": 0.01, "decode_ms_per_seq": 0.1}


def run(tenant_arrivals: dict, replicas: int = 1, fast_forward: bool = True):
    tenant = {"id": "a", "arrivals": tenant_arrivals, "prefill_tokens": 100, "decode_tokens": 10}
    cluster = {
        "service_model": "continuous_batching",
        "replicas": replicas,
        "latency_model": LINEAR,
        "num_gpu_blocks": 100,
        "block_size": 16,
        "schedule_step_ms": 0.0,
        "block_watermark": 0.0,
        "max_num_batched_tokens": 2048,
        "fast_forward": fast_forward,
        "router": "round_robin",
    }
    raw = {"tenants": [tenant], "cluster": cluster, "admission": {"enabled": False}}
    return simulate(validate(raw, "u.yaml")).utilisation["base"]


@pytest.mark.parametrize("fast_forward", [True, False])
def test_one_request_alone_matches_the_hand_count(fast_forward) -> None:
    # One 100-token prompt, 10 output tokens, at 0: one prefill iteration (1 + 100 * 0.01 = 2 ms,
    # its first token), then 9 decode iterations of 1 + 0.1 = 1.1 ms. It holds ceil(100/16) = 7
    # blocks while prefilling and ceil(109/16) = 7 to the end, of 100.
    usage = run({"kind": "periodic", "interval_ms": 1, "count": 1}, fast_forward=fast_forward)
    busy = 2.0 + 9 * 1.1
    one = usage["replicas"]["0"]
    assert usage["span_ms"] == pytest.approx(busy)
    assert one["iterations"] == 10
    assert one["busy_share"] == 1.0  # nothing else ran, and it ran from 0 to the end
    assert one["token_budget_share"] == round((100 + 9) / (10 * 2048), 4)
    assert one["mean_running"] == 1.0
    assert one["kv_held_share"] == 0.07
    assert one["requests"] == 1
    assert usage["total"] == one and usage["request_skew"] == 1.0


def test_two_replicas_share_time_and_count_requests() -> None:
    # Two requests 1 ms apart, round robin: replica 0 from 0, replica 1 from 1, each busy for
    # 11.9 ms of a 12.9 ms span; the cluster runs 2 sequences at most, 2 x 11.9 / 12.9 on mean.
    usage = run({"kind": "periodic", "interval_ms": 1, "count": 2}, replicas=2)
    busy, span = 2.0 + 9 * 1.1, 1.0 + 2.0 + 9 * 1.1
    assert usage["span_ms"] == pytest.approx(span)
    assert usage["replicas"]["0"]["busy_share"] == round(busy / span, 4)
    assert usage["replicas"]["1"]["busy_share"] == round(busy / span, 4)
    assert usage["total"]["busy_share"] == round(busy / span, 4)
    assert usage["total"]["mean_running"] == round(2 * busy / span, 4)
    assert usage["total"]["kv_held_share"] == round(2 * 7 * busy / (span * 200), 4)
    assert [r["requests"] for r in usage["replicas"].values()] == [1, 1]


def test_skew_is_the_busiest_replica_over_the_mean() -> None:
    # three requests on two replicas by round robin: 2 and 1, a max/mean of 2 / 1.5
    usage = run({"kind": "periodic", "interval_ms": 1, "count": 3}, replicas=2)
    assert usage["request_skew"] == round(2 / 1.5, 4)
    assert not skewed(usage)  # 1.33 is within the 1.5 limit
    assert skewed({"request_skew": 1.6}) and not skewed(None)
    assert math.isclose(usage["total"]["requests"], 3)


def test_token_server_has_no_utilisation_block() -> None:
    raw = {"tenants": [{"id": "a", "arrivals": {"kind": "periodic", "interval_ms": 5, "count": 3},
                        "prefill_tokens": 10, "decode_tokens": 5}]}  # fmt: skip
    result = simulate(validate(raw, "t.yaml"))
    assert result.utilisation == {} and "utilisation" not in result.to_json_dict()


def test_a_jump_sums_exactly_as_its_iterations_stepped_one_by_one() -> None:
    # the jump's inlined sums must give the floats of `step` called per iteration, bit for bit
    # (fast_forward on and off give identical utilisation): a brute force over uneven instants
    rng = random.Random(16)
    for _ in range(50):
        start = rng.uniform(0, 1e6)
        ends, need, end, taken = [], [], start, 0
        for _ in range(rng.randint(0, 40)):
            end += rng.uniform(0.01, 30.0)
            taken += rng.randint(0, 3)
            ends.append(end)
            need.append(taken)
        seqs, level = rng.randint(1, 256), rng.randint(0, 5000)
        jumped, stepped = UtilisationMeter(2048, 9000), UtilisationMeter(2048, 9000)
        for meter in (jumped, stepped):
            meter.step(0.0, start, 700, 3, 10)  # earlier sums, so the additions are not from 0
        jumped.jump(start, ends, seqs, level, need)
        at = start
        for end, taken in zip(ends, need, strict=True):
            stepped.step(at, end, seqs, seqs, level + taken)
            at = end
        assert jumped.usage() == stepped.usage()


def test_pools_are_skewed_each_within_itself_not_against_each_other() -> None:
    from simsched.results.utilisation import skewed_pools

    # three pools of other models or GPUs: 100, 10 and 10 requests on one replica each; the run
    # is 100 / 40 = 2.5x its mean, yet no router had two replicas to balance
    def usage(counts: list[int]) -> dict:
        replicas = {str(i): {"requests": n} for i, n in enumerate(counts)}
        mean = sum(counts) / len(counts)
        return {"replicas": replicas, "request_skew": round(max(counts) / mean, 4)}

    apart = add_pool_figures(usage([100, 10, 10]), [("a", "mixed", 1), ("b", "mixed", 1),
                                                    ("c", "mixed", 1)], None)  # fmt: skip
    assert apart["request_skew"] == 2.5
    assert [p["request_skew"] for p in apart["pools"].values()] == [1.0, 1.0, 1.0]
    assert skewed_pools(apart) == [] and not skewed(apart)
    # pool a's router put 100 and 20 on its two replicas: 100 / 60 = 1.6667x, above 1.5
    within = add_pool_figures(usage([100, 20, 10]), [("a", "mixed", 2), ("b", "mixed", 1)], None)
    assert skewed_pools(within) == [("a", 1.6667)]
    # a decode pool is never where a request is placed: no skew of its own, and beside it the
    # entry pools are still judged each alone (100 against 10 and 10: 2.5x the run's mean)
    pd = add_pool_figures(usage([50, 50, 0, 100]), [("p", "prefill", 2), ("d", "decode", 2)], None)
    assert "request_skew" not in pd["pools"]["d"] and skewed_pools(pd) == []
    layout = [("r1", "mixed", 1), ("p", "prefill", 1), ("m", "mixed", 1), ("d", "decode", 1)]
    apart_pd = add_pool_figures(usage([100, 10, 10, 0]), layout, None)
    assert apart_pd["request_skew"] == 2.5 and skewed_pools(apart_pd) == []
    # a summary written before pools had their own skew: the run's, as then
    older = {"request_skew": 1.8, "pools": {"a": {"role": "mixed", "replicas": ["0"]}}}
    assert skewed_pools(older) == [(None, 1.8)]


def test_a_plans_skew_note_names_the_skewed_pool_and_its_own_ratio() -> None:
    from simsched.studies.plan_usage import skew_at_answer

    # pool a: 35 and 10 requests (35 / 22.5 = 1.56x); pool b even; the run 35 / 26.7 = 1.31x,
    # which the note must not print beside "skewed"
    replicas = {str(i): {"requests": n} for i, n in enumerate([35, 10, 40, 40, 40, 40])}
    summary = add_pool_figures(
        {"replicas": replicas, "request_skew": 1.3125}, [("a", "mixed", 2), ("b", "mixed", 4)], None
    )
    assert skewed(summary)
    assert skew_at_answer(summary) == (
        "load is skewed at the answer across pool a's replicas (max/mean 1.56), above 1.5: the "
        "router concentrates requests; the busiest replica sets the latency"
    )
    assert skew_at_answer({"request_skew": 1.8}) == (
        "load is skewed at the answer across replicas (max/mean 1.80), above 1.5: the router "
        "concentrates requests; the busiest replica sets the latency"
    )
