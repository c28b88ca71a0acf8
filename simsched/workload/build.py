"""A scenario's whole workload: every tenant's generated requests plus the scenario trace."""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter

import numpy as np

from simsched.config.load_scale import at_load_scale
from simsched.config.router import uses_prefixes
from simsched.errors import InputError
from simsched.workload.generators import generate_tenant
from simsched.workload.limits import check_request_budget, check_times
from simsched.workload.prefix_sources import with_prefixes
from simsched.workload.prefixes import ChainIds, collector_paused, compress_chains
from simsched.workload.session_plans import is_reactive
from simsched.workload.table import RequestTable, merge_sorted
from simsched.workload.trace_csv import read_trace_csv
from simsched.workload.traces import tenant_trace_table


def build_workload(scenario) -> RequestTable:
    """With Python's cyclic collector paused: a workload's columns and prefixes (for a trace
    with prefix ids, tens of thousands of `Prefix` objects and lists, and the rows parsed for
    them) hold no reference cycles, so each pass during the build walked them to free nothing,
    and the survivors, promoted, set off a full pass over every live object (the Mooncake
    conversation trace: 0.07 to 0.09 CPU-seconds of collector time in building it). Reference
    counting frees what the build drops as before; the first pass after it walks the
    survivors once."""
    with collector_paused():
        return _build_workload(scenario)


def _build_workload(scenario) -> RequestTable:
    scenario = at_load_scale(scenario)  # generated rates times load_scale; traces: _timed
    check_request_budget(scenario)  # before generating: a billion requests never start
    interner = ChainIds()  # one per workload: equal chain ids mean equal prompt prefixes
    trace_ids = uses_prefixes(getattr(scenario, "cluster", None))  # else hash_ids go unread
    files: dict = {}  # hash ids by trace file: read once however many tenants replay it
    tables = [
        with_prefixes(
            _timed(generate_tenant(tenant, index, rng), scenario, f"tenants[{index}].arrivals"),
            tenant,
            interner,
            prefix_rng(scenario.seed, tenant.id),
            trace_ids,
        )
        for index, tenant in enumerate(scenario.tenants)
        if tenant.arrivals is not None and not is_reactive(tenant)  # sessions: sent as they go
        for rng in [tenant_rng(scenario.seed, tenant.id)]
    ]
    tables += [
        with_prefixes(
            _replayed(
                tenant_trace_table(tenant.trace, tenant, index, trace_ids),
                scenario,
                f"tenants[{index}].trace",
            ),
            tenant,
            interner,
            prefix_rng(scenario.seed, tenant.id),
            trace_ids,
            files,
        )
        for index, tenant in enumerate(scenario.tenants)
        if tenant.trace is not None
    ]
    # the scenario trace alone: its reader has refused duplicate ids already, and a second
    # check (a set of every id) was a sixth of reading a 500k-row trace
    trace_alone = not tables and scenario.trace is not None
    if scenario.trace is not None:
        trace = read_trace_csv(scenario.trace.path, scenario.tenants)
        tables.append(_replayed(trace, scenario, "trace"))
    table = merge_sorted(tables)
    if not trace_alone:
        _reject_duplicate_ids(table, scenario)
    if table.prefix is not None:
        compress_chains(table.prefix)  # the workload's own prefixes, built above
    return table


def _timed(table: RequestTable, scenario, where: str) -> RequestTable:
    check_times(table.arrival_ms, "", where)  # the caller names the scenario file
    return table


def _replayed(table: RequestTable, scenario, where: str) -> RequestTable:
    """A trace's requests, time-scaled by `load_scale`: every instant (from 0) divided by it,
    so its rate is multiplied and its span divided."""
    if scenario.load_scale != 1:
        table = dataclasses.replace(table, arrival_ms=table.arrival_ms / scenario.load_scale)
    return _timed(table, scenario, where)


def tenant_rng(seed: int, tenant_id: str) -> np.random.Generator:
    """The tenant's own random stream, from the scenario seed and the tenant's id.

    Keyed by id rather than position, so adding, removing or changing another tenant never
    changes this tenant's requests.
    """
    key = int.from_bytes(hashlib.sha256(tenant_id.encode()).digest()[:8], "little")
    return np.random.default_rng(np.random.SeedSequence([seed, key]))


def prefix_rng(seed: int, tenant_id: str) -> np.random.Generator:
    """The tenant's stream for prefix choices: a third child of its generator, so drawing it
    moves nothing that the arrivals and lengths (the first two children) draw."""
    return tenant_rng(seed, tenant_id).spawn(3)[2]


def _reject_duplicate_ids(table: RequestTable, scenario) -> None:
    if len(set(table.request_id)) == len(table):
        return
    duplicate = next(rid for rid, n in Counter(table.request_id).items() if n > 1)
    source = scenario.trace.path if scenario.trace else scenario.name
    raise InputError(source, "request_id", f"{duplicate!r} is used twice (trace and generated)")
