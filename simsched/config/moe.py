"""Mixture-of-Experts and attention shapes of a model (no SimPy here).

A model's `moe` section describes its expert layers; its `attention` section says how its KV
cache is laid out (GQA, the default, or DeepSeek's MLA); `sliding_window` names the layers that
attend to a bounded window (gpt-oss). Each shape is a seam with one class per kind: the parameter
count, the KV bytes per token and the FLOPs follow from the class, not from branches elsewhere.
Formulas and sources: docs/moe.md.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

Dtype = Literal["bf16", "fp16", "fp8", "int8", "int4", "fp4"]
Small = Annotated[int, Field(gt=0, le=2**20)]
SmallOrZero = Annotated[int, Field(ge=0, le=2**20)]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class MoeSpec(_Spec):
    """Expert layers: `experts` routed experts, `experts_per_token` chosen per token, plus
    `shared_experts` every token passes; each expert a SwiGLU of width `expert_ffn`.

    Which layers are MoE: after `first_dense_layers` dense ones (DeepSeek's
    `first_k_dense_replace`), layer i (from 0) is MoE when (i + 1) % `moe_every` == 0 (Llama 4's
    `interleave_moe_layer_step`); the other layers are dense SwiGLUs of width `dense_ffn`.
    """

    experts: Small
    experts_per_token: Small
    shared_experts: SmallOrZero = 0
    expert_ffn: Small
    shared_expert_ffn: Small | None = None  # unset: expert_ffn (DeepSeek, Llama 4)
    first_dense_layers: SmallOrZero = 0
    moe_every: Small = 1
    dense_ffn: SmallOrZero = 0  # width of the dense layers' FFN; 0 if every layer is MoE
    router_bias: bool = False  # gpt-oss's router has a bias; DeepSeek a score correction
    expert_bias: bool = False  # gpt-oss's experts have biases
    # the experts' precision when it differs from the rest (gpt-oss's MXFP4 experts, FP4 MoE
    # checkpoints with BF16/FP8 attention); unset: the model's weight_dtype
    expert_dtype: Dtype | None = None
    # FP4 experts' block format: NVIDIA's NVFP4 checkpoints (16 elements a block, FP8 scales) or
    # MXFP4 (gpt-oss: 32 elements, power-of-two scales). An engine profile picks the experts'
    # input precision from it (docs/moe.md, "Expert activations"); unset: none is picked
    fp4_format: Literal["nvfp4", "mxfp4"] | None = None

    @model_validator(mode="after")
    def _choose_at_most_all(self) -> MoeSpec:
        if self.experts_per_token > self.experts:
            raise ValueError(
                f"experts_per_token ({self.experts_per_token}) exceeds experts ({self.experts})"
            )
        return self

    def moe_layers(self, layers: int) -> int:
        """How many of `layers` are MoE layers."""
        return sum(
            1 for i in range(self.first_dense_layers, layers) if (i + 1) % self.moe_every == 0
        )


def expert_params(moe: MoeSpec, hidden: int) -> int:
    """One routed expert: gate and up (hidden x ffn each) and down (ffn x hidden), + biases."""
    bias = 2 * moe.expert_ffn + hidden if moe.expert_bias else 0
    return 3 * hidden * moe.expert_ffn + bias


def moe_ffn_params(moe: MoeSpec, hidden: int) -> tuple[int, int]:
    """(routed expert params, always-active params) of one MoE layer's FFN: the routed experts;
    the shared experts and the router (hidden x experts, + bias)."""
    routed = moe.experts * expert_params(moe, hidden)
    shared_ffn = moe.shared_expert_ffn or moe.expert_ffn
    shared = moe.shared_experts * 3 * hidden * shared_ffn
    router = hidden * moe.experts + (moe.experts if moe.router_bias else 0)
    return routed, shared + router


class MlaSpec(_Spec):
    """DeepSeek's multi-head latent attention: the cache holds one latent of `kv_lora_rank`
    plus the shared RoPE key of `qk_rope_head_dim` per token per layer."""

    kind: Literal["mla"]
    kv_lora_rank: Small
    qk_rope_head_dim: Small
    qk_nope_head_dim: Small
    v_head_dim: Small
    q_lora_rank: Small | None = None  # None: queries projected straight from the hidden state


class GqaSpec(_Spec):
    """Grouped-query attention as the model's `heads`, `kv_heads` and `head_dim` say."""

    kind: Literal["gqa"] = "gqa"
    bias: bool = False  # q, k, v and o biases (gpt-oss)
    sinks: bool = False  # one learnt attention sink per query head (gpt-oss)


