"""A scenario's whole workload: every tenant's generated requests plus the scenario trace."""

from __future__ import annotations

from collections import Counter

from simsched.errors import InputError
from simsched.workload.generators import generate_tenant
from simsched.workload.table import RequestTable, merge_sorted
from simsched.workload.trace_csv import read_trace_csv


def build_workload(scenario) -> RequestTable:
    tables = [
        generate_tenant(tenant, index)
        for index, tenant in enumerate(scenario.tenants)
        if tenant.arrivals is not None
    ]
    if scenario.trace is not None:
        tables.append(read_trace_csv(scenario.trace.path, scenario.tenants))
    table = merge_sorted(tables)
    _reject_duplicate_ids(table, scenario)
    return table


def _reject_duplicate_ids(table: RequestTable, scenario) -> None:
    if len(set(table.request_id)) == len(table):
        return
    duplicate = next(rid for rid, n in Counter(table.request_id).items() if n > 1)
    source = scenario.trace.path if scenario.trace else scenario.name
    raise InputError(source, "request_id", f"{duplicate!r} is used twice (trace and generated)")
