"""How long one batching iteration of a replica takes: a linear fit, or a roofline of the hardware.

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

SHORT_RUN = 48  # iterations; beyond this NumPy's fixed costs pay off


class LinearLatency:
    """base + prefill_ms_per_token * prefill + decode_ms_per_seq * seqs + attention * ctx / 1000."""

    def __init__(self, config: Any) -> None:
        self.base = config.base_ms
        self.prefill = config.prefill_ms_per_token
        self.decode = config.decode_ms_per_seq
        self.attention = config.attention_ms_per_1k_context

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
    """max(FLOPs / peak, bytes / bandwidth) / efficiency + overhead, split over `tp` GPUs.

    FLOPs: 2 per parameter per token, plus 4 * layers * hidden_size per attended pair (QK^T and
    AV). Bytes: the weights once per iteration, plus the KV cache read for each context token and
    written for each new token. Tensor parallelism divides both evenly; its all-reduces are left
    to `overhead_ms`.
    """

    def __init__(self, config: Any, gpu: Any, model: Any, tp: int) -> None:
        self.flops_per_token = 2.0 * model.params
        self.flops_per_pair = 4.0 * model.layers * model.hidden_size
        self.weight_bytes = float(presets.weight_bytes(model))
        self.kv_bytes_per_token = float(presets.kv_bytes_per_token(model))
        self.flops_per_ms = tp * gpu.tflops * 1e9
        self.bytes_per_ms = tp * gpu.hbm_gbps * 1e6
        self.efficiency = config.efficiency
        self.overhead_ms = config.overhead_ms

    def iteration_ms(
        self,
        prefill_tokens: int,
        prefill_pairs: int,
        prefill_context: int,
        decode_seqs: int,
        decode_context: Any,
        maximum: Callable = max,
    ) -> Any:
        tokens = prefill_tokens + decode_seqs
        flops = self.flops_per_token * tokens + self.flops_per_pair * (
            prefill_pairs + decode_context
        )
        moved = self.weight_bytes + self.kv_bytes_per_token * (
            prefill_context + decode_context + tokens
        )
        compute, memory = flops / self.flops_per_ms, moved / self.bytes_per_ms
        return maximum(compute, memory) / self.efficiency + self.overhead_ms


Latency = LinearLatency | RooflineLatency


def build_latency(config: Any) -> Latency:
    """The latency model a `ContinuousBatchingConfig` asks for."""
    latency = config.latency_model
    if latency.kind == "linear":
        return LinearLatency(latency)
    return RooflineLatency(latency, config.gpu, config.model, config.tp)


def decode_run(
    latency: Latency, start_ms: float, decode_seqs: int, context: int, count: int
) -> list[float]:
    """End instants of `count` decode-only iterations from `start_ms`, the first at `context`.

    Each iteration adds one token to each sequence, so the context grows by `decode_seqs` per
    iteration. Both paths add left to right, as stepping does (`t = t + step`; NumPy's `cumsum`
    accumulates in order), so the instants agree to the bit with iteration-by-iteration stepping.
    A short run is cheaper in plain Python than in NumPy.
    """
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

    Attention and cache reads only add time, so the bound drops them. With them gone both models
    give a linear-fractional rate (the roofline's depends on prefill + decode tokens alone and
    grows with them), whose maximum over the budget polygon lies at one of its corners.
    """
    seqs = min(max_seqs, budget)
    corners = [(budget, 0), (budget - seqs, seqs), (0, seqs)]
    return max(
        (prefill + decode) / float(latency.iteration_ms(prefill, 0, 0, decode, 0))
        for prefill, decode in corners
    )