class SlidingWindowSpec(_Spec):
    """`layers` of the model attend only to the last `window` tokens (gpt-oss: every second)."""

    layers: Small
    window: Small


class Attention(Protocol):
    """What the rest asks of an attention kind, per layer."""

    def params(self, model: Any) -> int: ...

    def kv_elements(self, model: Any) -> int: ...

    def query_width(self, model: Any) -> int: ...

    def decode_flops(self, model: Any) -> int: ...


class Gqa:
    def __init__(self, spec: GqaSpec) -> None:
        self.spec = spec

    def params(self, model: Any) -> int:
        heads, kv, hd, hidden = _heads(model), model.kv_heads, model.head_dim, model.hidden_size
        weights = hidden * heads * hd * 2 + hidden * kv * hd * 2
        bias = heads * hd + 2 * kv * hd + hidden if self.spec.bias else 0
        sinks = heads if self.spec.sinks else 0
        return weights + bias + sinks

    def kv_elements(self, model: Any) -> int:
        """Keys and values: 2 x kv_heads x head_dim."""
        return 2 * model.kv_heads * model.head_dim

    def query_width(self, model: Any) -> int:
        return _heads(model) * model.head_dim

    def decode_flops(self, model: Any) -> int:
        """FLOPs of one decoding query against one cached token: QK and AV over every query
        head's head_dim, 2 FLOPs a multiply-add."""
        return 4 * _heads(model) * model.head_dim


class Mla:
    def __init__(self, spec: MlaSpec) -> None:
        self.spec = spec

    def params(self, model: Any) -> int:
        """DeepSeek-V3's projections: q_a (+ norm) and q_b, or q; kv_a (+ norm), kv_b; o."""
        s, heads, hidden = self.spec, _heads(model), model.hidden_size
        q_dim = s.qk_nope_head_dim + s.qk_rope_head_dim
        if s.q_lora_rank:
            query = hidden * s.q_lora_rank + s.q_lora_rank + s.q_lora_rank * heads * q_dim
        else:
            query = hidden * heads * q_dim
        kv = hidden * (s.kv_lora_rank + s.qk_rope_head_dim) + s.kv_lora_rank
        kv += s.kv_lora_rank * heads * (s.qk_nope_head_dim + s.v_head_dim)
        return query + kv + heads * s.v_head_dim * hidden

    def kv_elements(self, model: Any) -> int:
        """One latent head: kv_lora_rank + qk_rope_head_dim."""
        return self.spec.kv_lora_rank + self.spec.qk_rope_head_dim

    def query_width(self, model: Any) -> int:
        return _heads(model) * (self.spec.qk_nope_head_dim + self.spec.qk_rope_head_dim)

    def decode_flops(self, model: Any) -> int:
        """FLOPs of one decoding query against one cached latent, with the up-projections
        absorbed into the query and the output (DeepSeek-V2 paper, sec. 2.1.2; FlashMLA): every
        head's QK runs over kv_lora_rank + qk_rope_head_dim and its AV over kv_lora_rank, so
        2 x heads x (2 kv_lora_rank + qk_rope_head_dim)."""
        s = self.spec
        return 2 * _heads(model) * (2 * s.kv_lora_rank + s.qk_rope_head_dim)


def _heads(model: Any) -> int:
    return model.heads or model.hidden_size // model.head_dim


def attention_of(model: Any) -> Attention:
    """The attention kind of a model (GQA unless its `attention` section says MLA)."""
    spec = getattr(model, "attention", None)
    if isinstance(spec, MlaSpec):
        return Mla(spec)
    return Gqa(spec or GqaSpec())


AttentionSpec = Annotated[GqaSpec | MlaSpec, Field(discriminator="kind")]
