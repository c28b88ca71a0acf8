"""The policy registry: `scheduler.policy` names map to classes here, and only here.

The engine looks policies up by name, so adding one is a new file plus one line below.
"""

from __future__ import annotations

from simsched.policies.base import Pick, Policy, PolicyContext, QueueView
from simsched.policies.request_count_fifo import RequestCountFifo
from simsched.policies.service_token_drr import ServiceTokenDrr

POLICIES: dict[str, type[Policy]] = {
    cls.name: cls
    for cls in (
        ServiceTokenDrr,
        RequestCountFifo,
    )
}

__all__ = ["POLICIES", "Pick", "Policy", "PolicyContext", "QueueView"]
