"""The policy registry: `scheduler.policy` names map to classes here, and only here.

The engine looks policies up by name, so adding one is a new file, its class in the tuple below
and its name in `simsched/config/names.py`.
"""

from __future__ import annotations

from simsched.config.names import POLICY_NAMES
from simsched.sim.policies.base import Policy
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

if set(POLICIES) != set(POLICY_NAMES):  # the scenario format must accept exactly these
    raise ImportError(f"policy registry {sorted(POLICIES)} != config names {sorted(POLICY_NAMES)}")
