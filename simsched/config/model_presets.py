"""Model presets from their `config.json` shapes, and any dense model from its own `config.json`.

A preset is its published shape; the parameter count is computed from the shape (`shape_params`)
so that the FLOPs, the weights and the KV cache all follow from one set of numbers. The two
Llama 3 presets keep the exact counts that their configs' `num_parameters` state, which the
formula reproduces (tests/sim/cluster/test_latency.py).

Precisions: `weight_dtype` and `kv_dtype` (bf16, fp16, fp8, int8, int4, fp4). Unset, both take
`dtype_bytes` (2, BF16), so a mapping written for the older single-precision field still means
the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DTYPE_BYTES: dict[str, float] = {
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "fp4": 0.5,
}
DTYPES = tuple(DTYPE_BYTES)


def dtype_bytes(model: Any, what: str) -> float:
    """Bytes per weight (`what="weight"`) or per KV-cache element (`"kv"`)."""
    name = getattr(model, f"{what}_dtype", None)
    return DTYPE_BYTES[name] if name else float(model.dtype_bytes)


def compute_dtype(model: Any) -> str:
    """The precision the GEMMs run in: FP8 and FP4 checkpoints compute in their precision;
    int8/int4 are weight-only (dequantised to BF16 in the kernel, as gpt-fast and vLLM's
    Marlin do), and so is everything else."""
    name = getattr(model, "weight_dtype", None)
    return name if name in ("fp8", "fp4") else "bf16"


def shape_params(
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    ffn: int,
    vocab: int,
    tied: bool = False,
    qk_norm: bool = False,
) -> int:
    """Parameters of a dense decoder (RMSNorm, SwiGLU, no biases): layers, embeddings, head."""
    attention = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
    per_layer = attention + 3 * hidden * ffn + 2 * hidden + (2 * head_dim if qk_norm else 0)
    return layers * per_layer + vocab * hidden * (1 if tied else 2) + hidden


def _preset(layers, hidden, heads, kv_heads, ffn, vocab, head_dim=128, **extra) -> dict[str, Any]:
    qk_norm = extra.pop("qk_norm", False)
    params = shape_params(layers, hidden, heads, kv_heads, head_dim, ffn, vocab, qk_norm=qk_norm)
    return {
        "params": params,
        "layers": layers,
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "vocab_size": vocab,
        "dtype_bytes": 2,
        **extra,
    }


MODEL_PRESETS: dict[str, dict[str, Any]] = {
    # meta-llama/Llama-2-{7b,13b,70b}-hf config.json: vocab 32000; 7B/13B multi-head attention.
    "llama-2-7b": _preset(32, 4096, 32, 32, 11008, 32000),
    "llama-2-13b": _preset(40, 5120, 40, 40, 13824, 32000),
    "llama-2-70b": _preset(80, 8192, 64, 8, 28672, 32000),
    # meta-llama/Meta-Llama-3-8B and -70B config.json (num_parameters 8,030,261,248 and
    # 70,553,706,496); Llama 3.1 and 3.3 keep the shapes (only the RoPE scaling differs).
    "llama-3-8b": _preset(32, 4096, 32, 8, 14336, 128256),
    "llama-3-70b": _preset(80, 8192, 64, 8, 28672, 128256),
    "llama-3.1-8b": _preset(32, 4096, 32, 8, 14336, 128256),
    "llama-3.1-70b": _preset(80, 8192, 64, 8, 28672, 128256),
    "llama-3.3-70b": _preset(80, 8192, 64, 8, 28672, 128256),
    # meta-llama/Llama-3.1-405B config.json: 126 layers, hidden 16384, 128 / 8 heads, MLP 53248.
    "llama-3.1-405b": _preset(126, 16384, 128, 8, 53248, 128256),
    # Qwen/Qwen3-{8B,14B,32B} config.json: QK-norm, untied embeddings, vocab 151936; the 32B
    # has 64 query heads of 128 (8192 wide) on a 5120-wide residual stream.
    "qwen3-8b": _preset(36, 4096, 32, 8, 12288, 151936, qk_norm=True),
    "qwen3-14b": _preset(40, 5120, 40, 8, 17408, 151936, qk_norm=True),
    "qwen3-32b": _preset(64, 5120, 64, 8, 25600, 151936, qk_norm=True),
    # mistralai/Mistral-7B-v0.3 config.json: vocab 32768.
    "mistral-7b": _preset(32, 4096, 32, 8, 14336, 32768),
}

_HF_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": None}


def from_hf_config(path: str) -> dict[str, Any]:
    """A model mapping from a Hugging Face `config.json` of a dense decoder (Llama-like)."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON: {exc.msg} (line {exc.lineno})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path} is not a config.json mapping")
    if raw.get("num_local_experts") or raw.get("num_experts"):
        raise ValueError(f"{path} describes a mixture-of-experts model; only dense ones fit")
    try:
        hidden, heads = int(raw["hidden_size"]), int(raw["num_attention_heads"])
        layers, ffn, vocab = (
            int(raw[k]) for k in ("num_hidden_layers", "intermediate_size", "vocab_size")
        )
    except KeyError as exc:
        raise ValueError(f"{path} lacks {exc.args[0]!r}") from None
    except (TypeError, ValueError):
        raise ValueError(f"{path}: the shape fields must be whole numbers") from None
    kv_heads = int(raw.get("num_key_value_heads") or heads)
    head_dim = int(raw.get("head_dim") or hidden // heads)
    tied = bool(raw.get("tie_word_embeddings", False))
    qk_norm = str(raw.get("model_type", "")).startswith("qwen3")
    params = shape_params(layers, hidden, heads, kv_heads, head_dim, ffn, vocab, tied, qk_norm)
    model = {
        "name": Path(path).parent.name or "hf_config",
        "params": params,
        "layers": layers,
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "vocab_size": vocab,
        "tied_embeddings": tied,
    }
    dtype = _HF_DTYPES.get(str(raw.get("torch_dtype", "bfloat16")))
    if dtype:
        model["weight_dtype"] = dtype
    return model
