"""Tile padding of the routed experts' grouped GEMMs (docs/moe.md, "Tile padding"): each expert
with tokens computes its last tile whole, half a tile of rows beyond its own on average, at most
as many again as it has. By hand, against a sampled routing, and in whole iterations."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from simsched.config import presets
from simsched.config.hardware import ModelSpec, RooflineLatencyConfig
from simsched.config.loading import load_scenario
from simsched.config.moe_serving import EXPERT_TILE_ROWS, MoeServingSpec
from simsched.sim.cluster.latency import build_latency
from simsched.sim.cluster.moe_latency import MoeRooflineLatency, distinct_experts, padding_rows
from tests.sim.cluster.test_roofline_physics import ONE_REQUEST, write_scenario

H200 = SimpleNamespace(**presets.GPU_PRESETS["h200"])
MIXTRAL = ModelSpec(name="mixtral-8x7b", **presets.MODEL_PRESETS["mixtral-8x7b"])
CONFIG = RooflineLatencyConfig(kind="roofline")


def test_padding_rows_by_hand() -> None:
    # Mixtral's 8 experts at 4,096 tokens all take tokens (about 1,024 rows each): half a
    # 128-row tile beyond each, 8 x 64 = 512 rows
    assert padding_rows(2, 4096, 8.0, 128) == 512
    # DeepSeek-R1's 256 experts at 8,192 tokens: 256 x 64 = 16,384 rows
    assert padding_rows(8, 8192, 256.0, 128) == 16_384
    # one decoding token's 2 experts hold 1 row each: at most as many rows again (a tile taller
    # than an expert's rows gives way to a smaller one), so 2 rows, not 2 x 64
    assert padding_rows(2, 1, 2.0, 128) == 2
    # no tile: the routed rows only
    assert padding_rows(2, 4096, 8.0, 0) == 0


def test_half_a_tile_is_the_mean_waste_of_experts_with_many_tiles() -> None:
    # Mixtral's 8 experts, 2 distinct ones a token, 4,096 tokens routed uniformly at random:
    # about 1,024 rows an expert, so the rows its last 128-row tile leaves empty are nearly
    # uniform over 0..127, mean 63.5; the model's 64 an expert is that mean
    rng = np.random.default_rng(18)
    tile, experts, per_token, tokens = 128, 8, 2, 4096
    wastes = []
    for _ in range(400):
        chosen = np.argsort(rng.random((tokens, experts)), axis=1)[:, :per_token]
        rows = np.bincount(chosen.ravel(), minlength=experts)
        wastes.append(float((-(-rows // tile) * tile - rows).sum()))
    model = padding_rows(per_token, tokens, distinct_experts(experts, per_token, tokens), tile)
    assert model == pytest.approx(np.mean(wastes), rel=0.05)


def test_a_compute_bound_mixtral_chunk_pays_its_padding_at_the_experts_rate() -> None:
    # Mixtral 8x7B (BF16) on one H200, a 4,096-token prefill chunk: compute-bound. Each of the
    # 512 padding rows runs through 32 MoE layers' 3 x 4,096 x 14,336 expert weights, 2 FLOPs a
    # weight, at the BF16 rate and the experts' compute share, which Mixtral's experts, four
    # times DeepSeek-V3's on one GPU, scale by 4^0.196 (test_moe_expert_size.py)
    share = 0.7
    padded = MoeRooflineLatency(
        CONFIG, H200, MIXTRAL, 1, MoeServingSpec(expert_compute_efficiency=share)
    )
    bare = MoeRooflineLatency(
        CONFIG,
        H200,
        MIXTRAL,
        1,
        MoeServingSpec(expert_compute_efficiency=share, expert_tile_rows=0),
    )
    chunk = (4096, 4096 * 4097 // 2, 0, 0, 0)
    rate = 989.5e9 * presets.GPU_PRESETS["h200"]["compute_efficiency"]["bf16"]  # FLOPs a ms
    expected = 512 * 2 * 32 * 3 * 4096 * 14336 / (share * 4**0.196) / rate
    assert padded.iteration_ms(*chunk) - bare.iteration_ms(*chunk) == pytest.approx(
        expected, rel=1e-9
    )


def test_a_small_decode_stays_bound_by_its_weight_reads() -> None:
    # 8 decoding sequences read their experts' weights far longer than they compute, padding
    # included: the tile changes nothing there
    padded = MoeRooflineLatency(CONFIG, H200, MIXTRAL, 1, MoeServingSpec())
    bare = MoeRooflineLatency(CONFIG, H200, MIXTRAL, 1, MoeServingSpec(expert_tile_rows=0))
    assert padded.iteration_ms(0, 0, 0, 8, 8000) == bare.iteration_ms(0, 0, 0, 8, 8000)


def test_the_default_tile_is_128_rows() -> None:
    assert MoeServingSpec().expert_tile_rows == EXPERT_TILE_ROWS == 128


def test_padding_runs_at_the_experts_input_precision() -> None:
    # gpt-oss-20b (32 experts, k = 4) on one B200 with FP8 inputs to its MXFP4 experts: a
    # 4,096-token chunk reaches all 32 experts, 32 x 64 = 2,048 padding rows, each through 24
    # MoE layers' 3 x 2,880^2 weights and 3 x 2,880 biases at FP8's rate, not the model's BF16,
    # and at the share of a 2,880 x 2,880 expert (test_moe_expert_size.py)
    b200 = SimpleNamespace(**presets.GPU_PRESETS["b200"])
    model = ModelSpec(name="gpt-oss-20b", **presets.MODEL_PRESETS["gpt-oss-20b"])
    fp8 = {"expert_activations": "fp8"}
    padded = MoeRooflineLatency(CONFIG, b200, model, 1, MoeServingSpec(**fp8))
    bare = MoeRooflineLatency(CONFIG, b200, model, 1, MoeServingSpec(**fp8, expert_tile_rows=0))
    chunk = (4096, 4096 * 4097 // 2, 0, 0, 0)
    share = MoeServingSpec().compute_share * (2880 * 2880 / (2048 * 7168)) ** 0.196
    rate = 4500e9 * b200.compute_efficiency["fp8"]  # FLOPs a ms
    expected = 2048 * 2 * 24 * (3 * 2880 * 2880 + 3 * 2880) / share / rate
    assert padded.iteration_ms(*chunk) - bare.iteration_ms(*chunk) == pytest.approx(
        expected, rel=1e-9
    )


def test_a_speculative_step_pads_the_tokens_it_verifies(tmp_path: Path) -> None:
    # gpt-oss-120b (128 experts, k = 4) on one H200 with n-gram drafts of 3 tokens: 250 decoding
    # sequences verify 4 tokens each, 1,000 tokens, 31 rows an expert: min(4 x 1,000, 64 x 128)
    # = 4,000 padding rows, each through 36 MoE layers' 3 x 2,880^2 weights and 3 x 2,880
    # biases at BF16's rate. The 250 tokens alone would be bound by their weight reads, padding
    # or not: a step that padded only its sequences would add nothing. The n-gram drafter runs
    # no model pass
    def step(tile: int) -> float:
        cluster = (
            "  service_model: continuous_batching\n  gpu: h200\n  model: gpt-oss-120b\n"
            f"  moe_serving: {{expert_tile_rows: {tile}}}\n"
            "  speculative: {method: ngram, tokens: 3, acceptance: 0.7}"
        )
        folder = tmp_path / str(tile)
        folder.mkdir()
        latency = build_latency(load_scenario(write_scenario(folder, cluster, ONE_REQUEST)).cluster)
        assert latency.draft == 0  # no drafter pass to pad
        return latency.iteration_ms(0, 0, 0, 250, 0)

    # the share of a 2,880 x 2,880 expert (test_moe_expert_size.py)
    share = MoeServingSpec().compute_share * (2880 * 2880 / (2048 * 7168)) ** 0.196
    rate = 989.5e9 * presets.GPU_PRESETS["h200"]["compute_efficiency"]["bf16"]
    expected = 4000 * 2 * 36 * (3 * 2880 * 2880 + 3 * 2880) / share / rate
    assert step(128) - step(0) == pytest.approx(expected, rel=1e-9)


def test_arrays_of_batch_sizes_pad_elementwise() -> None:
    latency = MoeRooflineLatency(CONFIG, H200, MIXTRAL, 1, MoeServingSpec())
    sizes, contexts = np.array([8, 600]), np.array([1000, 90000])
    steps = latency.iteration_ms(0, 0, 0, sizes, contexts, np.maximum)
    one_by_one = [latency.iteration_ms(0, 0, 0, 8, 1000), latency.iteration_ms(0, 0, 0, 600, 90000)]
    assert steps.tolist() == pytest.approx(one_by_one, rel=1e-12)
