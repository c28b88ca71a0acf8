"""Latency models, presets and memory sizing of the continuous-batching service model."""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

import pytest

from simsched.config import presets
from simsched.sim.cluster.latency import (
    SHORT_RUN,
    LinearLatency,
    RooflineLatency,
    decode_run,
    peak_tokens_per_ms,
    sustained_tokens_per_ms,
)

GIB = 1024**3
H100 = SimpleNamespace(**presets.GPU_PRESETS["h100-80gb"])
LLAMA_8B = SimpleNamespace(**presets.MODEL_PRESETS["llama-3-8b"])
LLAMA_70B = SimpleNamespace(**presets.MODEL_PRESETS["llama-3-70b"])
ROOFLINE = SimpleNamespace(
    efficiency=0.5,
    compute_efficiency=None,
    memory_efficiency=None,
    overhead_ms=2.0,
    per_seq_ms=0.0,
    allreduce_us=0.0,
    frontend_before_ms=0.0,
    frontend_after_ms=0.0,
)
# Llama 3 8B's LM head and embeddings; the rest are the GEMMs every token runs through
HEAD = 128256 * 4096
BODY = LLAMA_8B.params - 2 * HEAD


def linear(base=4.0, prefill=0.02, decode=0.15, attention=0.01) -> LinearLatency:
    return LinearLatency(
        SimpleNamespace(
            base_ms=base,
            prefill_ms_per_token=prefill,
            decode_ms_per_seq=decode,
            attention_ms_per_1k_context=attention,
        )
    )


def test_linear_iteration_is_the_documented_sum() -> None:
    model = linear()
    # 300 prefill tokens, 10 decoding sequences with 5000 context tokens between them
    assert model.iteration_ms(300, 45150, 0, 10, 5000) == pytest.approx(
        4.0 + 0.02 * 300 + 0.15 * 10 + 0.01 * 5000 / 1000
    )


def test_llama_3_8b_preset_matches_its_published_shape() -> None:
    # 32 layers x (attention 4096*(4096+1024+1024+4096) + MLP 3*4096*14336 + 2 norms of 4096),
    # embeddings and head 128256*4096 each, final norm 4096
    per_layer = 4096 * (4096 + 1024 + 1024 + 4096) + 3 * 4096 * 14336 + 2 * 4096
    assert LLAMA_8B.params == 32 * per_layer + 2 * 128256 * 4096 + 4096
    assert LLAMA_8B.kv_heads * LLAMA_8B.head_dim == 1024


def test_kv_block_of_llama_3_8b_is_two_mebibytes() -> None:
    assert presets.kv_bytes_per_token(LLAMA_8B) * 16 == 2 * 32 * 8 * 128 * 2 * 16 == 2 * 1024**2


