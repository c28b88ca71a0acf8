"""`service_token_drr`: weighted deficit round-robin measured in service tokens, with lanes.

The reference's protected scheduler, step by step:

- A round serves one lane: interactive whenever it holds work, batch only otherwise; a batch
  round is abandoned as soon as interactive work is queued.
- Tenants take turns in declaration order. A tenant with nothing queued in the round's lane has
  its deficit reset to 0; otherwise its deficit grows by `base_quantum_tokens * weight` and it
  sends head requests while the deficit covers their service tokens. One deficit per tenant is
  shared by both lanes.
- A round that dispatches nothing lifts every backlogged tenant by the same number of quanta
  (enough for the cheapest head), so large requests cannot stall the scheduler.
"""

from __future__ import annotations

import math

from simsched.config.classes import BATCH, CLASS_NAMES, INTERACTIVE
from simsched.sim.policies.base import Pick, Policy, PolicyContext, QueueView


class ServiceTokenDrr(Policy):
    name = "service_token_drr"

    def __init__(self, context: PolicyContext) -> None:
        super().__init__(context)
        self.quantum = context.settings.base_quantum_tokens
        self.deficits = [0.0] * len(self.weights)
        self._lane: int | None = None  # lane of the round in progress
        self._turn = -1  # tenant whose turn it is; -1 before the first turn of a round
        self._in_turn = False
        self._dispatched = False
        # one immutable Pick per (lane, tenant), made once: select runs once per dispatch
        self._picks = [
            [Pick(lane, t) for t in range(len(self.weights))] for lane in range(len(CLASS_NAMES))
        ]

    def select(self, view: QueueView) -> Pick | None:
        deficits = self.deficits
        while True:
            lane = self._lane
            if lane is None:
                if not self._start_round(view):
                    return None
                lane = self._lane
            elif lane == BATCH and view.lane_size(INTERACTIVE):
                self._lane = None  # interactive work jumps ahead of the rest of a batch round
                continue
            if self._in_turn:  # the tenant in turn sends its head while its deficit covers it
                turn = self._turn
                head = view.head(lane, turn)
                if head is not None and deficits[turn] >= head.service_tokens:
                    deficits[turn] -= head.service_tokens
                    self._dispatched = True
                    return self._picks[lane][turn]
                self._in_turn = False
            if not self._next_turn(view):
                if not self._dispatched:
                    self._boost(view)
                self._lane = None

    def _start_round(self, view: QueueView) -> bool:
        lane = INTERACTIVE if view.lane_size(INTERACTIVE) else BATCH
        if not view.lane_size(lane):
            return False
        self._lane, self._turn, self._in_turn, self._dispatched = lane, -1, False, False
        return True

    def _next_turn(self, view: QueueView) -> bool:
        for tenant in range(self._turn + 1, view.tenant_count):
            self._turn = tenant
            if not view.queue_length(self._lane, tenant):
                if view.held_head(self._lane, tenant) is None:  # a held tenant keeps its deficit
                    self.deficits[tenant] = 0.0
                continue
            self.deficits[tenant] += self.quantum * self.weights[tenant]
            self._in_turn = True
            return True
        return False

    def _boost(self, view: QueueView) -> None:
        backlogged = [t for t in range(view.tenant_count) if view.queue_length(self._lane, t)]
        needed = min(
            (
                (view.head(self._lane, t).service_tokens - self.deficits[t]) / self.weights[t]
                for t in backlogged
            ),
            default=float(self.quantum),
        )
        boost = max(float(self.quantum), math.ceil(needed))
        for tenant in backlogged:
            self.deficits[tenant] += boost * self.weights[tenant]
