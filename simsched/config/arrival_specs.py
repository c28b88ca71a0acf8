"""Models of `tenants[i].arrivals`: one per `kind`, and the `ArrivalSpec` union over them.

Import them from `specs.py`, which also says why the union's tags read `kind=poisson`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
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

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
# Inter-arrival cv. Capped: beyond 400 a Weibull's shape falls below 0.1 and its draws overflow,
# and gamma gaps underflow to exact zeros; real traces stay far below (ServeGen's p90 is 5.5).
MAX_CV = 400.0
# Floored for the same reason: a gamma shape of 1/cv² overflows for a cv of 1e-300, and the
# Weibull shape's bracket starts at cv 1e-6 (a smaller cv is a periodic process anyway).
MIN_CV = 1e-6
# A rate curve's times (s) and rates (1/s): its integral, a squared width times a slope, must
# stay finite.
MAX_SCHEDULE = 1e12


def _cv_floor(cv: float) -> float:
    if cv < MIN_CV:
        raise ValueError(f"must be at least {MIN_CV:g}")
    return cv


Cv = Annotated[float, Field(gt=0, le=MAX_CV, allow_inf_nan=False), AfterValidator(_cv_floor)]


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
    if t_s > MAX_SCHEDULE:
        raise ValueError(f"point {index}: t_s must be at most {MAX_SCHEDULE:g}")
    if previous_t is not None and t_s <= previous_t:
        raise ValueError(f"point {index}: t_s must be greater than the previous point's")
    if rate < 0:
        raise ValueError(f"point {index}: rate_per_s must not be negative")
    if rate > MAX_SCHEDULE:
        raise ValueError(f"point {index}: rate_per_s must be at most {MAX_SCHEDULE:g}")
    if len(point) == 3 and not 0 < point[2] <= MAX_CV:
        raise ValueError(f"point {index}: cv must be greater than 0 and at most {MAX_CV:g}")
    if len(point) == 3 and point[2] < MIN_CV:
        raise ValueError(f"point {index}: cv must be at least {MIN_CV:g}")


# Open kinds: instants known in advance, generated as whole arrays (arrivals.py).
OPEN_KINDS: dict[str, type[Spec]] = {
    "periodic": PeriodicArrivals,
    "poisson": PoissonArrivals,
    "gamma": GammaArrivals,
    "weibull": WeibullArrivals,
    "onoff": OnOffArrivals,
    "rate_schedule": RateScheduleArrivals,
}


def kind_tagger(kinds: dict[str, type[Spec]]):
    def tag(value: Any) -> str:
        name = member_name(value, "kind")
        return f"kind={name}" if known(name, kinds) else "kind=?"

    return tag


OPEN_UNION = (
    Annotated[PeriodicArrivals, Tag("kind=periodic")]
    | Annotated[PoissonArrivals, Tag("kind=poisson")]
    | Annotated[GammaArrivals, Tag("kind=gamma")]
    | Annotated[WeibullArrivals, Tag("kind=weibull")]
    | Annotated[OnOffArrivals, Tag("kind=onoff")]
    | Annotated[RateScheduleArrivals, Tag("kind=rate_schedule")]
)
OpenArrivalSpec = Annotated[
    OPEN_UNION
    | Annotated[Any, BeforeValidator(rejecter("kind", OPEN_KINDS, "a mapping")), Tag("kind=?")],
    Discriminator(kind_tagger(OPEN_KINDS)),
]
