"""Wires one variant together (feed -> gateway -> lanes -> scheduler -> cluster) and runs it.

The engine knows policies and service models only by name, through their registries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simsched.config.scenario import Scenario
from simsched.sim.cluster.registry import SERVICE_MODELS
from simsched.sim.dispatcher import DispatchGate, scheduler_process
from simsched.sim.feed import Feed
from simsched.sim.gateway import AdmissionRules, AdmitAll, ArrivalGateway, TickGateway
from simsched.sim.kernel import SimEnvironment
from simsched.sim.lanes import Lanes
from simsched.sim.policies import POLICIES, PolicyContext
from simsched.sim.quotas import TokenBuckets
from simsched.sim.recorder import Recorder
from simsched.sim.timeline import TIMELINE_COLUMNS, TimelineSampler, auto_interval_ms
from simsched.workload.table import RequestTable


def request_costs(scenario: Scenario, table: RequestTable) -> tuple[np.ndarray, np.ndarray]:
    """Service tokens (`prefill_weight * prefill + decode_weight * decode`) and KV blocks.

    One cost for everything token-based: policies, quotas and the admission rules.
    """
    weights = scenario.scheduler
    service_tokens = (
        weights.prefill_weight * table.prefill_tokens + weights.decode_weight * table.decode_tokens
    )
    block = scenario.cluster.kv_block_tokens
    kv_blocks = -(-(table.prefill_tokens + table.decode_tokens) // block)
    return service_tokens, kv_blocks


def policy_context(scenario: Scenario) -> PolicyContext:
    slo = scenario.slo
    return PolicyContext(
        weights=tuple(t.weight for t in scenario.tenants),
        settings=scenario.scheduler,
        ttft_slo_ms=(slo.interactive_ttft_ms, slo.batch_ttft_ms),
    )


@dataclass
class VariantRun:
    recorder: Recorder  # one outcome per request
    timeline: pd.DataFrame  # sampled cluster and lane state (empty when disabled)


def run_variant(
    scenario: Scenario, table: RequestTable, progress: Callable[[int, int], None] | None = None
) -> VariantRun:
    """Simulate `table` under `scenario`; `progress(done, total)` as requests are delivered."""
    env = SimEnvironment()
    tenants = scenario.tenants
    lanes = Lanes(len(tenants))
    recorder = Recorder(len(table), scenario.admission.shed_status_codes)
    cluster = SERVICE_MODELS[scenario.cluster.service_model](env, scenario.cluster, recorder)
    policy = POLICIES[scenario.scheduler.policy](policy_context(scenario))
    buckets = TokenBuckets([t.quota for t in tenants])
    screening = scenario.admission.enabled and policy.screens_arrivals
    rules = (
        AdmissionRules(scenario.admission, cluster, lanes, buckets, cluster.tput)
        if screening
        else AdmitAll()
    )
    feed = Feed(table, *request_costs(scenario, table), progress=progress)
    timing = ArrivalGateway if scenario.admission.evaluate_at == "arrival" else TickGateway
    gateway = timing(env, feed, rules, lanes, buckets, recorder)
    gate = DispatchGate(scenario.admission, cluster, policy.class_blind)
    env.process(scheduler_process(env, policy, lanes, gateway, gate, cluster, buckets, recorder))
    sampler = _start_timeline(env, scenario, cluster, lanes, feed, table)
    env.run()
    _check_one_outcome_each(recorder, len(table))
    timeline = sampler.frame() if sampler else pd.DataFrame(columns=TIMELINE_COLUMNS)
    return VariantRun(recorder, timeline)


def _start_timeline(env, scenario: Scenario, cluster, lanes, feed, table) -> TimelineSampler | None:
    if not scenario.timeline.enabled or not len(table):
        return None
    interval = scenario.timeline.interval_ms or auto_interval_ms(
        float(table.arrival_ms[0]), float(table.arrival_ms[-1])
    )
    sampler = TimelineSampler(env, cluster, lanes, feed, interval)
    env.process(sampler.process())
    return sampler


def _check_one_outcome_each(recorder: Recorder, expected: int) -> None:
    if len(recorder) != expected or len(set(recorder.order)) != expected:
        raise RuntimeError(f"simulation bug: {len(recorder)} outcomes for {expected} requests")
