"""Scenario models for workloads: arrival processes and token-length distributions.

`scenario.py` uses `ArrivalSpec` for `tenants[i].arrivals` and `LengthSpec` for
`tenants[i].prefill_tokens` / `decode_tokens`. `UNION_TAGS` lists the discriminator values that
pydantic puts into error locations, so that error messages show the path a user wrote.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class PeriodicArrivals(Spec):
    kind: Literal["periodic"]
    start_ms: NonNegativeFloat = 0.0
    interval_ms: PositiveFloat
    count: Annotated[int, Field(gt=0)]


ArrivalSpec = Annotated[PeriodicArrivals, Field(discriminator="kind")]

LengthSpec = Annotated[int, Field(ge=0)]

UNION_TAGS: frozenset[str] = frozenset({"periodic"})
