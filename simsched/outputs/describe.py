"""A few lines that say what a scenario is (`simsched validate`)."""

from __future__ import annotations

import numpy as np

from simsched.config.loading import resolve_variants
from simsched.config.scenario import Scenario
from simsched.results.simulate import variant_workload
from simsched.workload import build_workload


def describe_scenario(scenario: Scenario) -> str:
    table = build_workload(scenario)  # reads the trace too, so its problems surface here
    cache: dict = {}
    for name, resolved in resolve_variants(scenario):  # and every variant's own workload
        variant_workload(name, resolved, cache, scenario)
    counts = np.bincount(table.tenant, minlength=len(scenario.tenants))
    span_s = (table.arrival_ms.max() - table.arrival_ms.min()) / 1000 if len(table) else 0.0
    lines = [
        f"{scenario.name}: valid",
        f"  {len(table):,} requests from {len(scenario.tenants)} tenants over {span_s:,.3f} s",
    ]
    for tenant, count in zip(scenario.tenants, counts, strict=True):
        source = _source(tenant, scenario)
        lines.append(
            f"  - {tenant.id}: {tenant.priority}, weight {tenant.weight:g}, "
            f"{count:,} requests ({source})"
        )
    cluster = scenario.cluster
    lines.append(
        f"  cluster: {cluster.service_model}, {cluster.total_kv_blocks} KV blocks, "
        f"{cluster.service_tokens_per_ms:g} service tokens/ms"
    )
    names = [name for name, _ in resolve_variants(scenario)]
    lines.append(f"  variants: {', '.join(names)}")
    return "\n".join(lines)


def _source(tenant, scenario: Scenario) -> str:
    """Where a tenant's requests come from; "none" flags a tenant that can send nothing."""
    if tenant.arrivals is not None:
        return tenant.arrivals.kind
    if tenant.trace is not None:
        return f"{tenant.trace.format} trace"
    return "trace" if scenario.trace is not None else "none"
