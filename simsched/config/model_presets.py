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

from simsched.errors import InputError, display_path

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


_QWEN3_CONTEXT = {"max_position_embeddings": 40960}

MODEL_PRESETS: dict[str, dict[str, Any]] = {
    # meta-llama/Llama-2-{7b,13b,70b}-hf config.json: vocab 32000; 7B/13B multi-head attention;
    # a context of 4,096 tokens (max_position_embeddings).
    "llama-2-7b": _preset(32, 4096, 32, 32, 11008, 32000, max_position_embeddings=4096),
    "llama-2-13b": _preset(40, 5120, 40, 40, 13824, 32000, max_position_embeddings=4096),
    "llama-2-70b": _preset(80, 8192, 64, 8, 28672, 32000, max_position_embeddings=4096),
    # meta-llama/Meta-Llama-3-8B and -70B config.json (num_parameters 8,030,261,248 and
    # 70,553,706,496); Llama 3.1 and 3.3 keep the shapes: their RoPE scaling takes the context
    # (max_position_embeddings) from Llama 3's 8,192 tokens to 131,072.
    "llama-3-8b": _preset(32, 4096, 32, 8, 14336, 128256, max_position_embeddings=8192),
    "llama-3-70b": _preset(80, 8192, 64, 8, 28672, 128256, max_position_embeddings=8192),
    "llama-3.1-8b": _preset(32, 4096, 32, 8, 14336, 128256, max_position_embeddings=131072),
    "llama-3.1-70b": _preset(80, 8192, 64, 8, 28672, 128256, max_position_embeddings=131072),
    "llama-3.3-70b": _preset(80, 8192, 64, 8, 28672, 128256, max_position_embeddings=131072),
    # meta-llama/Llama-3.1-405B config.json: 126 layers, hidden 16384, 128 / 8 heads, MLP 53248.
    "llama-3.1-405b": _preset(126, 16384, 128, 8, 53248, 128256, max_position_embeddings=131072),
    # Qwen/Qwen3-{8B,14B,32B} config.json: QK-norm, untied embeddings, vocab 151936; the 32B
    # has 64 query heads of 128 (8192 wide) on a 5120-wide residual stream; a context of 40,960
    # tokens each (max_position_embeddings, without the YaRN scaling their cards describe).
    "qwen3-8b": _preset(36, 4096, 32, 8, 12288, 151936, qk_norm=True, **_QWEN3_CONTEXT),
    "qwen3-14b": _preset(40, 5120, 40, 8, 17408, 151936, qk_norm=True, **_QWEN3_CONTEXT),
    "qwen3-32b": _preset(64, 5120, 64, 8, 25600, 151936, qk_norm=True, **_QWEN3_CONTEXT),
    # mistralai/Mistral-7B-v0.3 config.json: vocab 32768, a context of 32,768 tokens.
    "mistral-7b": _preset(32, 4096, 32, 8, 14336, 32768, max_position_embeddings=32768),
}

# torch_dtype names: a float32 checkpoint is served in 16 bits (vLLM's `--dtype auto` runs it in
# FP16), so it states no weight precision (None: `dtype_bytes`, 2)
_HF_DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": None,
    "float": None,
    "float8_e4m3fn": "fp8",
}
# A config.json is a few KiB; the bound keeps /dev/zero, a FIFO or a huge file from being read.
MAX_HF_CONFIG_BYTES = 1024**2
# The shape fields read, each a positive whole number at most this (far beyond any model, yet
# small enough that the parameter count stays within what `ModelSpec` takes).
_SHAPE_FIELDS = {
    "hidden_size": 2**20,
    "num_attention_heads": 2**20,
    "num_hidden_layers": 2**20,
    "intermediate_size": 2**24,
    "vocab_size": 2**30,
}
_OPTIONAL_FIELDS = {"num_key_value_heads": 2**20, "head_dim": 2**20}  # null or absent: derived
# The longest context read from a config.json (`max_position_embeddings`), as `ModelSpec` takes
# it: Llama 4 Scout's 10,485,760 is the largest published
MOST_CONTEXT = 2**31


