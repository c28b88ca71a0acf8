"""Builds one variant's flow control from the scenario, for the engine."""

from __future__ import annotations

import numpy as np

from simsched.config.classes import CLASS_NAMES
from simsched.config.scenario import Scenario
from simsched.errors import InputError
from simsched.sim.flow.admission import FlowAdmission, QueueingFlows
from simsched.sim.flow.bands import BandPlan, plan_bands
from simsched.sim.flow.controller import FLOW_SHED_STATUS, FlowController
from simsched.sim.flow.fairness import (
    FairnessPolicy,
    GlobalStrict,
    LeastAttainedService,
    RoundRobin,
)
from simsched.sim.flow.ordering import build_ordering
from simsched.sim.flow.policies_as_fairness import OnePolicyOverClasses, PolicyPerBand
from simsched.sim.flow.queues import FlowQueues
from simsched.sim.policies.base import PolicyContext
from simsched.workload.table import RequestTable


def flow_status_codes(codes: dict[str, int]) -> dict[str, int]:
    """The status of every shed reason, flow control's added to the scenario's."""
    return FLOW_SHED_STATUS | codes


def flow_lanes(scenario: Scenario, table: RequestTable) -> QueueingFlows:
    """The queues the gateway pushes into, in place of `Lanes`."""
    flow = scenario.flow_control
    assert flow is not None
    slo = scenario.slo
    active = {int(f) for f in np.unique(table.tenant * len(CLASS_NAMES) + table.lane)}
    plan = plan_bands(flow, scenario.tenants, active)
    ordering = build_ordering(flow.ordering, (slo.interactive_ttft_ms, slo.batch_ttft_ms))
    queues = FlowQueues(plan, len(scenario.tenants), ordering, flow.bytes_per_prompt_token)
    return QueueingFlows(queues)


def build_flow_control(
    scenario: Scenario, lanes: QueueingFlows, env, cluster, recorder
) -> FlowController:
    flow, queues = scenario.flow_control, lanes.queues
    assert flow is not None
    kv_block_tokens = scenario.cluster.kv_block_tokens
    fairness = build_fairness(scenario, queues.plan)
    controller = FlowController(
        flow, queues.plan, queues, fairness, env, cluster, recorder, kv_block_tokens
    )
    lanes.controller = controller
    env.process(controller.expiry_process())
    return controller


def build_fairness(scenario: Scenario, plan: BandPlan) -> FairnessPolicy:
    flow = scenario.flow_control
    assert flow is not None
    tenant_count = len(scenario.tenants)
    if flow.fairness == "round_robin":
        return RoundRobin()
    if flow.fairness == "las":
        return LeastAttainedService(tenant_count, flow.las.output_weight, flow.las.half_life_ms)
    if flow.fairness == "scheduler":
        slo = scenario.slo
        context = PolicyContext(
            weights=tuple(t.weight for t in scenario.tenants),
            settings=scenario.scheduler,
            ttft_slo_ms=(slo.interactive_ttft_ms, slo.batch_ttft_ms),
        )
        name = scenario.scheduler.policy
        if plan.is_two_classes() and flow.band_selection.policy == "strict":
            return OnePolicyOverClasses(name, context)
        return PolicyPerBand(name, context, plan.count)
    return GlobalStrict()


def refuse_reactive(reactive: bool) -> None:
    if reactive:
        raise InputError(
            "",
            "flow_control",
            "flow control does not run with sessions or closed-loop clients yet",
        )


__all__ = ["FlowAdmission", "build_flow_control", "flow_lanes", "flow_status_codes"]
