"""Which pools of `cluster.pools` may serve a tenant (pure: names in, names out).

A tenant calls one model (`model`, default the first pool's); its entry pools are the `mixed` and
`prefill` pools serving that model, narrowed to its `pools` when given; its decode pools are
the `decode` pools it names, or else every decode pool serving its model. The simulation routes
by these (`sim/cluster/pools.py`) and the per-pool results count a pool's load over the tenants
that may use it (`results/pool_provisioned.py`), so both read this one rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simsched.config.pools import ENTRY_ROLES


def eligible_pools(
    tenants: Sequence[Any], pools: Sequence[Any]
) -> list[tuple[list[str], list[str]]]:
    """Per tenant, in declaration order: (entry pool names, decode pool names).

    `pools` are pool specs (`name`, `role`, `model.name`) in declaration order.
    """
    eligible = []
    for tenant in tenants:
        model = getattr(tenant, "model", None) or pools[0].model.name
        mine = [p for p in pools if p.model.name == model]
        chosen = getattr(tenant, "pools", None)
        named = [p for p in mine if chosen is None or p.name in chosen]
        entry = [p.name for p in named if p.role in ENTRY_ROLES]
        decoders = [p.name for p in named if p.role == "decode"]
        decode = decoders or [p.name for p in mine if p.role == "decode"]
        eligible.append((entry, decode))
    return eligible


def tenants_of_pool(tenants: Sequence[Any], pools: Sequence[Any], name: str) -> list[str]:
    """The ids of the tenants that may use pool `name` (as an entry or a decode pool)."""
    return [
        tenant.id
        for tenant, (entry, decode) in zip(tenants, eligible_pools(tenants, pools), strict=True)
        if name in entry or name in decode
    ]
