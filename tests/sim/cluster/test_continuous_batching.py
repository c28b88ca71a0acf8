"""The continuous_batching service model: its configuration, fast-forward, routing and queues."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from simsched.config.loading import load_scenario, resolve_variants, validate
from simsched.errors import InputError
from simsched.outputs.describe import describe_scenario
from simsched.results.simulate import simulate
from simsched.sim.cluster.replica import Replica

REPO = Path(__file__).resolve().parents[3]
TENANT = {
    "id": "a",
    "arrivals": {"kind": "periodic", "interval_ms": 10, "count": 3},
    "prefill_tokens": 100,
    "decode_tokens": 10,
}


def scenario_with(tenants: list[dict] | None = None, **raw: Any):
    cluster = {"service_model": "continuous_batching", **raw.pop("cluster", {})}
    return validate({"tenants": tenants or [TENANT], "cluster": cluster, **raw}, "x.yaml")


def error_of(**cluster: Any) -> str:
    with pytest.raises(InputError) as caught:
        scenario_with(cluster=cluster)
    return str(caught.value)


# --- configuration -------------------------------------------------------------------------


def test_defaults_derive_the_kv_cache_from_memory() -> None:
    config = scenario_with(cluster={"replicas": 4}).cluster
    assert (config.gpu.name, config.model.name, config.latency_model.kind) == (
        "h100-80gb",
        "llama-3.1-8b",  # Llama 3 8B's shape, Llama 3.1's context
        "roofline",
    )
    assert config.blocks_per_replica == 29205
    assert config.total_kv_blocks == 4 * 29205
    assert config.kv_block_tokens == config.block_size == 16


@pytest.mark.parametrize(
    ("cluster", "field", "words"),
    [
        ({"tp": 16}, "cluster.tp", "exceed the 8 per node"),
        ({"model": "llama-3-70b"}, "cluster.model", "does not fit"),
        ({"model": "llama-3-70b", "gpu": "h200"}, "cluster.model", "does not fit"),
        (
            {"gpu": {"tflops": 100, "hbm_gbps": 900, "memory_gib": 14.96}, "tp": 1},
            "cluster.num_gpu_blocks",
            "holds no KV block",
        ),
        ({"num_gpu_blocks": 0}, "cluster.num_gpu_blocks", "greater than 0"),
        ({"gpu": "h300"}, "cluster.gpu", "unknown gpu preset 'h300'"),
        ({"model": "llama-4"}, "cluster.model", "unknown model preset"),
        ({"gpu": {"tflops": 1, "hbm_gbps": 1}}, "cluster.gpu.memory_gib", "Field required"),
        ({"latency_model": "linear"}, "cluster.latency_model", "needs its coefficients"),
        ({"latency_model": {"kind": "cubic"}}, "cluster.latency_model", "unknown latency"),
        (
            {"latency_model": {"kind": "linear", "base_ms": 1}},
            "cluster.latency_model.prefill_ms_per_token",
            "Field required",
        ),
        ({"max_num_seqs": 4096}, "cluster.max_num_seqs", "max_num_batched_tokens"),
        ({"router": "random"}, "cluster.router", "least_kv"),
        ({"total_kv_blocks": 10}, "cluster.total_kv_blocks", "takes num_gpu_blocks"),
    ],
)
def test_bad_clusters_fail_validation_naming_the_field(cluster, field, words) -> None:
    message = error_of(**cluster)
    assert message.startswith(f"x.yaml: {field}: "), message
    assert words in message


def test_seventy_b_fits_on_two_h100s() -> None:
    config = scenario_with(cluster={"model": "llama-3-70b", "tp": 2}).cluster
    assert 0 < config.blocks_per_replica < 29205


def test_variants_derive_the_cache_again() -> None:
    scenario = scenario_with(
        cluster={"replicas": 2},
        variants=[{"name": "big", "set": {"cluster.gpu": "h200"}}, {"name": "same", "set": {}}],
    )
    blocks = {name: s.cluster.blocks_per_replica for name, s in resolve_variants(scenario)}
    assert blocks["big"] > blocks["same"] == 29205


def test_validate_describes_the_cluster() -> None:
    text = describe_scenario(scenario_with(cluster={"replicas": 2}))
    assert "continuous_batching, 58410 KV blocks" in text


@pytest.mark.parametrize("name", ["capacity_planning", "noisy_neighbor_batching"])
def test_shipped_scenarios_are_valid(name: str) -> None:
    scenario = load_scenario(REPO / "scenarios" / f"{name}.yaml")
    assert scenario.cluster.service_model == "continuous_batching"
    assert len(resolve_variants(scenario)) >= 2


# --- fast-forward changes nothing ----------------------------------------------------------

BUSY = [
    {
        "id": "chat",
        "weight": 2,
        "arrivals": {"kind": "poisson", "rate_per_s": 50, "count": 150},
        "prefill_tokens": {"dist": "lognormal", "median": 250, "sigma": 0.8, "max": 2000},
        "decode_tokens": {"dist": "lognormal", "median": 80, "sigma": 1.0, "max": 1200},
        "quota": {"burst_service_tokens": 40000, "sustained_service_tokens_per_sec": 60000},
    },
    {
        "id": "batch",
        "priority": "batch",
        "arrivals": {"kind": "poisson", "rate_per_s": 8, "count": 30},
        "prefill_tokens": {"dist": "uniform", "low": 500, "high": 3000},
        "decode_tokens": {"dist": "uniform", "low": 0, "high": 500},
    },
]
LINEAR = {
    "kind": "linear",
    "base_ms": 3.0,
    "prefill_ms_per_token": 0.01,
    "decode_ms_per_seq": 0.05,
    "attention_ms_per_1k_context": 0.02,
}


@pytest.mark.parametrize(
    ("cluster", "sections"),
    [
        ({"replicas": 2}, {"admission": {"enabled": False}}),
        ({"replicas": 2, "num_gpu_blocks": 400}, {"admission": {"enabled": False}}),
        (
            {"replicas": 3, "num_gpu_blocks": 1200, "block_size": 4, "router": "round_robin"},
            {"admission": {"evaluate_at": "arrival"}},
        ),
        (
            {"latency_model": LINEAR, "num_gpu_blocks": 20000, "block_size": 1},
            {"admission": {"enabled": False}},
        ),
        (
            {"replicas": 2, "router": "least_outstanding", "max_num_batched_tokens": 256},
            {"scheduler": {"policy": "request_count_fifo"}},
        ),
    ],
    ids=["roofline", "preempting", "arrival-admission", "linear-block1", "small-budget"],
)
def test_fast_forward_gives_identical_frames(monkeypatch, cluster, sections) -> None:
    results = run_both_ways(monkeypatch, BUSY, cluster, {"interval_ms": 3.7}, sections)
    # utilisation is summed iteration by iteration over a jump: the same figures to the bit
    assert results[0].utilisation == results[1].utilisation
    assert results[0].utilisation["base"]["total"]["iterations"] > 0
    if cluster.get("num_gpu_blocks", 10**6) < 1000:
        # fewer than before vLLM's free-block watermark, which is what it is for, but still many
        assert results[0].requests["preemptions"].sum() > 20


def test_fast_forward_reads_state_right_at_iteration_ends(monkeypatch) -> None:
    # Every iteration takes exactly 4 ms and requests arrive every 12 ms, so dispatches, KV
    # reads and timeline samples fall on the very instants that iterations end.
    latency = {"kind": "linear", "base_ms": 4.0, "prefill_ms_per_token": 0.0}
    latency |= {"decode_ms_per_seq": 0.0}
    tenant = {
        "id": "a",
        "arrivals": {"kind": "periodic", "interval_ms": 12, "count": 120},
        "prefill_tokens": 40,
        "decode_tokens": {"dist": "uniform", "low": 1, "high": 120},
    }
    cluster = {"replicas": 2, "block_size": 2, "num_gpu_blocks": 400, "latency_model": latency}
    results = run_both_ways(monkeypatch, [tenant], cluster, {"interval_ms": 4.0}, {})
    occupancy = results[0].requests["kv_occupancy_ratio"]
    assert occupancy.nunique() > 20  # the dispatches did read changing KV levels


def run_both_ways(monkeypatch, tenants, cluster, timeline, sections) -> list:
    """Simulate with and without fast-forward; assert identical frames; return both results."""
    jumps: Counter[str] = Counter()
    start, cut = Replica._start_jump, Replica._cut_jump

    def counted_start(self) -> bool:
        jumped = start(self)
        jumps["jumps"] += jumped
        return jumped

    def counted_cut(self) -> None:
        jumps["cuts"] += 1
        cut(self)

    monkeypatch.setattr(Replica, "_start_jump", counted_start)
    monkeypatch.setattr(Replica, "_cut_jump", counted_cut)
    results = [
        simulate(
            scenario_with(
                tenants,
                seed=5,
                cluster=cluster | {"fast_forward": ff},
                timeline=timeline,
                **sections,
            )
        )
        for ff in (True, False)
    ]
    assert jumps["jumps"] >= 10 and jumps["cuts"] >= 5  # the runs do exercise both paths
    pd.testing.assert_frame_equal(results[0].requests, results[1].requests, check_exact=True)
    pd.testing.assert_frame_equal(results[0].timeline, results[1].timeline, check_exact=True)
    return results


# --- placement and queues ------------------------------------------------------------------


def burst(count: int, prefill: int = 200, decode: int = 20) -> list[dict]:
    arrivals = {"kind": "periodic", "interval_ms": 0.001, "count": count}
    return [{"id": "a", "arrivals": arrivals, "prefill_tokens": prefill, "decode_tokens": decode}]


def test_round_robin_spreads_a_burst_evenly() -> None:
    scenario = scenario_with(burst(12), cluster={"replicas": 3, "router": "round_robin"})
    replicas = simulate(scenario).requests["replica"].tolist()
    assert replicas == [0, 1, 2] * 4


def test_least_kv_breaks_ties_by_outstanding_requests() -> None:
    scenario = scenario_with(burst(8), cluster={"replicas": 4, "router": "least_kv"})
    assert sorted(simulate(scenario).requests["replica"].tolist()) == [0, 0, 1, 1, 2, 2, 3, 3]


def test_full_waiting_queues_hold_requests_in_the_lanes() -> None:
    cluster = {"replicas": 1, "max_waiting_per_replica": 2, "max_num_seqs": 4}
    raw = {"admission": {"enabled": False}, "timeline": {"interval_ms": 1.0}}
    result = simulate(scenario_with(burst(20, prefill=50, decode=200), cluster=cluster, **raw))
    requests = result.requests
    assert (requests["dispatch_ms"] > requests["arrival_ms"] + 1).sum() > 10  # they waited
    timeline = result.timeline
    assert timeline["waiting"].max() <= 2 and timeline["running"].max() <= 4
    assert timeline["interactive_queued"].max() > 10  # the rest queued at the gateway
    assert requests["finish_ms"].notna().all()


def test_a_request_larger_than_a_replica_is_shed_and_the_rest_run() -> None:
    small = burst(3, prefill=200, decode=20)[0]
    large = burst(2, prefill=3000, decode=100)[0] | {"id": "big"}  # 194 blocks > 100
    scenario = scenario_with(
        [small, large],
        cluster={"replicas": 4, "num_gpu_blocks": 100},  # 400 in all: the KV gate alone passes it
        admission={"enabled": False},
    )
    requests = simulate(scenario).requests.set_index("tenant_id")
    assert (requests.loc["big", "status_code"] == 429).all()
    assert (requests.loc["big", "reason"] == "shed_kv_watermark").all()
    assert (requests.loc["a", "status_code"] == 200).all()


def test_ttft_is_known_only_at_the_first_token() -> None:
    requests = simulate(scenario_with(cluster={"replicas": 1})).requests
    measured = (requests["first_token_ms"] - requests["arrival_ms"]).round(2)
    assert (requests["ttft_ms"] == measured).all()
    assert (requests["ttft_ms"] > 0).all() and requests["tpot_ms"].notna().all()
