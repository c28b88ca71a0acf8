"""The calibrated roofline's terms on hand-computed iterations, precisions, presets from
config.json, front-end time in TTFT/E2E and multi-step scheduling."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from simsched.config import presets
from simsched.config.loading import load_scenario
from simsched.config.model_presets import DTYPE_BYTES, shape_params
from simsched.results.simulate import simulate
from simsched.sim.cluster.latency import RooflineLatency

GPU = SimpleNamespace(**presets.GPU_PRESETS["h100-80gb"])
MODEL = SimpleNamespace(**presets.MODEL_PRESETS["llama-3-8b"])
HEAD = 128256 * 4096
BODY = MODEL.params - 2 * HEAD


def config(**changes) -> SimpleNamespace:
    base = dict(
        efficiency=None,
        compute_efficiency=None,
        memory_efficiency=None,
        overhead_ms=1.5,
        per_seq_ms=0.01,
        allreduce_us=8.0,
        frontend_before_ms=0.0,
        frontend_after_ms=0.0,
    )
    return SimpleNamespace(**(base | changes))


def test_shares_come_from_the_gpu_per_precision() -> None:
    model = RooflineLatency(config(), GPU, MODEL, tp=1)
    bf16, mem = GPU.compute_efficiency["bf16"], GPU.memory_efficiency
    assert model.token_ms == pytest.approx(2 * BODY / (989.5e9 * bf16), rel=1e-12)
    assert model.weights_ms == pytest.approx(MODEL.params * 2 / (3350e6 * mem), rel=1e-12)
    fp8 = SimpleNamespace(**vars(MODEL), weight_dtype="fp8")
    quick = RooflineLatency(config(), GPU, fp8, tp=1)
    share = GPU.compute_efficiency["fp8"]
    assert quick.token_ms == pytest.approx(2 * BODY / (1979e9 * share), rel=1e-12)
    assert quick.weights_ms == pytest.approx(model.weights_ms / 2, rel=1e-12)
    assert quick.kv_ms == model.kv_ms  # FP8 weights keep a BF16 cache unless told


def test_mixed_batch_costs_its_prefill_plus_the_decodes_cache_reads() -> None:
    model = RooflineLatency(config(compute_efficiency=0.4, memory_efficiency=0.6), GPU, MODEL, 1)
    chunk, pairs, seqs, context = 2048, 2048 * 2049 // 2, 64, 64 * 1500
    prefill = model.iteration_ms(chunk, pairs, 0, 0, 0)
    decode = model.iteration_ms(0, 0, 0, seqs, context)
    mixed = model.iteration_ms(chunk, pairs, 0, seqs, context)
    assert mixed > max(prefill, decode)
    # by hand: the GEMMs of all tokens (compute-bound), attention, cache reads, CPU
    gemm = (2 * BODY * (chunk + seqs) + 2 * HEAD * seqs) / (989.5e9 * 0.4)
    attention = 4 * 32 * 4096 * pairs / (989.5e9 * 0.4)
    cache = presets.kv_bytes_per_token(MODEL) * (chunk + context) / (3350e6 * 0.6)
    cpu = 1.5 + 0.01 * seqs
    assert mixed == pytest.approx(gemm + attention + cache + cpu, rel=1e-12)


def test_all_reduces_cost_latency_and_bytes_over_the_link() -> None:
    one = RooflineLatency(config(compute_efficiency=0.5, memory_efficiency=0.5), GPU, MODEL, 1)
    two = RooflineLatency(config(compute_efficiency=0.5, memory_efficiency=0.5), GPU, MODEL, 2)
    seqs, context = 8, 8000
    gpu_one = one.iteration_ms(0, 0, 0, seqs, context) - 1.5 - 0.01 * seqs
    per_step = 2 * 32 * (8.0 / 1000 + 2 * 0.5 * seqs * 4096 * 2 / 450e6)
    expected = gpu_one / 2 + per_step + 1.5 + 0.01 * seqs
    assert two.iteration_ms(0, 0, 0, seqs, context) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("weights", "cache", "precision"),
    [
        (None, None, "bf16"),
        ("fp8", None, "bf16"),  # FP8 weights with a BF16 cache: BF16 queries and keys
        ("fp8", "fp8", "fp8"),
        ("fp4", "fp8", "fp8"),  # an NVFP4 checkpoint's FP8 cache: FP8 attention as FP8's
        ("fp4", None, "bf16"),
        ("int4", "fp8", "bf16"),  # weight-only: the activations stay in 16 bits
    ],
)
def test_prefill_attention_runs_in_fp8_on_a_quantized_model_with_an_fp8_cache(
    weights: str | None, cache: str | None, precision: str
) -> None:
    # by hand on one B200: 4 x 32 layers x 4,096 query width FLOPs a pair, at the peak and the
    # share of the attention's precision (2,250 TFLOPS BF16, 4,500 FP8)
    b200 = SimpleNamespace(**presets.GPU_PRESETS["b200"])
    model = SimpleNamespace(**vars(MODEL), weight_dtype=weights, kv_dtype=cache)
    peak = {"bf16": 2250.0, "fp8": 4500.0}[precision]
    share = b200.compute_efficiency[precision]
    latency = RooflineLatency(config(), b200, model, tp=1)
    assert latency.pair_ms == pytest.approx(4 * 32 * 4096 / (peak * 1e9 * share), rel=1e-12)


@pytest.mark.parametrize("dtype", ["int4", "fp4"])
def test_half_byte_weights(dtype: str) -> None:
    model = SimpleNamespace(**vars(MODEL), weight_dtype=dtype, kv_dtype="fp8")
    assert presets.weight_bytes(model) == int(MODEL.params * 0.5) and DTYPE_BYTES[dtype] == 0.5
    assert presets.kv_bytes_per_token(model) == 2 * 32 * 8 * 128


def test_presets_parameter_counts_follow_their_shapes() -> None:
    assert presets.MODEL_PRESETS["llama-3-70b"]["params"] == 70_553_706_496
    assert presets.MODEL_PRESETS["llama-2-7b"]["params"] == 6_738_415_616
    assert presets.MODEL_PRESETS["qwen3-14b"]["params"] == shape_params(
        40, 5120, 40, 8, 128, 17408, 151936, qk_norm=True
    )


def write_scenario(folder: Path, cluster: str, tenants: str) -> Path:
    path = folder / "s.yaml"
    path.write_text(
        f"name: t\nseed: 1\ntenants:\n{tenants}\ncluster:\n{cluster}\n"
        "admission: {enabled: false}\n",
        encoding="utf-8",
    )
    return path


ONE_REQUEST = """  - id: a
    arrivals: {kind: periodic, interval_ms: 1, count: 1}
    prefill_tokens: 100
    decode_tokens: 11"""


def test_hf_config_model_and_front_end_time(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    shape = {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
             "num_hidden_layers": 32, "intermediate_size": 14336, "vocab_size": 128256,
             "torch_dtype": "bfloat16", "model_type": "llama"}  # fmt: skip
    (tmp_path / "m" / "config.json").write_text(json.dumps(shape), encoding="utf-8")
    cluster = """  service_model: continuous_batching
  model: {hf_config: m/config.json}
  latency_model: {kind: roofline, frontend_before_ms: 30, frontend_after_ms: 7}"""
    scenario = load_scenario(write_scenario(tmp_path, cluster, ONE_REQUEST))
    assert scenario.cluster.model.params == 8_030_261_248
    frame = simulate(scenario).requests
    bare = simulate(
        load_scenario(
            tmp_path / "s.yaml",
            [
                "cluster.latency_model.frontend_before_ms=0",
                "cluster.latency_model.frontend_after_ms=0",
            ],
        )
    ).requests
    assert frame["ttft_ms"][0] == pytest.approx(bare["ttft_ms"][0] + 30, abs=0.01)
    assert frame["e2e_ms"][0] == pytest.approx(bare["e2e_ms"][0] + 37, abs=0.01)


def test_multi_step_scheduling_admits_new_requests_every_k_steps(tmp_path: Path) -> None:
    # 10 ms per iteration; A starts at 0, B arrives at 25 ms, during A's third iteration
    tenants = """  - id: a
    arrivals: {kind: periodic, interval_ms: 1, count: 1}
    prefill_tokens: 10
    decode_tokens: 100
  - id: b
    arrivals: {kind: periodic, start_ms: 25, interval_ms: 1, count: 1}
    prefill_tokens: 10
    decode_tokens: 5"""
    # no scheduling step for an idle replica, so A's iterations end at 10, 20, 30 ... ms
    cluster = """  service_model: continuous_batching
  schedule_step_ms: 0
  latency_model: {kind: linear, base_ms: 10, prefill_ms_per_token: 0, decode_ms_per_seq: 0}"""
    path = write_scenario(tmp_path, cluster, tenants)
    for steps, ttft in [(1, 15.0), (8, 65.0)]:  # B starts at 30 ms, or at iteration 8 (80 ms)
        frame = simulate(load_scenario(path, [f"cluster.num_scheduler_steps={steps}"])).requests
        assert frame.set_index("tenant_id")["ttft_ms"]["b"] == ttft


@pytest.mark.parametrize(
    ("config_text", "message"),
    [
        (None, "cannot read"),
        ("{not json", "is not JSON"),
        ('{"hidden_size": 4096}', "lacks 'num_attention_heads'"),
        ('{"num_local_experts": 8}', "mixture-of-experts"),
    ],
)
def test_bad_hf_config_is_one_line_exit_2(
    config_text: str | None,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    simsched_cli,
) -> None:
    if config_text is not None:
        (tmp_path / "config.json").write_text(config_text, encoding="utf-8")
    cluster = "  service_model: continuous_batching\n  model: {hf_config: config.json}"
    write_scenario(tmp_path, cluster, ONE_REQUEST)
    monkeypatch.chdir(tmp_path)
    code, _, err = simsched_cli("validate", "s.yaml")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("s.yaml: cluster.model: ") and message in err
