"""Speculative decoding and multi-token prediction (`cluster.speculative`; docs/moe.md).

Each decode step a drafter proposes `tokens` (k) tokens per sequence, the target model verifies
them with the sequence's next token in one pass of k + 1 tokens, and on average
`(1 - a^(k+1)) / (1 - a)` tokens are emitted (a: the per-token acceptance rate; the accepted
prefix of the drafts plus the target's own token). The rate is given as `acceptance`, or as the
published mean tokens per step `acceptance_length` (bonus token included, as TensorRT-LLM
counts it), from which the rate is solved.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Rate = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


class SpeculativeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    method: Literal["draft_model", "eagle", "mtp", "ngram"]
    tokens: Annotated[int, Field(gt=0, le=64)]
    acceptance: Rate | None = None
    acceptance_length: Annotated[float, Field(ge=1, le=65, allow_inf_nan=False)] | None = None
    # one drafter forward pass over the decode batch, as a share of a target decode step of
    # the same batch; unset: the method's (speculative_cost.drafter_share)
    drafter_share: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | None = None

    @model_validator(mode="after")
    def _one_acceptance(self) -> SpeculativeSpec:
        if (self.acceptance is None) == (self.acceptance_length is None):
            raise ValueError("give exactly one of acceptance (per-token rate) or acceptance_length")
        if self.acceptance_length is not None and self.acceptance_length > self.tokens + 1:
            raise ValueError(
                f"acceptance_length ({self.acceptance_length:g}) exceeds tokens + 1 "
                f"({self.tokens + 1}): a step emits at most the drafts and one token of its own"
            )
        if self.method == "draft_model" and self.drafter_share is None:
            raise ValueError(
                "draft_model needs drafter_share: the draft model's decode step as a share of "
                "the target's (about its parameter ratio)"
            )
        return self

    @property
    def rate(self) -> float:
        """The per-token acceptance rate a."""
        if self.acceptance is not None:
            return self.acceptance
        return rate_for_length(self.acceptance_length or 1.0, self.tokens)


def expected_tokens(rate: float, k: int) -> float:
    """Mean tokens a step emits: 1 + a + a^2 + ... + a^k = (1 - a^(k+1)) / (1 - a)."""
    if rate >= 1.0:
        return float(k + 1)
    return (1.0 - rate ** (k + 1)) / (1.0 - rate)


def rate_for_length(length: float, k: int) -> float:
    """The rate a whose expected tokens per step equal `length` (bisection: they rise with a)."""
    if length >= k + 1:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(60):  # 2^-60: far below any published figure's precision
        middle = (low + high) / 2
        if expected_tokens(middle, k) < length:
            low = middle
        else:
            high = middle
    return (low + high) / 2