def test_blocks_from_memory_follows_the_formula() -> None:
    spare = 80 * GIB * 0.9 - LLAMA_8B.params * 2
    expected = int(spare // (2 * 1024**2))
    assert presets.blocks_from_memory(H100, LLAMA_8B, 1, 0.9, 16) == expected == 29205
    # 70B needs two H100s; its KV block is 80/32 times larger
    spare_70 = 2 * 80 * GIB * 0.9 - LLAMA_70B.params * 2
    assert presets.blocks_from_memory(H100, LLAMA_70B, 2, 0.9, 16) == int(
        spare_70 // (2 * 80 * 8 * 128 * 2 * 16)
    )
    assert presets.blocks_from_memory(H100, LLAMA_70B, 1, 0.9, 16) == 0


def test_roofline_single_decode_step_is_memory_bound() -> None:
    model = RooflineLatency(ROOFLINE, H100, LLAMA_8B, tp=1)
    context = 1000
    kv = presets.kv_bytes_per_token(LLAMA_8B)
    # weights read once, the KV cache of the context read (the new token's write is in it)
    expected = (LLAMA_8B.params * 2 + kv * context) / (3350 * 1e6 * 0.5) + 2.0
    assert model.iteration_ms(0, 0, 0, 1, context) == pytest.approx(expected, rel=1e-12)


def test_roofline_full_prefill_chunk_is_compute_bound() -> None:
    model = RooflineLatency(ROOFLINE, H100, LLAMA_8B, tp=1)
    chunk = 2048
    pairs = chunk * (chunk + 1) // 2
    gemm = 2 * BODY * chunk / (989.5e9 * 0.5)  # no embedding lookup, no LM head in prefill
    attention = 4 * 32 * 4096 * pairs / (989.5e9 * 0.5)
    written = presets.kv_bytes_per_token(LLAMA_8B) * chunk / (3350e6 * 0.5)
    expected = gemm + attention + 2.0 + written
    assert model.iteration_ms(chunk, pairs, 0, 0, 0) == pytest.approx(expected, rel=1e-12)


def test_tensor_parallelism_divides_the_gpu_time() -> None:
    one = RooflineLatency(ROOFLINE, H100, LLAMA_8B, tp=1)
    four = RooflineLatency(ROOFLINE, H100, LLAMA_8B, tp=4)
    ring = 2 * 32 * 2 * 3 / 4 * 4096 * 2 / 450e6  # 2 all-reduces a layer, ms per token
    for shape in [(0, 0, 0, 64, 64_000), (2048, 2_098_176, 0, 0, 0)]:
        tokens = shape[0] + shape[3]
        work_one = one.iteration_ms(*shape) - 2.0
        assert four.iteration_ms(*shape) - 2.0 - ring * tokens == pytest.approx(work_one / 4)


@pytest.mark.parametrize("count", [1, 5, SHORT_RUN, SHORT_RUN + 1, 700])
@pytest.mark.parametrize(
    "model",
    [linear(), RooflineLatency(ROOFLINE, H100, LLAMA_8B, tp=2)],
    ids=["linear", "roofline"],
)
def test_decode_run_ends_where_stepping_ends_to_the_bit(count: int, model) -> None:
    seqs, context, start = 37, 40_123, 1234.5678
    stepped, end = [], start
    for step in range(count):
        end = end + model.iteration_ms(0, 0, 0, seqs, context + seqs * step)
        stepped.append(end)
    assert decode_run(model, start, seqs, context, count) == stepped


def test_the_roofline_run_is_its_steps_to_the_bit_for_any_shape() -> None:
    # the roofline's own run (context_free_ms once, then kv_ms * context) against stepping with
    # iteration_ms, over random batches, contexts, lengths and CPU and all-reduce costs
    rng = random.Random(16)
    for _ in range(200):
        config = SimpleNamespace(**{**vars(ROOFLINE), "overhead_ms": rng.uniform(0, 5),
                                    "per_seq_ms": rng.uniform(0, 0.05),
                                    "allreduce_us": rng.uniform(0, 30)})  # fmt: skip
        model = RooflineLatency(config, H100, LLAMA_8B, tp=rng.choice([1, 2, 4, 8]))
        seqs, context = rng.randint(1, 512), rng.randint(0, 2_000_000)
        start, count = rng.uniform(0, 1e7), rng.choice([1, 2, 7, SHORT_RUN, SHORT_RUN + 3, 300])
        stepped, end = [], start
        for step in range(count):
            end = end + model.iteration_ms(0, 0, 0, seqs, context + seqs * step)
            stepped.append(end)
        assert decode_run(model, start, seqs, context, count) == stepped


def test_decode_run_grows_the_context_each_iteration() -> None:
    model = linear(base=1.0, prefill=0.0, decode=0.0, attention=1.0)  # 1 ms per 1k context
    ends = decode_run(model, 0.0, 10, 1000, 3)
    steps = [b - a for a, b in zip([0.0, *ends], ends, strict=False)]
    assert steps == pytest.approx([2.0, 2.01, 2.02])


def test_peak_rate_bounds_every_iteration_shape() -> None:
    budget, seqs = 512, 64
    for model in [linear(), RooflineLatency(ROOFLINE, H100, LLAMA_8B, tp=1)]:
        peak = peak_tokens_per_ms(model, budget, seqs)
        for decodes in range(0, seqs + 1, 8):
            for prefill in range(0, budget - decodes + 1, 32):
                if prefill + decodes:
                    rate = (prefill + decodes) / model.iteration_ms(prefill, 0, 0, decodes, decodes)
                    assert rate <= peak * (1 + 1e-12)


def test_sustained_rate_is_a_full_chunk_per_iteration() -> None:
    model = linear(base=5.0, prefill=0.01, attention=0.0)
    config = SimpleNamespace(max_num_batched_tokens=1000)
    assert sustained_tokens_per_ms(model, config) == pytest.approx(1000 / (5.0 + 10.0))
    assert math.isfinite(
        sustained_tokens_per_ms(RooflineLatency(ROOFLINE, H100, LLAMA_8B, 1), config)
    )
