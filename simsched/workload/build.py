"""A scenario's whole workload: every tenant's generated requests plus the scenario trace."""

from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np

from simsched.config.trace_specs import tenant_trace_table
from simsched.errors import InputError
from simsched.workload.generators import generate_tenant
from simsched.workload.table import RequestTable, merge_sorted
from simsched.workload.trace_csv import read_trace_csv


def build_workload(scenario) -> RequestTable:
    tables = [
        generate_tenant(tenant, index, tenant_rng(scenario.seed, tenant.id))
        for index, tenant in enumerate(scenario.tenants)
        if tenant.arrivals is not None
    ]
    tables += [
        tenant_trace_table(tenant.trace, tenant, index)
        for index, tenant in enumerate(scenario.tenants)
        if tenant.trace is not None
    ]
    if scenario.trace is not None:
        tables.append(read_trace_csv(scenario.trace.path, scenario.tenants))
    table = merge_sorted(tables)
    _reject_duplicate_ids(table, scenario)
    return table


def tenant_rng(seed: int, tenant_id: str) -> np.random.Generator:
    """The tenant's own random stream, from the scenario seed and the tenant's id.

    Keyed by id rather than position, so adding, removing or changing another tenant never
    changes this tenant's requests.
    """
    key = int.from_bytes(hashlib.sha256(tenant_id.encode()).digest()[:8], "little")
    return np.random.default_rng(np.random.SeedSequence([seed, key]))


def _reject_duplicate_ids(table: RequestTable, scenario) -> None:
    if len(set(table.request_id)) == len(table):
        return
    duplicate = next(rid for rid, n in Counter(table.request_id).items() if n > 1)
    source = scenario.trace.path if scenario.trace else scenario.name
    raise InputError(source, "request_id", f"{duplicate!r} is used twice (trace and generated)")
