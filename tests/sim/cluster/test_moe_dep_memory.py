"""Attention data parallelism keeps a whole copy of the attention weights in each attention
group, so DEP leaves less memory for the KV cache (config/moe_serving.py,
`replicated_attention_bytes`; docs/moe.md, "Memory")."""

from __future__ import annotations

from pathlib import Path

from simsched.config import presets
from simsched.config.hardware import ModelSpec
from simsched.config.loading import load_scenario
from simsched.config.moe_serving import MoeServingSpec, replicated_attention_bytes
from tests.sim.cluster.test_roofline_physics import ONE_REQUEST, write_scenario

R1 = ModelSpec(name="deepseek-r1", **presets.MODEL_PRESETS["deepseek-r1"])
QWEN = ModelSpec(name="qwen3-235b-a22b", **presets.MODEL_PRESETS["qwen3-235b-a22b"])

# DeepSeek-R1's MLA projections per layer, from its config.json (hidden 7168, 128 heads,
# q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head 128)
R1_QUERY = 7168 * 1536 + 1536 + 1536 * 128 * (128 + 64)
R1_KV = 7168 * (512 + 64) + 512 + 512 * 128 * (128 + 128)
R1_OUT = 128 * 128 * 7168
R1_ATTENTION = R1_QUERY + R1_KV + R1_OUT  # 187,107,328


def test_dep8_deepseek_holds_about_80_gb_more_by_hand() -> None:
    extra = replicated_attention_bytes(R1, MoeServingSpec(ep=8, attention_dp=8))
    assert extra == 7 * 61 * R1_ATTENTION * 1  # FP8 weights: one byte each
    assert 79e9 < extra < 81e9


def test_gqa_attention_is_replicated_too_by_hand() -> None:
    # Qwen3-235B-A22B (config.json): 94 layers, hidden 4096, 64 query and 4 KV heads of 128;
    # q and o projections 4096 x 8192, k and v 4096 x 512, in BF16 (2 bytes)
    per_layer = 4096 * 64 * 128 * 2 + 4096 * 4 * 128 * 2
    dep4 = replicated_attention_bytes(QWEN, MoeServingSpec(ep=4, attention_dp=4))
    assert dep4 == 3 * 94 * per_layer * 2


def test_no_attention_dp_replicates_nothing() -> None:
    assert replicated_attention_bytes(R1, MoeServingSpec(ep=8)) == 0
    assert replicated_attention_bytes(R1, None) == 0


def test_dep_kv_capacity_leaves_the_replicated_weights_out(tmp_path: Path) -> None:
    # 8 x 141 GiB x 0.9, less the FP8 weights once and the attention 7 more times, over
    # 576 latent elements x 61 layers x 2 bytes x 16 tokens a block
    cluster = (
        "  service_model: continuous_batching\n  gpu: h200\n  tp: 8\n  model: deepseek-r1\n"
        "  moe_serving: {ep: 8, attention_dp: 8}\n"
    )
    config = load_scenario(write_scenario(tmp_path, cluster, ONE_REQUEST)).cluster
    spare = 8 * 141 * 1024**3 * 0.9 - R1.params - 7 * 61 * R1_ATTENTION
    assert config.blocks_per_replica == int(spare // (576 * 61 * 2 * 16))
