"""The policy registry: `scheduler.policy` names map to classes here, and only here.

The engine looks policies up by name, so adding one is a new file plus one line below.
"""

from __future__ import annotations

from simsched.policies.base import Pick, Policy, PolicyContext, QueueView
from simsched.policies.edf import EarliestDeadlineFirst
from simsched.policies.fcfs import Fcfs
from simsched.policies.request_count_fifo import RequestCountFifo
from simsched.policies.service_token_drr import ServiceTokenDrr
from simsched.policies.strict_priority import StrictPriority
from simsched.policies.vtc import Vtc
from simsched.policies.wfq import Wfq

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