def from_hf_config(path: str, precision_stated: bool = False) -> dict[str, Any]:
    """A model mapping from a Hugging Face `config.json` of a dense decoder (Llama-like), or of
    a Mixture-of-Experts one (hf_moe.py).

    Every field read is checked (a ValueError naming the file and the field): the shape fields
    are positive whole numbers (not 32.7, `true`, 0 or Infinity), the query heads are a multiple
    of the key/value heads, and without `head_dim` the heads divide `hidden_size`. The mapping
    keeps the file's path under `hf_config`, so that a run knows it reads the file.
    """
    raw = _read_hf_config(path)
    source, path = path, display_path(path)  # messages show it as the user would type it
    _check_dtype_names(raw, path)
    if not precision_stated:  # the mapping beside it states the precision the file cannot
        quant_method(raw, path)  # one simsched reads, or refused
    from simsched.config import hf_moe  # it computes with moe_shapes, which imports this module

    if hf_moe.is_moe(raw):
        model = {"name": Path(source).parent.name or "hf_config", **hf_moe.moe_from_hf(raw, path)}
        return {**model, **_weight_dtype(raw), "hf_config": str(source)}
    shape = {key: _whole(raw, key, most, path) for key, most in _SHAPE_FIELDS.items()}
    hidden, heads = shape["hidden_size"], shape["num_attention_heads"]
    optional = {key: _whole(raw, key, most, path, required=False)
                for key, most in _OPTIONAL_FIELDS.items()}  # fmt: skip
    kv_heads = optional["num_key_value_heads"] or heads
    if heads % kv_heads:
        raise ValueError(
            f"{path}: num_attention_heads ({heads}) must be a multiple of num_key_value_heads "
            f"({kv_heads}): each key/value head serves a whole group of query heads"
        )
    head_dim = optional["head_dim"]
    if head_dim is None:
        if hidden % heads:
            raise ValueError(
                f"{path}: hidden_size ({hidden}) must be a multiple of num_attention_heads "
                f"({heads}) when head_dim is not given (head_dim = hidden_size / heads)"
            )
        head_dim = hidden // heads
    tied = raw.get("tie_word_embeddings", False)
    if not isinstance(tied, bool):
        raise ValueError(f"{path}: tie_word_embeddings must be true or false, not {tied!r}")
    layers, ffn = shape["num_hidden_layers"], shape["intermediate_size"]
    vocab = shape["vocab_size"]
    qk_norm = str(raw.get("model_type", "")).startswith("qwen3")
    params = shape_params(layers, hidden, heads, kv_heads, head_dim, ffn, vocab, tied, qk_norm)
    from simsched.config.hardware import MAX_MODEL_PARAMS  # hardware imports the MoE shapes

    if params > MAX_MODEL_PARAMS:  # name the file's fields, not the setting they computed
        raise ValueError(
            f"{path}: its shape (num_hidden_layers, hidden_size, intermediate_size, vocab_size) "
            f"gives {params:.3g} parameters, more than {MAX_MODEL_PARAMS:g}"
        )
    model = {
        "name": Path(source).parent.name or "hf_config",
        "params": params,
        "layers": layers,
        "hidden_size": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "vocab_size": vocab,
        "tied_embeddings": tied,
        "hf_config": str(source),
    }
    model.update(_weight_dtype(raw))
    # a dense model with MTP modules; 0 or absent: none (false or 0.0 is no count, as on an
    # MoE config: hf_moe)
    mtp = _whole(raw, "num_nextn_predict_layers", 64, path, required=False, least=0)
    if mtp:
        model["mtp_modules"] = mtp
    context = served_context(raw, path)
    if context:  # absent or null: no limit checked
        model["max_position_embeddings"] = context
    return model


# RoPE scalings whose factor vLLM does not apply to the context: Llama 3.1's `llama3` (its
# max_position_embeddings is already the scaled context) and Phi-3's LongRoPE (`su`, `longrope`)
UNSCALED_ROPE = ("su", "longrope", "llama3")
# The config.json keys vLLM reads a context from, the smallest winning (`_get_and_verify_max_len`
# in vllm/config/model.py); Cohere's `model_max_length`, where given, wins over them all
CONTEXT_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)


def served_context(raw: dict[str, Any], path: str) -> int | None:
    """The context vLLM serves a config.json at by default (vllm/config/model.py,
    `_get_and_verify_max_len`): the smallest of CONTEXT_KEYS (`model_max_length` where given),
    times the RoPE scaling's `factor` unless its type is in UNSCALED_ROPE (or the model is a
    Gemma 3, whose context is scaled already), YaRN's from its
    `original_max_position_embeddings` (Qwen3 with YaRN turned on: 32,768 x 4 = 131,072;
    gpt-oss: 4,096 x 32 = 131,072, its own max_position_embeddings); LongRoPE's, the config's
    `original_max_position_embeddings`. None without any of the keys: no limit is checked."""
    found = {k: _whole(raw, k, MOST_CONTEXT, path, required=False) for k in CONTEXT_KEYS}
    stated = [value for value in found.values() if value is not None]
    if not stated:
        return None
    context = found["model_max_length"] or min(stated)
    rope = raw.get("rope_scaling") or raw.get("rope_parameters")
    if not isinstance(rope, dict) or "gemma3" in str(raw.get("model_type", "")):
        return context
    key = "rope_scaling" if raw.get("rope_scaling") else "rope_parameters"
    # transformers v5 keys the parameters by layer type; vLLM takes one factor for them all
    layers = rope.values() if all(isinstance(v, dict) for v in rope.values()) else [rope]
    factor, base = 1.0, context
    for parameters in layers:
        kind = parameters.get("rope_type", parameters.get("type"))
        if kind in ("su", "longrope"):
            original = _whole(raw, "original_max_position_embeddings", MOST_CONTEXT, path, False)
            return original or context
        if kind in UNSCALED_ROPE or parameters.get("factor") is None:
            continue
        factor = parameters["factor"]
        if (
            isinstance(factor, bool)
            or not isinstance(factor, int | float)
            or not 0 < factor < 2**20
        ):
            raise ValueError(f"{path}: {key}.factor must be a number above 0, not {factor!r}")
        if kind == "yarn":
            field = f"{path} ({key}.original_max_position_embeddings)"
            base = _whole(parameters, "original_max_position_embeddings", MOST_CONTEXT, field,
                          required=False) or context  # fmt: skip
    return min(int(base * factor), MOST_CONTEXT)


