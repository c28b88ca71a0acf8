"""Pools, routing across pools and P/D disaggregation (sim/cluster/pools.py, pd_replicas.py).

The lone-request timings are worked out by hand from the linear latency model and the link's
formula; the layouts compare against the single-pool model and check where requests went.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

import simsched
from simsched.config.loading import validate
from simsched.errors import InputError
from simsched.sim.cluster.pools import PooledCluster
from simsched.sim.cluster.registry import SERVICE_MODELS
from simsched.sim.engine import run_variant
from simsched.workload.build import build_workload

REPO = Path(__file__).resolve().parents[3]
BASE, PREFILL, DECODE, ATTENTION = 2.0, 0.25, 0.5, 1.0
LINEAR = {
    "kind": "linear",
    "base_ms": BASE,
    "prefill_ms_per_token": PREFILL,
    "decode_ms_per_seq": DECODE,
    "attention_ms_per_1k_context": ATTENTION,
}
# llama-3-8b: 32 layers, 8 KV heads of 128, BF16: 2 (K and V) x 32 x 8 x 128 x 2 bytes per token
KV_BYTES_PER_TOKEN = 2 * 32 * 8 * 128 * 2


def pool(name: str, role: str, **settings: Any) -> dict[str, Any]:
    return {
        "name": name,
        "role": role,
        "replicas": 1,
        "latency_model": LINEAR,
        "schedule_step_ms": 0.0,
        **settings,
    }


def one_request(prompt: int, answer: int, cluster: dict[str, Any], **tenant: Any):
    raw = {
        "tenants": [
            {
                "id": "a",
                "arrivals": {"kind": "periodic", "interval_ms": 1, "count": 1},
                "prefill_tokens": prompt,
                "decode_tokens": answer,
                **tenant,
            }
        ],
        "cluster": cluster,
    }
    return validate(raw, "pd.yaml")


def run_watched(scenario, monkeypatch):
    built: list[PooledCluster] = []

    class Watched(PooledCluster):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            built.append(self)

    monkeypatch.setitem(SERVICE_MODELS, "pools", Watched)
    table = build_workload(scenario)
    return run_variant(scenario, table), built[0], table


@pytest.mark.parametrize("fast_forward", [True, False])
def test_a_lone_pd_request_is_timed_by_the_prefill_iteration_and_the_link(
    monkeypatch, fast_forward
):
    prompt, answer, gbps, latency_ms = 300, 6, 100.0, 0.5
    cluster = {
        "pools": [
            pool("p", "prefill", fast_forward=fast_forward),
            pool("d", "decode", fast_forward=fast_forward),
        ],
        "kv_transfer": {"gbps": gbps, "latency_ms": latency_ms},
    }
    run, model, _ = run_watched(one_request(prompt, answer, cluster), monkeypatch)
    arrival = 0.0
    # one prefill iteration of the whole prompt (under the 2048-token budget), no front end
    prefill_end = arrival + (BASE + PREFILL * prompt)
    assert model.transfers().prefill_token_ms == {0: prefill_end}  # DistServe's TTFT
    nbytes = prompt * KV_BYTES_PER_TOKEN
    transfer = nbytes * 8 / (gbps * 1e6) + latency_ms
    assert model.transfers().nbytes == [nbytes]
    assert model.transfers().ms == [transfer]
    # decode starts when the transfer ends: answer - 1 iterations of one sequence, whose
    # context is prompt + 1, + 2, ... tokens; the client's first token (llm-d: streamed by
    # the decode instance) is the end of the first
    end = prefill_end + transfer
    steps = []
    for k in range(1, answer):
        end = end + (BASE + DECODE * 1 + ATTENTION * (prompt + k) / 1000)
        steps.append(end)
    assert run.recorder.first_token_ms[0] == steps[0]
    assert run.recorder.ttft_ms[0] == steps[0] - arrival
    assert run.recorder.finish_ms[0] == end
    assert model.kv_blocks_in_use() == 0


def test_both_ttfts_of_a_lone_pd_request_reach_the_outputs():
    # the client's TTFT (after the transfer and the decode replica's first step) is `ttft_ms`;
    # the prefill side's is `prefill_ttft_ms` and the kv_transfer block reports both
    prompt, answer, gbps = 300, 3, 100.0
    cluster = {
        "pools": [pool("p", "prefill"), pool("d", "decode")],
        "kv_transfer": {"gbps": gbps, "latency_ms": 0.0},
    }
    result = simsched.simulate(one_request(prompt, answer, cluster))
    prefill_ttft = BASE + PREFILL * prompt
    transfer = prompt * KV_BYTES_PER_TOKEN * 8 / (gbps * 1e6)
    client_ttft = prefill_ttft + transfer + (BASE + DECODE + ATTENTION * (prompt + 1) / 1000)
    row = result.requests.iloc[0]
    # the requests' TTFTs are rounded to 2 decimals, as ttft_ms always is
    assert row["prefill_ttft_ms"] == round(prefill_ttft, 2)
    assert row["ttft_ms"] == round(client_ttft, 2) != row["prefill_ttft_ms"]
    moved = result.utilisation[result.variants[0]]["kv_transfer"]
    assert moved["prefill_ttft_p50_ms"] == moved["prefill_ttft_p99_ms"] == round(prefill_ttft, 2)
    assert moved["ttft_p99_ms"] == round(client_ttft, 2)


def test_gpu_hours_cost_and_busy_share_per_pool_and_for_the_fleet():
    # a lone P/D request on 1 prefill H100 and 2 decode A100s of tp 2: every replica is
    # provisioned from the arrival (0) to the last iteration's end (the finish), the prefill
    # replica busy for its one iteration, the decode replica used for answer - 1 steps
    prompt, answer, gbps = 300, 4, 100.0
    cluster = {
        "pools": [
            pool("p", "prefill", gpu="h100-80gb"),
            pool("d", "decode", gpu="a100-80gb", replicas=2, tp=2),
        ],
        "kv_transfer": {"gbps": gbps, "latency_ms": 0.0},
    }
    result = simsched.simulate(one_request(prompt, answer, cluster))
    prefill = BASE + PREFILL * prompt
    decode = sum(BASE + DECODE + ATTENTION * (prompt + k) / 1000 for k in range(1, answer))
    window = prefill + prompt * KV_BYTES_PER_TOKEN * 8 / (gbps * 1e6) + decode
    usage = result.utilisation[result.variants[0]]
    p, d, fleet = usage["pools"]["p"], usage["pools"]["d"], usage["fleet"]
    assert fleet["window_ms"] == round(window, 2)
    assert p["gpu_hours"] == pytest.approx(1 * 1 * window / 3.6e6, abs=1e-6)
    assert d["gpu_hours"] == pytest.approx(2 * 2 * window / 3.6e6, abs=1e-6)
    assert (p["gpus"], d["gpus"]) == (1, 4)
    assert p["cost_usd"] == round(p["gpu_hours"] * 49.24 / 8, 4)  # CoreWeave list prices
    assert d["cost_usd"] == round(d["gpu_hours"] * 21.60 / 8, 4)
    assert p["busy_share"] == pytest.approx(prefill / window, abs=1e-4)
    assert d["busy_share"] == pytest.approx(decode / (2 * window), abs=1e-4)
    # the fleet: the sums of the pools, and the busy share weighted by replica time
    assert fleet["gpu_hours"] == pytest.approx(p["gpu_hours"] + d["gpu_hours"], abs=1e-9)
    assert fleet["cost_usd"] == pytest.approx(p["cost_usd"] + d["cost_usd"], abs=1e-9)
    assert fleet["busy_share"] == pytest.approx((prefill + decode) / (3 * window), abs=1e-4)


def test_a_pd_request_passes_the_prefill_api_server_in_and_the_decode_one_out(monkeypatch):
    # cluster.frontend in each pool: the request waits per_request_ms + per_input_token_us per
    # prompt token before the prefill engine, and the decode pool's server streams the answer
    # (per_output_token_us per output token) after the last token
    prompt, answer, request_ms, in_us, out_us = 200, 4, 3.0, 10.0, 500.0
    frontend = {"processes": 1, "per_request_ms": request_ms, "per_input_token_us": in_us,
                "per_output_token_us": out_us}  # fmt: skip
    cluster = {
        "pools": [pool("p", "prefill", frontend=frontend), pool("d", "decode", frontend=frontend)],
        "kv_transfer": {"gbps": 100.0, "latency_ms": 0.0},
    }
    run, model, _ = run_watched(one_request(prompt, answer, cluster), monkeypatch)
    enter = request_ms + in_us * prompt / 1000
    prefill_end = enter + BASE + PREFILL * prompt
    assert model.transfers().prefill_token_ms == {0: prefill_end}
    end = prefill_end + prompt * KV_BYTES_PER_TOKEN * 8 / (100.0 * 1e6)
    steps = []
    for k in range(1, answer):
        end = end + (BASE + DECODE * 1 + ATTENTION * (prompt + k) / 1000)
        steps.append(end)
    assert run.recorder.first_token_ms[0] == steps[0]  # the decode replica's first step
    assert run.recorder.finish_ms[0] == end + out_us * answer / 1000


def test_a_one_token_answer_never_leaves_the_prefill_replica(monkeypatch):
    cluster = {"pools": [pool("p", "prefill"), pool("d", "decode")]}
    run, model, _ = run_watched(one_request(100, 1, cluster), monkeypatch)
    assert model.transfers().ms == []
    assert run.recorder.finish_ms[0] == BASE + PREFILL * 100


def test_the_decode_replica_waits_for_free_blocks_before_the_transfer(monkeypatch):
    # 4 blocks of 16 tokens on the decode side: the second prompt (40 tokens, 3 blocks) cannot
    # be booked while the first (40 tokens + its growing answer) holds 3 of them
    cluster = {
        "pools": [
            pool("p", "prefill", num_gpu_blocks=64, block_size=16),
            pool("d", "decode", num_gpu_blocks=5, block_size=16, block_watermark=0.0),
        ],
        "kv_transfer": {"gbps": 1000.0, "latency_ms": 0.0},
    }
    scenario = one_request(40, 20, cluster).with_overrides(
        {"tenants.a.arrivals": {"kind": "periodic", "interval_ms": 1, "count": 2}}
    )
    run, model, _ = run_watched(scenario, monkeypatch)
    log = model.transfers()
    assert len(log.ms) == 2
    finish = np.frombuffer(run.recorder.finish_ms)
    first = np.frombuffer(run.recorder.first_token_ms)
    prefilled = log.prefill_token_ms
    assert log.start_ms[0] == prefilled[0] < prefilled[1]  # the first was booked at once
    assert first[0] > log.start_ms[0] + log.ms[0]  # the client sees it after the transfer
    # the second is booked (its transfer starts) only when the first finished and let its
    # blocks go, at the end of that iteration
    assert log.start_ms[1] == finish[0]
    assert model.kv_blocks_in_use() == 0


def noisy_batching() -> dict[str, Any]:
    return yaml.safe_load((REPO / "scenarios" / "noisy_neighbor_batching.yaml").read_text())


def test_one_mixed_pool_is_the_single_pool_cluster():
    raw = noisy_batching()
    raw["variants"] = []
    single = validate(raw, "x.yaml")
    cluster = {k: v for k, v in raw["cluster"].items() if k != "service_model"}
    raw["cluster"] = {"pools": [{"name": "only", "role": "mixed", **cluster}]}
    pooled = validate(raw, "x.yaml")
    a, b = simsched.simulate(single).requests, simsched.simulate(pooled).requests
    assert len(a) > 0
    assert a.equals(b)


def mixed_fleet(pinned: list[str] | None = None) -> Any:
    raw = noisy_batching()
    raw["variants"] = []
    raw["admission"] = {"enabled": False}
    settings = {"latency_model": "roofline", "max_waiting_per_replica": 2}
    raw["cluster"] = {
        "pools": [
            {"name": "old", "role": "mixed", "replicas": 2, "gpu": "a100-80gb", **settings},
            {"name": "new", "role": "mixed", "replicas": 2, "gpu": "h100-80gb", **settings},
        ]
    }
    if pinned is not None:
        raw["tenants"][2]["pools"] = pinned
    return validate(raw, "x.yaml")


def test_a_faster_pool_takes_more_of_the_work():
    frame = simsched.simulate(mixed_fleet()).requests
    on_old = frame["replica"].isin([0, 1]).sum()
    on_new = frame["replica"].isin([2, 3]).sum()
    assert on_new > on_old > 0


def test_a_pinned_tenant_runs_only_on_its_pools():
    frame = simsched.simulate(mixed_fleet(["old"])).requests
    batch = frame[frame["tenant_id"] == "tenant_batch_rag"]
    assert len(batch) > 0 and batch["replica"].isin([0, 1]).all()
    others = frame[frame["tenant_id"] != "tenant_batch_rag"]
    assert others["replica"].isin([2, 3]).any()


@pytest.mark.parametrize(
    ("cluster", "tenant", "message"),
    [
        ({"pools": [pool("p", "prefill")]}, {}, "has a prefill pool but no decode pool"),
        ({"pools": [pool("d", "decode")]}, {}, "has a decode pool but no prefill pool"),
        ({"pools": [pool("x", "mixed"), pool("x", "mixed")]}, {}, "duplicate pool name 'x'"),
        ({"pools": [pool("x", "mixed")]}, {"pools": ["y"]}, "unknown pool 'y' (known: x)"),
        ({"pools": [pool("x", "mixed")]}, {"model": "qwen3-8b"}, "served by no pool"),
        (
            {"pools": [pool("x", "mixed"), pool("y", "mixed", model="qwen3-8b")]},
            {},
            "model is required",
        ),
        (
            {"pools": [pool("p", "prefill"), pool("d", "decode", prefix_caching=True)]},
            {},
            "caching on the decode side is not modelled",
        ),
        ({"pools": [pool("x", "mixed")], "kv_transfer": "carrier_pigeon"}, {}, "unknown kv_"),
        (
            {"pools": [pool("p", "prefill"), pool("d", "decode")]},
            {"pools": ["d"]},
            "name a mixed or prefill pool",
        ),
    ],
)
def test_bad_layouts_are_one_line_errors(cluster, tenant, message):
    with pytest.raises(InputError) as caught:
        one_request(10, 2, cluster, **tenant)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_tenant_model_on_a_cluster_without_one_is_an_error():
    # a token server names no model: a tenant's model would be silently ignored
    token_server = {"service_model": "token_server"}
    with pytest.raises(InputError) as caught:
        one_request(10, 2, token_server, model="llama-3-70b")
    assert "model: the cluster serves no named model" in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("fast_forward", [True, False])
def test_a_pd_request_preempted_before_its_first_decode_step_gets_its_first_token(
    fast_forward,
):
    # 4 blocks of 16 tokens on the decode side. `long` (16-token prompt, 20 tokens) joins
    # first and grows to 2 blocks; `short` (32-token prompt, 2 tokens) books its 2 blocks and
    # joins, but its one decode step needs a third (33 tokens) and none is free: it is the
    # newest, so it is preempted before any decode step. It recomputes its prompt and the token
    # the prefill side emitted (32 + 1 tokens, one prefill iteration) once `long` has finished
    # and freed its blocks; that iteration emits its second and last token, so the client's
    # first token and the finish are both its end (before the fix the first token was never
    # recorded, and the run stopped with an internal error).
    def tenant(name: str, prompt: int, answer: int, start_ms: float) -> dict[str, Any]:
        return {
            "id": name,
            "arrivals": {"kind": "periodic", "start_ms": start_ms, "interval_ms": 1, "count": 1},
            "prefill_tokens": prompt,
            "decode_tokens": answer,
        }

    common = {"block_size": 16, "fast_forward": fast_forward}
    raw = {
        "tenants": [tenant("long", 16, 20, 0.0), tenant("short", 32, 2, 0.3)],
        "cluster": {
            "pools": [
                pool("p", "prefill", num_gpu_blocks=64, **common),
                pool("d", "decode", num_gpu_blocks=4, block_watermark=0.0, **common),
            ],
            "kv_transfer": {"gbps": 1000.0, "latency_ms": 0.0},
        },
        "admission": {"enabled": False},
    }
    scenario = validate(raw, "pd.yaml")
    run = run_variant(scenario, build_workload(scenario))
    first = np.frombuffer(run.recorder.first_token_ms)
    finish = np.frombuffer(run.recorder.finish_ms)
    assert list(run.recorder.preemptions) == [0, 1]
    recompute_end = finish[0] + (BASE + PREFILL * (32 + 1))
    assert first[1] == finish[1] == pytest.approx(recompute_end, abs=1e-9)
