"""A model mapping from the `config.json` of a Mixture-of-Experts decoder.

Five families name their fields differently (moe_specdec_pd.md §1h lists them):
- DeepSeek-V3/R1 (`deepseek_v3`): n_routed_experts, num_experts_per_tok, n_shared_experts,
  moe_intermediate_size, first_k_dense_replace, moe_layer_freq, intermediate_size (dense
  layers), and MLA's q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
- Qwen3-MoE (`qwen3_moe`): num_experts, num_experts_per_tok, moe_intermediate_size,
  decoder_sparse_step, mlp_only_layers;
- Mixtral (`mixtral`): num_local_experts, num_experts_per_tok, intermediate_size (per expert);
- Llama 4 (`llama4`): the shape under `text_config`: num_local_experts, num_experts_per_tok,
  intermediate_size (per expert), intermediate_size_mlp (dense layers),
  interleave_moe_layer_step, and one shared expert per MoE layer (the model code's);
- gpt-oss (`gpt_oss`): num_local_experts, num_experts_per_tok, intermediate_size, layer_types
  ("sliding_attention" / "full_attention"), sliding_window, attention biases and sinks, and
  MXFP4 experts (`quantization_config.quant_method: mxfp4`).
Every field read is checked as the dense reader checks its own (a whole number in range, named
with the file in the message).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from simsched.config.model_presets import served_context
from simsched.config.moe import GqaSpec, MlaSpec, MoeSpec, SlidingWindowSpec
from simsched.config.moe_shapes import shape, total_params

_MOST = 2**20


# The MoE families read, by `model_type`, with the field that counts their routed experts.
# Another MoE model type (Qwen1.5/2-MoE's `qwen2_moe` with its differently sized shared expert,
# say) names or means its fields otherwise: read as one of these it would be silently misread.
EXPERT_COUNT_KEYS = {
    "deepseek_v3": "n_routed_experts",
    "deepseek_v2": "n_routed_experts",
    "qwen3_moe": "num_experts",
    "mixtral": "num_local_experts",
    "llama4": "num_local_experts",
    "llama4_text": "num_local_experts",  # Llama 4's decoder config on its own
    "gpt_oss": "num_local_experts",
}
EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")


def is_moe(raw: dict[str, Any]) -> bool:
    """A config of one of the MoE families (whatever fields it lacks: the reader names them),
    or of any model type with an expert count (which the reader then refuses by its type)."""
    if str(raw.get("model_type", "")) in EXPERT_COUNT_KEYS:
        return True
    text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw
    return any(text.get(key) for key in EXPERT_KEYS)


def moe_from_hf(raw: dict[str, Any], path: str) -> dict[str, Any]:
    """The shape fields and `moe`/`attention`/`sliding_window` sections of a MoE config."""
    family = str(raw.get("model_type", ""))
    if family not in EXPERT_COUNT_KEYS:
        known = ", ".join(EXPERT_COUNT_KEYS)
        raise ValueError(
            f"{path} (a mixture-of-experts config): model_type {family!r} is not a family this "
            f"reader knows ({known}), whose fields it would misread; describe the model with "
            "model: {moe: ...} and its shape instead (docs/moe.md)"
        )
    if isinstance(raw.get("text_config"), dict):  # Llama 4 nests the decoder's shape
        raw = raw["text_config"]
    field = _Fields(raw, path)
    layers, hidden = field.whole("num_hidden_layers"), field.whole("hidden_size")
    heads = field.whole("num_attention_heads")
    kv_heads = field.whole("num_key_value_heads", required=False) or heads
    head_dim = field.whole("head_dim", required=False) or hidden // heads
    vocab = field.whole("vocab_size", most=2**30)
    moe = _moe_section(field, family)
    try:
        moe_spec = MoeSpec(**moe)
    except ValidationError as exc:  # e.g. more experts per token than experts
        message = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        raise ValueError(f"{path} (a mixture-of-experts config): {message}") from None
    attention: dict[str, Any] | None = None
    if family.startswith("deepseek") or "kv_lora_rank" in raw:  # MLA: DeepSeek's attention
        attention = {
            "kind": "mla",
            "kv_lora_rank": field.whole("kv_lora_rank"),
            "qk_rope_head_dim": field.whole("qk_rope_head_dim"),
            "qk_nope_head_dim": field.whole("qk_nope_head_dim"),
            "v_head_dim": field.whole("v_head_dim"),
            "q_lora_rank": field.whole("q_lora_rank", required=False),
        }
        kv_heads = 1  # one latent "head"
        head_dim = attention["qk_rope_head_dim"] + attention["qk_nope_head_dim"]
    elif raw.get("attention_bias") is True or family == "gpt_oss":
        attention = {"kind": "gqa", "bias": raw.get("attention_bias") is True}
        attention["sinks"] = family == "gpt_oss"
    window = _sliding_window(field, raw, layers)
    tied = raw.get("tie_word_embeddings", False) is True
    qk_norm = family.startswith("qwen3")  # Llama 4's QK norm has no weights
    model = shape(
        layers=layers,
        hidden_size=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        vocab_size=vocab,
        moe=moe_spec,
        attention=(MlaSpec if attention and attention["kind"] == "mla" else GqaSpec)(
            **(attention or {})
        ),
        sliding_window=SlidingWindowSpec(**window) if window else None,
    )
    result: dict[str, Any] = {
        "params": total_params(model, 0, tied=tied, qk_norm=qk_norm),
        "layers": layers,
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "vocab_size": vocab,
        "tied_embeddings": tied,
        "moe": moe,
    }
    if attention:
        result["attention"] = {k: v for k, v in attention.items() if v is not None}
    if window:
        result["sliding_window"] = window
    mtp = field.whole("num_nextn_predict_layers", required=False, most=64, least=0)
    if mtp:  # DeepSeek-V3/R1's MTP module: the drafter of `speculative: {method: mtp}`
        result["mtp_modules"] = mtp
    context = served_context(raw, path)
    if context:  # Llama 4's under text_config, as its shape
        result["max_position_embeddings"] = context
    return result


def _moe_section(field: _Fields, family: str) -> dict[str, Any]:
    raw = field.raw
    moe: dict[str, Any] = {
        "experts": field.whole(EXPERT_COUNT_KEYS[family]),
        "experts_per_token": field.whole("num_experts_per_tok"),
    }
    if family.startswith("deepseek"):
        moe["expert_ffn"] = field.whole("moe_intermediate_size")
        moe["shared_experts"] = field.whole("n_shared_experts", required=False, least=0) or 0
        moe["first_dense_layers"] = field.whole("first_k_dense_replace", required=False, least=0)
        moe["moe_every"] = field.whole("moe_layer_freq", required=False) or 1
        moe["dense_ffn"] = field.whole("intermediate_size", most=2**24)
        moe["router_bias"] = raw.get("topk_method") == "noaux_tc"  # e_score_correction_bias
    elif family == "qwen3_moe":
        moe["expert_ffn"] = field.whole("moe_intermediate_size")
        moe["moe_every"] = field.whole("decoder_sparse_step", required=False) or 1
        if raw.get("mlp_only_layers"):
            raise field.error("mlp_only_layers", "must be empty: dense layers at chosen indices "
                              "are not modelled")  # fmt: skip
        if moe["moe_every"] > 1:
            moe["dense_ffn"] = field.whole("intermediate_size", most=2**24)
    elif family.startswith("llama4"):
        moe["expert_ffn"] = field.whole("intermediate_size", most=2**24)
        moe["shared_experts"] = 1
        moe["moe_every"] = field.whole("interleave_moe_layer_step", required=False) or 1
        moe["dense_ffn"] = field.whole("intermediate_size_mlp", most=2**24)
    else:  # Mixtral and gpt-oss: intermediate_size per expert
        moe["expert_ffn"] = field.whole("intermediate_size", most=2**24)
        if family == "gpt_oss":
            moe.update(router_bias=True, expert_bias=True)
            quant = raw.get("quantization_config")
            if isinstance(quant, dict) and quant.get("quant_method") == "mxfp4":
                moe.update(expert_dtype="fp4", fp4_format="mxfp4")
    return {k: v for k, v in moe.items() if v is not None}


def _sliding_window(field: _Fields, raw: dict[str, Any], layers: int) -> dict[str, Any] | None:
    types = raw.get("layer_types")
    if not isinstance(types, list):
        return None
    sliding = sum(1 for kind in types if kind == "sliding_attention")
    if sliding == 0:
        return None
    if len(types) != layers:
        raise field.error("layer_types", f"lists {len(types)} layers, not {layers}")
    return {"layers": sliding, "window": field.whole("sliding_window")}


class _Fields:
    """Checked reads of a config's whole-number fields, errors naming the file and the field."""

    def __init__(self, raw: dict[str, Any], path: str) -> None:
        self.raw, self.path = raw, path

    def error(self, key: str, what: str) -> ValueError:
        return ValueError(f"{self.path} (a mixture-of-experts config): {key} {what}")

    def whole(self, key: str, *, required: bool = True, most: int = _MOST, least: int = 1) -> Any:
        value = self.raw.get(key)
        if value is None:
            if required:
                raise ValueError(f"{self.path} (a mixture-of-experts config) lacks {key!r}")
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
            shown = json.dumps(value) if isinstance(value, (bool, int, float, str)) else type(
                value).__name__  # fmt: skip
            raise self.error(key, f"must be a whole number from {least} to {most:,}, not {shown}")
        return value
