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
        # A round's start and the next tenant's turn are written out here rather than in
        # methods of their own: select runs once per dispatch and once more before each wait
        # for an arrival, and the two calls were a third of its cost.
        deficits = self.deficits
        while True:
            lane = self._lane
            if lane is None:  # a new round: interactive whenever it holds work
                if view.lane_size(INTERACTIVE):
                    lane = INTERACTIVE
                elif view.lane_size(BATCH):
                    lane = BATCH
                else:
                    return None
                self._lane, self._turn, self._in_turn, self._dispatched = lane, -1, False, False
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
            # the next tenant in declaration order with work in this lane takes its turn
            for tenant in range(self._turn + 1, view.tenant_count):
                self._turn = tenant
                if not view.queue_length(lane, tenant):
                    if view.held_head(lane, tenant) is None:  # a held tenant keeps its deficit
                        deficits[tenant] = 0.0
                    continue
                deficits[tenant] += self.quantum * self.weights[tenant]
                self._in_turn = True
                break
            else:  # the round is over
                if not self._dispatched:
                    self._boost(view)
                self._lane = None

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
