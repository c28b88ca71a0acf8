"""Which waiting request a replica may start: the capacity-scheduler seam of an engine profile.

The replica (replica.py) plans the iteration; its `CapacityRule` answers, for the request at the
front of the waiting queue, whether it starts now (docs/engines.md, "Capacity scheduler"):

- `AdmitThenPreempt` (vLLM, SGLang; the default): start it if its first chunk's blocks are free
  and its whole prompt leaves the free-block watermark; running sequences that later outgrow the
  cache are preempted (replica.py).
- `GuaranteedNoEvict` (TensorRT-LLM's default `GUARANTEED_NO_EVICT`): start it only if the
  blocks of its whole prompt plus output, `ceil((ISL + OSL) / block_size)`, fit beside those
  reserved for the running requests: sum(reserved) + its own <= capacity. Running requests then
  never outgrow the cache, so nothing is ever evicted. A request alone on an empty replica starts
  whatever it reserves (the dispatch gate already checked that it fits at its real peak,
  ISL + OSL - 1 tokens: the last token's KV is never written), so nothing waits forever.
"""

from __future__ import annotations

from typing import Any, Protocol

from simsched.sim.cluster.sequences import Seq, ceil_div


class CapacityRule(Protocol):
    def admits(self, seq: Seq, hits: int, base: int, blocks: int, free: int, running: bool) -> bool:
        """Whether `seq` starts now: `base` blocks are already needed by this iteration, its
        first chunk needs `blocks` more, `free` are free, `hits` of its prompt's blocks are
        cached, `running` says whether anything runs."""
        ...

    def started(self, seq: Seq) -> None: ...

    def released(self, seq: Seq) -> None:
        """The sequence finished or was preempted."""
        ...


class AdmitThenPreempt:
    """vLLM's rule: the first chunk's blocks are free, and the whole prompt (vLLM's
    can_allocate counts all its tokens) leaves at least the free-block watermark, unless nothing
    runs (vLLM would drop a request that can never clear it; here it runs alone)."""

    def __init__(self, block_size: int, capacity: int, watermark: int) -> None:
        self.block_size = block_size
        self.watermark = watermark

    def admits(self, seq: Seq, hits: int, base: int, blocks: int, free: int, running: bool) -> bool:
        if base + blocks > free:
            return False
        whole = ceil_div(seq.target, self.block_size) - hits
        return not (running and base + whole > free - self.watermark)

    def started(self, seq: Seq) -> None:
        pass

    def released(self, seq: Seq) -> None:
        pass


class GuaranteedNoEvict:
    """TensorRT-LLM's rule: the whole ISL + OSL reserved at admission, beside every running
    request's reservation, within the replica's blocks."""

    def __init__(self, block_size: int, capacity: int, watermark: int) -> None:
        self.block_size = block_size
        self.capacity = capacity
        self.reserved = 0  # blocks reserved by the running requests

    def reservation(self, seq: Seq) -> int:
        return ceil_div(seq.prefill + seq.decode, self.block_size)

    def admits(self, seq: Seq, hits: int, base: int, blocks: int, free: int, running: bool) -> bool:
        if base + blocks > free:
            return False
        return not running or self.reserved + self.reservation(seq) <= self.capacity

    def started(self, seq: Seq) -> None:
        self.reserved += self.reservation(seq)

    def released(self, seq: Seq) -> None:
        self.reserved -= self.reservation(seq)


CAPACITY_RULES: dict[str | None, Any] = {
    None: AdmitThenPreempt,
    "admit_then_preempt": AdmitThenPreempt,
    "guaranteed_no_evict": GuaranteedNoEvict,
}


def build_capacity_rule(config: Any, capacity: int, watermark: int) -> CapacityRule:
    rule = CAPACITY_RULES[getattr(config, "capacity_scheduler", None)]
    return rule(config.block_size, capacity, watermark)
