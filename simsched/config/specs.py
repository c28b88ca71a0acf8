"""Scenario models for workloads: arrival processes and token-length distributions.

`scenario.py` uses `ArrivalSpec` for `tenants[i].arrivals` and `LengthSpec` for
`tenants[i].prefill_tokens` / `decode_tokens`. The models live in `arrival_specs.py` and
`length_specs.py` (what they share in `spec_base.py`); this module joins their tags into
`UNION_TAGS`, which loading strips from error locations.

Both unions pick their member with a function rather than pydantic's literal-field discriminator,
for two reasons: a length is either a plain number or a `dist:` mapping, and an unknown `kind` or
`dist` should read "unknown dist 'foo' (known: ...)". The tags are namespaced (`kind=poisson`,
`dist=trace`) so that stripping them from error locations can never eat a real field name such as
the scenario's own `trace`.
"""

from __future__ import annotations

from simsched.config.arrival_kinds import ARRIVAL_KINDS
from simsched.config.length_specs import (
    FIXED_TAG,
    LENGTH_DISTS,
)

UNION_TAGS: frozenset[str] = frozenset(
    [f"kind={name}" for name in [*ARRIVAL_KINDS, "?"]]
    + [f"dist={name}" for name in [*LENGTH_DISTS, "?"]]
    + [FIXED_TAG]
)
