"""Scenario models for workloads: arrival processes and token-length distributions.

`scenario.py` uses `ArrivalSpec` for `tenants[i].arrivals` and `LengthSpec` for
`tenants[i].prefill_tokens` / `decode_tokens`. `UNION_TAGS` lists the discriminator values that
pydantic puts into error locations, so that error messages show the path a user wrote.

Both unions pick their member with a function rather than pydantic's literal-field discriminator,
for two reasons: a length is either a plain number or a `dist:` mapping, and an unknown `kind` or
`dist` should read "unknown dist 'foo' (known: ...)". The tags are namespaced (`kind=poisson`,
`dist=trace`) so that stripping them from error locations can never eat a real field name such as
the scenario's own `trace`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1)]
# Inter-arrival cv. Capped: beyond 400 a Weibull's shape falls below 0.1 and its draws overflow,
# and gamma gaps underflow to exact zeros; real traces stay far below (ServeGen's p90 is 5.5).
MAX_CV = 400.0
Cv = Annotated[float, Field(gt=0, le=MAX_CV, allow_inf_nan=False)]
Tokens = Annotated[int, Field(ge=0)]


# --- arrival processes ---------------------------------------------------------------------


class PeriodicArrivals(Spec):
    """`count` requests, `interval_ms` apart, the first at `start_ms`."""

    kind: Literal["periodic"]
    start_ms: NonNegativeFloat = 0.0
    interval_ms: PositiveFloat
    count: Count


class BoundedArrivals(Spec):
    """A random process from `start_ms`, ended by `count` requests and/or `duration_s`."""

    start_ms: NonNegativeFloat = 0.0
    count: Count | None = None
    duration_s: PositiveFloat | None = None

    @model_validator(mode="after")
    def _bounded(self) -> BoundedArrivals:
        if self.count is None and self.duration_s is None:
            raise ValueError("count or duration_s is required (or both): the arrivals must end")
        return self


class PoissonArrivals(BoundedArrivals):
    kind: Literal["poisson"]
    rate_per_s: PositiveFloat


class GammaArrivals(BoundedArrivals):
    """Renewal process with gamma inter-arrival gaps: mean 1/rate, coefficient of variation cv."""

    kind: Literal["gamma"]
    rate_per_s: PositiveFloat
    cv: Cv


class WeibullArrivals(BoundedArrivals):
    """Renewal process with Weibull inter-arrival gaps: mean 1/rate, coefficient of variation cv."""

    kind: Literal["weibull"]
    rate_per_s: PositiveFloat
    cv: Cv


class OnOffArrivals(BoundedArrivals):
    """Two-state Markov-modulated Poisson process, starting in the on state."""

    kind: Literal["onoff"]
    on_rate_per_s: PositiveFloat
    off_rate_per_s: NonNegativeFloat
    mean_on_s: PositiveFloat
    mean_off_s: PositiveFloat


SchedulePoint = Annotated[list[FiniteFloat], Field(min_length=2, max_length=3)]


class RateScheduleArrivals(BoundedArrivals):
    """A rate curve: `points` are `[t_s, rate_per_s]` or `[t_s, rate_per_s, cv]`.

    `t_s` counts from `start_ms`. `step` holds each point's rate until the next point; `linear`
    draws a straight line between points. The rate is 0 before the first point and stays at the
    last point's rate after it. A segment's inter-arrival cv is that of the point it starts at;
    `cv` is the default for points that give none (1: Poisson).
    """

    kind: Literal["rate_schedule"]
    points: list[SchedulePoint]
    interpolation: Literal["step", "linear"] = "step"
    cv: Cv = 1.0

    @field_validator("points")
    @classmethod
    def _valid_points(cls, points: list[list[float]]) -> list[list[float]]:
        if not points:
            raise ValueError("at least one point [t_s, rate_per_s] is required")
        for index, point in enumerate(points):
            _check_point(index, point, points[index - 1][0] if index else None)
        if not any(point[1] > 0 for point in points):
            raise ValueError("at least one point needs a positive rate")
        return points

    @model_validator(mode="after")
    def _ends(self) -> RateScheduleArrivals:
        if self.duration_s is None and self.points[-1][1] == 0:
            raise ValueError("the last point's rate is 0, so count alone may never be reached")
        return self


def _check_point(index: int, point: list[float], previous_t: float | None) -> None:
    t_s, rate = point[0], point[1]
    if t_s < 0:
        raise ValueError(f"point {index}: t_s must not be negative")
    if previous_t is not None and t_s <= previous_t:
        raise ValueError(f"point {index}: t_s must be greater than the previous point's")
    if rate < 0:
        raise ValueError(f"point {index}: rate_per_s must not be negative")
    if len(point) == 3 and not 0 < point[2] <= MAX_CV:
        raise ValueError(f"point {index}: cv must be greater than 0 and at most {MAX_CV:g}")


# --- token-length distributions -----------------------------------------------------------


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


TraceFormat = Literal["csv", "azure2023", "mooncake", "burstgpt"]


class TraceLength(ClippedLength):
    """Lengths of rows drawn from a trace; prefill and decode from one file share the rows."""

    dist: Literal["trace"]
    path: Annotated[str, Field(min_length=1)]
    format: TraceFormat = "csv"


# --- the unions ----------------------------------------------------------------------------

ARRIVAL_KINDS: dict[str, type[Spec]] = {
    "periodic": PeriodicArrivals,
    "poisson": PoissonArrivals,
    "gamma": GammaArrivals,
    "weibull": WeibullArrivals,
    "onoff": OnOffArrivals,
    "rate_schedule": RateScheduleArrivals,
}
LENGTH_DISTS: dict[str, type[Spec]] = {
    "uniform": UniformLength,
    "normal": NormalLength,
    "lognormal": LognormalLength,
    "exponential": ExponentialLength,
    "empirical": EmpiricalLength,
    "trace": TraceLength,
}
FIXED_TAG = "fixed-tokens"


def _member_name(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        return value.get(key)
    return getattr(value, key, None)


def _known(name: Any, members: dict[str, type[Spec]]) -> bool:
    return isinstance(name, str) and name in members  # a YAML list or mapping is not hashable


def _arrival_tag(value: Any) -> str:
    name = _member_name(value, "kind")
    return f"kind={name}" if _known(name, ARRIVAL_KINDS) else "kind=?"


def _length_tag(value: Any) -> str:
    if isinstance(value, bool):  # YAML `yes` is not a token count
        return "dist=?"
    if isinstance(value, (dict, BaseModel)):
        name = _member_name(value, "dist")
        return f"dist={name}" if _known(name, LENGTH_DISTS) else "dist=?"
    return FIXED_TAG


def _rejecter(key: str, known: dict[str, type[Spec]], expected: str) -> Callable[[Any], Any]:
    """The validator of the catch-all member: it names what was given and what is known."""
    names = ", ".join(known)

    def reject(value: Any) -> Any:
        name = _member_name(value, key)
        if name is None:
            raise ValueError(f"expected {expected} with {key}: one of {names}")
        raise ValueError(f"unknown {key} {name!r} (known: {names})")

    return reject


ArrivalSpec = Annotated[
    Annotated[PeriodicArrivals, Tag("kind=periodic")]
    | Annotated[PoissonArrivals, Tag("kind=poisson")]
    | Annotated[GammaArrivals, Tag("kind=gamma")]
    | Annotated[WeibullArrivals, Tag("kind=weibull")]
    | Annotated[OnOffArrivals, Tag("kind=onoff")]
    | Annotated[RateScheduleArrivals, Tag("kind=rate_schedule")]
    | Annotated[Any, BeforeValidator(_rejecter("kind", ARRIVAL_KINDS, "a mapping")), Tag("kind=?")],
    Discriminator(_arrival_tag),
]

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
        BeforeValidator(_rejecter("dist", LENGTH_DISTS, "a whole number of tokens or a mapping")),
        Tag("dist=?"),
    ],
    Discriminator(_length_tag),
]
"""A whole number of tokens (fixed; 0 allowed), or a `dist:` mapping."""

UNION_TAGS: frozenset[str] = frozenset(
    [f"kind={name}" for name in [*ARRIVAL_KINDS, "?"]]
    + [f"dist={name}" for name in [*LENGTH_DISTS, "?"]]
    + [FIXED_TAG]
)
