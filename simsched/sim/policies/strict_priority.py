"""`strict_priority`: all interactive requests before any batch one, each class oldest first.

While the interactive lane holds work, its oldest request (smallest `seq`, whichever tenant)
goes next; the batch lane is served, oldest first, only when the interactive lane is empty. No
fairness between tenants: a tenant flooding the interactive lane starves everyone behind it,
which is the baseline this policy exists to show. Batch work can starve under sustained
interactive load.
"""

from __future__ import annotations

from simsched.sim.policies.base import Pick, Policy, QueueView
from simsched.sim.policies.ordering import arrival_order, first_head
from simsched.sim.requests import BATCH, INTERACTIVE


class StrictPriority(Policy):
    name = "strict_priority"

    def select(self, view: QueueView) -> Pick | None:
        lane = INTERACTIVE if view.lane_size(INTERACTIVE) else BATCH
        return first_head(view, (lane,), arrival_order)
