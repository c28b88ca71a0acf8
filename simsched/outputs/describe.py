"""A few lines that say what a scenario is (`simsched validate`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from simsched.config.loading import resolve_variants
from simsched.config.scenario import Scenario
from simsched.results.simulate import variant_workload
from simsched.sim.cluster.registry import sustained_tokens_per_ms
from simsched.workload.build import build_workload, prefix_rng, tenant_rng
from simsched.workload.session_plans import reactive_summary


def describe_scenario(scenario: Scenario) -> str:
    table = build_workload(scenario)  # reads the trace too, so its problems surface here
    cache: dict = {}
    for name, resolved in resolve_variants(scenario):  # and every variant's own workload
        variant_workload(name, resolved, cache, scenario)
    counts = np.bincount(table.tenant, minlength=len(scenario.tenants))
    span_s = (table.arrival_ms.max() - table.arrival_ms.min()) / 1000 if len(table) else 0.0
    reactive = reactive_summary(scenario, tenant_rng, prefix_rng)
    made = " made in advance" if reactive else ""
    tenants = len(scenario.tenants)
    lines = [
        f"{scenario.name}: valid",
        f"  {len(table):,} request{'s' * (len(table) != 1)}{made} from {tenants} "
        f"tenant{'s' * (tenants != 1)} over "
        f"{span_s:,.3f} s",
    ]
    for tenant, count in zip(scenario.tenants, counts, strict=True):
        source = _source(tenant, scenario)
        if tenant.id in reactive:
            lines.append(
                f"  - {tenant.id}: {tenant.priority}, weight {tenant.weight:g}, "
                f"{reactive[tenant.id]}"
            )
            continue
        lines.append(
            f"  - {tenant.id}: {tenant.priority}, weight {tenant.weight:g}, "
            f"{count:,} requests ({source})"
        )
    cluster = scenario.cluster
    lines.append(f"  cluster: {_cluster_line(cluster)}")
    for name, resolved in resolve_variants(scenario):
        # a variant that changes the cluster (another layout, GPU or model) says what it runs
        own = _cluster_line(resolved.cluster)
        if own != _cluster_line(cluster):
            lines.append(f"  cluster of variant {name}: {own}")
    engine = getattr(cluster, "engine", None)
    if engine is not None:  # what the profile chose, so that a user sees the defaults it set
        lines.append(f"  engine: {_engine_line(cluster)}")
    names = [name for name, _ in resolve_variants(scenario)]
    lines.append(f"  variants: {', '.join(names)}")
    return "\n".join(lines)


def _cluster_line(cluster) -> str:
    return (
        f"{cluster.service_model}, {cluster.total_kv_blocks} KV blocks, "
        f"{sustained_tokens_per_ms(cluster):g} service tokens/ms"
    )


def _source(tenant, scenario: Scenario) -> str:
    """Where a tenant's requests come from; "none" flags a tenant that can send nothing."""
    if tenant.arrivals is not None:
        return tenant.arrivals.kind
    if tenant.trace is not None:
        return f"{tenant.trace.format} trace"
    return "trace" if scenario.trace is not None else "none"


def _engine_line(cluster: Any) -> str:
    engine, frontend = cluster.engine, cluster.frontend
    use = "offline" if engine.offline else "served"
    if frontend is None:
        api = "fixed front-end delays"
    elif frontend.costs_nothing:  # offline: the front end is no delay at all (frontend.py)
        api = "no API server (no front-end time)"
    else:
        api = f"API server {frontend.processes} x {frontend.per_request_ms:g} ms/request"
    cpu = cluster.cpu_time or "serial"
    exposed = getattr(cluster, "overlap_exposed_ms", None)
    if exposed:  # the part of each overlapped step the overlap leaves (docs/engines.md)
        cpu += f" ({exposed:g} ms a step exposed)"
    return (
        f"{engine.name} ({use}), {cluster.max_num_batched_tokens} batched tokens, "
        f"{cluster.max_num_seqs} sequences, CPU time {cpu}, "
        f"{cluster.capacity_scheduler or 'admit_then_preempt'}, {api}"
    )