# quantization_config.quant_method values a config.json import reads: FP8 weights (DeepSeek-V3
# and R1's block-scaled e4m3, FP8 checkpoints), and gpt-oss's MXFP4 experts (hf_moe.py)
READ_QUANT_METHODS = {"fp8": None, "mxfp4": "gpt_oss"}  # method: the one model_type, or any


def quant_method(raw: dict[str, Any], path: str) -> str | None:
    """The checkpoint's `quantization_config.quant_method`, when it is one simsched reads; None
    without a quantization_config. Any other (AWQ, GPTQ, ModelOpt's NVFP4, a typo) is refused:
    read past, its weights would be taken as BF16 without a word."""
    quant = raw.get("quantization_config")
    if quant is None:
        return None
    if not isinstance(quant, dict):
        raise ValueError(f"{path}: quantization_config must be a mapping with a quant_method")
    method = quant.get("quant_method")
    if isinstance(method, str) and method in READ_QUANT_METHODS:
        family = READ_QUANT_METHODS[method]
        if family is None or family == raw.get("model_type"):
            return method
    raise ValueError(
        f"{path}: quantization_config.quant_method {method!r} is not one simsched reads "
        "(fp8; mxfp4 for gpt-oss): state the weights' precision beside hf_config in the model "
        "mapping (weight_dtype, or a moe block with expert_dtype and fp4_format)"
    )


def _weight_dtype(raw: dict[str, Any]) -> dict[str, str]:
    """A checkpoint's weight precision: FP8 when its quantization_config says so (DeepSeek-V3
    and R1's block-scaled e4m3), else its torch_dtype (under `text_config` where it has one)."""
    quant = raw.get("quantization_config")
    if isinstance(quant, dict) and quant.get("quant_method") == "fp8":
        return {"weight_dtype": "fp8"}
    text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw
    dtype = _HF_DTYPES.get(str(text.get("torch_dtype", raw.get("torch_dtype", "bfloat16"))))
    return {"weight_dtype": dtype} if dtype else {}


def _check_dtype_names(raw: dict[str, Any], path: str) -> None:
    """`torch_dtype`, where given, is a name: `true` or 16 is a mistake, which `_HF_DTYPES`
    would otherwise pass over in silence and the weights be taken as bf16."""
    text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else {}
    for where, mapping in (("torch_dtype", raw), ("text_config.torch_dtype", text)):
        value = mapping.get("torch_dtype")
        if value is not None and not isinstance(value, str):
            shown = json.dumps(value) if isinstance(value, (bool, int, float)) else type(
                value).__name__  # fmt: skip
            raise ValueError(f'{path}: {where} must be a name such as "bfloat16", not {shown}')
        if value is not None and value not in _HF_DTYPES:
            known = ", ".join(_HF_DTYPES)
            raise ValueError(
                f"{path}: {where} {value!r} is not a torch dtype simsched reads (it reads {known})"
            )


def _read_hf_config(path: str) -> dict[str, Any]:
    """The file's JSON mapping: a regular file of at most MAX_HF_CONFIG_BYTES, checked before a
    byte is read (`yaml_io.read_text`), nested no deeper than the JSON parser can follow."""
    from simsched.config.yaml_io import read_text  # yaml_io is heavier; only when a file is named

    try:
        text = read_text(Path(path), "config.json", MAX_HF_CONFIG_BYTES)
    except InputError as exc:
        raise ValueError(f"cannot read {display_path(path)}: {exc.message}") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        shown = display_path(path)
        raise ValueError(f"{shown} is not JSON: {exc.msg} (line {exc.lineno})") from None
    except RecursionError:
        raise ValueError(f"{display_path(path)} is nested too deeply to be a config.json") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{display_path(path)} is not a config.json mapping")
    return raw


def _whole(
    raw: dict[str, Any], key: str, most: int, path: str, required: bool = True, least: int = 1
) -> Any:
    """`raw[key]`, a whole number in [least, most]; None for an optional field absent or null."""
    value = raw.get(key)
    if value is None:
        if required:
            raise ValueError(f"{path} lacks {key!r}")
        return None
    # bool is an int to Python; 32.0 or Infinity is a float: a shape is counted, not measured
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        shown = json.dumps(value) if isinstance(value, (bool, int, float, str)) else type(
            value).__name__  # fmt: skip
        raise ValueError(
            f"{path}: {key} must be a whole number from {least} to {most:,}, not {shown}"
        )
    return value
