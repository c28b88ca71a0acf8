"""Quota sizing: `simsched plan --maximize tenants.X.quota.sustained_service_tokens_per_sec`.

"How much can we sell tier X without breaking the others' p99?" is a plan whose knob is one
tenant's token-bucket quota and whose SLOs judge the other tenants. Raising X's quota lets more
of X's traffic in, which can only add to the others' waits, so the largest quota that meets
their SLOs is a boundary the plan's bisection finds (docs/sweeps_and_planning.md).

One thing differs from a capacity plan: X's own 429s are the quota doing its job (the excess of
a tier's traffic over what was sold), not hidden shedding. So the default shed guard leaves X
out and covers every other tenant (`plan_inputs.shed_guards`).
"""

from __future__ import annotations

from typing import Any

from simsched.config.overrides import OverrideError, split_path

QUOTA_KEYS = ("sustained_service_tokens_per_sec", "burst_service_tokens")


def quota_tenant(knob: str, resolved: Any) -> str | None:
    """The id of the tenant whose quota `knob` sets (`tenants.<id or index>.quota.<key>`), or
    None for any other knob."""
    try:
        segments = split_path(knob)
    except OverrideError:
        return None  # reported where the knob is read
    if len(segments) != 4 or segments[0] != "tenants" or segments[2] != "quota":
        return None
    if segments[3] not in QUOTA_KEYS:
        return None
    key, ids = segments[1], resolved.tenant_ids()
    if key in ids:
        return key
    if key.isdigit() and int(key) < len(ids):
        return ids[int(key)]
    return None
