"""`cluster.engine` fills in its engine's defaults (docs/engines.md); explicit settings win."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from simsched.cli.app import main
from simsched.config.engines import VLLM_V1_BATCHING
from simsched.config.loading import load_scenario, validate
from simsched.errors import InputError
from simsched.results.simulate import simulate

REPO = Path(__file__).resolve().parents[2]
BATCHING = REPO / "scenarios" / "noisy_neighbor_batching.yaml"


def cluster_of(**settings: Any) -> Any:
    return scenario_of(**settings).cluster


def scenario_of(**settings: Any) -> Any:
    raw = {
        "name": "t",
        "tenants": [
            {
                "id": "a",
                "arrivals": {"kind": "periodic", "interval_ms": 1, "count": 1},
                "prefill_tokens": 1,
                "decode_tokens": 1,
            }
        ],
        "cluster": {"service_model": "continuous_batching", **settings},
    }
    return validate(raw, "t")


# vLLM's get_batch_defaults: >= 70 GiB and not an A100 is "large"; memory from the presets
@pytest.mark.parametrize(
    ("gpu", "size"),
    [("h100-80gb", "large"), ("h200", "large"), ("a100-80gb", "small"), ("l40s", "small")],
)
@pytest.mark.parametrize("offline", [False, True])
def test_vllm_v1_batching_follows_the_gpu_and_the_use(gpu: str, size: str, offline: bool) -> None:
    config = cluster_of(engine={"name": "vllm", "offline": offline}, gpu=gpu)
    expected = VLLM_V1_BATCHING[(size, "offline" if offline else "served")]
    assert (config.max_num_batched_tokens, config.max_num_seqs) == expected
    assert (
        expected
        == {
            ("large", False): (8192, 1024),
            ("large", True): (16384, 1024),
            ("small", False): (2048, 256),
            ("small", True): (8192, 256),
        }[(size, offline)]
    )
    # offline use has no HTTP server: a front end that costs nothing
    assert config.frontend.costs_nothing is offline


def test_a_custom_gpu_is_classed_by_its_memory() -> None:
    gpu = {"name": "big", "tflops": 900, "hbm_gbps": 4000, "memory_gib": 96}
    assert cluster_of(engine="vllm", gpu=gpu).max_num_batched_tokens == 8192
    small = gpu | {"memory_gib": 64}
    assert cluster_of(engine="vllm", gpu=small, model="llama-3-8b").max_num_batched_tokens == 2048


@pytest.mark.parametrize(
    ("engine", "cpu_time", "capacity"),
    [
        ("vllm", "serial", "admit_then_preempt"),
        ("vllm-0.6", "multi_step", "admit_then_preempt"),
        ("sglang", "overlap", "admit_then_preempt"),
        ("trtllm", "overlap", "guaranteed_no_evict"),
    ],
)
def test_each_engine_sets_its_scheduler_mechanisms(engine, cpu_time, capacity) -> None:
    config = cluster_of(engine=engine)
    assert (config.cpu_time, config.capacity_scheduler) == (cpu_time, capacity)
    assert config.frontend is not None and config.frontend.per_request_ms > 0


def test_explicit_settings_override_the_profile() -> None:
    config = cluster_of(
        engine="trtllm",
        max_num_seqs=64,
        cpu_time="serial",
        capacity_scheduler="admit_then_preempt",
        frontend={"processes": 4},
    )
    assert config.max_num_seqs == 64 and config.max_num_batched_tokens == 8192
    assert (config.cpu_time, config.capacity_scheduler) == ("serial", "admit_then_preempt")
    # a partial frontend keeps the engine's costs for what it leaves out
    trtllm = cluster_of(engine="trtllm").frontend
    assert config.frontend.processes == 4
    assert config.frontend.per_request_ms == trtllm.per_request_ms


def test_without_an_engine_nothing_is_filled() -> None:
    config = cluster_of()
    assert config.engine is config.cpu_time is config.capacity_scheduler is config.frontend is None
    assert (config.max_num_batched_tokens, config.max_num_seqs) == (2048, 256)


def test_a_variant_that_swaps_the_gpu_gets_that_gpus_defaults() -> None:
    # the profile's values are defaults, not settings: they are derived again for the new GPU
    scenario = scenario_of(engine="vllm", gpu="h100-80gb")
    assert scenario.cluster.max_num_batched_tokens == 8192
    swapped = scenario.with_overrides(["cluster.gpu=a100-80gb"])
    assert swapped.cluster.max_num_batched_tokens == 2048


def test_vllm_v1_refuses_multi_step_scheduling() -> None:
    with pytest.raises(InputError) as info:
        load_scenario(BATCHING, ["cluster.engine=vllm", "cluster.num_scheduler_steps=8"])
    assert "cluster" in str(info.value) and "num_scheduler_steps" in str(info.value)
    assert "cluster.num_scheduler_steps: vLLM V1 (engine vllm) has no" in str(info.value)
    steps = load_scenario(BATCHING, ["cluster.engine=vllm-0.6", "cluster.num_scheduler_steps=8"])
    assert steps.cluster.num_scheduler_steps == 8


@pytest.mark.parametrize(
    ("setting", "field"),
    [
        ("cluster.engine=tgi", "cluster.engine"),
        ("cluster.frontend={processes: 0}", "cluster.frontend.processes"),
        ("cluster.frontend={per_request_ms: -1}", "cluster.frontend.per_request_ms"),
        ("cluster.cpu_time=async", "cluster.cpu_time"),
        ("cluster.capacity_scheduler=max_utilization", "cluster.capacity_scheduler"),
    ],
)
def test_bad_engine_settings_exit_2_in_one_line(monkeypatch, capsys, setting, field) -> None:
    monkeypatch.setattr(sys, "argv", ["simsched", "validate", str(BATCHING), "--set", setting])
    with pytest.raises(SystemExit) as exit_info:
        main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert field in err and "noisy_neighbor_batching.yaml" in err


BUSY = {
    "name": "busy",
    "seed": 5,
    "tenants": [
        {
            "id": "chat",
            "arrivals": {"kind": "poisson", "rate_per_s": 60, "count": 150},
            "prefill_tokens": {"dist": "lognormal", "median": 250, "sigma": 0.8, "max": 2000},
            "decode_tokens": {"dist": "lognormal", "median": 80, "sigma": 1.0, "max": 900},
        }
    ],
    "admission": {"enabled": False},
}


@pytest.mark.parametrize("engine", ["vllm-0.6", "sglang", "trtllm"])
def test_engines_give_identical_frames_with_fast_forward_on_or_off(engine: str) -> None:
    cluster = {"service_model": "continuous_batching", "engine": engine, "num_gpu_blocks": 600}
    if engine == "vllm-0.6":
        cluster["num_scheduler_steps"] = 4
    frames = [
        simulate(validate(BUSY | {"cluster": cluster | {"fast_forward": ff}}, "busy")).requests
        for ff in (True, False)
    ]
    pd.testing.assert_frame_equal(frames[0], frames[1], check_exact=True)
    assert frames[0]["status_code"].eq(200).all()


def test_trtllm_pays_no_python_scheduler_cpu_unless_told() -> None:
    # its C++ scheduler is hidden by the overlap scheduler: the calibration's TensorRT-LLM facts
    assert cluster_of(engine="trtllm").latency_model.overhead_ms == 0.0
    assert cluster_of(engine="trtllm").latency_model.per_seq_ms == 0.0
    told = cluster_of(engine="trtllm", latency_model={"kind": "roofline", "per_seq_ms": 0.05})
    assert (told.latency_model.overhead_ms, told.latency_model.per_seq_ms) == (0.0, 0.05)
    assert cluster_of(engine="sglang").latency_model == cluster_of().latency_model


def test_validate_shows_what_the_profile_chose(monkeypatch, capsys) -> None:
    argv = ["simsched", "validate", str(BATCHING), "--set", "cluster.engine=trtllm"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exit_info:
        main()
    out = capsys.readouterr().out
    assert exit_info.value.code in (0, None)
    # the file's own 2048 / 256 win over TensorRT-LLM's 8192 / 2048
    assert "engine: trtllm (served), 2048 batched tokens, 256 sequences, CPU time overlap" in out
    assert "overlap (1.205 ms a step exposed), guaranteed_no_evict" in out
    assert "guaranteed_no_evict, API server 1 x 32.2 ms/request" in out


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        ({"engine": "vllm"}, "not used with an API server (cluster.frontend"),
        ({"frontend": {"processes": 2}}, "not used with an API server (cluster.frontend"),
        ({"engine": {"name": "trtllm", "offline": True}}, "an offline engine"),
    ],
)
def test_fixed_front_end_delays_beside_an_api_server_are_refused(settings, said) -> None:
    # the API server replaces the fixed delays: stated beside it they would be ignored silently
    latency = {"kind": "roofline", "frontend_before_ms": 500.0}
    with pytest.raises(InputError) as info:
        cluster_of(latency_model=latency, **settings)
    assert "latency_model.frontend_before_ms" in str(info.value) and said in str(info.value)
    assert cluster_of(latency_model=latency).latency_model.frontend_before_ms == 500.0


def test_validate_says_an_offline_engine_has_no_api_server(monkeypatch, capsys) -> None:
    setting = "cluster.engine={name: vllm, offline: true}"
    monkeypatch.setattr(sys, "argv", ["simsched", "validate", str(BATCHING), "--set", setting])
    with pytest.raises(SystemExit) as exit_info:
        main()
    out = capsys.readouterr().out
    assert exit_info.value.code in (0, None)
    assert "admit_then_preempt, no API server (no front-end time)" in out


def test_an_engine_on_the_token_server_names_the_service_model() -> None:
    # `engine` exists, for continuous_batching only: "unknown key, check the spelling" misleads
    raw = {
        "name": "t",
        "tenants": [
            {
                "id": "a",
                "arrivals": {"kind": "periodic", "interval_ms": 1, "count": 1},
                "prefill_tokens": 1,
                "decode_tokens": 1,
            }
        ],
        "cluster": {"service_model": "token_server", "engine": "vllm"},
    }
    with pytest.raises(InputError) as info:
        validate(raw, "t")
    assert "cluster.engine" in str(info.value) and "continuous_batching" in str(info.value)


def test_a_budget_below_the_profiles_sequences_names_where_each_came_from() -> None:
    # vLLM V1 on an H100 serves with 8192 tokens and 1024 sequences, TensorRT-LLM with 8192 and
    # 2048: a budget written below the profile's sequences is refused (vLLM refuses the pair)
    # naming the profile's value, not as if the user had written max_num_seqs
    with pytest.raises(InputError) as info:
        cluster_of(engine="vllm", gpu="h100-80gb", max_num_batched_tokens=512)
    message = str(info.value)
    assert "cluster.max_num_batched_tokens: 512 is below the engine profile's 1024 sequences" in (
        message
    )
    assert "write max_num_seqs at 512 or less as well" in message
    with pytest.raises(InputError) as info:
        cluster_of(engine="trtllm", max_num_batched_tokens=1024)
    assert "below the engine profile's 2048 sequences" in str(info.value)
    # a budget that is no budget gets its own field's message, not advice to write 0 sequences
    with pytest.raises(InputError) as info:
        cluster_of(engine="vllm", max_num_batched_tokens=0)
    assert "engine profile" not in str(info.value)
    assert "max_num_batched_tokens" in str(info.value)
    # the other way round: vLLM on an A100 budgets 2048 tokens
    with pytest.raises(InputError) as info:
        cluster_of(engine="vllm", gpu="a100-80gb", max_num_seqs=4096)
    assert "the engine profile's max_num_batched_tokens (2048)" in str(info.value)
    # both written, or both the profile's: as before
    assert (
        cluster_of(engine="vllm", max_num_batched_tokens=512, max_num_seqs=256).max_num_seqs == 256
    )
    with pytest.raises(InputError) as info:
        cluster_of(max_num_batched_tokens=512, max_num_seqs=1024)
    assert "cluster.max_num_seqs: must not exceed max_num_batched_tokens (512)" in str(info.value)


def test_an_offline_engine_has_no_api_server_to_state() -> None:
    offline = {"name": "vllm", "offline": True}
    # a front end written beside it would be replaced by the offline profile's zero cost
    with pytest.raises(InputError) as info:
        cluster_of(engine=offline, frontend={"processes": 2})
    assert "cluster.frontend: an offline engine (cluster.engine offline: true) has no API" in str(
        info.value
    )
    # a fixed front-end delay: 0 says what offline means, anything else is refused as such
    zero = {"kind": "roofline", "frontend_before_ms": 0, "frontend_after_ms": 0}
    assert cluster_of(engine=offline, latency_model=zero).frontend.per_request_ms == 0
    with pytest.raises(InputError) as info:
        cluster_of(engine=offline, latency_model={"kind": "roofline", "frontend_before_ms": 5})
    assert "latency_model.frontend_before_ms: an offline engine" in str(info.value)
    # served, any written delay beside the API server is refused, as before
    with pytest.raises(InputError) as info:
        cluster_of(engine="vllm", latency_model=zero)
    assert "not used with an API server" in str(info.value)


def test_an_offline_engine_refuses_a_delay_on_a_gpu_with_a_dotted_name() -> None:
    # the delay is found by its GPU's name, which may hold dots: still one line, exit 2
    gpu = {"preset": "h100-80gb", "name": "h100.sxm"}
    offline = {"name": "vllm", "offline": True}
    with pytest.raises(InputError) as info:
        cluster_of(engine=offline, gpu=gpu, gpu_overrides={"h100.sxm": {"frontend_before_ms": 5}})
    assert "gpu_overrides.h100.sxm.frontend_before_ms: an offline engine" in str(info.value)
    zero = {"h100.sxm": {"frontend_before_ms": 0}}
    assert cluster_of(engine=offline, gpu=gpu, gpu_overrides=zero).engine.offline
