"""MoE presets and hf_config import against the models' config.json fields.

Each config below copies the fields of the model's config.json (moe_specdec_pd.md §1h, AR-1 to
AR-9). The expected parameter count is recomputed here matrix by matrix, without the
simulator's formula; the KV bytes per token are the file's derived figures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simsched.config import presets
from simsched.config.hardware import ModelSpec
from simsched.config.model_presets import from_hf_config
from simsched.config.moe_shapes import active_params
from simsched.errors import InputError

DEEPSEEK = {
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "vocab_size": 129280,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "moe_layer_freq": 1,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "topk_method": "noaux_tc",
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "fp8"},
    "num_nextn_predict_layers": 1,  # the MTP module: the drafter of speculative method mtp
}
QWEN3_235B = {
    "model_type": "qwen3_moe",
    "hidden_size": 4096,
    "num_hidden_layers": 94,
    "num_attention_heads": 64,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "vocab_size": 151936,
    "intermediate_size": 12288,
    "moe_intermediate_size": 1536,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "tie_word_embeddings": False,
}
QWEN3_30B = {**QWEN3_235B, "hidden_size": 2048, "num_hidden_layers": 48,
             "num_attention_heads": 32, "moe_intermediate_size": 768}  # fmt: skip
MIXTRAL_8X7B = {
    "model_type": "mixtral",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
    "intermediate_size": 14336,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
}
MIXTRAL_8X22B = {**MIXTRAL_8X7B, "hidden_size": 6144, "num_hidden_layers": 56,
                 "num_attention_heads": 48, "intermediate_size": 16384}  # fmt: skip
_LLAMA4_TEXT = {
    "hidden_size": 5120,
    "num_hidden_layers": 48,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 202048,
    "intermediate_size": 8192,
    "intermediate_size_mlp": 16384,
    "num_local_experts": 16,
    "num_experts_per_tok": 1,
    "interleave_moe_layer_step": 1,
    "use_qk_norm": True,
}
SCOUT = {"model_type": "llama4", "text_config": _LLAMA4_TEXT}
MAVERICK = {"model_type": "llama4", "text_config": {**_LLAMA4_TEXT, "num_local_experts": 128,
            "interleave_moe_layer_step": 2, "use_qk_norm": False}}  # fmt: skip
GPT_OSS_120B = {
    "model_type": "gpt_oss",
    "hidden_size": 2880,
    "num_hidden_layers": 36,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "vocab_size": 201088,
    "intermediate_size": 2880,
    "num_local_experts": 128,
    "num_experts_per_tok": 4,
    "attention_bias": True,
    "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 18,
    "tie_word_embeddings": False,
    "quantization_config": {"quant_method": "mxfp4"},
}
GPT_OSS_20B = {**GPT_OSS_120B, "num_hidden_layers": 24, "num_local_experts": 32,
               "layer_types": ["sliding_attention", "full_attention"] * 12}  # fmt: skip


def count_params(config: dict[str, Any]) -> int:
    """Every weight matrix, bias and norm of the model, listed by its own module names."""
    c = config.get("text_config", config)
    kind = config["model_type"]
    h, n_layers, heads = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"]
    kv = c.get("num_key_value_heads", heads)
    hd = c.get("head_dim") or h // heads
    if kind == "deepseek_v3":
        qk = c["qk_nope_head_dim"] + c["qk_rope_head_dim"]
        attn = (
            h * c["q_lora_rank"]  # q_a_proj
            + c["q_lora_rank"]  # q_a_layernorm
            + c["q_lora_rank"] * heads * qk  # q_b_proj
            + h * (c["kv_lora_rank"] + c["qk_rope_head_dim"])  # kv_a_proj_with_mqa
            + c["kv_lora_rank"]  # kv_a_layernorm
            + c["kv_lora_rank"] * heads * (c["qk_nope_head_dim"] + c["v_head_dim"])  # kv_b
            + heads * c["v_head_dim"] * h  # o_proj
        )
    else:
        attn = h * heads * hd + 2 * h * kv * hd + heads * hd * h  # q, k, v, o
        if c.get("attention_bias"):
            attn += heads * hd + 2 * kv * hd + h
        if kind == "gpt_oss":
            attn += heads  # sinks
        if kind == "qwen3_moe":
            attn += 2 * hd  # q_norm, k_norm
    swiglu = 3 * h  # gate, up, down per unit of width
    n_experts = c.get("n_routed_experts") or c.get("num_local_experts") or c.get("num_experts")
    if kind == "deepseek_v3":
        ffn_e, dense = c["moe_intermediate_size"], c["intermediate_size"]
        moe = n_experts * swiglu * ffn_e + swiglu * ffn_e + h * n_experts + n_experts
        moe_layers = n_layers - c["first_k_dense_replace"]
    elif kind == "qwen3_moe":
        ffn_e, dense = c["moe_intermediate_size"], 0
        moe, moe_layers = n_experts * swiglu * ffn_e + h * n_experts, n_layers
    elif kind == "llama4":
        ffn_e, dense = c["intermediate_size"], c["intermediate_size_mlp"]
        moe = n_experts * swiglu * ffn_e + swiglu * ffn_e + h * n_experts  # + shared expert
        moe_layers = n_layers // c["interleave_moe_layer_step"]
    elif kind == "gpt_oss":
        ffn_e, dense = c["intermediate_size"], 0
        per_expert = swiglu * ffn_e + 2 * ffn_e + h  # gate_up and down biases
        moe, moe_layers = n_experts * per_expert + h * n_experts + n_experts, n_layers
    else:  # mixtral
        ffn_e, dense = c["intermediate_size"], 0
        moe, moe_layers = n_experts * swiglu * ffn_e + h * n_experts, n_layers
    norms = 2 * h
    layers = n_layers * (attn + norms) + moe_layers * moe + (n_layers - moe_layers) * swiglu * dense
    return layers + 2 * c["vocab_size"] * h + h  # untied embeddings and LM head, final norm


CASES = [
    # preset, config, KV bytes/token BF16 (§1h, derived), published total and active (B)
    ("deepseek-r1", DEEPSEEK, 70_272, 671, 37),
    ("qwen3-235b-a22b", QWEN3_235B, 192_512, 235, 22),
    ("qwen3-30b-a3b", QWEN3_30B, 98_304, 30.5, 3.3),
    ("mixtral-8x7b", MIXTRAL_8X7B, 131_072, None, None),
    ("mixtral-8x22b", MIXTRAL_8X22B, 229_376, None, None),
    ("llama-4-scout", SCOUT, 196_608, None, 17),
    ("llama-4-maverick", MAVERICK, 196_608, 400, 17),
    ("gpt-oss-120b", GPT_OSS_120B, 36_864, None, None),
    ("gpt-oss-20b", GPT_OSS_20B, 24_576, None, None),
]


@pytest.mark.parametrize(("name", "config", "kv_bytes", "total_b", "active_b"), CASES)
def test_preset_matches_its_config(
    name: str, config: dict, kv_bytes: int, total_b: float | None, active_b: float | None
) -> None:
    model = ModelSpec(name=name, **{**presets.MODEL_PRESETS[name], "weight_dtype": None})
    assert model.params == count_params(config)
    assert presets.kv_bytes_per_token(model) == kv_bytes
    if total_b is not None:  # the published round totals, to 1%
        assert model.params / 1e9 == pytest.approx(total_b, rel=0.01)
    if active_b is not None:  # published "active" rounds to a whole billion (3.3 to 0.1)
        assert active_params(model) / 1e9 == pytest.approx(active_b, abs=0.6)


@pytest.mark.parametrize(("name", "config", "kv_bytes", "total_b", "active_b"), CASES)
def test_hf_config_import_matches_the_preset(
    name: str, config: dict, kv_bytes: int, total_b: Any, active_b: Any, tmp_path: Path
) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    imported = from_hf_config(str(path))
    model = ModelSpec(**{k: v for k, v in imported.items() if k != "weight_dtype"})
    assert model.params == count_params(config)
    assert presets.kv_bytes_per_token(ModelSpec(**{**imported, "kv_dtype": "bf16"})) == kv_bytes
    preset = ModelSpec(name=name, **presets.MODEL_PRESETS[name])
    assert (model.moe, model.attention, model.sliding_window, model.mtp_modules) == (
        preset.moe,
        preset.attention,
        preset.sliding_window,
        preset.mtp_modules,
    )


@pytest.mark.parametrize(("name", "config", "kv_bytes", "total_b", "active_b"), CASES)
def test_a_preset_has_the_mtp_modules_its_config_ships(
    name: str, config: dict, kv_bytes: int, total_b: Any, active_b: Any
) -> None:
    # only DeepSeek-V3/R1 ship one (num_nextn_predict_layers 1); the others have none
    model = ModelSpec(name=name, **presets.MODEL_PRESETS[name])
    assert model.mtp_modules == config.get("num_nextn_predict_layers", 0)


def test_mla_kv_bytes_by_hand() -> None:
    # (kv_lora_rank 512 + qk_rope_head_dim 64) x 61 layers x 1 byte (FP8 cache) = 35,136 (§1h)
    model = ModelSpec(**{**presets.MODEL_PRESETS["deepseek-r1"], "kv_dtype": "fp8"})
    assert presets.kv_bytes_per_token(model) == 576 * 61 == 35_136


def test_fp4_experts_shrink_only_the_experts() -> None:
    # gpt-oss-120b: 36 layers x 128 experts x (3 x 2880 x 2880 + 2 x 2880 + 2880) routed
    # parameters at 0.5 byte, the rest at 2 bytes (BF16)
    model = ModelSpec(**presets.MODEL_PRESETS["gpt-oss-120b"])
    experts = 36 * 128 * (3 * 2880 * 2880 + 3 * 2880)
    assert presets.weight_bytes(model) == int((model.params - experts) * 2 + experts * 0.5)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"num_experts_per_tok": None}, "lacks 'num_experts_per_tok'"),
        ({"num_experts_per_tok": 2.5}, "num_experts_per_tok must be a whole number"),
        ({"num_experts_per_tok": 300}, "exceeds experts"),
        ({"layer_types": ["full_attention", "sliding_attention"]}, "layer_types lists 2 layers"),
    ],
)
def test_bad_moe_config_names_the_field(change: dict, message: str, tmp_path: Path) -> None:
    config = {**GPT_OSS_120B, **change}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({k: v for k, v in config.items() if v is not None}), "utf-8")
    with pytest.raises(ValueError, match=message):
        from_hf_config(str(path))


DENSE = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
         "num_key_value_heads": 8, "num_hidden_layers": 32, "intermediate_size": 14336,
         "vocab_size": 128256}  # fmt: skip


@pytest.mark.parametrize("config", [DENSE, DEEPSEEK], ids=["dense", "moe"])
@pytest.mark.parametrize("value", [False, 0.0, -1, "1"])
def test_a_bad_mtp_count_is_refused_on_dense_and_moe_configs_alike(
    config: dict, value: Any, tmp_path: Path
) -> None:
    # false and 0.0 were taken as "no module" on a dense config, refused on an MoE one
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "num_nextn_predict_layers": value}))
    with pytest.raises(ValueError, match="num_nextn_predict_layers must be a whole number from 0"):
        from_hf_config(str(path))


@pytest.mark.parametrize("config", [DENSE, DEEPSEEK], ids=["dense", "moe"])
def test_no_mtp_module_when_the_count_is_0_or_absent(config: dict, tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    for raw in (
        {**config, "num_nextn_predict_layers": 0},
        config | {"num_nextn_predict_layers": None},
    ):
        path.write_text(json.dumps(raw))
        assert ModelSpec(**from_hf_config(str(path))).mtp_modules == 0


@pytest.mark.parametrize("config", [DENSE, QWEN3_235B], ids=["dense", "moe"])
@pytest.mark.parametrize(
    ("dtype", "weights"),
    [("bfloat16", "bf16"), ("float16", "fp16"), ("float32", None), ("float8_e4m3fn", "fp8")],
)
def test_torch_dtype_names_the_weights_precision(
    config: dict, dtype: str, weights: str | None, tmp_path: Path
) -> None:
    # float32 checkpoints are served in 16 bits (vLLM's --dtype auto): no precision stated
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "torch_dtype": dtype}), "utf-8")
    assert from_hf_config(str(path)).get("weight_dtype") == weights


@pytest.mark.parametrize("config", [DENSE, QWEN3_235B], ids=["dense", "moe"])
@pytest.mark.parametrize("dtype", ["banana", "fp8", "bf16"])
def test_a_torch_dtype_no_torch_has_is_refused(config: dict, dtype: str, tmp_path: Path) -> None:
    # simsched's own names are not torch's: a config.json says "bfloat16", never "bf16"
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "torch_dtype": dtype}), "utf-8")
    refused = f"torch_dtype .{dtype}. is not a torch dtype simsched reads"
    with pytest.raises(ValueError, match=refused):
        from_hf_config(str(path))


@pytest.mark.parametrize(
    ("config", "quant"),
    [
        (GPT_OSS_120B, {"quant_method": "modelopt", "quant_algo": "NVFP4"}),
        (GPT_OSS_120B, {"quant_method": "mxfp4x"}),
        (GPT_OSS_120B, {"quant_method": 5}),
        (GPT_OSS_120B, "mxfp4"),
        (QWEN3_235B, {"quant_method": "mxfp4"}),  # gpt-oss's experts' format only
        (DENSE, {"quant_method": "awq", "bits": 4}),
    ],
    ids=["modelopt", "typo", "number", "not-a-mapping", "mxfp4-elsewhere", "awq"],
)
def test_a_quantization_simsched_does_not_read_is_refused(
    config: dict, quant: Any, tmp_path: Path
) -> None:
    # read past, the weights would be taken as BF16 without a word
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "quantization_config": quant}), "utf-8")
    refused = (
        r"quantization_config must be a mapping"
        if not isinstance(quant, dict)
        else r"quantization_config[.]quant_method .* is not one simsched reads"
    )
    with pytest.raises(ValueError, match=refused):
        from_hf_config(str(path))


@pytest.mark.parametrize("config", [DENSE, QWEN3_235B], ids=["dense", "moe"])
def test_an_fp8_quantization_config_gives_fp8_weights(config: dict, tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    fp8 = {**config, "quantization_config": {"quant_method": "fp8"}}
    path.write_text(json.dumps(fp8), "utf-8")
    assert from_hf_config(str(path))["weight_dtype"] == "fp8"


def test_a_precision_stated_beside_hf_config_stands_for_an_unread_quantization(
    tmp_path: Path,
) -> None:
    from simsched.config.loading import load_scenario

    # ModelOpt's NVFP4 gpt-oss: refused alone, read when the mapping states the precision
    folder = tmp_path / "oss"
    folder.mkdir()
    quant = {"quant_method": "modelopt", "quant_algo": "NVFP4"}
    (folder / "config.json").write_text(json.dumps({**GPT_OSS_120B, "quantization_config": quant}))
    burst = Path(__file__).resolve().parents[2] / "calibration" / "scenarios" / "fixed_burst.yaml"
    path = folder / "config.json"
    with pytest.raises(InputError, match="is not one simsched reads"):
        load_scenario(burst, [f"cluster.model={{hf_config: {path}}}", "cluster.gpu=b200"])
    moe = ("{experts: 128, experts_per_token: 4, expert_ffn: 2880, router_bias: true, "
           "expert_bias: true, expert_dtype: fp4, fp4_format: nvfp4}")  # fmt: skip
    stated = f"cluster.model={{hf_config: {path}, moe: {moe}}}"
    model = load_scenario(burst, [stated, "cluster.gpu=b200"]).cluster.model
    assert (model.moe.expert_dtype, model.moe.fp4_format) == ("fp4", "nvfp4")
    # a key present but stating nothing does not stand for the file's quantization
    unstated = moe.replace(", expert_dtype: fp4, fp4_format: nvfp4", "")
    for mapping in (f"moe: {unstated}", "weight_dtype: null", "moe: null"):
        with pytest.raises(InputError, match="is not one simsched reads"):
            load_scenario(burst, [f"cluster.model={{hf_config: {path}, {mapping}}}"])


@pytest.mark.parametrize(
    ("config", "message"),
    [
        # Qwen1.5/2-MoE: a shared expert of its own size, which the Qwen3 reading would drop
        (
            {**QWEN3_235B, "model_type": "qwen2_moe", "shared_expert_intermediate_size": 5632},
            "model_type 'qwen2_moe' is not a family this reader knows",
        ),
        ({**MIXTRAL_8X7B, "model_type": ""}, "model_type '' is not a family this reader knows"),
        # a family's expert count missing: an MoE config, not a dense model of its other fields
        ({**QWEN3_235B, "num_experts": None}, "lacks 'num_experts'"),
        ({**MIXTRAL_8X7B, "num_local_experts": None}, "lacks 'num_local_experts'"),
        # DeepSeek attends with MLA: without its latent rank it is not standard attention
        ({**DEEPSEEK, "kv_lora_rank": None}, "lacks 'kv_lora_rank'"),
    ],
)
def test_a_config_the_reader_would_misread_is_refused(
    config: dict, message: str, tmp_path: Path
) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({k: v for k, v in config.items() if v is not None}), "utf-8")
    with pytest.raises(ValueError, match=message):
        from_hf_config(str(path))
