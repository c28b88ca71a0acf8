"""Wires one variant together (feed -> gateway -> lanes -> scheduler -> cluster) and runs it.

The engine knows policies and service models only by name, through their registries.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simsched.config.autoscale import replica_slots
from simsched.config.scenario import Scenario
from simsched.errors import InputError
from simsched.sim.cluster.attribution import attribution_factory
from simsched.sim.cluster.autoscaler import start_autoscaler
from simsched.sim.cluster.registry import SERVICE_MODELS
from simsched.sim.dispatcher import Stages
from simsched.sim.feed import Feed
from simsched.sim.flow import wiring as flow_wiring
from simsched.sim.flow.dispatch import flow_scheduler_process
from simsched.sim.gateway import AdmissionRules, AdmitAll, ArrivalGateway, TickGateway
from simsched.sim.kernel import LeanEnvironment, SimEnvironment
from simsched.sim.kv_gate import KvGate
from simsched.sim.lanes import Lanes
from simsched.sim.policies import POLICIES
from simsched.sim.policies.base import PolicyContext
from simsched.sim.quotas import TokenBuckets
from simsched.sim.reactive import (
    GrowingRecorder,
    ReactiveTickGateway,
    cost_of,
    has_reactive,
    reactive_feed,
)
from simsched.sim.recorder import STATUS_OK, Recorder
from simsched.sim.schedulers import scheduler_for
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
    kv_peak_ratio: float  # the fullest a KV cache got (ServiceModel.kv_peak_ratio)
    table: RequestTable | None = None  # what was sent, when sessions made it up as they ran
    sessions: tuple[np.ndarray, np.ndarray] | None = None  # each request's session and turn
    # per replica, what its GPU did (cluster/utilisation.py); empty for a model without replicas
    utilisation: list = field(default_factory=list)
    # the replica group: what was provisioned and when (cluster/replica_group.py); None
    # for a model without replicas
    group: object = None
    per_token_timing: bool = True  # whether the service model times each output token
    # per-tenant GPU time and energy (cluster/attribution.py); None without `chargeback`
    chargeback: Any = None
    # pools only (sim/cluster/pools.py): each pool's (name, role, replicas) and the KV transfers
    pools: list = field(default_factory=list)
    transfers: object = None


def run_variant(
    scenario: Scenario, table: RequestTable, progress: Callable[[int, int], None] | None = None
) -> VariantRun:
    """Simulate `table` under `scenario`; `progress(done, total)` as requests are delivered."""
    tenants = scenario.tenants
    flow = scenario.flow_control  # llm-d flow control (sim/flow/), None on the default path
    lanes = Lanes(len(tenants)) if flow is None else flow_wiring.flow_lanes(scenario, table)
    reactive = has_reactive(scenario)  # sessions or closed-loop clients (reactive.py)
    model = SERVICE_MODELS[scenario.cluster.service_model]
    timing = ArrivalGateway if scenario.admission.evaluate_at == "arrival" else TickGateway
    if reactive:
        timing = ReactiveTickGateway if timing is TickGateway else timing
    if flow is not None:
        flow_wiring.refuse_reactive(reactive)
    env = _kernel(model, timing, reactive or flow is not None)  # flow control waits on events
    codes = scenario.admission.shed_status_codes
    if flow is not None:
        codes = flow_wiring.flow_status_codes(codes)
    recorder = GrowingRecorder(codes, env) if reactive else Recorder(len(table), codes)
    seeded = {"seed": scenario.seed} if getattr(model, "uses_seed", False) else {}
    if scenario.chargeback is not None:  # config checks that the model has GPUs to charge
        seeded["attribution"] = attribution_factory(scenario)
    if getattr(model, "uses_tenants", False):  # pools route by each tenant's model and pools
        seeded["tenants"] = scenario.tenants
    cluster = model(env, scenario.cluster, recorder, **seeded)
    policy = POLICIES[scenario.scheduler.policy](policy_context(scenario))
    buckets = TokenBuckets([t.quota for t in tenants])
    gate = KvGate(scenario.admission, cluster, lanes, policy.class_blind)
    screening = scenario.admission.enabled and policy.screens_arrivals
    rules = (
        AdmissionRules(scenario.admission, gate, lanes, buckets, cluster.tput)
        if screening
        else AdmitAll()
    )
    controller = None
    if flow is not None:
        controller = flow_wiring.build_flow_control(scenario, lanes, env, cluster, recorder)
        rules = flow_wiring.FlowAdmission(rules, controller)
    feed = Feed(table, *request_costs(scenario, table), progress=progress)
    if reactive:
        feed = reactive_feed(env, scenario, feed, recorder, cost_of(scenario))
    gateway = timing(env, feed, rules, lanes, buckets, recorder)
    stages = Stages(env, policy, lanes, gateway, gate, cluster, buckets, recorder)
    if controller is None:  # the dispatch loop the cluster's kind needs (sim/schedulers.py)
        env.drive(scheduler_for(scenario.cluster.service_model)(stages))  # it never ends
    else:
        env.process(flow_scheduler_process(stages, controller))
    sampler = _start_timeline(env, scenario, cluster, lanes, feed, table)
    start_autoscaler(env, scenario.cluster, cluster, lanes, feed)  # with cluster.autoscale
    _run_bounded(env, scenario, recorder, float(table.arrival_ms.max()) if len(table) else 0.0)
    kv_peak_ratio = cluster.kv_peak_ratio()
    usage = cluster.utilisation() if hasattr(cluster, "utilisation") else []
    ledger = cluster.chargeback() if hasattr(cluster, "chargeback") else None
    layout = cluster.layout() if hasattr(cluster, "layout") else []
    transfers = cluster.transfers() if hasattr(cluster, "transfers") else None
    if hasattr(cluster, "close"):
        cluster.close()
    sessions = None
    if reactive:
        table, session, turn = feed.table(table)
        sessions = (session, turn)
        recorder.trimmed(len(table))
    _check_one_outcome_each(recorder, table)
    _check_admitted_finished(recorder, table)
    timeline = sampler.frame() if sampler else pd.DataFrame(columns=TIMELINE_COLUMNS)
    timed = getattr(model, "per_token_timing", True)  # the token server declares it does not
    return VariantRun(
        recorder,
        timeline,
        kv_peak_ratio,
        table if reactive else None,
        sessions,
        utilisation=usage,
        per_token_timing=timed,
        chargeback=ledger,
        group=getattr(cluster, "group", None),
        pools=layout,
        transfers=transfers,
    )


def _kernel(model, timing, reactive: bool) -> SimEnvironment | LeanEnvironment:
    """The lean event loop where every process of the run only waits for times: a service
    model and a gateway that say so (`lean_kernel`), and no sessions (they wake processes
    with SimPy events). SimPy's environment otherwise; both give the same results."""
    lean = getattr(model, "lean_kernel", False) and timing.lean_kernel and not reactive
    return LeanEnvironment() if lean else SimEnvironment()


