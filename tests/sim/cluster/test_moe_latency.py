"""The MoE roofline's terms on hand-computed cases: distinct experts, the all-to-all, a whole
DEP8 decode iteration of DeepSeek-R1 on H200, MLA's latent copies and the layout checks."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from simsched.config import presets
from simsched.config.hardware import ModelSpec, RooflineLatencyConfig
from simsched.config.loading import load_scenario
from simsched.config.moe_serving import MoeServingSpec
from simsched.sim.cluster.latency import build_latency
from simsched.sim.cluster.moe_latency import MoeRooflineLatency, alltoall_ms, distinct_experts
from tests.sim.cluster.test_roofline_physics import ONE_REQUEST, write_scenario

ROOT = Path(__file__).resolve().parents[3]

H200 = SimpleNamespace(**presets.GPU_PRESETS["h200"])
# what an MoE exchange moves at, bytes/ms: 0.8 of the H200's 450 GB/s a direction (NCCL's
# expected all-gather bus bandwidth on NVLink 4, moe_serving.ALLTOALL_LINK_EFFICIENCY); the
# all-reduces move at the whole 450
LINK = 0.8 * 450e6
R1 = ModelSpec(name="deepseek-r1", **presets.MODEL_PRESETS["deepseek-r1"])


def test_distinct_experts_by_hand() -> None:
    assert distinct_experts(8, 2, 1) == 2.0  # one token: its k experts
    assert distinct_experts(8, 2, 2) == 8 * (1 - 0.75**2) == 3.5
    assert distinct_experts(256, 8, 0) == 0.0


def test_distinct_experts_match_a_brute_force_over_every_routing() -> None:
    # E = 4, k = 2, T = 3: each token picks one of the 6 pairs uniformly; 216 routings
    pairs = list(itertools.combinations(range(4), 2))
    routings = list(itertools.product(pairs, repeat=3))
    mean = sum(len(set().union(*routing)) for routing in routings) / len(routings)
    assert distinct_experts(4, 2, 3) == pytest.approx(mean, rel=1e-12)


def test_alltoall_by_hand() -> None:
    # 800 tokens over ep 8: 100 a GPU, 8 experts each, 7168 x 2 bytes, 7/8 remote:
    # 10,035,200 bytes a GPU at 450 GB/s = 450e6 bytes/ms, after 30.2 us
    assert alltoall_ms(800, 8, 7168, 8, 30.2, 450.0) == pytest.approx(
        0.0302 + 10_035_200 / 450e6, rel=1e-12
    )
    assert alltoall_ms(800, 8, 7168, 1, 30.2, 450.0) == 0.0  # no expert parallelism


def test_an_allgather_moves_every_token_to_every_gpu() -> None:
    # Llama 4 Scout, DEP4: one expert a token (k = 1), hidden 5,120. 400 tokens, 100 a GPU.
    # All-to-all: 100 x 1 copy x 5,120 x 2 bytes x 3/4 remote = 768,000 bytes a GPU.
    # AllGather: every GPU receives the other 300 tokens, 300 x 5,120 x 2 = 3,072,000 bytes:
    # ep / k = 4 times as many (ReduceScatter returns as many)
    from simsched.sim.cluster.moe_latency import exchange_copies

    alltoall = MoeServingSpec(ep=4, attention_dp=4)
    allgather = MoeServingSpec(ep=4, attention_dp=4, dispatch="allgather")
    assert (exchange_copies(alltoall, 1), exchange_copies(allgather, 1)) == (1, 4)
    latency = 0.0302
    assert alltoall_ms(400, 1, 5120, 4, 30.2, 450.0) == pytest.approx(
        latency + 768_000 / 450e6, rel=1e-12
    )
    assert alltoall_ms(400, 4, 5120, 4, 30.2, 450.0) == pytest.approx(
        latency + 3_072_000 / 450e6, rel=1e-12
    )
    # with k = ep (DeepSeek-R1 and Qwen3-235B on DEP8) the two move the same bytes
    assert exchange_copies(MoeServingSpec(ep=8, attention_dp=8, dispatch="allgather"), 8) == 8


def test_an_fp8_models_gather_crosses_at_one_byte_and_its_combine_at_two() -> None:
    # Scout with FP8 weights, DEP4, 400 tokens: the AllGather moves 3,072,000 / 2 = 1,536,000
    # bytes a GPU (FP8 activations), the ReduceScatter 3,072,000 (BF16 sums); an all-to-all
    # moves 768,000 each way. Over 48 MoE layers the iteration differs by exactly that.
    config = RooflineLatencyConfig(kind="roofline")
    fp8 = {**presets.MODEL_PRESETS["llama-4-scout"], "weight_dtype": "fp8"}
    scout = ModelSpec(name="llama-4-scout", **fp8)
    gather = MoeServingSpec(ep=4, attention_dp=4, dispatch="allgather")
    plain = MoeRooflineLatency(config, H200, scout, 4, MoeServingSpec(ep=4, attention_dp=4))
    gathered = MoeRooflineLatency(config, H200, scout, 4, gather)
    assert (plain.dispatch_bytes, gathered.dispatch_bytes) == (2, 1)
    exchanged = 48 * ((1_536_000 - 768_000) + (3_072_000 - 768_000)) / LINK
    # and the token copies in HBM (docs/moe.md, "Token copies in HBM"), a GPU's bytes: it
    # quantizes its own 100 tokens, (2 + 1) x 100 rows either way. The all-to-all delivers 100
    # FP8 copies, expanded (read and written, 1 x (100 + 100)) and summed back (2 x (100 +
    # 100)): 5,120 x (300 + 200 + 400) = 4,608,000. The gather puts all 400 tokens on every GPU;
    # the expand reads the 1 - 12/16 = 1/4 of them with one of its 4 experts and writes as
    # many, and the sum writes all 400 rows: 5,120 x (300 + 200 + 2 x (100 + 400)) = 7,680,000
    copied = 48 * (7_680_000 - 4_608_000) / (4800e6 * presets.H200_MEMORY)
    extra = exchanged + copied
    difference = gathered.iteration_ms(400, 0, 0, 0, 0) - plain.iteration_ms(400, 0, 0, 0, 0)
    assert difference == pytest.approx(extra, rel=1e-9)


def test_a_dep_iteration_pays_the_allgathers_extra_bytes(tmp_path: Path) -> None:
    # the whole iteration differs by exactly 2 exchanges x 48 MoE layers x the extra bytes
    config = RooflineLatencyConfig(kind="roofline")
    scout = ModelSpec(name="llama-4-scout", **presets.MODEL_PRESETS["llama-4-scout"])
    gather = MoeServingSpec(ep=4, attention_dp=4, dispatch="allgather")
    plain = MoeRooflineLatency(config, H200, scout, 4, MoeServingSpec(ep=4, attention_dp=4))
    gathered = MoeRooflineLatency(config, H200, scout, 4, gather)
    tokens = 400
    exchanged = 2 * 48 * (3_072_000 - 768_000) / LINK
    # token copies in BF16 (no quantizing): 5,120 x (2 x (100 + 100) + 2 x (100 + 100)) =
    # 4,096,000 bytes a GPU after an all-to-all; after a gather the expand reads the 100 tokens
    # with a local expert and the sum writes all 400 rows: 5,120 x (2 x (100 + 100) + 2 x (100
    # + 400)) = 7,168,000
    copied = 48 * (7_168_000 - 4_096_000) / (4800e6 * presets.H200_MEMORY)
    extra = exchanged + copied
    difference = gathered.iteration_ms(tokens, 0, 0, 0, 0) - plain.iteration_ms(tokens, 0, 0, 0, 0)
    assert difference == pytest.approx(extra, rel=1e-9)


def test_a_dep8_decode_iteration_by_hand() -> None:
    config = RooflineLatencyConfig(kind="roofline")
    # at the roofline, with 25 us of fixed kernel time per MoE layer
    serving = MoeServingSpec(ep=8, attention_dp=8, expert_efficiency=1.0, layer_us=25.0)
    latency = MoeRooflineLatency(config, H200, R1, 8, serving)
    seqs = 64
    # weights: FP8, 8 GPUs at 4,800 GB/s x the H200's memory share
    bytes_per_ms = 8 * 4800e6 * presets.H200_MEMORY
    expert = 3 * 7168 * 2048  # parameters of one routed expert, one byte each
    routed = 58 * 256 * expert
    distinct = 256 * (1 - (1 - 8 / 256) ** seqs)
    # each of the 8 attention groups reads its own copy of the attention weights: 7 more copies
    # of 61 layers x 187,107,328 MLA parameters (test_moe_dep_memory.py), one byte each
    replicated = 7 * 61 * 187_107_328
    weights = (R1.params - routed + replicated + 58 * distinct * expert) / bytes_per_ms
    # collectives: attention is data-parallel (groups of 1 GPU), the 58 MoE layers all-to-all,
    # the 3 dense layers' FFNs all-reduce over the 8 GPUs
    reduces = 3 * (30.2 / 1000 + seqs * 2 * 7168 * 2 * 7 / 8 / 450e6)
    a2a = 2 * 58 * (30.2 / 1000 + seqs / 8 * 8 * 7168 * 2 * 7 / 8 / LINK)
    cpu = 0.938 + 0.0968 * seqs
    kernels = 58 * 25.0 / 1000  # each of the 58 MoE layers' fixed kernel time
    # token copies: each GPU quantizes its own 64 / 8 tokens ((2 + 1) / 8 a token), gets
    # 64 x 8 / 8 = 64 FP8 copies from the all-to-all, expands them (1 x (1 + 1)) and sums them
    # back (2 x (1 + 1)): 7,168 x (0.375 + 2 + 4) = 45,696 bytes a token and MoE layer, at one
    # GPU's HBM rate
    copies = 58 * seqs * 45_696 / (4800e6 * presets.H200_MEMORY)
    compute = latency.token_ms * seqs + latency.head_ms * seqs
    assert compute < weights  # 64 decodes are weight-bound
    expected = weights + reduces + a2a + cpu + kernels + copies
    assert latency.iteration_ms(0, 0, 0, seqs, 0) == pytest.approx(expected, rel=1e-12)


def test_token_copies_by_hand() -> None:
    # Mixtral 8x7B in FP8 on TP 8 (experts split by tensor parallelism, ep = 1): every GPU
    # holds every token and a slice of both of its experts (local = k = 2). It quantizes the
    # token, reading 2 and writing 1 byte an element; the expand reads the FP8 row and writes 2
    # copies, 1 x (1 + 2); the sum reads 2 BF16 outputs and writes one, 2 x (2 + 1):
    # 4,096 x (3 + 3 + 6) = 49,152 bytes; fused (no expand) 4,096 x 9 = 36,864
    from simsched.sim.cluster.moe_latency import PERMUTES, TokenLayout

    kernel, fused = PERMUTES["kernel"], PERMUTES["fused"]
    tp8 = TokenLayout.of(8, 2, 1, 1, False)
    assert (tp8.own, tp8.local, tp8.read, tp8.seen) == (1.0, 2.0, 1.0, 1.0)
    assert kernel.bytes_per_token(tp8, 4096, 1.0) == 49_152
    assert fused.bytes_per_token(tp8, 4096, 1.0) == 36_864
    assert kernel.bytes_per_token(tp8, 4096, None) == 4096 * (2 * 3 + 2 * 3)  # BF16: no quantize
    # Qwen3-235B on DEP8 (E = 128, k = 8) with a gather: every token on every GPU, of which
    # 1 - C(112, 8) / C(128, 8) have one of its 16 experts; it quantizes its own 1/8
    gather = TokenLayout.of(128, 8, 8, 8, True)
    read = 1 - math.comb(112, 8) / math.comb(128, 8)
    assert 0.66 < read < 0.67
    assert (gather.own, gather.local, gather.read, gather.seen) == (1 / 8, 1.0, read, 1.0)
    by_hand = 4096 * (3 / 8 + 1 * (read + 1) + 2 * (1 + 1))
    assert kernel.bytes_per_token(gather, 4096, 1.0) == pytest.approx(by_hand, rel=1e-12)
    # the same with an all-to-all: the one copy a GPU gets on average is all it reads and returns
    alltoall = TokenLayout.of(128, 8, 8, 8, False)
    assert (alltoall.read, alltoall.seen) == (1.0, 1.0)
    # attention TP over the whole replica with ep 8 (DeepSeek-R1's TP8 layout): every GPU holds
    # every token after the attention's all-reduce, as under a gather, and quantizes all of them
    tp_attention = TokenLayout.of(256, 8, 8, 1, False)
    missed = math.comb(224, 8) / math.comb(256, 8)
    assert (tp_attention.own, tp_attention.read, tp_attention.seen) == (1.0, 1 - missed, 1.0)
    # NVFP4: half a byte an element and one FP8 scale per 16, in the copies and in a gather
    assert kernel.bytes_per_token(tp8, 4096, 0.5625) == 4096 * (2.5625 + 0.5625 * 3 + 6)
    from simsched.sim.cluster.moe_latency import EXCHANGES, quantized_bytes

    fp4 = ModelSpec(name="qwen3-30b-a3b", **{**presets.MODEL_PRESETS["qwen3-30b-a3b"],
                                            "weight_dtype": "fp4"})  # fmt: skip
    assert quantized_bytes(fp4) == 0.5 + 1 / 16
    assert EXCHANGES["allgather"].dispatch_bytes(fp4) == 0.5625
    assert EXCHANGES["alltoall"].dispatch_bytes(fp4) == 2  # the all-to-all stays BF16
    # a whole iteration of 1,000 tokens: 32 MoE layers x the expand's 12,288 bytes a token
    # more with the kernel than fused, at one H200's HBM rate
    fp8 = {**presets.MODEL_PRESETS["mixtral-8x7b"], "weight_dtype": "fp8"}
    mixtral = ModelSpec(name="mixtral-8x7b", **fp8)
    config = RooflineLatencyConfig(kind="roofline")
    own = MoeRooflineLatency(config, H200, mixtral, 8, MoeServingSpec(permute="kernel"))
    gathered = MoeRooflineLatency(config, H200, mixtral, 8, MoeServingSpec(permute="fused"))
    difference = own.iteration_ms(1000, 0, 0, 0, 0) - gathered.iteration_ms(1000, 0, 0, 0, 0)
    assert difference == pytest.approx(
        32 * 1000 * 12_288 / (4800e6 * presets.H200_MEMORY), rel=1e-9
    )


def test_expert_activations_set_the_routed_experts_flop_rate_and_copy_width() -> None:
    # gpt-oss-20b (BF16 but its MXFP4 experts) on one B200, as TensorRT-LLM runs it there with
    # MXFP8 activations: per token, 24 MoE layers x 4 experts x (3 x 2,880^2 + 2 x 2,880 +
    # 2,880 biases) = 2,389,616,640 routed parameters, 2 FLOPs each, at 4,500 TFLOPS x the
    # FP8 share instead of 2,250 x the BF16 one, over the grouped GEMMs' compute share at a
    # 2,880 x 2,880 expert's size (test_moe_expert_size.py)
    b200 = SimpleNamespace(**presets.GPU_PRESETS["b200"])
    model = ModelSpec(name="gpt-oss-20b", **presets.MODEL_PRESETS["gpt-oss-20b"])
    config = RooflineLatencyConfig(kind="roofline")
    bf16 = MoeRooflineLatency(config, b200, model, 1, MoeServingSpec())
    fp8 = MoeRooflineLatency(config, b200, model, 1, MoeServingSpec(expert_activations="fp8"))
    routed = 24 * 4 * (3 * 2880 * 2880 + 3 * 2880)
    assert routed == 2_389_616_640
    shares = b200.compute_efficiency
    per_flop = 1 / (2250e9 * shares["bf16"]) - 1 / (4500e9 * shares["fp8"])
    share = MoeServingSpec().compute_share * (2880 * 2880 / (2048 * 7168)) ** 0.196
    saved = 2 * routed * per_flop / share
    assert bf16.token_ms - fp8.token_ms == pytest.approx(saved, rel=1e-9)
    # the token copies around the grouped GEMMs carry 1-byte rows instead of 2-byte ones: one
    # token's quantize (2 + 1), expand (1 x (1 + 4)) and sum (2 x (4 + 1)) over 2,880 elements
    # a layer against BF16's expand 2 x (1 + 4) and sum; written `bf16`, nothing changes
    assert fp8.copies_ms / bf16.copies_ms == pytest.approx((3 + 5 + 10) / (10 + 10), rel=1e-12)
    written = MoeRooflineLatency(config, b200, model, 1, MoeServingSpec(expert_activations="bf16"))
    assert (written.token_ms, written.copies_ms) == (bf16.token_ms, bf16.copies_ms)
    # and a gather carries the experts' 1-byte inputs (the combine stays BF16)
    dep = {"ep": 4, "attention_dp": 4, "dispatch": "allgather"}
    gathered = MoeRooflineLatency(config, b200, model, 4, MoeServingSpec(**dep))
    fp8_gather = MoeServingSpec(**dep, expert_activations="fp8")
    assert gathered.dispatch_bytes == 2
    assert MoeRooflineLatency(config, b200, model, 4, fp8_gather).dispatch_bytes == 1.0


def test_the_engine_chooses_the_permute_unless_written() -> None:
    from simsched.config.engines import EngineSpec
    from simsched.config.moe_serving import permute_of

    unset = MoeServingSpec()
    assert permute_of(unset, None) == "kernel"  # the calibration's TensorRT-LLM
    assert permute_of(unset, EngineSpec(name="trtllm")) == "kernel"
    for name in ("vllm", "vllm-0.6", "sglang"):
        assert permute_of(unset, EngineSpec(name=name)) == "fused"
    assert permute_of(MoeServingSpec(permute="kernel"), EngineSpec(name="vllm")) == "kernel"


def test_tensorrt_llm_gathers_under_attention_dp_unless_told() -> None:
    from simsched.config.engines import EngineSpec
    from simsched.config.moe_serving import dispatch_of

    trtllm, vllm = EngineSpec(name="trtllm"), EngineSpec(name="vllm")
    dep = MoeServingSpec(ep=8, attention_dp=8)
    assert dispatch_of(dep, trtllm) == "allgather"
    assert dispatch_of(dep, None) == dispatch_of(dep, vllm) == "alltoall"
    # no attention DP, or no expert parallelism: nothing to gather
    assert dispatch_of(MoeServingSpec(ep=8), trtllm) == "alltoall"
    assert dispatch_of(MoeServingSpec(attention_dp=8), trtllm) == "alltoall"
    written = MoeServingSpec(ep=8, attention_dp=8, dispatch="alltoall")
    assert dispatch_of(written, trtllm) == "alltoall"
    # the whole replica: Scout DEP4 under `engine: trtllm` costs what `dispatch: allgather` does
    config = RooflineLatencyConfig(kind="roofline")
    scout = ModelSpec(name="llama-4-scout", **presets.MODEL_PRESETS["llama-4-scout"])
    gather = MoeServingSpec(ep=4, attention_dp=4, dispatch="allgather")
    told = MoeRooflineLatency(config, H200, scout, 4, gather)
    plain = MoeServingSpec(ep=4, attention_dp=4)
    chosen = MoeRooflineLatency(config, H200, scout, 4, plain, engine=trtllm)
    assert chosen.iteration_ms(400, 0, 0, 10, 5000) == told.iteration_ms(400, 0, 0, 10, 5000)


def test_a_scenarios_engine_reaches_the_replicas_token_copies(tmp_path: Path) -> None:
    # DeepSeek-R1 on attention TP8 (ep = 1): every GPU holds each token and its 8 copies. A
    # token and layer: quantizing 7,168 x (2 + 1), the expand 7,168 x 1 x (1 + 8), the sum
    # 7,168 x 2 x (8 + 1): `engine: vllm` drops the expand, and `permute: kernel` written
    # beside it brings it back
    def copies_ms(extra: str) -> float:
        path = write_scenario(tmp_path, cluster(extra), ONE_REQUEST)
        return build_latency(load_scenario(path).cluster).copies_ms

    expand, total = 7168 * 9, 7168 * (3 + 2 * 9)
    plain = copies_ms("")
    assert copies_ms("  engine: vllm\n") == pytest.approx(plain * total / (expand + total))
    assert copies_ms("  engine: vllm\n  moe_serving: {permute: kernel}\n") == plain
    assert plain == pytest.approx(58 * (expand + total) / (4800e6 * presets.H200_MEMORY))


def test_the_moe_layers_kernel_time_is_fixed_per_iteration() -> None:
    # Mixtral 8x7B on one GPU: 32 MoE layers, no collectives. The kernel time adds
    # 32 x 40 us = 1.28 ms to every iteration, one decode or a 4,096-token prefill chunk alike
    mixtral = ModelSpec(name="mixtral-8x7b", **presets.MODEL_PRESETS["mixtral-8x7b"])
    config = RooflineLatencyConfig(kind="roofline")
    none = MoeRooflineLatency(config, H200, mixtral, 1, MoeServingSpec(layer_us=0.0))
    some = MoeRooflineLatency(config, H200, mixtral, 1, MoeServingSpec(layer_us=40.0))
    for args in ((0, 0, 0, 1, 100), (4096, 4096 * 4097 // 2, 0, 0, 0), (512, 0, 0, 64, 9000)):
        assert some.iteration_ms(*args) - none.iteration_ms(*args) == pytest.approx(
            32 * 40.0 / 1000, rel=1e-9
        )
    # DeepSeek-R1's 3 leading dense layers pay none: 58 of its 61 layers are MoE
    r1_none = MoeRooflineLatency(config, H200, R1, 8, MoeServingSpec(layer_us=0.0))
    r1_some = MoeRooflineLatency(config, H200, R1, 8, MoeServingSpec(layer_us=40.0))
    assert r1_some.fixed_ms - r1_none.fixed_ms == pytest.approx(58 * 0.040, rel=1e-12)


def test_an_mla_decode_reads_or_computes_its_context_whichever_is_longer() -> None:
    # DEP8: one latent copy a token. Per cached token, 61 layers x 576 BF16 values read at
    # 8 x 4,800 GB/s x the memory share, or 61 x 2 x 128 heads x (2 x 512 + 64) FLOPs at
    # 8 x 989.5 TFLOPS x the BF16 share (the preset's cache is BF16: BF16 attention)
    config = RooflineLatencyConfig(kind="roofline")
    dep8 = MoeRooflineLatency(config, H200, R1, 8, MoeServingSpec(ep=8, attention_dp=8))
    reads = 61 * 576 * 2 / (8 * 4800e6 * presets.H200_MEMORY)
    flops = 61 * 2 * 128 * (2 * 512 + 64) / (8 * 989.5e9 * 0.351)
    assert flops > reads  # 128 heads share one latent: compute-bound
    assert dep8.decode_kv_ms == pytest.approx(flops, rel=1e-12)
    no_context = dep8.iteration_ms(0, 0, 0, 64, 0)
    assert dep8.iteration_ms(0, 0, 0, 64, 64 * 1000) - no_context == pytest.approx(
        flops * 64_000, rel=1e-9
    )
    # attention TP8: every GPU reads all 8 copies of each latent, and reads dominate again
    tp8 = MoeRooflineLatency(config, H200, R1, 8, MoeServingSpec())
    assert tp8.decode_kv_ms == tp8.kv_ms == pytest.approx(8 * reads, rel=1e-12)


def test_speculative_verification_multiplies_an_mla_decodes_attention_flops(
    tmp_path: Path,
) -> None:
    # DEP8 with MTP 3: each sequence verifies 4 tokens, 4 queries against every cached latent.
    # The reads stay one pass (61 x 576 BF16 values a token), the FLOPs are 4 times a query's
    spec = (
        "  moe_serving: {ep: 8, attention_dp: 8}\n"
        "  speculative: {method: mtp, tokens: 3, acceptance: 0.7}"
    )
    config = load_scenario(write_scenario(tmp_path, cluster(spec), ONE_REQUEST)).cluster
    latency = build_latency(config)
    reads = 61 * 576 * 2 / (8 * 4800e6 * presets.H200_MEMORY)
    flops = 61 * 2 * 128 * (2 * 512 + 64) / (8 * 989.5e9 * 0.351)
    per_token = max(reads, 4 * flops)
    no_context = latency.iteration_ms(0, 0, 0, 64, 0)
    with_context = latency.iteration_ms(0, 0, 0, 64, 64_000)
    assert with_context - no_context == pytest.approx(per_token * 64_000, rel=1e-9)
    # the drafter's passes read no context: the same difference without speculation is 1 query
    plain = build_latency(config.model_copy(update={"speculative": None}))
    assert plain.iteration_ms(0, 0, 0, 64, 64_000) - plain.iteration_ms(
        0, 0, 0, 64, 0
    ) == pytest.approx(flops * 64_000, rel=1e-9)


def test_a_gqa_decode_stays_read_bound() -> None:
    # Qwen3-235B-A22B: 64 query heads on 4 KV heads, 4 x 64 x 128 FLOPs against 2 x 4 x 128
    # bytes (FP8) a layer: 32 FLOPs a byte, far below the H200's ratio
    qwen = ModelSpec(name="qwen3-235b-a22b", **presets.MODEL_PRESETS["qwen3-235b-a22b"])
    config = RooflineLatencyConfig(kind="roofline")
    latency = MoeRooflineLatency(config, H200, qwen, 8, MoeServingSpec(ep=8, attention_dp=8))
    assert latency.decode_kv_ms == latency.kv_ms


def test_flops_follow_the_active_parameters() -> None:
    config = RooflineLatencyConfig(kind="roofline")
    # the experts at a dense GEMM's rate whatever their size (test_moe_expert_size.py)
    serving = MoeServingSpec(expert_efficiency=1.0, expert_size_exponent=0.0)
    latency = MoeRooflineLatency(config, H200, R1, 8, serving)
    head = 129280 * 7168
    idle = 58 * (256 - 8) * 3 * 7168 * 2048
    per_ms = 8 * 1979e9 * presets.GPU_PRESETS["h200"]["compute_efficiency"]["fp8"]
    assert latency.token_ms == pytest.approx(2 * (R1.params - 2 * head - idle) / per_ms, rel=1e-9)


def test_imbalance_reads_more_experts_up_to_all_of_them() -> None:
    config = RooflineLatencyConfig(kind="roofline")
    even = MoeRooflineLatency(config, H200, R1, 8, MoeServingSpec(ep=8))  # shipped efficiency
    skewed = MoeRooflineLatency(config, H200, R1, 8, MoeServingSpec(ep=8, imbalance=2.0))
    # one token reads 8 experts a layer, 16 with imbalance 2; many tokens at most all 256
    assert skewed.weights_ms(1) - even.weights_ms(1) == pytest.approx(8 * even.expert_ms)
    assert skewed.weights_ms(10_000) == pytest.approx(even.static_ms + 256 * even.expert_ms)


def cluster(extra: str = "") -> str:
    return (
        "  service_model: continuous_batching\n  gpu: h200\n  tp: 8\n  model: deepseek-r1\n" + extra
    )


def test_mla_latent_is_copied_on_every_gpu_of_an_attention_group(tmp_path: Path) -> None:
    # 8 x 141 GiB x 0.9 less the FP8 weights, over 70,272 BF16 bytes x 16 tokens a block:
    # attention TP8 keeps 8 copies of each latent (S-TRT-B3: 500 vs 4,000 requests)
    spare = 8 * 141 * 1024**3 * 0.9 - R1.params
    tp = load_scenario(write_scenario(tmp_path, cluster(), ONE_REQUEST)).cluster
    dep = load_scenario(
        write_scenario(tmp_path, cluster("  moe_serving: {ep: 8, attention_dp: 8}"), ONE_REQUEST)
    ).cluster
    # attention DP8 holds 7 more copies of the attention weights (test_moe_dep_memory.py)
    assert dep.blocks_per_replica == int((spare - 7 * 61 * 187_107_328) // (70_272 * 16))
    assert tp.blocks_per_replica == int(spare // (70_272 * 8 * 16))


@pytest.mark.parametrize(
    ("cluster_text", "message"),
    [
        (cluster("  moe_serving: {ep: 3}"), "ep (3) must divide tp (8)"),
        (cluster("  moe_serving: {attention_dp: 16}"), "attention_dp (16) must divide tp"),
        (cluster("  moe_serving: {ep: 8, imbalance: 0.5}"), "imbalance"),
        (cluster("  moe_serving: {expert_compute_efficiency: 0}"), "expert_compute_efficiency"),
        (cluster("  moe_serving: {expert_memory_efficiency: 1.5}"), "expert_memory_efficiency"),
        (cluster("  moe_serving: {layer_us: -1}"), "cluster.moe_serving.layer_us"),
        (cluster("  moe_serving: {expert_tile_rows: -1}"), "cluster.moe_serving.expert_tile_rows"),
        (
            cluster("  moe_serving: {expert_size_exponent: -0.1}"),
            "cluster.moe_serving.expert_size_exponent",
        ),
        (
            cluster("  moe_serving: {ep: 8, dispatch: allgather}"),
            "cluster.moe_serving.dispatch: allgather gathers the attention-DP ranks' tokens",
        ),
        (cluster("  moe_serving: {ep: 8, attention_dp: 8, dispatch: ring}"), "dispatch"),
        (
            cluster("  moe_serving: {expert_efficiency: 0.7, expert_compute_efficiency: 0.9}"),
            "cluster.moe_serving.expert_efficiency: sets both shares",
        ),
        (
            "  service_model: continuous_batching\n  tp: 2\n  moe_serving: {ep: 2}",
            "ep (2) splits experts, and model 'llama-3.1-8b' has none",
        ),
        # every expert setting on a dense model would be ignored, so each is refused
        (
            "  service_model: continuous_batching\n  moe_serving: {imbalance: 1.5}",
            "imbalance (1.5) applies to the routed experts, and model 'llama-3.1-8b' has none",
        ),
        (
            "  service_model: continuous_batching\n  moe_serving: {alltoall_us: 10}",
            "alltoall_us (10.0) applies to the routed experts",
        ),
        (
            "  service_model: continuous_batching\n  moe_serving: {expert_compute_efficiency: 0.9}",
            "expert_compute_efficiency (0.9) applies to the routed experts",
        ),
        (
            "  service_model: continuous_batching\n  moe_serving: {expert_efficiency: 0.5}",
            "expert_efficiency (0.5) applies to the routed experts",
        ),
        (
            "  service_model: continuous_batching\n  moe_serving: {layer_us: 10}",
            "layer_us (10.0) applies to the routed experts",
        ),
        (
            "  service_model: continuous_batching\n  moe_serving: {expert_tile_rows: 64}",
            "expert_tile_rows (64) applies to the routed experts",
        ),
        (
            "  service_model: continuous_batching\n  moe_serving: {expert_size_exponent: 0.3}",
            "expert_size_exponent (0.3) applies to the routed experts",
        ),
        # the dense roofline costs attention over all tp GPUs: attention DP would only move
        # memory, so it is refused as well
        (
            "  service_model: continuous_batching\n  tp: 2\n  moe_serving: {attention_dp: 2}",
            "cluster.moe_serving.attention_dp: attention_dp (2) is modelled for MoE models only, "
            "and model 'llama-3.1-8b' is dense",
        ),
        (
            "  service_model: continuous_batching\n  moe_serving: {dispatch: allgather}",
            "dispatch (allgather) applies to the routed experts",
        ),
        (
            "  service_model: continuous_batching\n  moe_serving: {permute: fused}",
            "permute (fused) applies to the routed experts",
        ),
        (
            "  service_model: continuous_batching\n  gpu: h200\n  tp: 8\n  model: deepseek-r1\n"
            "  moe_serving: {permute: gather}",
            "cluster.moe_serving.permute: Input should be 'kernel' or 'fused'",
        ),
        (
            "  service_model: continuous_batching\n  gpu: h200\n  model: gpt-oss-20b\n"
            "  moe_serving: {expert_activations: fp4}",
            "cluster.moe_serving.expert_activations: fp4 activations need fp4 tensor cores, and "
            "GPU 'h200' has none (its peak_tflops names no such precision): use one it has "
            "(bf16, fp8, int8)",
        ),
        (  # FP8 inputs to BF16 experts run at BF16's rate: not what the setting would charge
            "  service_model: continuous_batching\n  gpu: h200\n  tp: 2\n  model: mixtral-8x7b\n"
            "  moe_serving: {expert_activations: fp8}",
            "cluster.moe_serving.expert_activations: fp8 inputs are narrower than the experts' "
            "bf16 weights",
        ),
        (
            "  service_model: continuous_batching\n  moe_serving: {expert_activations: fp8}",
            "expert_activations (fp8) applies to the routed experts",
        ),
    ],
)
def test_bad_layouts_exit_2_naming_the_field(
    cluster_text: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from simsched.cli.app import main

    write_scenario(tmp_path, cluster_text, ONE_REQUEST)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.argv", ["simsched", "validate", "s.yaml"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1
    assert err.startswith("s.yaml: cluster") and message in err


def test_each_share_slows_its_own_side_of_the_roofline() -> None:
    config = RooflineLatencyConfig(kind="roofline")

    def shares(flops: float, memory: float) -> MoeRooflineLatency:
        spec = MoeServingSpec(
            ep=8, expert_compute_efficiency=flops, expert_memory_efficiency=memory
        )
        return MoeRooflineLatency(config, H200, R1, 8, spec)

    full, slow_flops, slow_reads = shares(1.0, 1.0), shares(0.25, 1.0), shares(1.0, 0.4)
    # the memory share divides the expert reads only: 58 layers x 3 x 7168 x 2048 FP8 bytes
    # an expert over 8 GPUs at 4,800 GB/s x the H200's memory share, then over 0.4
    bytes_per_ms = 8 * 4800e6 * presets.H200_MEMORY
    assert full.expert_ms == pytest.approx(58 * 3 * 7168 * 2048 / bytes_per_ms, rel=1e-9)
    assert slow_reads.expert_ms == pytest.approx(full.expert_ms / 0.4, rel=1e-12)
    assert (slow_reads.token_ms, slow_flops.expert_ms) == (full.token_ms, full.expert_ms)
    # the compute share divides the routed experts' FLOPs only: 58 x 8 of them a token, each
    # 3 x 7168 x 2048 parameters at 2 FLOPs, now 4 times as slow (3 more times their cost)
    per_ms = 8 * 1979e9 * presets.GPU_PRESETS["h200"]["compute_efficiency"]["fp8"]
    routed_active = 58 * 8 * 3 * 7168 * 2048
    extra = 3 * 2 * routed_active / per_ms
    assert slow_flops.token_ms - full.token_ms == pytest.approx(extra, rel=1e-9)
    assert slow_flops.static_ms == full.static_ms


def test_a_compute_bound_prefill_chunk_pays_the_compute_share_only() -> None:
    # 8,192 prompt tokens on a DEP8 node: T k / E = 256 tokens an expert, compute-bound
    config = RooflineLatencyConfig(kind="roofline", overhead_ms=0.0)
    spec = MoeServingSpec(
        ep=8,
        attention_dp=8,
        expert_compute_efficiency=0.8,
        expert_memory_efficiency=0.3,
        layer_us=20.0,
    )
    latency = MoeRooflineLatency(config, H200, R1, 8, spec)
    tokens = 8192
    head = 129280 * 7168
    routed_active = 58 * 8 * 3 * 7168 * 2048
    other = R1.params - 2 * head - 58 * 256 * 3 * 7168 * 2048
    per_ms = 8 * 1979e9 * presets.GPU_PRESETS["h200"]["compute_efficiency"]["fp8"]
    # every one of the 256 experts takes tokens, and computes half a 128-row tile beyond them:
    # 64 x 256 = 16,384 rows a layer at the experts' share
    padding = 64 * 256
    expert_row = 58 * 3 * 7168 * 2048
    compute = 2 * (other + routed_active / 0.8) * tokens / per_ms
    compute += 2 * expert_row / 0.8 * padding / per_ms
    assert compute > latency.weights_ms(tokens)  # every expert read once, at 0.3, is less
    a2a = 2 * 58 * (30.2 / 1000 + tokens / 8 * 8 * 7168 * 2 * 7 / 8 / LINK)
    reduces = 3 * (30.2 / 1000 + tokens * 2 * 7168 * 2 * 7 / 8 / 450e6)
    kv = latency.kv_ms * tokens  # the chunk writes its own latents
    kernels = 58 * 20.0 / 1000
    # the token copies, as in the decode iteration: 45,696 bytes a token and MoE layer a GPU
    copies = 58 * tokens * 45_696 / (4800e6 * presets.H200_MEMORY)
    expected = compute + a2a + reduces + kv + kernels + copies
    assert latency.iteration_ms(tokens, 0, 0, 0, 0) == pytest.approx(expected, rel=1e-12)


def test_expert_efficiency_sets_both_shares() -> None:
    both = MoeServingSpec(expert_efficiency=0.7)
    assert (both.compute_share, both.memory_share) == (0.7, 0.7)
    # a share written beside it would be ignored: refused instead
    with pytest.raises(ValueError, match="expert_compute_efficiency"):
        MoeServingSpec(expert_efficiency=0.7, expert_compute_efficiency=0.2)
    with pytest.raises(ValueError, match="expert_memory_efficiency"):
        MoeServingSpec(expert_efficiency=0.7, expert_memory_efficiency=0.3)
    # a dump of a valid spec validates again (the shares at their defaults)
    assert MoeServingSpec.model_validate(both.model_dump()) == both
    apart = MoeServingSpec(expert_compute_efficiency=0.2, expert_memory_efficiency=0.3)
    assert (apart.compute_share, apart.memory_share) == (0.2, 0.3)


def test_expert_efficiency_slows_only_the_routed_experts() -> None:
    config = RooflineLatencyConfig(kind="roofline")
    full = MoeRooflineLatency(config, H200, R1, 8, MoeServingSpec(ep=8, expert_efficiency=1.0))
    half = MoeRooflineLatency(config, H200, R1, 8, MoeServingSpec(ep=8, expert_efficiency=0.5))
    assert half.expert_ms == pytest.approx(2 * full.expert_ms, rel=1e-12)
    assert half.static_ms == full.static_ms
    # FLOPs: the 58 x 8 routed experts a token runs cost twice, the rest as before
    head = 129280 * 7168
    per_param = full.token_ms / (R1.params - 2 * head - 58 * 248 * 3 * 7168 * 2048)
    routed_active = 58 * 8 * 3 * 7168 * 2048
    assert half.token_ms - full.token_ms == pytest.approx(per_param * routed_active, rel=1e-9)


def test_the_table_says_how_far_moe_and_speculative_figures_are(tmp_path: Path) -> None:
    from simsched.outputs.cluster_table import table_notes
    from simsched.results.simulate import simulate

    spec = "  speculative: {method: mtp, tokens: 1, acceptance: 0.8}"
    path = write_scenario(tmp_path, cluster(spec), ONE_REQUEST)
    notes = table_notes(simulate(load_scenario(path)))
    assert any(note.startswith("MoE model: ") and "%" in note for note in notes)
    assert any(note.startswith("speculative decoding: ") for note in notes)
    dense = write_scenario(tmp_path, "  service_model: continuous_batching", ONE_REQUEST)
    assert table_notes(simulate(load_scenario(dense))) == []


def test_the_modules_formulas_name_the_kernel_time() -> None:
    # MoeRooflineLatency says "see the module's formulas": they must list every term it adds
    from simsched.sim.cluster import moe_latency

    assert "kernels     = L_moe * layer_us" in moe_latency.__doc__


@pytest.mark.parametrize(
    ("setting", "where"),
    [
        ("{layer_us: 10}", "cluster.moe_serving.layer_us: "),
        ("{imbalance: 1.5}", "cluster.moe_serving.imbalance: "),
        ("{attention_dp: 3}", "cluster.moe_serving.attention_dp: "),
    ],
)
def test_a_refused_layout_names_its_field_as_a_range_error_does(
    setting: str, where: str, tmp_path: Path
) -> None:
    # a negative layer_us is located at cluster.moe_serving.layer_us; a layer_us a dense model
    # cannot use (or a layout that does not divide tp) must be located there as well
    from simsched.errors import InputError

    path = write_scenario(
        tmp_path, f"  service_model: continuous_batching\n  moe_serving: {setting}", ONE_REQUEST
    )
    with pytest.raises(InputError) as caught:
        load_scenario(path)
    assert f"{caught.value}".split("s.yaml: ", 1)[-1].startswith(where)


def test_an_engine_chooses_fp4_experts_inputs_by_their_format_unless_written() -> None:
    from simsched.config.engines import EngineSpec

    # TensorRT-LLM feeds gpt-oss's MXFP4 experts MXFP8 on a B200: the same roofline as FP8
    # inputs written; vLLM keeps its BF16 default, as does TensorRT-LLM on an H200 (no FP4
    # tensor cores) and any engine when `expert_activations` is written
    b200 = SimpleNamespace(**presets.GPU_PRESETS["b200"])
    model = ModelSpec(name="gpt-oss-20b", **presets.MODEL_PRESETS["gpt-oss-20b"])
    assert model.moe.fp4_format == "mxfp4"  # its config.json's quant_method
    config = RooflineLatencyConfig(kind="roofline")

    def terms(gpu: Any, spec: MoeServingSpec, engine: str | None = None) -> tuple:
        named = None if engine is None else EngineSpec(name=engine)
        latency = MoeRooflineLatency(config, gpu, model, 1, spec, engine=named)
        return latency.token_ms, latency.copies_ms

    # the permute written, so that only the inputs can differ between engines
    unset = MoeServingSpec(permute="kernel")
    fp8 = MoeServingSpec(permute="kernel", expert_activations="fp8")
    assert terms(b200, unset, "trtllm") == terms(b200, fp8) != terms(b200, unset)
    assert terms(b200, unset, "vllm") == terms(b200, unset)
    h200 = SimpleNamespace(**presets.GPU_PRESETS["h200"])
    assert terms(h200, unset, "trtllm") == terms(h200, unset)
    bf16 = MoeServingSpec(permute="kernel", expert_activations="bf16")
    assert terms(b200, bf16, "trtllm") == terms(b200, unset)


def test_nvfp4_experts_take_fp4_inputs_on_every_engine_that_names_the_format() -> None:
    from simsched.config.moe_serving import expert_activations_of

    # NVIDIA's NVFP4 DeepSeek-R1: FP8 model, FP4 experts; the format unset, no engine chooses
    r1 = presets.MODEL_PRESETS["deepseek-r1"]
    nvfp4 = ModelSpec(name="r1", **{**r1, "moe": {**r1["moe"], "expert_dtype": "fp4"}})
    named = ModelSpec(
        name="r1", **{**r1, "moe": {**r1["moe"], "expert_dtype": "fp4", "fp4_format": "nvfp4"}}
    )
    b200 = SimpleNamespace(**presets.GPU_PRESETS["b200"])
    unset = MoeServingSpec()
    for engine in ("trtllm", "vllm", "sglang"):
        assert expert_activations_of(unset, SimpleNamespace(name=engine), b200, named) == "fp4"
        assert expert_activations_of(unset, SimpleNamespace(name=engine), b200, nvfp4) is None
    assert expert_activations_of(unset, SimpleNamespace(name="vllm-0.6"), b200, named) is None
    assert expert_activations_of(unset, None, b200, named) is None  # no engine: the model's


def test_a_fp4_format_on_experts_of_another_precision_is_refused(simsched_cli) -> None:
    burst = ROOT / "calibration" / "scenarios" / "fixed_burst.yaml"
    r1 = "{preset: deepseek-r1, moe: {experts: 256, experts_per_token: 8, expert_ffn: 2048, "
    run = simsched_cli("validate", burst, "--set", f"cluster.model={r1}fp4_format: nvfp4}}}}")
    assert run.code == 2 and run.err.count("\n") == 1
    assert run.err.rstrip().endswith(
        "cluster.model.moe.fp4_format: nvfp4 is a format of FP4 experts, and this model's "
        "experts are fp8: set moe.expert_dtype (or weight_dtype) to fp4, or drop fp4_format"
    )
