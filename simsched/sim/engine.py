"""Wires one variant together (feed -> gateway -> lanes -> scheduler -> cluster) and runs it.

The engine knows policies and service models only by name, through their registries.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simsched.config.scenario import Scenario
from simsched.errors import InputError
from simsched.sim.cluster.registry import SERVICE_MODELS
from simsched.sim.dispatcher import Stages, scheduler_process
from simsched.sim.feed import Feed
from simsched.sim.gateway import AdmissionRules, AdmitAll, ArrivalGateway, TickGateway
from simsched.sim.kernel import SimEnvironment
from simsched.sim.kv_gate import KvGate
from simsched.sim.lanes import Lanes
from simsched.sim.policies import POLICIES
from simsched.sim.policies.base import PolicyContext
from simsched.sim.quotas import TokenBuckets
from simsched.sim.recorder import Recorder
from simsched.sim.timeline import (
    TIMELINE_COLUMNS,
    TimelineSampler,
    auto_interval_ms,
    check_timeline_size,
)
from simsched.workload.limits import MAX_TIME_MS
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
    gate = KvGate(scenario.admission, cluster, lanes, policy.class_blind)
    screening = scenario.admission.enabled and policy.screens_arrivals
    rules = (
        AdmissionRules(scenario.admission, gate, lanes, buckets, cluster.tput)
        if screening
        else AdmitAll()
    )
    feed = Feed(table, *request_costs(scenario, table), progress=progress)
    timing = ArrivalGateway if scenario.admission.evaluate_at == "arrival" else TickGateway
    gateway = timing(env, feed, rules, lanes, buckets, recorder)
    stages = Stages(env, policy, lanes, gateway, gate, cluster, buckets, recorder)
    env.process(scheduler_process(stages))
    sampler = _start_timeline(env, scenario, cluster, lanes, feed, table)
    _run_bounded(env, scenario, recorder)
    _check_one_outcome_each(recorder, len(table))
    timeline = sampler.frame() if sampler else pd.DataFrame(columns=TIMELINE_COLUMNS)
    return VariantRun(recorder, timeline)


def _start_timeline(env, scenario: Scenario, cluster, lanes, feed, table) -> TimelineSampler | None:
    if not scenario.timeline.enabled or not len(table):
        return None
    first, last = float(table.arrival_ms[0]), float(table.arrival_ms[-1])
    interval = scenario.timeline.interval_ms or auto_interval_ms(first, last)
    check_timeline_size(scenario, last - first, interval)
    sampler = TimelineSampler(env, cluster, lanes, feed, interval)
    env.process(sampler.process())
    return sampler


def _beyond(times: np.ndarray) -> bool:
    return bool((times > MAX_TIME_MS).any() or np.isinf(times).any())


def _run_bounded(env: SimEnvironment, scenario: Scenario, recorder: Recorder) -> None:
    """Run to the end, or stop where float64 milliseconds stop resolving time.

    A cluster absurdly slow for its workload would otherwise record instants of 1e300 ms, or
    infinite ones, and write them as results; a TTFT known at dispatch is checked as well.
    """
    step, peek = env.step, env.peek  # SimPy's own run loop, with the clock bounded
    while peek() <= MAX_TIME_MS:
        step()
    known = (recorder.ttft_ms, recorder.first_token_ms, recorder.finish_ms)
    if peek() != math.inf or any(_beyond(np.frombuffer(times)) for times in known):
        raise InputError(
            "",  # the caller names the scenario file
            "cluster",
            f"the simulated clock passed {MAX_TIME_MS:g} ms (about 31,700 years) with work "
            "left: the cluster is far too slow for this workload (check its rates and factors)",
        )


def _check_one_outcome_each(recorder: Recorder, expected: int) -> None:
    if len(recorder) != expected or len(set(recorder.order)) != expected:
        raise RuntimeError(f"simulation bug: {len(recorder)} outcomes for {expected} requests")
