"""The roofline for a Mixture-of-Experts model: the expert weights an iteration reads depend on
how many distinct experts its tokens activate, the FLOPs on the active parameters, and expert
parallelism trades the experts' all-reduce for an all-to-all (docs/moe.md).

    distinct(T) = E * (1 - (1 - k/E)^T)            experts one MoE layer reads for T tokens
    weights(T)  = static_bytes + replicated
                  + L_moe * min(E, imbalance * distinct(T)) * expert_bytes / x_mem
    flops(T)    = 2 * (other_active + routed_active * r / x_flop) * T + 2 * vocab * hidden * D
                  + 2 * L_moe * expert_params * r / x_flop * padding(T)
                  (r: the model's GEMM rate over the experts' input precision's, peak x share;
                   1 unless `expert_activations` names another precision)
    padding(T)  = min(k * T, tile / 2 * distinct(T))   rows the experts' last tiles add
    gemm        = max(flops(T) / compute, weights(T) / memory)
                  (x_flop: min(1, expert_compute_efficiency x (S / S_ref) ^ a), S one expert's
                   weight matrix on one GPU, expert_ffn / (tp / ep) x hidden, S_ref DeepSeek-V3's
                   2,048 x 7,168, a expert_size_exponent; x_mem: expert_memory_efficiency)
    attention   = as the dense roofline, with MLA's query width, and the KV reads times the GPUs
                  that each hold a token's latent (kv_copies); a decode's attention per cached
                  token is max(its KV reads, its FLOPs: Attention.decode_flops x full layers
                  x the queries a sequence verifies, k + 1 under speculative decoding)
    reduces     = L * [attention group > 1] + (L - L_moe, or L with ep = 1) * [tp > 1]
                  all-reduces of 2 (g - 1)/g * hidden * 2 B per token over g GPUs
    all-to-all  = L_moe * sum over dispatch and combine of
                  (alltoall_us + T/ep * c * hidden * b * (ep - 1)/ep / (link * link_efficiency))
                  (c: k copies a token for an all-to-all, ep for AllGather + ReduceScatter;
                   b: 2 bytes, q for a gathered dispatch of FP8 or FP4 expert inputs)
    kernels     = L_moe * layer_us                  the MoE layers' own kernels, every iteration
    copies      = L_moe * hidden * (quantize + expand + sum) per token
                  / (one GPU's HBM x memory share)
                  quantize = (2 B + q) * own             (FP8 or FP4 expert inputs only)
                  expand   = q * (read + local)          (permute: kernel; 0 when fused)
                  sum      = 2 B * (local + seen)
                  (own = 1/attention_dp; local = k/ep; when the GPU holds every token (ep = 1,
                   a gathering exchange, attention_dp = 1) read = 1 - C(E - E/ep, k)/C(E, k)
                   and seen = 1, else read = seen = k/ep; q: 1 B FP8, 0.5625 B FP4, else 2 B)
    cpu         = overhead_ms + per_seq_ms * D

replicated: the attention weights each attention-DP group beyond the first reads (its own copy).
T = prefill tokens + decoding sequences, D = decoding sequences, L layers of which L_moe MoE.
Everything works on NumPy arrays of contexts as well, so `decode_run` applies unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from simsched.config import presets
from simsched.config.model_presets import DTYPE_BYTES, compute_dtype, dtype_bytes
from simsched.config.moe import attention_of, expert_params
from simsched.config.moe_serving import (
    NO_EXPERT_PARALLELISM,
    REFERENCE_EXPERT_ELEMENTS,
    MoeServingSpec,
    alltoall_latency_us,
    dispatch_of,
    kv_copies,
    replicated_attention_bytes,
    with_engine_choices,
)
from simsched.config.moe_shapes import (
    active_params,
    full_attention_layers,
    routed_expert_params,
)
from simsched.sim.cluster.latency import RooflineLatency, compute_share, peak_tflops

ACTIVATION_BYTES = 2  # BF16 hidden states on the wire, as the dense all-reduce assumes


def distinct_experts(experts: int, per_token: int, tokens: Any) -> Any:
    """Expected distinct experts that `tokens` tokens choose, each `per_token` of `experts`,
    under uniform routing: an expert is missed by one token with probability 1 - k/E."""
    return experts * (1.0 - (1.0 - per_token / experts) ** tokens)


def padding_rows(per_token: int, tokens: Any, distinct: Any, tile_rows: int) -> Any:
    """Token rows one MoE layer's grouped GEMMs compute beyond the routed ones (docs/moe.md,
    "Tile padding"): each expert with tokens computes its last tile of `tile_rows` whole, half a
    tile beyond its rows on average, and at most as many rows again as it has (an assumption:
    what a tile of twice its rows leaves empty; docs/moe.md says what bounds it)."""
    routed, half_tiles = per_token * tokens, tile_rows / 2 * distinct
    try:
        return min(routed, half_tiles)  # plain numbers, the hot path: no type test to pay
    except ValueError:  # arrays of batch sizes have no single truth value: elementwise
        return np.minimum(routed, half_tiles)


def expert_compute_share(spec: MoeServingSpec, expert_ffn: int, hidden: int, tp: int) -> float:
    """The routed experts' share of a dense GEMM's compute roofline (docs/moe.md, "Expert
    size"): the fitted share at DeepSeek-V3's expert size, times how much faster a GEMM runs on
    a larger weight matrix, (S / S_ref) ^ expert_size_exponent, where S is what one GPU holds of
    one expert (its width split over the tp / ep GPUs that share it, times the hidden size); at
    most 1, a dense GEMM's."""
    per_gpu = expert_ffn / (tp // spec.ep) * hidden
    scaled = spec.compute_share * (per_gpu / REFERENCE_EXPERT_ELEMENTS) ** spec.expert_size_exponent
    return min(1.0, scaled)


def alltoall_ms(
    tokens: Any,
    copies: int,
    hidden: int,
    ep: int,
    latency_us: float,
    link_gbps: float,
    element_bytes: int = ACTIVATION_BYTES,
) -> Any:
    """One exchange (dispatch or combine) of an MoE layer: each of the ep GPUs sends its T/ep
    tokens' hidden states, `copies` of each (`exchange_copies`) at `element_bytes` an element,
    (ep - 1)/ep of them to other GPUs, over its own link in parallel with the others."""
    if ep == 1:
        return 0.0 * tokens
    per_gpu = tokens / ep * copies * hidden * element_bytes * (ep - 1) / ep
    return latency_us / 1000 + per_gpu / (link_gbps * 1e6)


# An FP8 or NVFP4 model's MoE runs on quantized activations: one byte an element, or half a byte
# plus one FP8 scale per 16 elements (NVFP4's block; TensorRT-LLM `fp4_quantize`,
# `scaling_vector_size` 16). Other models run the GEMMs on BF16 activations.
QUANTIZED_ACTIVATION_BYTES = {"fp8": 1.0, "fp4": 0.5 + 1 / 16}


def quantized_bytes(model: Any, activations: str | None = None) -> float | None:
    """Bytes of one element of the MoE's quantized input, or None when it runs on BF16: the
    experts' input precision (`moe_serving.expert_activations`), else the model's GEMMs'."""
    return QUANTIZED_ACTIVATION_BYTES.get(activations or compute_dtype(model))


@dataclass(frozen=True)
class Exchange:
    """How one `dispatch` kind moves the MoE layers' tokens between the ep GPUs."""

    gathers: bool  # every token to every GPU (AllGather + ReduceScatter), not to its experts'
    quantizes: bool  # an FP8 or FP4 model's tokens cross the dispatch quantized, not in BF16

    def copies(self, per_token: int, ep: int) -> int:
        """Copies of a token's hidden state an exchange moves: one per expert (k), or one per
        expert-parallel GPU (ep) when every token goes to every GPU whatever its experts."""
        return ep if self.gathers else per_token

    def dispatch_bytes(self, model: Any, activations: str | None = None) -> float:
        """Bytes an element of the dispatched hidden states takes; the combine always returns
        BF16, as the dense all-reduce assumes."""
        quantized = quantized_bytes(model, activations) if self.quantizes else None
        return ACTIVATION_BYTES if quantized is None else quantized


# docs/moe.md, "Iteration cost": an all-to-all (DeepEP, pplx, NCCL) sends a token to its k
# experts' GPUs, in BF16 here; TensorRT-LLM's AllGather path gathers every token on every GPU
# and quantizes an FP8 or NVFP4 model's activations before the gather (`static_quantize_e4m3_
# per_tensor`, `fp4_quantize`): its MoE runs on quantized inputs
EXCHANGES = {
    "alltoall": Exchange(gathers=False, quantizes=False),
    "allgather": Exchange(gathers=True, quantizes=True),
}


@dataclass(frozen=True)
class TokenLayout:
    """Where one MoE layer's tokens sit on one GPU, per token of the iteration (docs/moe.md,
    "Token copies in HBM"): the rows a GPU quantizes, reads, writes and sums."""

    own: float  # the tokens its attention group computed: 1 / attention_dp
    local: float  # the copies its experts take: k / ep
    read: float  # the rows its expand reads
    seen: float  # the rows its sum writes

    @classmethod
    def of(
        cls, experts: int, per_token: int, ep: int, attention_dp: int, gathers: bool
    ) -> TokenLayout:
        """A GPU holds every token when the experts are split by TP (ep = 1), when the exchange
        gathers, or when attention is TP over the whole replica; it reads the rows of the
        tokens with at least one of its E/ep experts (1 - C(E - E/ep, k) / C(E, k) of them
        under uniform routing: each token's k experts are distinct) and zero-fills every
        token's output row. Otherwise the all-to-all delivers its k/ep copies, which are all
        it reads and returns."""
        local = per_token / ep
        if ep == 1 or gathers or attention_dp == 1:
            missed = math.comb(experts - experts // ep, per_token) / math.comb(experts, per_token)
            read, seen = 1.0 - missed, 1.0
        else:
            read, seen = local, local
        return cls(own=1.0 / attention_dp, local=local, read=read, seen=seen)


@dataclass(frozen=True)
class Permute:
    """How an MoE layer puts its tokens into expert order around the grouped GEMMs."""

    expands: bool  # a kernel of its own writes each token's k copies before the first GEMM

    def bytes_per_token(self, layout: TokenLayout, hidden: int, quantized: float | None) -> float:
        """HBM bytes one GPU moves outside the GEMMs for one token of the iteration in one MoE
        layer (docs/moe.md, "Token copies in HBM"): an FP8 or FP4 model's own tokens quantized
        (read in BF16, written at `quantized` bytes), the expand's reads and its local copies
        at the GEMM's input width, and the sum's BF16 reads of the local outputs and writes of
        one row per token seen."""
        width = ACTIVATION_BYTES if quantized is None else quantized
        quantize = 0.0 if quantized is None else (ACTIVATION_BYTES + quantized) * layout.own
        expand = width * (layout.read + layout.local) if self.expands else 0.0
        total = ACTIVATION_BYTES * (layout.local + layout.seen)
        return hidden * (quantize + expand + total)


# docs/moe.md, "Token copies in HBM": TensorRT-LLM's CUTLASS MoE runs expandInputRowsKernel and
# finalizeMoeRoutingKernel around its grouped GEMMs; vLLM's and SGLang's Triton fused_moe read
# the rows through sorted token ids inside the first GEMM and sum the copies (moe_sum)
PERMUTES = {"kernel": Permute(expands=True), "fused": Permute(expands=False)}


def exchange_copies(spec: MoeServingSpec, per_token: int) -> int:
    """How many copies of a token's hidden state `spec`'s exchange moves (`Exchange.copies`)."""
    return EXCHANGES[dispatch_of(spec, None)].copies(per_token, spec.ep)


def moe_layer_kernels_ms(moe_layers: int, spec: MoeServingSpec) -> float:
    """The MoE layers' fixed kernel time of one iteration: L_moe * layer_us (docs/moe.md,
    "Per-layer kernel time"). Each MoE layer runs a chain of small, dependent kernels beside
    what a dense FFN runs (router GEMM, top-k, permute, two grouped GEMMs, unpermute, the shared
    expert); each costs its launch and tail latency however few its tokens, so the chain adds a
    fixed time per layer that the byte and FLOP terms do not count."""
    return moe_layers * spec.layer_us / 1000


class MoeRooflineLatency:
    """The roofline of latency.py with the MoE terms above; see the module's formulas."""

    def __init__(
        self, config: Any, gpu: Any, model: Any, tp: int, serving: MoeServingSpec | None,
        scale: float = 1.0, queries: int = 1, engine: Any = None,
    ) -> None:  # fmt: skip
        dense = RooflineLatency(config, gpu, model, tp, scale)  # the shared coefficients
        # the exchange and the permute as written, else as the engine runs them
        spec = with_engine_choices(serving or NO_EXPERT_PARALLELISM, engine, gpu, model)
        moe = model.moe
        self.experts, self.per_token = moe.experts, moe.experts_per_token
        self.moe_layers = moe.moe_layers(model.layers)
        self.imbalance = spec.imbalance
        bytes_per_ms = presets.weight_bytes(model) / dense.weights_ms  # the replica's HBM rate
        expert_dtype = moe.expert_dtype
        each = dtype_bytes(model, "weight") if expert_dtype is None else DTYPE_BYTES[expert_dtype]
        per_expert = expert_params(moe, model.hidden_size)  # one routed expert's parameters
        expert_bytes = per_expert * each
        routed = routed_expert_params(model) * each
        # every attention-DP group reads its own copy of the attention weights each iteration
        replicated = replicated_attention_bytes(model, serving)
        self.static_ms = (presets.weight_bytes(model) - routed + replicated) / bytes_per_ms
        # per distinct expert read, at the grouped GEMMs' share of the memory roofline
        self.expert_ms = expert_bytes * self.moe_layers / bytes_per_ms / spec.memory_share
        # FLOPs follow the active parameters: the body's share of them, the routed experts' at
        # the grouped GEMMs' share of the compute roofline
        body = _body_params(model)
        # one routed row (a token at one expert) through every MoE layer, and a token's k of them
        expert_row = self.moe_layers * per_expert
        routed_active = self.per_token * expert_row
        other = body - (model.params - active_params(model)) - routed_active
        per_param_ms = dense.token_ms / body
        # at their inputs' precision (docs/moe.md, "Expert activations"): the model's GEMM rate
        # over theirs (exactly 1.0 when they are the model's, leaving the sum as it was)
        activations = spec.expert_activations or compute_dtype(model)
        ratio = _rate(config, gpu, compute_dtype(model), scale) / _rate(
            config, gpu, activations, scale
        )
        share = expert_compute_share(spec, moe.expert_ffn, model.hidden_size, tp)
        self.token_ms = per_param_ms * (other + routed_active * ratio / share)
        # one routed row at the experts' rate: what each row of tile padding costs
        self.row_ms = per_param_ms * expert_row * ratio / share
        self.tile_rows = spec.expert_tile_rows
        self.head_ms = dense.head_ms
        q_width = attention_of(model).query_width(model)
        dense_width = (model.heads or model.hidden_size // model.head_dim) * model.head_dim
        self.pair_ms = dense.pair_ms * q_width / dense_width
        self.window = dense.window
        self.window_pair_ms = dense.window_pair_ms * q_width / dense_width
        self.kv_ms = dense.kv_ms * kv_copies(model, tp, serving)
        # a decode's attention per cached token: its reads or its FLOPs, whichever is longer
        # (MLA's 128 heads share one latent: compute-bound; GQA's reads dominate). `queries`
        # tokens of a sequence attend to its context at once (k + 1 under speculative
        # decoding): one read of the context, `queries` times the FLOPs
        per_flop_ms = (dense.pair_ms + dense.window_pair_ms) / (4 * model.layers * dense_width)
        attention = queries * attention_of(model).decode_flops(model)
        flops_ms = per_flop_ms * full_attention_layers(model) * attention
        self.decode_kv_ms = max(self.kv_ms, flops_ms)
        self.seq_ms = dense.seq_ms
        self.before_ms, self.after_ms = dense.before_ms, dense.after_ms
        # collectives: attention all-reduces over each attention group, FFN all-reduces over
        # the replica for dense layers (and MoE layers without ep), all-to-alls with ep
        group = tp // spec.attention_dp
        ffn_reduces = (model.layers - (self.moe_layers if spec.ep > 1 else 0)) if tp > 1 else 0
        attn_reduces = model.layers if group > 1 else 0
        link = gpu.link_gbps * 1e6
        ring_bytes = 2 * model.hidden_size * ACTIVATION_BYTES  # times (g - 1)/g below
        self.fixed_ms = (
            config.overhead_ms
            + (ffn_reduces + attn_reduces) * config.allreduce_us / 1000
            + moe_layer_kernels_ms(self.moe_layers, spec)
        )
        self.comm_ms = (
            attn_reduces * ring_bytes * (group - 1) / group / spec.attention_dp
            + ffn_reduces * ring_bytes * (tp - 1) / tp
        ) / link  # per token in the batch (attention groups work on their share at once)
        self.ep, self.hidden = spec.ep, model.hidden_size
        self.link_gbps = gpu.link_gbps * spec.link_efficiency  # what the exchange reaches
        exchange = EXCHANGES[spec.dispatch]
        self.copies = exchange.copies(self.per_token, spec.ep)
        self.dispatch_bytes = exchange.dispatch_bytes(model, activations)
        self.alltoall_us = alltoall_latency_us(spec, config)
        # the token copies each GPU writes and reads around its grouped GEMMs, at the dense
        # roofline's memory share (streaming copies, as its weight reads), per iteration token
        layout = TokenLayout.of(
            self.experts, self.per_token, spec.ep, spec.attention_dp, exchange.gathers
        )
        copy_bytes = PERMUTES[spec.permute].bytes_per_token(
            layout, model.hidden_size, quantized_bytes(model, activations)
        )
        self.copies_ms = self.moe_layers * copy_bytes * tp / bytes_per_ms

    attention_ms = RooflineLatency.attention_ms  # the same split of full and windowed layers

    def weights_ms(self, tokens: Any) -> Any:
        return self._weights_of(distinct_experts(self.experts, self.per_token, tokens))

    def _weights_of(self, distinct: Any) -> Any:
        """The weights' read time when `distinct` experts a layer take tokens."""
        read = self.imbalance * distinct
        # at most every expert once (the busiest GPU holds E / ep of them)
        if isinstance(read, float):
            read = min(read, float(self.experts))
        else:
            read = read.clip(max=self.experts)
        return self.static_ms + self.expert_ms * read

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
        distinct = distinct_experts(self.experts, self.per_token, tokens)
        padding = padding_rows(self.per_token, tokens, distinct, self.tile_rows)
        flops = self.token_ms * tokens + self.head_ms * decode_seqs + self.row_ms * padding
        gemm = maximum(flops, self._weights_of(distinct))
        exchange = (tokens, self.copies, self.hidden, self.ep, self.alltoall_us, self.link_gbps)
        # dispatch, then combine (the same bytes unless the dispatch is quantized)
        a2a = self.moe_layers * (
            alltoall_ms(*exchange, self.dispatch_bytes) + alltoall_ms(*exchange)
        )
        per_token = self.comm_ms + self.copies_ms
        fixed = self.fixed_ms + (per_token * tokens + self.seq_ms * decode_seqs)
        return (
            gemm
            + self.attention_ms(prefill_tokens, prefill_pairs)
            + fixed
            + a2a
            + self.kv_ms * (prefill_context + prefill_tokens)
            + self.decode_kv_ms * decode_context
        )


def _rate(config: Any, gpu: Any, dtype: str, scale: float) -> float:
    """One GPU's GEMM rate in `dtype`: its peak times the share a GEMM reaches there."""
    return peak_tflops(gpu, dtype) * compute_share(config, gpu, dtype, scale)


def _body_params(model: Any) -> float:
    """Parameters in the GEMMs a token runs through: all but the embeddings and LM head."""
    head = getattr(model, "vocab_size", 0) * model.hidden_size
    return model.params - (head if getattr(model, "tied_embeddings", False) else 2 * head)
