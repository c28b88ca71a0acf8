"""Physical sanity of the continuous-batching model: what it must never do, and exact timings.

A watcher (the replicas' observer seam) sees every stepped iteration and every preemption; the
runs use `fast_forward: false` so that no iteration goes unseen. That fast-forwarding changes
nothing is tested in test_continuous_batching.py.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pytest

from simsched.config.loading import validate
from simsched.config.scenario import Scenario
from simsched.results.simulate import simulate
from simsched.sim.cluster.continuous_batching import ContinuousBatching
from simsched.sim.cluster.latency import build_latency, peak_tokens_per_ms
from simsched.sim.cluster.registry import SERVICE_MODELS
from simsched.sim.engine import run_variant
from simsched.sim.recorder import STATUS_OK, Recorder
from simsched.workload.build import build_workload

LINEAR = {
    "kind": "linear",
    "base_ms": 4.0,
    "prefill_ms_per_token": 0.02,
    "decode_ms_per_seq": 0.15,
    "attention_ms_per_1k_context": 0.01,
}


class Watcher:
    def __init__(self) -> None:
        self.iterations: list[tuple] = []
        self.preemptions: list[tuple[int, int, int]] = []

    def iteration(self, *args: Any) -> None:
        self.iterations.append(args)

    def preempting(self, replica: int, need: int, free: int) -> None:
        self.preemptions.append((replica, need, free))


@pytest.fixture
def watch(monkeypatch: pytest.MonkeyPatch):
    """`watch(scenario)` runs it with a Watcher on its replicas: (recorder, watcher, table).

    Every run also checks that the replicas end empty, every KV block given back.
    """

    def run(scenario: Scenario):
        watcher = Watcher()
        clusters: list[ContinuousBatching] = []

        def model(*args: Any) -> ContinuousBatching:
            clusters.append(ContinuousBatching(*args, observer=watcher))
            return clusters[-1]

        monkeypatch.setitem(SERVICE_MODELS, "continuous_batching", model)
        table = build_workload(scenario)
        recorder = run_variant(scenario, table).recorder
        for replica in clusters[0].replicas:
            assert replica.kv.level == 0 and not replica.running and not replica.waiting
        return recorder, watcher, table

    return run


def cluster(**settings: Any) -> dict[str, Any]:
    return {"service_model": "continuous_batching", "fast_forward": False, **settings}


def busy_scenario(admission: bool = False, **settings: Any) -> Scenario:
    """Two tenants sending varied requests faster than two small replicas serve them."""
    lengths = {"dist": "lognormal", "median": 300, "sigma": 0.9, "max": 2500}
    tenants = [
        {
            "id": "chat",
            "weight": 2,
            "arrivals": {"kind": "poisson", "rate_per_s": 60, "count": 160},
            "prefill_tokens": lengths,
            "decode_tokens": {"dist": "uniform", "low": 1, "high": 300},
            "quota": {"burst_service_tokens": 60000, "sustained_service_tokens_per_sec": 90000},
        },
        {
            "id": "batch",
            "priority": "batch",
            "arrivals": {"kind": "poisson", "rate_per_s": 20, "count": 60},
            "prefill_tokens": {"dist": "uniform", "low": 800, "high": 3000},
            "decode_tokens": {"dist": "uniform", "low": 0, "high": 400},
            "quota": {"burst_service_tokens": 20000, "sustained_service_tokens_per_sec": 30000},
        },
    ]
    defaults = {"replicas": 2, "max_num_batched_tokens": 1024, "max_num_seqs": 48}
    raw = {
        "name": "busy",
        "seed": 11,
        "tenants": tenants,
        "cluster": cluster(**(defaults | settings)),
        "admission": {"enabled": admission},
    }
    return validate(raw, "busy")


# --- isolated requests: exact timings ------------------------------------------------------


def lone_request(make_scenario, prefill: int, decode: int, **settings: Any) -> Scenario:
    return make_scenario(
        [("r1", "a", 100.0, prefill, decode)],
        [{"id": "a"}],
        cluster=cluster(num_gpu_blocks=1000, **settings),
        admission={"enabled": False},
    )


def test_lone_request_ttft_is_its_prefill_iteration_and_tpot_the_decode_step(
    make_scenario, watch
) -> None:
    scenario = lone_request(make_scenario, 300, 5, latency_model=LINEAR)
    recorder, _, _ = watch(scenario)
    # the idle replica picks its batch one scheduling step after the request reaches it
    step = scenario.cluster.schedule_step_ms
    assert step > 0
    assert recorder.first_token_ms[0] - 100.0 == pytest.approx(step + 4.0 + 0.02 * 300, abs=1e-9)
    # decode step g (1..4) attends to the prompt and the g tokens generated so far
    steps = [4.0 + 0.15 + 0.01 * (300 + g) / 1000 for g in range(1, 5)]
    assert recorder.finish_ms[0] - recorder.first_token_ms[0] == pytest.approx(sum(steps))
    assert recorder.ttft_ms[0] == 10.0 + step


def test_lone_request_without_attention_term_has_a_constant_tpot(make_scenario) -> None:
    latency = LINEAR | {"attention_ms_per_1k_context": 0.0}
    scenario = lone_request(make_scenario, 300, 11, latency_model=latency)
    requests = simulate(scenario).requests
    assert requests["tpot_ms"].iloc[0] == 4.15
    assert requests["e2e_ms"].iloc[0] == round(scenario.cluster.schedule_step_ms + 10.0 + 41.5, 2)


def test_long_prompt_is_prefilled_in_chunks(make_scenario, watch) -> None:
    scenario = lone_request(make_scenario, 5000, 1, latency_model=LINEAR)
    recorder, watcher, _ = watch(scenario)
    assert [it[3] for it in watcher.iterations] == [2048, 2048, 904]
    step = scenario.cluster.schedule_step_ms
    assert recorder.first_token_ms[0] - 100.0 == pytest.approx(step + 3 * 4.0 + 0.02 * 5000)
    assert recorder.finish_ms[0] == recorder.first_token_ms[0]  # one token: done at the first


def test_lone_request_under_the_roofline_matches_the_model(make_scenario) -> None:
    scenario = lone_request(make_scenario, 700, 3)
    latency = build_latency(scenario.cluster)
    recorder = run_variant(scenario, build_workload(scenario)).recorder
    prefill = latency.iteration_ms(700, 700 * 701 // 2, 0, 0, 0)
    decodes = latency.iteration_ms(0, 0, 0, 1, 701) + latency.iteration_ms(0, 0, 0, 1, 702)
    # the front end's time before the first token and after the last is added to both instants;
    # an idle replica picks its first batch one scheduling step after the request reaches it
    step = scenario.cluster.schedule_step_ms
    assert recorder.first_token_ms[0] - 100.0 == pytest.approx(step + prefill + latency.before_ms)
    assert recorder.finish_ms[0] - recorder.first_token_ms[0] == pytest.approx(
        decodes + latency.after_ms
    )


# --- limits that must hold in any run ------------------------------------------------------


def test_kv_blocks_in_use_never_exceed_capacity(watch) -> None:
    scenario = busy_scenario(num_gpu_blocks=300, latency_model=LINEAR)
    _, watcher, _ = watch(scenario)
    assert max(it[5] for it in watcher.iterations) <= 300
    assert max(it[5] for it in watcher.iterations) > 270  # the test pushes against the limit
    timeline = simulate(scenario).timeline
    assert (timeline["kv_blocks_used"] <= timeline["kv_blocks_total"]).all()


@pytest.mark.parametrize("latency", [LINEAR, "roofline"], ids=["linear", "roofline"])
def test_throughput_never_exceeds_the_latency_models_bound(watch, latency) -> None:
    scenario = busy_scenario(latency_model=latency)
    recorder, watcher, table = watch(scenario)
    config = scenario.cluster
    peak = peak_tokens_per_ms(build_latency(config), 1024, 48)
    for _, start, end, prefill, decodes, _ in watcher.iterations:
        assert 0 < prefill + decodes <= 1024
        assert decodes <= 48
        assert (prefill + decodes) / (end - start) <= peak * (1 + 1e-9)
    # and over the whole run: every prompt and output token within replicas x span x peak
    span = max(recorder.finish_ms) - float(table.arrival_ms.min())
    tokens = int(table.prefill_tokens.sum() + table.decode_tokens.sum())
    assert tokens <= 2 * span * peak


def test_every_request_finishes_or_is_shed_exactly_once(watch, monkeypatch) -> None:
    calls: Counter[tuple[str, int]] = Counter()
    for name in ("first_token", "finished"):
        original = getattr(Recorder, name)

        def counted(self, request, now, _name=name, _original=original):
            calls[(_name, request.seq)] += 1
            _original(self, request, now)

        monkeypatch.setattr(Recorder, name, counted)
    recorder, _, table = watch(busy_scenario(admission=True, num_gpu_blocks=400))
    admitted = [s for s in range(len(table)) if recorder.status_code[s] == STATUS_OK]
    assert 0 < len(admitted) < len(table)  # some shed, some served
    assert sorted(recorder.order) == list(range(len(table)))
    for seq in range(len(table)):
        expected = 1 if seq in admitted else 0
        assert calls[("first_token", seq)] == calls[("finished", seq)] == expected
        assert math.isnan(recorder.finish_ms[seq]) == (expected == 0)


def test_preemptions_happen_only_when_kv_runs_out(watch) -> None:
    recorder, watcher, _ = watch(busy_scenario(num_gpu_blocks=250, latency_model=LINEAR))
    assert watcher.preemptions  # tiny caches force them
    assert all(need > free for _, need, free in watcher.preemptions)
    assert sum(recorder.preemptions) == len(watcher.preemptions)


def test_no_preemption_when_every_request_fits_at_once(watch) -> None:
    scenario = busy_scenario(num_gpu_blocks=1000)
    table = build_workload(scenario)
    blocks = -(-(table.prefill_tokens + table.decode_tokens) // 16)
    roomy = busy_scenario(num_gpu_blocks=int(blocks.sum()))
    recorder, watcher, _ = watch(roomy)
    assert watcher.preemptions == [] and sum(recorder.preemptions) == 0
