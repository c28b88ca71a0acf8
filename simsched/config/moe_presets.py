"""Mixture-of-Experts model presets from their `config.json` shapes.

Every shape is copied from the models' config.json files as the measurements collection lists
them (moe_specdec_pd.md §1h, rows AR-1 to AR-9, source S-AIC); the parameter count is computed
from the shape (`moe_shapes.total_params`), so that FLOPs, weights and KV cache follow from one
set of numbers. tests/config/test_moe_presets.py recomputes each count from the config fields
by its own formula and checks it against the published totals.
"""

from __future__ import annotations

from typing import Any

from simsched.config.moe import GqaSpec, MlaSpec, MoeSpec, SlidingWindowSpec
from simsched.config.moe_shapes import shape, total_params


def moe_preset(
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    vocab: int,
    moe: dict[str, Any],
    head_dim: int = 128,
    *,
    tied: bool = False,
    qk_norm: bool = False,
    attention: dict[str, Any] | None = None,
    sliding_window: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A preset mapping whose `params` is computed from the shape it describes."""
    fields: dict[str, Any] = {
        "layers": layers,
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "vocab_size": vocab,
        "tied_embeddings": tied,
    }
    model = shape(
        **fields,
        moe=MoeSpec(**moe),
        attention=_attention_spec(attention),
        sliding_window=SlidingWindowSpec(**sliding_window) if sliding_window else None,
    )
    params = total_params(model, 0, tied=tied, qk_norm=qk_norm)
    preset = {"params": params, **fields, "dtype_bytes": 2, "moe": moe, **extra}
    if attention:
        preset["attention"] = attention
    if sliding_window:
        preset["sliding_window"] = sliding_window
    return preset


def _attention_spec(attention: dict[str, Any] | None) -> GqaSpec | MlaSpec | None:
    if attention is None:
        return None
    return MlaSpec(**attention) if attention["kind"] == "mla" else GqaSpec(**attention)


# AR-1: deepseek-ai/DeepSeek-V3 and DeepSeek-R1 config.json (identical fields): 61 layers, the
# first 3 dense (first_k_dense_replace 3, intermediate_size 18432), 256 routed experts of 2048,
# 8 per token, 1 shared; MLA with q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64,
# v_head 128; vocab 129280; FP8 checkpoint. The MTP module (num_nextn_predict_layers 1) is not
# counted: it is the drafter of `speculative: {method: mtp}`, not a layer of every token.
# head_dim 192 = qk_nope + qk_rope, the width a query attends with; kv_heads 1: one latent.
_DEEPSEEK_V3 = moe_preset(
    61,
    7168,
    128,
    1,
    129280,
    head_dim=192,
    moe={
        "experts": 256,
        "experts_per_token": 8,
        "shared_experts": 1,
        "expert_ffn": 2048,
        "first_dense_layers": 3,
        "dense_ffn": 18432,
        "router_bias": True,  # e_score_correction_bias, one per expert (noaux_tc routing)
    },
    attention={
        "kind": "mla",
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "q_lora_rank": 1536,
    },
    weight_dtype="fp8",
    mtp_modules=1,  # num_nextn_predict_layers 1: the drafter of `speculative: {method: mtp}`
    max_position_embeddings=163840,
)

# AR-2, AR-3: Qwen/Qwen3-30B-A3B and Qwen3-235B-A22B config.json: every layer MoE
# (decoder_sparse_step 1, mlp_only_layers []), 128 experts, 8 per token, none shared, QK-norm,
# untied embeddings, vocab 151936; BF16 checkpoints; a context of 40,960 tokens (the -2507
# updates' 262,144 is not these checkpoints').
_QWEN3_MOE = {"experts": 128, "experts_per_token": 8}
_QWEN3_CONTEXT = 40960

# AR-4, AR-5: mistralai/Mixtral-8x7B-v0.1 and 8x22B-v0.1: 8 experts, 2 per token, vocab 32000;
# contexts of 32,768 and 65,536 tokens.
# AR-6, AR-7: meta-llama/Llama-4-Scout-17B-16E and Maverick-17B-128E text_config: one shared
# expert in every MoE layer (the model code's `shared_expert`, not a config field); Maverick's
# every second layer is MoE (interleave_moe_layer_step 2), the others dense of 16384
# (intermediate_size_mlp); use_qk_norm is a weightless L2 norm (no parameters). Contexts of
# 10,485,760 (Scout) and 1,048,576 (Maverick) tokens.
_LLAMA4 = {"experts_per_token": 1, "shared_experts": 1, "expert_ffn": 8192, "dense_ffn": 16384}

# AR-8, AR-9: openai/gpt-oss-120b and -20b config.json: every layer MoE, 4 experts per token of
# width 2880, biased router and experts, attention with biases and sinks, head_dim 64; every
# second layer a sliding window of 128 tokens; MXFP4 experts (quantization_config quant_method
# mxfp4), the rest BF16; a context of 131,072 tokens (YaRN-scaled in the config itself).
_GPT_OSS = {
    "experts_per_token": 4,
    "expert_ffn": 2880,
    "router_bias": True,
    "expert_bias": True,
    "expert_dtype": "fp4",
    "fp4_format": "mxfp4",
}
_GPT_OSS_ATTENTION = {"kind": "gqa", "bias": True, "sinks": True}

MOE_PRESETS: dict[str, dict[str, Any]] = {
    "deepseek-v3": _DEEPSEEK_V3,
    "deepseek-r1": _DEEPSEEK_V3,
    "qwen3-30b-a3b": moe_preset(
        48,
        2048,
        32,
        4,
        151936,
        qk_norm=True,
        moe={**_QWEN3_MOE, "expert_ffn": 768},
        max_position_embeddings=_QWEN3_CONTEXT,
    ),
    "qwen3-235b-a22b": moe_preset(
        94,
        4096,
        64,
        4,
        151936,
        qk_norm=True,
        moe={**_QWEN3_MOE, "expert_ffn": 1536},
        max_position_embeddings=_QWEN3_CONTEXT,
    ),
    "mixtral-8x7b": moe_preset(
        32,
        4096,
        32,
        8,
        32000,
        moe={"experts": 8, "experts_per_token": 2, "expert_ffn": 14336},
        max_position_embeddings=32768,
    ),
    "mixtral-8x22b": moe_preset(
        56,
        6144,
        48,
        8,
        32000,
        moe={"experts": 8, "experts_per_token": 2, "expert_ffn": 16384},
        max_position_embeddings=65536,
    ),
    "llama-4-scout": moe_preset(
        48, 5120, 40, 8, 202048, moe={**_LLAMA4, "experts": 16}, max_position_embeddings=10485760
    ),
    "llama-4-maverick": moe_preset(
        48,
        5120,
        40,
        8,
        202048,
        moe={**_LLAMA4, "experts": 128, "moe_every": 2},
        max_position_embeddings=1048576,
    ),
    "gpt-oss-120b": moe_preset(
        36,
        2880,
        64,
        8,
        201088,
        head_dim=64,
        moe={**_GPT_OSS, "experts": 128},
        attention=_GPT_OSS_ATTENTION,
        sliding_window={"layers": 18, "window": 128},
        max_position_embeddings=131072,
    ),
    "gpt-oss-20b": moe_preset(
        24,
        2880,
        64,
        8,
        201088,
        head_dim=64,
        moe={**_GPT_OSS, "experts": 32},
        attention=_GPT_OSS_ATTENTION,
        sliding_window={"layers": 12, "window": 128},
        max_position_embeddings=131072,
    ),
}
