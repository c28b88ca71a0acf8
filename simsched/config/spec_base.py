"""What the arrival and length models share: the base model, number types and union helpers.

Both unions (`ArrivalSpec`, `LengthSpec`) pick their member with a function rather than
pydantic's literal-field discriminator, and end in a catch-all member whose validator names what
was given and what is known; the helpers for that live here, once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _plus_zero(value: float) -> float:
    # -0.0 passes `ge=0`, yet numpy's samplers refuse it by its sign bit ("sigma < 0"):
    # adding +0.0 turns -0.0 into 0.0 and leaves every other value exactly as it was
    return value + 0.0


PlusZero = AfterValidator(_plus_zero)
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False), PlusZero]
Count = Annotated[int, Field(ge=1)]
# Hardware figures and cluster sizes: far beyond any real machine, yet small enough that the
# arithmetic on them (bytes, blocks, times) stays finite and exact.
Measure = Annotated[float, Field(gt=0, le=1e12, allow_inf_nan=False)]
MeasureOrZero = Annotated[float, Field(ge=0, le=1e12, allow_inf_nan=False), PlusZero]
Size = Annotated[int, Field(gt=0, le=2**40)]
Small = Annotated[int, Field(gt=0, le=2**20)]


def member_name(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        return value.get(key)
    return getattr(value, key, None)


def known(name: Any, members: dict[str, type[Spec]]) -> bool:
    return isinstance(name, str) and name in members  # a YAML list or mapping is not hashable


def rejecter(key: str, members: dict[str, type[Spec]], expected: str) -> Callable[[Any], Any]:
    """The validator of the catch-all member: it names what was given and what is known."""
    names = ", ".join(members)

    def reject(value: Any) -> Any:
        name = member_name(value, key)
        if name is None:
            raise ValueError(f"expected {expected} with {key}: one of {names}")
        raise ValueError(f"unknown {key} {name!r} (known: {names})")

    return reject


class SubfieldError(ValueError):
    """A check of a model (or of a field holding a model) that blames one of its fields: the
    error's location gains `field` (a dotted path below where pydantic puts it), so the line
    names `cluster.pools[1].autoscale.min`, not only `cluster.pools[1].autoscale`."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
