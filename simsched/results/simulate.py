"""The library entry point: `simulate(scenario)` runs every variant on the same workload."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from simsched.config.loading import checked, load_scenario, resolve_variants, select_variants
from simsched.config.router import uses_prefixes
from simsched.config.scenario import Scenario
from simsched.errors import InputError
from simsched.results.backlog_dispersion import backlog_dispersion
from simsched.results.blast_radius import blast_radius, wants_blast_radius
from simsched.results.chargeback import add_chargeback_columns
from simsched.results.dispersion import dispersion_summary
from simsched.results.fairness import fairness_summary
from simsched.results.frames import (
    REQUEST_COLUMNS,
    SimulationResult,
    variant_facts,
    variant_frame,
)
from simsched.results.pool_costs import add_pool_costs
from simsched.results.pools import add_pool_figures, add_ttft_sides, prefill_ttft_column
from simsched.results.prefix_metrics import add_tenant_hit_rates, caching_on, replica_summary
from simsched.results.provisioned import POOL as SINGLE_POOL
from simsched.results.provisioned import autoscaled, provisioned_summary
from simsched.results.summaries import capacity_summary, slo_verdict, summarize
from simsched.results.tenants import session_summary, tenant_frame, tenant_metric_rows
from simsched.results.utilisation import utilisation_summary
from simsched.sim.engine import request_costs, run_variant
from simsched.sim.reactive import has_reactive, session_columns
from simsched.sim.timeline import TIMELINE_COLUMNS
from simsched.workload.build import build_workload
from simsched.workload.context_limits import ContextError, check_context, tenant_limits
from simsched.workload.table import RequestTable

# Called as progress(variant, requests delivered so far, requests in all) while a variant runs.
Progress = Callable[[str, int, int], None]


def simulate(
    scenario: Scenario | str | Path,
    variants: list[str] | None = None,
    progress: Progress | None = None,
    workloads: dict[str, RequestTable] | None = None,
) -> SimulationResult:
    """Run the scenario's variants (all, or those named) and collect their results.

    `scenario` is a `Scenario` (checked first: one built with pydantic's `model_copy(update=...)`
    skipped validation) or a scenario file's path. `workloads` is a cache a caller keeps across
    runs (a plan's probes): variants and runs with the same workload settings share one table.
    """
    scenario = load_scenario(scenario) if isinstance(scenario, (str, Path)) else checked(scenario)
    chosen = select_variants(resolve_variants(scenario), variants, scenario.name)
    workloads = {} if workloads is None else workloads
    frames, tenants, timelines = [], [], []
    summaries, slo, fairness, capacity, prefix_cache, facts = {}, {}, {}, {}, {}, {}
    sessions, utilisation, chargeback, blast = {}, {}, {}, {}
    caching = any(caching_on(resolved) for _, resolved in chosen)
    scaling = any(autoscaled(resolved) for _, resolved in chosen)
    provisioned = {}
    handoffs = False  # some variant handed a request off (P/D): the prefill_ttft_ms column
    # every variant's input checked before the first runs
    tables = [variant_workload(name, resolved, workloads, scenario) for name, resolved in chosen]
    for (name, resolved), table in zip(chosen, tables, strict=True):
        tick = (lambda done, total, name=name: progress(name, done, total)) if progress else None
        try:
            run = run_variant(resolved, table, tick)
        except ContextError as exc:  # closed-loop clients checked as they send
            raise _blamed(name, resolved, scenario, exc) from None
        if run.table is not None:  # sessions: what was sent is known only now
            table = run.table
        frame = variant_frame(name, resolved, table, request_costs(resolved, table), run.recorder)
        if run.sessions is not None:
            frame = frame.assign(
                **session_columns(*(column[frame["_seq"]] for column in run.sessions))
            )
        if run.transfers is not None:  # cluster.pools: TTFT on the prefill side, kept apart
            frame = frame.assign(prefill_ttft_ms=prefill_ttft_column(frame, run.transfers))
            handoffs = handoffs or bool(run.transfers.prefill_token_ms)
        timelines.append(_with_pools(run.timeline.assign(variant=name), run.pools))
        facts[name] = variant_facts(frame, table.lane, run.per_token_timing)
        summaries[name] = summarize(frame)
        rows = tenant_metric_rows(name, resolved, frame, include_all=True)
        if caching:  # columns only where some variant caches: other outputs stay as they were
            add_tenant_hit_rates(frame, rows)
        if caching_on(resolved):
            prefix_cache[name] = replica_summary(frame, resolved.cluster.replicas)
        if session_summary(rows):
            sessions[name] = session_summary(rows)
        capacity[name] = capacity_summary(run.timeline, rows[-1], run.kv_peak_ratio)
        usage = utilisation_summary(run.utilisation, frame)
        if usage is not None and run.pools:  # cluster.pools: per pool, and the transfers
            usage = add_pool_figures(usage, run.pools, run.transfers)
            groups = run.group.groups  # each pool's replica group: what it provisioned
            usage = add_pool_costs(usage, resolved.cluster.pools, run.utilisation, frame, groups)
            add_ttft_sides(usage, frame, run.transfers)
        if usage is not None:  # a model with replicas (continuous batching)
            utilisation[name] = usage
        if run.chargeback is not None:  # columns only where asked: other outputs stay as they were
            chargeback[name] = add_chargeback_columns(
                rows, resolved, frame, run.chargeback, run.utilisation
            )
        if scaling and run.group is not None:  # only where some variant autoscales
            provisioned[name] = provisioned_summary(resolved, run.group, run.utilisation, frame)
        slo[name] = slo_verdict(resolved, frame, summaries[name], rows)
        weights = {t.id: t.weight for t in resolved.tenants}
        fairness[name] = fairness_summary(frame, weights)
        if resolved.fairness is not None and resolved.fairness.dispersion:  # asked for only
            fairness[name] |= dispersion_summary(frame, weights)
            window_ms = resolved.fairness.backlog_window_ms
            fairness[name] |= backlog_dispersion(frame, weights, window_ms)
        if wants_blast_radius(resolved):  # a second run, without the noisiest tenant
            blast[name] = blast_radius(name, resolved, table, frame, rows)
        frames.append(frame.sort_values("_seq", kind="stable"))
        tenants.extend(rows)
    extra = ["cached_tokens", "preempted_cached_tokens"] if caching else []
    extra += ["session", "turn"] if any(has_reactive(r) for _, r in chosen) else []
    extra += ["prefill_ttft_ms"] if handoffs else []  # P/D only: other outputs stay as they were
    requests = pd.concat(frames, ignore_index=True)
    if handoffs:  # a variant off the pools hands nothing off: its prefill side is the client's
        requests["prefill_ttft_ms"] = requests["prefill_ttft_ms"].fillna(requests["ttft_ms"])
    requests = requests[REQUEST_COLUMNS + extra]
    return SimulationResult(
        scenario=scenario,
        variants=[name for name, _ in chosen],
        requests=requests,
        tenants=tenant_frame(tenants, sessions=bool(sessions)),
        summaries=summaries,
        slo=slo,
        fairness=fairness,
        capacity=capacity,
        prefix_cache=prefix_cache,
        sessions=sessions,
        utilisation=utilisation,
        chargeback=chargeback,
        blast_radius=blast,
        provisioned=provisioned,
        facts=facts,
        timeline=_timeline(timelines, caching),
    )


def _timeline(timelines: list[pd.DataFrame], caching: bool) -> pd.DataFrame:
    """Every variant's samples; `cached_blocks` (free blocks holding cached prefixes) where some
    variant caches (empty for those that do not)."""
    columns = ["variant", *TIMELINE_COLUMNS] + (["cached_blocks"] if caching else [])
    frame = pd.concat(timelines, ignore_index=True)
    if caching and "cached_blocks" not in frame:
        frame["cached_blocks"] = pd.Series(dtype="Int64")
    if "state" in frame:  # some variant autoscales: a fixed pool's replicas always serve
        frame["state"] = frame["state"].fillna("serving")
        columns.append("state")
        if "pool" in frame:  # and some variant has cluster.pools: each slot's pool by name
            frame["pool"] = frame["pool"].fillna(SINGLE_POOL)
            columns.append("pool")
    return frame[columns]


def _with_pools(timeline: pd.DataFrame, layout: list) -> pd.DataFrame:
    """A pooled run's timeline gains each replica slot's pool (kept where some variant
    autoscales: the replicas over time per pool are its serving rows counted by pool)."""
    if not layout:
        return timeline
    names = [name for name, _, slots in layout for _ in range(slots)]
    pools = np.asarray(names, dtype=object)[timeline["replica"].to_numpy(dtype=np.int64)]
    return timeline.assign(pool=pools)


def variant_workload(
    name: str, scenario: Scenario, cache: dict[str, RequestTable], base: Scenario
) -> RequestTable:
    """The variant's requests. Variants that leave the workload's settings alone share one
    generated workload; a problem with a variant's own workload settings names the variant.
    Each variant's requests are checked against its own models' contexts (a variant may serve
    another model with the same workload)."""
    key = _workload_key(scenario)
    table = cache.get(key)  # one read: a cache shared by threads may be cleared meanwhile
    if table is None:
        try:
            table = cache[key] = build_workload(scenario)
        except InputError as exc:
            if key == _workload_key(base):  # the scenario's own problem, not the variant's
                raise
            where = _join(f"variant {name!r}", exc.where)
            raise InputError(exc.source, where, exc.message) from None
    try:
        check_context(scenario, table)
    except ContextError as exc:
        raise _blamed(name, scenario, base, exc) from None
    return table


def _blamed(name: str, scenario: Scenario, base: Scenario, exc: ContextError) -> ContextError:
    """A variant's context overrun, named by the variant unless the scenario has it too: the
    refused tenant's settings, its limit (model and context) and the workload's seed, load and
    trace are the scenario's own. Only that tenant is compared: a variant that changes another
    one is not to blame, and one that serves it another model is."""
    index = _refused_tenant(exc.where)
    if index is None:  # the scenario's trace: every tenant may read it
        indices = range(len(scenario.tenants))
    else:
        indices = range(index, index + 1) if index < len(base.tenants) else range(0)
    own = scenario is base or (
        len(indices) > 0
        and len(scenario.tenants) == len(base.tenants)
        and all(_tenant_settings(scenario, i) == _tenant_settings(base, i) for i in indices)
    )
    if own:
        return exc
    return ContextError(exc.source, _join(f"variant {name!r}", exc.where), exc.message)


def _refused_tenant(where: str) -> int | None:
    """The tenant a context refusal names (`tenants[i]...`), or None for the scenario's trace,
    which every tenant may read."""
    match = re.match(r"tenants\[(\d+)\]", where)
    return int(match.group(1)) if match else None


def _tenant_settings(scenario: Scenario, index: int) -> str:
    settings = scenario.model_dump(mode="json", include={"seed", "load_scale", "trace"})
    settings["tenant"] = scenario.tenants[index].model_dump(mode="json")
    settings["limit"] = repr(tenant_limits(scenario)[index])
    return json.dumps(settings, sort_keys=True)


def _workload_key(scenario: Scenario) -> str:
    # `limits` too: a workload cached under a larger budget must not let a smaller one through
    settings = scenario.model_dump(
        mode="json", include={"seed", "load_scale", "tenants", "trace", "limits"}
    )
    settings["prefix_ids"] = uses_prefixes(scenario.cluster)  # trace hash_ids read or not
    return json.dumps(settings, sort_keys=True)


def _join(context: str, where: str) -> str:
    return f"{context}: {where}" if where else context
