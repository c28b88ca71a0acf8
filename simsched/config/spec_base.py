"""What the arrival and length models share: the base model, number types and union helpers.

Both unions (`ArrivalSpec`, `LengthSpec`) pick their member with a function rather than
pydantic's literal-field discriminator, and end in a catch-all member whose validator names what
was given and what is known; the helpers for that live here, once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1)]


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
