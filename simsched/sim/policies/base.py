"""The policy contract: which tenant goes next, and which of its requests.

A policy sees only a read-only `QueueView` of the lanes, never the simulator, so a ten-line fake
view is enough to test one. The scheduler process asks `select(view)` whenever the cluster has
room; the policy answers with a `Pick` (a lane and a tenant whose head request goes next) or
`None` when it has nothing to offer, and keeps whatever state it needs (deficits, round
position) between calls.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from simsched.sim.requests import Request


class QueueView(Protocol):
    tenant_count: int

    def lane_size(self, lane: int) -> int: ...

    def queue_length(self, lane: int, tenant: int) -> int: ...

    def head(self, lane: int, tenant: int) -> Request | None: ...

    def held_head(self, lane: int, tenant: int) -> Request | None:
        """The head of (lane, tenant) that the view hides because the tenant's request cannot be
        placed now (sim/tenant_room.py), or None; a policy keeps its state for a held tenant."""
        ...


@dataclass(frozen=True)
class PolicyContext:
    """What a policy may know of the scenario: tenants' weights and the scheduler settings."""

    weights: tuple[float, ...]
    settings: Any  # the scenario's `scheduler` section
    ttft_slo_ms: tuple[float, float]  # TTFT target per class (interactive, batch), for deadlines


@dataclass(frozen=True, slots=True)
class Pick:
    lane: int
    tenant: int


class Policy(ABC):
    """Base of every scheduling policy; each is registered by name in `sim/policies/__init__.py`."""

    name: ClassVar[str]
    # The gateway applies its arrival rules (KV watermark, wait SLO, quota) only for policies
    # that work with priority classes; the reference's naive baseline has no gateway at all.
    screens_arrivals: ClassVar[bool] = True
    # A class-blind policy is gated at dispatch by the interactive watermark for every request.
    class_blind: ClassVar[bool] = False

    def __init__(self, context: PolicyContext) -> None:
        self.context = context
        self.weights = list(context.weights)
        self.settings = context.settings

    @abstractmethod
    def select(self, view: QueueView) -> Pick | None:
        """The next request to dispatch, or None when nothing is queued."""
