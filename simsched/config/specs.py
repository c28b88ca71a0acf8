"""Scenario models for workloads: arrival processes and token-length distributions.

`scenario.py` uses `ArrivalSpec` for `tenants[i].arrivals` and `LengthSpec` for
`tenants[i].prefill_tokens` / `decode_tokens`. The models live in `arrival_specs.py` and
`length_specs.py` (what they share in `spec_base.py`); this module is the one place to import
them from, and joins their tags into `UNION_TAGS`.

Both unions pick their member with a function rather than pydantic's literal-field discriminator,
for two reasons: a length is either a plain number or a `dist:` mapping, and an unknown `kind` or
`dist` should read "unknown dist 'foo' (known: ...)". The tags are namespaced (`kind=poisson`,
`dist=trace`) so that stripping them from error locations can never eat a real field name such as
the scenario's own `trace`.
"""

from __future__ import annotations

from simsched.config.arrival_specs import (
    ARRIVAL_KINDS,
    MAX_CV,
    ArrivalSpec,
    BoundedArrivals,
    Cv,
    FiniteFloat,
    GammaArrivals,
    OnOffArrivals,
    PeriodicArrivals,
    PoissonArrivals,
    RateScheduleArrivals,
    SchedulePoint,
    WeibullArrivals,
)
from simsched.config.length_specs import (
    FIXED_TAG,
    LENGTH_DISTS,
    ClippedLength,
    EmpiricalLength,
    ExponentialLength,
    LengthSpec,
    LognormalLength,
    NormalLength,
    Tokens,
    TraceFormat,
    TraceLength,
    UniformLength,
)
from simsched.config.spec_base import Count, NonNegativeFloat, PositiveFloat, Spec

__all__ = [
    "ARRIVAL_KINDS",
    "FIXED_TAG",
    "LENGTH_DISTS",
    "MAX_CV",
    "UNION_TAGS",
    "ArrivalSpec",
    "BoundedArrivals",
    "ClippedLength",
    "Count",
    "Cv",
    "EmpiricalLength",
    "ExponentialLength",
    "FiniteFloat",
    "GammaArrivals",
    "LengthSpec",
    "LognormalLength",
    "NonNegativeFloat",
    "NormalLength",
    "OnOffArrivals",
    "PeriodicArrivals",
    "PoissonArrivals",
    "PositiveFloat",
    "RateScheduleArrivals",
    "SchedulePoint",
    "Spec",
    "Tokens",
    "TraceFormat",
    "TraceLength",
    "UniformLength",
    "WeibullArrivals",
]

UNION_TAGS: frozenset[str] = frozenset(
    [f"kind={name}" for name in [*ARRIVAL_KINDS, "?"]]
    + [f"dist={name}" for name in [*LENGTH_DISTS, "?"]]
    + [FIXED_TAG]
)
