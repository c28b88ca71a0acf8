"""How long one batching iteration of a replica takes: a linear fit, or a calibrated roofline.

An iteration is described by five whole numbers: the prefill tokens it computes, the attended
(query, key) pairs of those prefill tokens (causal: a chunk of `c` tokens after `d` cached ones
attends to `c*d + c*(c+1)/2` pairs), the cached tokens those chunks read, the decoding
sequences (one token each) and their summed context (tokens in their KV caches).

`iteration_ms` takes `maximum` so that one formula serves a single iteration (Python floats,
builtin `max`) and a run of decode-only iterations at once (NumPy arrays, `np.maximum`). Both
evaluate the same IEEE operations in the same order, so a fast-forwarded stretch ends at exactly
the instant that stepping through it iteration by iteration reaches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from simsched.config import presets
from simsched.config.model_presets import compute_dtype
from simsched.config.moe_shapes import sliding_window

SHORT_RUN = 48  # iterations; beyond this NumPy's fixed costs pay off


class LinearLatency:
    """base + prefill_ms_per_token * prefill + decode_ms_per_seq * seqs + attention * ctx / 1000."""

    def __init__(self, config: Any) -> None:
        self.base = config.base_ms
        self.prefill = config.prefill_ms_per_token
        self.decode = config.decode_ms_per_seq
        self.attention = config.attention_ms_per_1k_context
        self.before_ms = self.after_ms = 0.0  # no front-end time: exact as given

    def iteration_ms(
        self,
        prefill_tokens: int,
        prefill_pairs: int,
        prefill_context: int,
        decode_seqs: int,
        decode_context: Any,
        maximum: Callable = max,
    ) -> Any:
        return (
            self.base
            + self.prefill * prefill_tokens
            + self.decode * decode_seqs
            + self.attention * decode_context / 1000
        )


class RooflineLatency:
    """GEMMs as a roofline, plus attention, tensor-parallel all-reduces and CPU time, over `tp`.

    gemm      = max((2 * body_params * tokens + 2 * vocab * hidden * decode_seqs) / compute,
                    weight_bytes / memory)
    attention = 4 * heads * head_dim * (full_layers * prefill_pairs
                                        + sliding_layers * windowed_pairs) / compute_attention
              + kv_bytes_per_token * (prefill_context + prefill_tokens + decode_context) / memory
    allreduce = 2 * layers * (allreduce_us + 2 (tp - 1) / tp * tokens * hidden * 2 B / link)
    cpu       = overhead_ms + per_seq_ms * decode_seqs

    The linear layers of a mixed batch run as one GEMM per weight matrix (one weight read for
    all its tokens), hence one max; attention runs as separate kernels after them, compute-bound
    for prefill chunks and memory-bound for decodes, so its time adds: a decode batch riding on
    a prefill chunk pays for reading its KV cache. A sliding-window layer (gpt-oss) attends to
    at most `window` keys per query, so its prefill pairs are `windowed_pairs` below. `compute`
    and `memory` are the GPU's peaks (per precision) times their efficiencies.
    Every coefficient is precomputed in ms per unit.
    """

    def __init__(self, config: Any, gpu: Any, model: Any, tp: int, scale: float = 1.0) -> None:
        dtype = compute_dtype(model)
        attn_dtype = attention_dtype(model)
        # `cluster.efficiency_scale` (scale): 1 unless a plan moves the model (--model-error)
        gemm_eff = compute_share(config, gpu, dtype, scale)
        attn_eff = compute_share(config, gpu, attn_dtype, scale)
        mem_eff = min(
            1.0, (config.memory_efficiency or config.efficiency or gpu.memory_efficiency) * scale
        )
        peak = peak_tflops(gpu, dtype)
        gemm_per_ms = tp * peak * 1e9 * gemm_eff
        bytes_per_ms = tp * gpu.hbm_gbps * 1e6 * mem_eff
        vocab = getattr(model, "vocab_size", 0)
        head = vocab * model.hidden_size
        tied = getattr(model, "tied_embeddings", False)
        body = model.params - (head if tied else 2 * head)  # the embedding lookup is no GEMM
        self.token_ms = 2.0 * body / gemm_per_ms
        self.head_ms = 2.0 * head / gemm_per_ms  # the LM head runs for the sampled tokens
        self.weights_ms = presets.weight_bytes(model) / bytes_per_ms
        q_width = (getattr(model, "heads", None) or model.hidden_size // model.head_dim) * (
            model.head_dim
        )
        attn_per_ms = tp * peak_tflops(gpu, attn_dtype) * 1e9 * attn_eff
        sliding_layers, self.window = sliding_window(model)
        full_layers = model.layers - sliding_layers
        self.pair_ms = 4.0 * full_layers * q_width / attn_per_ms
        self.window_pair_ms = 4.0 * sliding_layers * q_width / attn_per_ms
        self.kv_ms = presets.kv_bytes_per_token(model) / bytes_per_ms
        reduces = 2 * model.layers if tp > 1 else 0
        ring = 2.0 * (tp - 1) / tp * model.hidden_size * 2  # bytes per token, BF16 activations
        self.fixed_ms = config.overhead_ms + reduces * config.allreduce_us / 1000
        self.comm_ms = reduces * ring / (gpu.link_gbps * 1e6)  # per token in the batch
        self.seq_ms = config.per_seq_ms
        self.before_ms = config.frontend_before_ms  # per request, see Replica
        self.after_ms = config.frontend_after_ms
        # context_free_ms(0, 0, n) by batch size n, for `roofline_decode_run`: a run's first
        # term depends on n alone, and a run is planned at almost every jump
        self.decode_fixed: dict[int, float] = {}

    def iteration_ms(
        self,
        prefill_tokens: int,
        prefill_pairs: int,
        prefill_context: int,
        decode_seqs: int,
        decode_context: Any,
        maximum: Callable = max,
    ) -> Any:
        return self.context_free_ms(
            prefill_tokens, prefill_pairs, decode_seqs, maximum
        ) + self.kv_ms * (prefill_context + prefill_tokens + decode_context)

    def context_free_ms(
        self, prefill_tokens: int, prefill_pairs: int, decode_seqs: int, maximum: Callable = max
    ) -> Any:
        """Every term but the KV cache reads, which `iteration_ms` adds last: a decode-only
        iteration is this (fixed for a batch of `decode_seqs`) plus `kv_ms * context`."""
        tokens = prefill_tokens + decode_seqs
        gemm = maximum(self.token_ms * tokens + self.head_ms * decode_seqs, self.weights_ms)
        fixed = self.fixed_ms + (self.comm_ms * tokens + self.seq_ms * decode_seqs)
        return gemm + self.attention_ms(prefill_tokens, prefill_pairs) + fixed

    def attention_ms(self, prefill_tokens: int, prefill_pairs: int) -> float:
        """The prefill chunks' attention: every pair in a full-attention layer, the windowed
        ones in a sliding-window layer (exactly `pair_ms * pairs` without such layers)."""
        full = self.pair_ms * prefill_pairs
        if not self.window:  # every layer full: the common case, on the hot path
            return full
        return full + self.window_pair_ms * windowed_pairs(
            prefill_pairs, prefill_tokens, self.window
        )


def windowed_pairs(pairs: int, tokens: int, window: int) -> int:
    """The (query, key) pairs a sliding-window layer attends in an iteration's prefill chunks:
    each query sees at most `window` keys, so min(pairs, window * tokens).

    Exact for a chunk that starts `window` or more tokens in (window * c) or ends by then (its
    causal pairs); a chunk that starts at d < window and ends past it is over by at most
    (window - d)(window - d - 1) / 2, and with several chunks in one iteration the bound adds at
    most window^2 / 2 a chunk: for gpt-oss (window 128) 8,128 pairs against the 524,288 a
    4,096-token chunk attends in such a layer.
    """
    return min(pairs, window * tokens)


def attention_dtype(model: Any) -> str:
    """A prefill chunk's attention precision (docs/continuous_batching.md, "Iteration latency"):
    FP8 when the KV cache is FP8 and the GEMMs run quantized (FP8 or NVFP4 checkpoints: the
    query is quantized to FP8 and the FMHA kernels read the FP8 cache as it is), else BF16
    (a BF16 model's queries, or weight-only int8/int4, stay in 16 bits)."""
    fp8_cache = getattr(model, "kv_dtype", None) == "fp8"
    return "fp8" if fp8_cache and compute_dtype(model) in ("fp8", "fp4") else "bf16"


def peak_tflops(gpu: Any, dtype: str) -> float:
    """One GPU's dense tensor-core peak in `dtype` (BF16's where it has none of its own)."""
    return gpu.peak_tflops.get(dtype, gpu.tflops) if dtype != "bf16" else gpu.tflops


def compute_share(config: Any, gpu: Any, dtype: str, scale: float = 1.0) -> float:
    """The share of that peak a GEMM in `dtype` reaches: the latency model's own, else the
    GPU's per precision; times `cluster.efficiency_scale` (x1.0 and min(1.0, share) leave a
    share <= 1 exactly as it was)."""
    share = config.compute_efficiency or config.efficiency
    return min(1.0, (share or _gpu_share(gpu, dtype)) * scale)


def _gpu_share(gpu: Any, dtype: str) -> float:
    shares = gpu.compute_efficiency
    return shares.get(dtype) or shares.get("bf16") or DEFAULT_COMPUTE_SHARE


DEFAULT_COMPUTE_SHARE = 0.45


Latency = LinearLatency | RooflineLatency  # and MoE / speculative ones (moe_latency.py,
# speculative.py), which take the same arguments


def build_latency(config: Any) -> Latency:
    """The latency model a `ContinuousBatchingConfig` asks for (with its GPU's overrides)."""
    latency = config.gpu_latency_model
    spec = getattr(config, "speculative", None)
    if latency.kind == "linear":
        model: Any = LinearLatency(latency)
    elif getattr(config.model, "moe", None) is not None:
        from simsched.sim.cluster.moe_latency import MoeRooflineLatency  # it builds on this one

        serving = getattr(config, "moe_serving", None)
        args = (config.gpu, config.model, config.tp, serving, config.efficiency_scale)
        # a decoding sequence's queries against its context: the tokens a step verifies
        queries = 1 if spec is None else spec.tokens + 1
        engine = getattr(config, "engine", None)  # it chooses the exchange and the permute
        model = MoeRooflineLatency(latency, *args, queries=queries, engine=engine)
    else:
        args = (config.gpu, config.model, config.tp, config.efficiency_scale)
        model = RooflineLatency(latency, *args)
    if spec is None:
        return model
    from simsched.sim.cluster.speculative import SpeculativeLatency

    return SpeculativeLatency(model, spec, getattr(config.model, "layers", 1))


def decode_run(
    latency: Latency, start_ms: float, decode_seqs: int, context: int, count: int
) -> list[float]:
    """End instants of `count` decode-only iterations from `start_ms`, the first at `context`.

    Each iteration adds one token to each sequence, so the context grows by `decode_seqs` per
    iteration. Every path adds left to right, as stepping does (`t = t + step`; NumPy's `cumsum`
    accumulates in order), so the instants agree to the bit with iteration-by-iteration stepping.
    A short run is cheaper in plain Python than in NumPy. A model whose decode step is affine
    in the context has its own run (`DECODE_RUNS`); any other is stepped through `iteration_ms`.
    """
    run = DECODE_RUNS.get(type(latency), stepped_decode_run)
    return run(latency, start_ms, decode_seqs, context, count)


def stepped_decode_run(
    latency: Latency, start_ms: float, decode_seqs: int, context: int, count: int
) -> list[float]:
    """`decode_run` for any model: one `iteration_ms` per iteration (NumPy for a long run)."""
    if count <= SHORT_RUN:
        ends = []
        end = start_ms
        for _ in range(count):
            end = end + latency.iteration_ms(0, 0, 0, decode_seqs, context)
            ends.append(end)
            context += decode_seqs
        return ends
    contexts = context + decode_seqs * np.arange(count, dtype=np.int64)
    steps = latency.iteration_ms(0, 0, 0, decode_seqs, contexts, np.maximum)
    return np.cumsum(np.concatenate(([start_ms], steps)))[1:].tolist()


def roofline_decode_run(
    latency: RooflineLatency, start_ms: float, decode_seqs: int, context: int, count: int
) -> list[float]:
    """`decode_run` for the roofline: a decode-only step is `iteration_ms(0, 0, 0, n, c)` =
    `context_free_ms(0, 0, n) + kv_ms * (0 + 0 + c)`, the same operations in the same order, so
    the first term is computed once for the run instead of once per iteration (most iterations
    of a run are jumped over, and this was a tenth of a plan's simulation time). That term is
    kept per batch size (`decode_fixed`): the same function of the same numbers, computed once."""
    fixed, per_token = roofline_decode_terms(latency, decode_seqs)
    if count <= SHORT_RUN:
        ends: list[float] = []
        append = ends.append
        end = start_ms
        for _ in range(count):
            end = end + (fixed + per_token * context)
            append(end)
            context += decode_seqs
        return ends
    contexts = context + decode_seqs * np.arange(count, dtype=np.int64)
    steps = fixed + per_token * contexts
    return np.cumsum(np.concatenate(([start_ms], steps)))[1:].tolist()


def roofline_decode_terms(latency: RooflineLatency, decode_seqs: int) -> tuple[float, float]:
    """A roofline decode-only step of `decode_seqs` sequences is `fixed + per_token * context`:
    (fixed, per_token), the first kept per batch size (`decode_fixed`)."""
    fixed = latency.decode_fixed.get(decode_seqs)
    if fixed is None:
        fixed = latency.decode_fixed[decode_seqs] = latency.context_free_ms(0, 0, decode_seqs)
    return fixed, latency.kv_ms


# Exact types only: a subclass may change the step's terms, and then steps through its own.
DECODE_RUNS: dict[type, Callable[..., list[float]]] = {RooflineLatency: roofline_decode_run}


def sustained_tokens_per_ms(latency: Latency, config: Any) -> float:
    """A replica's rate in a full prefill iteration: one chunk of `max_num_batched_tokens`.

    The gateway divides pending service tokens by this (times the replicas) to estimate a wait.
    Service tokens weigh a decode token `decode_weight` (4 by default) times a prefill token,
    which is about what a decode token costs beside a prefill token in these models (a memory-
    bound step shared by a batch versus a compute-bound chunk), so the prefill rate is the
    matching unit.
    """
    chunk = config.max_num_batched_tokens
    return chunk / float(latency.iteration_ms(chunk, chunk * (chunk + 1) // 2, 0, 0, 0))


def peak_tokens_per_ms(latency: Latency, budget: int, max_seqs: int) -> float:
    """An upper bound of tokens per ms for any iteration within the token and sequence limits.

    Attention and cache reads only add time, so the bound drops them. Without them the rate is
    linear-fractional wherever the roofline's GEMM term is on one side of its max, so over the
    budget polygon its maximum lies at a corner or where an edge crosses from compute-bound to
    weight-bound (the linear model has no such crossing).
    """
    seqs = min(max_seqs, budget)
    corners = [(budget, 0), (budget - seqs, seqs), (0, seqs)]
    points = list(corners)
    if isinstance(latency, RooflineLatency):
        for (p0, d0), (p1, d1) in zip(corners, corners[1:] + corners[:1], strict=True):
            f0, f1 = (
                _compute_minus_weights(latency, p0, d0),
                _compute_minus_weights(latency, p1, d1),
            )
            if f0 * f1 < 0:
                s = f0 / (f0 - f1)
                points.append((p0 + s * (p1 - p0), d0 + s * (d1 - d0)))
    return max(
        (prefill + decode) / float(latency.iteration_ms(prefill, 0, 0, decode, 0))
        for prefill, decode in points
        if prefill + decode > 0
    )


def _compute_minus_weights(latency: RooflineLatency, prefill: float, decode: float) -> float:
    tokens = prefill + decode
    return latency.token_ms * tokens + latency.head_ms * decode - latency.weights_ms
