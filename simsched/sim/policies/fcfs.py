"""`fcfs`: one global first-come, first-served order, blind to tenants and classes.

The request that arrived first (smallest `seq`) among the heads of every queue goes next: every
(lane, tenant) queue is FIFO, so the oldest head is the oldest queued request overall. No
fairness and no priority lanes, but, unlike `request_count_fifo`, the gateway still screens
arrivals with its admission rules. Being class-blind, every request is gated at dispatch by the
interactive KV watermark.
"""

from __future__ import annotations

from simsched.sim.policies.base import Pick, Policy, QueueView
from simsched.sim.policies.ordering import LANES, arrival_order, first_head


class Fcfs(Policy):
    name = "fcfs"
    screens_arrivals = True
    class_blind = True

    def select(self, view: QueueView) -> Pick | None:
        return first_head(view, LANES, arrival_order)
