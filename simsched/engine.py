"""Wires one variant together (feed -> gateway -> lanes -> scheduler -> cluster) and runs it.

The engine knows policies and service models only by name, through their registries.
"""

from __future__ import annotations

import numpy as np
import simpy

from simsched.cluster import SERVICE_MODELS
from simsched.dispatcher import DispatchGate, scheduler_process
from simsched.gateway import AdmissionRules, AdmitAll, ArrivalGateway, TickGateway
from simsched.lanes import Lanes
from simsched.policies import POLICIES, PolicyContext
from simsched.quotas import TokenBuckets
from simsched.recorder import Recorder
from simsched.scenario import Scenario
from simsched.workload.feed import Feed
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


def run_variant(scenario: Scenario, table: RequestTable) -> Recorder:
    """Simulate `table` under `scenario`; one recorded outcome per request, in decision order."""
    env = simpy.Environment()
    tenants = scenario.tenants
    lanes = Lanes(len(tenants))
    cluster = SERVICE_MODELS[scenario.cluster.service_model](env, scenario.cluster)
    policy = POLICIES[scenario.scheduler.policy](policy_context(scenario))
    buckets = TokenBuckets([t.quota for t in tenants])
    recorder = Recorder()
    screening = scenario.admission.enabled and policy.screens_arrivals
    rules = (
        AdmissionRules(scenario.admission, cluster, lanes, buckets, cluster.tput)
        if screening
        else AdmitAll()
    )
    feed = Feed(table, *request_costs(scenario, table))
    timing = ArrivalGateway if scenario.admission.evaluate_at == "arrival" else TickGateway
    gateway = timing(env, feed, rules, lanes, buckets, recorder)
    gate = DispatchGate(scenario.admission, cluster, policy.class_blind)
    env.process(scheduler_process(env, policy, lanes, gateway, gate, cluster, buckets, recorder))
    env.run()
    _check_one_outcome_each(recorder, len(table))
    return recorder


def _check_one_outcome_each(recorder: Recorder, expected: int) -> None:
    if len(recorder) != expected or len(set(recorder.seq)) != expected:
        raise RuntimeError(f"simulation bug: {len(recorder)} outcomes for {expected} requests")
