"""What follows from a model's shape when it may be MoE, MLA or windowed: its parameter count,
the parameters a token activates, its weight bytes and its KV bytes per token.

A dense GQA model without these sections gets exactly what `model_presets.shape_params` and
`presets.kv_bytes_per_token` gave before (tests/config/test_moe_shapes.py). Formulas:
docs/moe.md.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from simsched.config.model_presets import DTYPE_BYTES, dtype_bytes
from simsched.config.moe import MoeSpec, attention_of, expert_params, moe_ffn_params


def total_params(model: Any, ffn: int, *, tied: bool = False, qk_norm: bool = False) -> int:
    """All parameters of a decoder described by `model` (a ModelSpec-like object with `layers`,
    `hidden_size`, `heads`, `kv_heads`, `head_dim`, `vocab_size` and optional `moe`,
    `attention`): per layer attention + two RMSNorms (+ QK norms) + its FFN (dense SwiGLU of
    width `ffn`, or the MoE layer's experts, shared experts and router); embeddings, LM head
    (once if tied) and the final norm."""
    hidden, layers = model.hidden_size, model.layers
    attention = attention_of(model).params(model) + 2 * hidden
    attention += 2 * model.head_dim if qk_norm else 0
    moe: MoeSpec | None = getattr(model, "moe", None)
    moe_layers = moe.moe_layers(layers) if moe else 0
    dense_ffn = (moe.dense_ffn if moe else ffn) * 3 * hidden
    moe_ffn = sum(moe_ffn_params(moe, hidden)) if moe else 0
    body = layers * attention + moe_layers * moe_ffn + (layers - moe_layers) * dense_ffn
    return body + model.vocab_size * hidden * (1 if tied else 2) + hidden


def idle_expert_params(model: Any) -> int:
    """Parameters a token does not touch: the routed experts it is not sent to, every layer."""
    moe = getattr(model, "moe", None)
    if moe is None:
        return 0
    unused = moe.experts - moe.experts_per_token
    return moe.moe_layers(model.layers) * unused * expert_params(moe, model.hidden_size)


def active_params(model: Any) -> float:
    """Parameters one token activates (all of them for a dense model)."""
    return model.params - idle_expert_params(model)


def routed_expert_params(model: Any) -> int:
    """All routed experts' parameters (0 for a dense model)."""
    moe = getattr(model, "moe", None)
    if moe is None:
        return 0
    return moe.moe_layers(model.layers) * moe.experts * expert_params(moe, model.hidden_size)


def weight_bytes(model: Any) -> int:
    """Bytes of all weights: routed experts at `moe.expert_dtype` (if set), the rest at the
    model's weight precision."""
    each = dtype_bytes(model, "weight")
    moe = getattr(model, "moe", None)
    if moe is None or moe.expert_dtype is None:
        return int(model.params * each)
    experts = routed_expert_params(model)
    return int((model.params - experts) * each + experts * DTYPE_BYTES[moe.expert_dtype])


def full_attention_layers(model: Any) -> int:
    """Layers whose cache grows with the context: all but the sliding-window ones."""
    return model.layers - sliding_window(model)[0]


def sliding_window(model: Any) -> tuple[int, int]:
    """(layers, window) of the model's sliding-window layers; (0, 0) when it has none."""
    window = getattr(model, "sliding_window", None)
    return (window.layers, window.window) if window else (0, 0)


def sliding_cache_bytes(model: Any) -> int:
    """Bytes a sequence holds in its sliding-window layers once past the window: layers x
    window x the kind's elements x precision (not counted in the KV blocks, docs/moe.md)."""
    layers, window = sliding_window(model)
    return int(layers * window * attention_of(model).kv_elements(model) * dtype_bytes(model, "kv"))


def kv_bytes_per_token(model: Any) -> int:
    """KV-cache bytes one token adds: full-attention layers x the kind's elements x precision.

    GQA: 2 x kv_heads x head_dim per layer; MLA: kv_lora_rank + qk_rope_head_dim per layer.
    Sliding-window layers hold at most `window` tokens per sequence whatever the context; that
    bounded share is left out of the per-token figure (docs/moe.md says so).
    """
    elements = attention_of(model).kv_elements(model)
    return int(full_attention_layers(model) * elements * dtype_bytes(model, "kv"))


def shape(**fields: Any) -> SimpleNamespace:
    """A model-like object for computing a preset's parameters before its ModelSpec exists."""
    return SimpleNamespace(**fields)