def _start_timeline(env, scenario: Scenario, cluster, lanes, feed, table) -> TimelineSampler | None:
    span = feed.span() if hasattr(feed, "span") else None  # sessions: known only in part
    if span is None and len(table):
        span = float(table.arrival_ms[0]), float(table.arrival_ms[-1])
    if not scenario.timeline.enabled or span is None:
        return None
    interval = scenario.timeline.interval_ms
    if interval is None:  # sized to fit limits.max_timeline_rows
        replicas = replica_slots(scenario.cluster)  # a row per slot, autoscaled ones too
        interval = auto_interval_ms(*span, replicas, scenario.limits.max_timeline_rows)
    else:
        check_timeline_size(scenario, span[1] - span[0], interval)
    sampler = TimelineSampler(env, cluster, lanes, feed, interval)
    env.process(sampler.process())
    return sampler


def _beyond(times: np.ndarray) -> bool:
    return bool((times > MAX_TIME_MS).any() or np.isinf(times).any())


def _run_bounded(
    env: SimEnvironment | LeanEnvironment,
    scenario: Scenario,
    recorder: Recorder,
    last_arrival_ms: float,
) -> None:
    """Run to the end, or stop where float64 milliseconds stop resolving time.

    A cluster absurdly slow for its workload would otherwise record instants of 1e300 ms, or
    infinite ones, and write them as results; a TTFT known at dispatch is checked as well.
    """
    env.run_bounded(MAX_TIME_MS)
    known = (recorder.ttft_ms, recorder.first_token_ms, recorder.finish_ms)
    if env.peek() != math.inf or any(_beyond(np.frombuffer(times)) for times in known):
        if last_arrival_ms > MAX_TIME_MS / 2:  # the workload itself reaches the bound
            raise InputError(
                "",
                "tenants",
                f"requests arrive as late as {last_arrival_ms:.15g} ms, too near the simulated "
                f"clock's bound of {MAX_TIME_MS:g} ms for them to be served within it (check "
                "the trace's times, its time_scale or the arrivals' start and duration)",
            )
        raise InputError(
            "",  # the caller names the scenario file
            "cluster",
            f"the simulated clock passed {MAX_TIME_MS:g} ms (about 31,700 years) with work "
            "left: the cluster is far too slow for this workload (check its rates and factors)",
        )


def _check_one_outcome_each(recorder: Recorder, table: RequestTable) -> None:
    expected = len(table)
    if len(recorder) != expected or len(set(recorder.order)) != expected:
        undecided = np.flatnonzero(np.frombuffer(recorder.status_code, dtype=np.int64) == 0)
        named = (
            f"; request {str(table.request_id[undecided[0]])!r} has none" if len(undecided) else ""
        )
        raise RuntimeError(
            f"internal error: {len(recorder)} outcomes for {expected} requests{named}"
        )


def _check_admitted_finished(recorder: Recorder, table: RequestTable) -> None:
    """Every admitted request got its first token and finished. One that did not would leave
    NaN latencies that percentiles skip, so the run would look better than it was: a bug in a
    service model, reported as one rather than as numbers."""
    admitted = np.frombuffer(recorder.status_code, dtype=np.int64) == STATUS_OK
    finish = np.frombuffer(recorder.finish_ms, dtype=np.float64)
    first = np.frombuffer(recorder.first_token_ms, dtype=np.float64)
    stuck = np.flatnonzero(admitted & (np.isnan(finish) | np.isnan(first)))
    if len(stuck):
        seq = int(stuck[0])
        others = f" (and {len(stuck) - 1} more)" if len(stuck) > 1 else ""
        raise RuntimeError(
            f"internal error: request {str(table.request_id[seq])!r} was admitted at "
            f"{recorder.dispatch_ms[seq]:g} ms but never finished{others}; the simulation "
            "stopped with it in the cluster"
        )
