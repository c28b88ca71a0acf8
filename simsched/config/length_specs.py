"""Models of `tenants[i].prefill_tokens` / `decode_tokens`: a number or one per `dist`.

Import them from `specs.py`, which also says why the union's tags read `dist=trace`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from simsched.config.spec_base import (
    Count,
    NonNegativeFloat,
    PositiveFloat,
    Spec,
    known,
    member_name,
    rejecter,
)

Tokens = Annotated[int, Field(ge=0, le=2**31 - 1)]  # as for trace rows


class ClippedLength(Spec):
    """Draws are rounded to whole tokens, then clipped to [min, max] and to at least 1."""

    min: Count | None = None
    max: Count | None = None

    @model_validator(mode="after")
    def _ordered_bounds(self) -> ClippedLength:
        if self.min is not None and self.max is not None and self.max < self.min:
            raise ValueError("max must not be less than min")
        return self


class UniformLength(ClippedLength):
    """Whole numbers from `low` to `high`, both included, equally likely."""

    dist: Literal["uniform"]
    low: Tokens
    high: Tokens

    @model_validator(mode="after")
    def _ordered(self) -> UniformLength:
        if self.high < self.low:
            raise ValueError("high must not be less than low")
        return self


class NormalLength(ClippedLength):
    dist: Literal["normal"]
    mean: PositiveFloat
    std: NonNegativeFloat


class LognormalLength(ClippedLength):
    """Lognormal by the mean and std of the lengths, or by their median and log-scale sigma."""

    dist: Literal["lognormal"]
    mean: PositiveFloat | None = None
    std: NonNegativeFloat | None = None
    median: PositiveFloat | None = None
    sigma: NonNegativeFloat | None = None

    @model_validator(mode="after")
    def _one_pair(self) -> LognormalLength:
        pairs = [("mean", "std"), ("median", "sigma")]
        started = [p for p in pairs if any(getattr(self, key) is not None for key in p)]
        if len(started) != 1:
            raise ValueError("give either mean and std, or median and sigma")
        first, second = started[0]
        for key, other in ((first, second), (second, first)):
            if getattr(self, key) is None:
                raise ValueError(f"{key} is required with {other}")
        return self


class ExponentialLength(ClippedLength):
    dist: Literal["exponential"]
    mean: PositiveFloat


class EmpiricalLength(ClippedLength):
    """A PMF: `values` (token counts) drawn with probabilities proportional to `weights`."""

    dist: Literal["empirical"]
    values: Annotated[list[NonNegativeFloat], Field(min_length=1)]
    weights: Annotated[list[NonNegativeFloat], Field(min_length=1)]

    @field_validator("weights")
    @classmethod
    def _positive_total(cls, weights: list[float]) -> list[float]:
        if sum(weights) <= 0:
            raise ValueError("must have a positive sum")
        return weights

    @model_validator(mode="after")
    def _same_length(self) -> EmpiricalLength:
        if len(self.values) != len(self.weights):
            counts = f"{len(self.values)} values, {len(self.weights)} weights"
            raise ValueError(f"values and weights must have the same length ({counts})")
        return self


# The readers registered in `workload.formats` (FORMATS), spelt out as a Literal must be;
# tests/test_trace_format_names.py keeps the two lists equal.
TraceFormat = Literal["csv", "azure2023", "mooncake", "burstgpt"]


class TraceLength(ClippedLength):
    """Lengths of rows drawn from a trace; prefill and decode from one file share the rows."""

    dist: Literal["trace"]
    path: Annotated[str, Field(min_length=1)]
    format: TraceFormat = "csv"


LENGTH_DISTS: dict[str, type[Spec]] = {
    "uniform": UniformLength,
    "normal": NormalLength,
    "lognormal": LognormalLength,
    "exponential": ExponentialLength,
    "empirical": EmpiricalLength,
    "trace": TraceLength,
}
FIXED_TAG = "fixed-tokens"


def _length_tag(value: Any) -> str:
    if isinstance(value, bool):  # YAML `yes` is not a token count
        return "dist=?"
    if isinstance(value, (dict, BaseModel)):
        name = member_name(value, "dist")
        return f"dist={name}" if known(name, LENGTH_DISTS) else "dist=?"
    return FIXED_TAG


LengthSpec = Annotated[
    Annotated[Tokens, Tag(FIXED_TAG)]
    | Annotated[UniformLength, Tag("dist=uniform")]
    | Annotated[NormalLength, Tag("dist=normal")]
    | Annotated[LognormalLength, Tag("dist=lognormal")]
    | Annotated[ExponentialLength, Tag("dist=exponential")]
    | Annotated[EmpiricalLength, Tag("dist=empirical")]
    | Annotated[TraceLength, Tag("dist=trace")]
    | Annotated[
        Any,
        BeforeValidator(rejecter("dist", LENGTH_DISTS, "a whole number of tokens or a mapping")),
        Tag("dist=?"),
    ],
    Discriminator(_length_tag),
]
"""A whole number of tokens (fixed; 0 allowed), or a `dist:` mapping."""
