"""The policy registry: `scheduler.policy` names map to classes here, and only here.

The engine looks policies up by name, so adding one is a new file plus one line below.
"""

from __future__ import annotations

from simsched.sim.policies.base import Pick, Policy, PolicyContext, QueueView
from simsched.sim.policies.edf import EarliestDeadlineFirst
from simsched.sim.policies.fcfs import Fcfs
from simsched.sim.policies.request_count_fifo import RequestCountFifo
from simsched.sim.policies.service_token_drr import ServiceTokenDrr
from simsched.sim.policies.strict_priority import StrictPriority
from simsched.sim.policies.vtc import Vtc
from simsched.sim.policies.wfq import Wfq

POLICIES: dict[str, type[Policy]] = {
    cls.name: cls
    for cls in (
        ServiceTokenDrr,
        RequestCountFifo,
        Vtc,
        Wfq,
        Fcfs,
        StrictPriority,
        EarliestDeadlineFirst,
    )
}

__all__ = ["POLICIES", "Pick", "Policy", "PolicyContext", "QueueView"]
