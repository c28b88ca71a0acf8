"""A sliding-window layer's prefill attention: each query attends to at most `window` keys, so
the layer's pairs are min(pairs, window x tokens) (latency.windowed_pairs), checked against a
brute force over chunks and on a gpt-oss-120b iteration by hand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from simsched.config import presets
from simsched.config.hardware import ModelSpec, RooflineLatencyConfig
from simsched.config.moe_serving import MoeServingSpec
from simsched.sim.cluster.latency import windowed_pairs
from simsched.sim.cluster.moe_latency import MoeRooflineLatency

H200 = SimpleNamespace(**presets.GPU_PRESETS["h200"])
WINDOW = 128


def exact_windowed(done: int, chunk: int, window: int) -> int:
    """Brute force: key positions 1..j for the query at position j, the last `window` of them."""
    return sum(min(position, window) for position in range(done + 1, done + chunk + 1))


def causal_pairs(done: int, chunk: int) -> int:
    return chunk * done + chunk * (chunk + 1) // 2


@pytest.mark.parametrize(
    ("done", "chunk"),
    [(0, 100), (0, 128), (128, 500), (4096, 8192), (20, 50), (0, 4096), (100, 1000)],
)
def test_one_chunks_windowed_pairs_against_a_brute_force(done: int, chunk: int) -> None:
    bound = windowed_pairs(causal_pairs(done, chunk), chunk, WINDOW)
    exact = exact_windowed(done, chunk, WINDOW)
    if done >= WINDOW or done + chunk <= WINDOW:
        assert bound == exact  # past the window, or inside it: exact
    else:  # it starts inside the window and ends past it: over by a triangle at most
        assert exact <= bound <= exact + (WINDOW - done) * (WINDOW - done - 1) // 2


def test_a_4096_token_chunk_from_the_start_attends_128_keys_a_query() -> None:
    # 4096 x 4097 / 2 = 8,390,656 causal pairs; 128 x 4096 = 524,288 windowed; exactly
    # 128 x 129 / 2 + 128 x 3968 = 516,160, so the bound is over by 127 x 128 / 2 = 8,128
    pairs = causal_pairs(0, 4096)
    assert pairs == 8_390_656
    assert windowed_pairs(pairs, 4096, WINDOW) == 524_288
    assert exact_windowed(0, 4096, WINDOW) == 524_288 - 8_128


def test_several_chunks_are_over_by_at_most_half_a_window_squared_each() -> None:
    chunks = [(0, 60), (5000, 2000), (30, 300), (0, 4000)]
    pairs = sum(causal_pairs(d, c) for d, c in chunks)
    tokens = sum(c for _, c in chunks)
    exact = sum(exact_windowed(d, c, WINDOW) for d, c in chunks)
    assert exact <= windowed_pairs(pairs, tokens, WINDOW) <= exact + len(chunks) * WINDOW**2 // 2


def test_gpt_oss_120b_sliding_layers_attend_within_their_window() -> None:
    # gpt-oss-120b on one H200, BF16 cache (BF16 attention): 64 query heads x 64 = 4,096 wide.
    # A pair costs 4 x 4,096 FLOPs a layer at 989.5 TFLOPS x 0.351. A 4,096-token chunk from
    # the start: 18 full layers x 8,390,656 pairs + 18 sliding ones x 524,288
    config = RooflineLatencyConfig(kind="roofline")
    model = ModelSpec(name="gpt-oss-120b", **presets.MODEL_PRESETS["gpt-oss-120b"])
    latency = MoeRooflineLatency(config, H200, model, 1, MoeServingSpec())
    per_pair_layer_ms = 4 * 4096 / (989.5e9 * 0.351)
    expected = per_pair_layer_ms * (18 * 8_390_656 + 18 * 524_288)
    assert latency.attention_ms(4096, 8_390_656) == pytest.approx(expected, rel=1e-12)
    # every layer full: the same chunk would cost 36 x 8,390,656 pairs
    unwindowed = model.model_copy(update={"sliding_window": None})
    full = MoeRooflineLatency(config, H200, unwindowed, 1, MoeServingSpec())
    assert full.attention_ms(4096, 8_390_656) == pytest.approx(
        per_pair_layer_ms * 36 * 8_390_656, rel=1e-12
    )
    # decodes attend no new pairs: the term is nothing
    assert latency.attention_ms(0, 0) == 0.0


def test_a_model_without_sliding_layers_pays_every_pair_exactly_as_before() -> None:
    # the windowed term adds exactly 0.0: pair_ms x pairs, bit for bit
    config = RooflineLatencyConfig(kind="roofline")
    mixtral = ModelSpec(name="mixtral-8x7b", **presets.MODEL_PRESETS["mixtral-8x7b"])
    latency = MoeRooflineLatency(config, H200, mixtral, 1, MoeServingSpec())
    assert latency.window == 0 and latency.window_pair_ms == 0.0
    assert latency.attention_ms(4096, 8_390_656) == latency.pair_ms * 8_390_656


def test_a_gpt_oss_iteration_charges_its_sliding_layers_the_windowed_pairs() -> None:
    # the whole iteration, not the term alone: a 4,096-token chunk from the start with 32
    # decodes riding on it. Against the same model with every layer full, the iteration is
    # shorter by exactly the sliding layers' pairs beyond their window:
    # 18 x (8,390,656 - 524,288) pairs at 4 x 4,096 FLOPs each, 989.5 TFLOPS x 0.351
    config = RooflineLatencyConfig(kind="roofline")
    model = ModelSpec(name="gpt-oss-120b", **presets.MODEL_PRESETS["gpt-oss-120b"])
    full_model = model.model_copy(update={"sliding_window": None})
    windowed = MoeRooflineLatency(config, H200, model, 1, MoeServingSpec())
    full = MoeRooflineLatency(config, H200, full_model, 1, MoeServingSpec())
    # the KV reads count the full-attention layers' cache only in both (the unwindowed twin
    # holds all 36 layers'): compare with no cached context so only the pairs differ
    args = (4096, 8_390_656, 0, 32, 0)
    per_pair_layer_ms = 4 * 4096 / (989.5e9 * 0.351)
    kv_extra = (full.kv_ms - windowed.kv_ms) * 4096  # the twin's 18 more layers of writes
    saved = per_pair_layer_ms * 18 * (8_390_656 - 524_288)
    assert full.iteration_ms(*args) - windowed.iteration_ms(*args) == pytest.approx(
        saved + kv_extra, rel=1e-9
    )


def test_a_dense_model_with_sliding_layers_pays_the_same_windowed_pairs() -> None:
    # the dense roofline (latency.RooflineLatency): Llama 3 8B given 16 sliding layers of a
    # 128-token window, one H200 at BF16: 32 query heads x 128 = 4,096 wide. A 1,000-token
    # chunk after 5,000 cached tokens: 1,000 x 5,000 + 1,000 x 1,001 / 2 = 5,500,500 pairs in
    # the 16 full layers, 128 x 1,000 = 128,000 in the 16 sliding ones
    from simsched.sim.cluster.latency import RooflineLatency

    config = RooflineLatencyConfig(kind="roofline")
    shape = {**presets.MODEL_PRESETS["llama-3-8b"], "sliding_window": {"layers": 16, "window": 128}}
    model = ModelSpec(name="llama-3-8b", **shape)
    latency = RooflineLatency(config, H200, model, 1)
    per_pair_layer_ms = 4 * 4096 / (989.5e9 * 0.351)
    pairs = 1000 * 5000 + 1000 * 1001 // 2
    assert pairs == 5_500_500
    expected = per_pair_layer_ms * (16 * 5_500_500 + 16 * 128_000)
    no_attention = latency.context_free_ms(1000, 0, 0)
    assert latency.context_free_ms(1000, pairs, 0) - no_attention == pytest.approx(
        expected, rel=1e-9
    )


def test_sliding_layers_must_leave_a_full_attention_layer(simsched_cli, tmp_path) -> None:
    # the blocks count the full layers' cache only: none left would hold no blocks, more than
    # the model has would make its costs negative
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: s\ntenants:\n  - id: a\n    arrivals: {kind: periodic, interval_ms: 10, count: 2}\n"
        "    prefill_tokens: 10\n    decode_tokens: 2\ncluster:\n"
        "  service_model: continuous_batching\n"
        "  model: {preset: llama-3-8b, sliding_window: {layers: 32, window: 128}}\n"
    )
    result = simsched_cli("scenario", str(scenario))
    assert result.code == 2
    (line,) = result.err.strip().splitlines()
    assert "cluster.model.sliding_window.layers" in line and "none of the model's 32" in line


def test_the_note_sizes_the_uncounted_sliding_cache_by_hand() -> None:
    # gpt-oss-120b, BF16 cache: 18 sliding layers x 128 tokens x (2 x 8 KV heads x 64) x 2 B =
    # 4,718,592 bytes a sequence; a token of the 18 full layers takes 18 x 2,048 = 36,864
    # bytes, so the uncounted cache is as much as 128 counted tokens
    from simsched.outputs.moe_notes import sliding_window_note

    model = ModelSpec(name="gpt-oss-120b", **presets.MODEL_PRESETS["gpt-oss-120b"])
    assert 18 * 128 * 2 * 8 * 64 * 2 == 4_718_592 and 4_718_592 / 36_864 == 128
    note = sliding_window_note(model)
    assert "18 attend to the last 128 tokens only" in note
    assert "4.72 MB a sequence" in note and "as much as 128 tokens of the counted cache" in note
    # shorter than the window, a sequence holds L tokens in each of the 18 sliding layers as in
    # each of the 18 full ones: as much again as its blocks
    assert "L >= 128 tokens holds 128 / L more" in note and "a shorter one 100% more" in note


def test_the_note_keeps_small_caches_readable() -> None:
    # Llama 3 8B with one sliding layer of a 7-token window in FP8: 7 x 2 x 8 x 128 x 1 B =
    # 14,336 bytes, as much as 7 / 31 = 0.226 tokens of the 31 full layers' cache
    from simsched.outputs.moe_notes import sliding_window_note

    shape = {
        **presets.MODEL_PRESETS["llama-3-8b"],
        "kv_dtype": "fp8",
        "sliding_window": {"layers": 1, "window": 7},
    }
    note = sliding_window_note(ModelSpec(name="llama-3-8b", **shape))
    assert "0.0143 MB a sequence" in note and "as much as 0.226 tokens" in note
    assert "a shorter one 3% more" in note  # 1 / 31
