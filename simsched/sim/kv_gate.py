"""The KV watermark rule, one object asked at both points where a request can be shed for KV.

The rule: the KV blocks ahead of a request plus its own, over the cluster's total, must not
exceed its class's watermark. What is ahead of it depends on when it is asked:

- at arrival (the gateway's admission rules): the blocks the cluster holds, plus the blocks
  queued in the lanes served before it or with it: the interactive lane for every request, and
  the batch lane too for a batch request;
- at dispatch (the dispatcher's second gate): only the blocks the cluster holds, since the
  request has left its queue and whatever is still queued comes after it.

Class-blind policies (fcfs, request_count_fifo) dispatch in one order whatever the class, so at
dispatch they hold every request to the interactive watermark. The figure recorded for a request
shed at arrival is capped at the watermark it crossed, as the reference records it; at dispatch
the figure is the occupancy itself (docs/model.md, "The KV watermark rule", which
tests/sim/test_kv_gate_rule.py checks against this class).
"""

from __future__ import annotations

from simsched.config.classes import BATCH, INTERACTIVE
from simsched.config.scenario import Admission
from simsched.sim.cluster.contract import ServiceModel
from simsched.sim.lanes import Lanes
from simsched.sim.requests import Request


class KvGate:
    def __init__(
        self, admission: Admission, cluster: ServiceModel, lanes: Lanes, class_blind: bool
    ) -> None:
        self.enabled = admission.enabled
        self.watermarks = (admission.interactive_kv_watermark, admission.batch_kv_watermark)
        interactive = self.watermarks[INTERACTIVE]
        self.dispatch_watermarks = (interactive, interactive) if class_blind else self.watermarks
        self.cluster = cluster
        self.lanes = lanes

    def arrival_occupancy(self, request: Request) -> float:
        lanes, cluster = self.lanes, self.cluster
        ahead = cluster.kv_blocks_in_use() + lanes.queued_kv_blocks(INTERACTIVE)
        if request.lane == BATCH:
            ahead += lanes.queued_kv_blocks(BATCH)
        return (ahead + request.kv_blocks) / cluster.kv_blocks_total

    def dispatch_occupancy(self, request: Request) -> float:
        return (self.cluster.kv_blocks_in_use() + request.kv_blocks) / self.cluster.kv_blocks_total

    def over_at_arrival(self, occupancy: float, lane: int) -> bool:
        return occupancy > self.watermarks[lane]

    def recorded_at_arrival(self, occupancy: float, lane: int) -> float:
        """The reference records a request shed at arrival with its occupancy capped at its
        class's watermark (whichever rule shed it)."""
        return min(occupancy, self.watermarks[lane])

    def blocks_dispatch(self, occupancy: float, request: Request) -> bool:
        """Shed at dispatch: over the watermark (with admission on), or too large for the
        cluster ever to hold, admission or not."""
        if self.enabled and occupancy > self.dispatch_watermarks[request.lane]:
            return True
        return not self.cluster.fits(request)
