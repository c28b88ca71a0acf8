"""Builds one variant's flow control from the scenario, for the engine."""

from __future__ import annotations

from simsched.config.scenario import Scenario
from simsched.errors import InputError
from simsched.sim.flow.admission import FlowAdmission, QueueingFlows
from simsched.sim.flow.bands import plan_bands
from simsched.sim.flow.controller import FLOW_SHED_STATUS, FlowController
from simsched.sim.flow.ordering import build_ordering
from simsched.sim.flow.queues import FlowQueues


def flow_status_codes(codes: dict[str, int]) -> dict[str, int]:
    """The status of every shed reason, flow control's added to the scenario's."""
    return FLOW_SHED_STATUS | codes


def flow_lanes(scenario: Scenario) -> QueueingFlows:
    """The queues the gateway pushes into, in place of `Lanes`."""
    flow = scenario.flow_control
    assert flow is not None
    slo = scenario.slo
    plan = plan_bands(flow, scenario.tenants)
    ordering = build_ordering(flow.ordering, (slo.interactive_ttft_ms, slo.batch_ttft_ms))
    queues = FlowQueues(plan, len(scenario.tenants), ordering, flow.bytes_per_prompt_token)
    return QueueingFlows(queues)


def build_flow_control(
    scenario: Scenario, lanes: QueueingFlows, env, cluster, recorder
) -> FlowController:
    flow, queues = scenario.flow_control, lanes.queues
    assert flow is not None
    kv_block_tokens = scenario.cluster.kv_block_tokens
    controller = FlowController(flow, queues.plan, queues, env, cluster, recorder, kv_block_tokens)
    lanes.controller = controller
    env.process(controller.expiry_process())
    return controller


def refuse_reactive(reactive: bool) -> None:
    if reactive:
        raise InputError(
            "",
            "flow_control",
            "flow control does not run with sessions or closed-loop clients yet",
        )


__all__ = ["FlowAdmission", "build_flow_control", "flow_lanes", "flow_status_codes"]
