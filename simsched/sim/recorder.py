"""Outcome and lifecycle recording, per request, turned into a DataFrame once at the end.

Metric names and shed reasons live here, in one place. Each request's fields are stored at its
`seq` (its place in arrival order), so a service model can fill in its first token, finish and
preemptions long after the dispatch decision; `order` keeps the decision order. TTFT, queue
wait and occupancy are recorded raw; the reference rounds them as it records them (Python's
`round`, 2 decimals for times, 4 for occupancy), and the results do the same once per column
(`results.rounding.reference_decisions`, bit for bit), so frames and summaries agree with the
reference to the digit without a `round` per request in the simulation loop.
"""

from __future__ import annotations

import math
from array import array

from simsched.sim.requests import Request

ADMITTED = "admitted"
SHED_KV_WATERMARK = "shed_kv_watermark"
SHED_QUEUE_WAIT = "shed_queue_wait_slo"
SHED_TOKEN_QUOTA = "shed_tenant_token_quota"
SHED_REASONS = (SHED_KV_WATERMARK, SHED_QUEUE_WAIT, SHED_TOKEN_QUOTA)

STATUS_OK = 200
STATUS_SHED = 429
NAN = math.nan
# The recorder's typed arrays with one slot a request (a reactive run grows them as it adds
# requests), the prefix-cache counts among them
PER_REQUEST_ARRAYS = (
    "status_code",
    "ttft_ms",
    "queue_wait_ms",
    "kv_occupancy_ratio",
    "dispatch_ms",
    "first_token_ms",
    "finish_ms",
    "preemptions",
    "replica",
    "cached_tokens",
    "preempted_cached_tokens",
)
PREFIX_CACHE_ARRAYS = ("cached_tokens", "preempted_cached_tokens")  # filled only with caching
# The per-request outcomes every run fills (the decision order and the arrays above but the
# prefix-cache counts): what an exact comparison of two runs reads
OUTCOME_ARRAYS = ("order", *(n for n in PER_REQUEST_ARRAYS if n not in PREFIX_CACHE_ARRAYS))


class Recorder:
    def __init__(self, size: int, shed_status_codes: dict[str, int] | None = None) -> None:
        self.shed_status = dict.fromkeys(SHED_REASONS, STATUS_SHED) | (shed_status_codes or {})
        # Typed arrays rather than lists: 8 bytes a value instead of a boxed float each, which
        # is most of a million-request run's memory.
        self.order = array("q")  # seqs in decision order
        self.status_code = array("q", [0]) * size
        self.reason: list[str | None] = [None] * size
        self.ttft_ms = _floats(size)
        self.queue_wait_ms = _floats(size)
        self.kv_occupancy_ratio = _floats(size)
        self.dispatch_ms = _floats(size)
        self.first_token_ms = _floats(size)
        self.finish_ms = _floats(size)
        self.preemptions = array("q", [0]) * size
        self.replica = array("q", [-1]) * size
        self.cached_tokens = array("q", [0]) * size  # prompt tokens served from a prefix cache
        # tokens found in the cache again when a preempted request restarted (mostly its own
        # blocks): kept apart so that they never count as prefix hits, as vLLM keeps them
        self.preempted_cached_tokens = array("q", [0]) * size

    def admitted(
        self, seq: int, now: float, wait_ms: float, occupancy: float, ttft_ms: float = NAN
    ) -> None:
        """Dispatched to the cluster at `now`; `ttft_ms` when the service model knows it already."""
        self.order.append(seq)
        self.status_code[seq] = STATUS_OK
        self.reason[seq] = ADMITTED
        self.ttft_ms[seq] = ttft_ms
        self.queue_wait_ms[seq] = wait_ms
        self.kv_occupancy_ratio[seq] = occupancy
        self.dispatch_ms[seq] = now

    def shed(self, seq: int, reason: str, wait_ms: float, occupancy: float) -> None:
        self.order.append(seq)
        self.status_code[seq] = self.shed_status[reason]
        self.reason[seq] = reason
        self.ttft_ms[seq] = 0.0  # the reference's decision record; the frame leaves it empty
        self.queue_wait_ms[seq] = wait_ms
        self.kv_occupancy_ratio[seq] = occupancy

    # --- lifecycle, reported by the service model ------------------------------------------
    def first_token(self, request: Request, now: float) -> None:
        seq = request.seq
        self.first_token_ms[seq] = now
        if math.isnan(self.ttft_ms[seq]):
            self.ttft_ms[seq] = now - request.arrival_ms

    def served(self, request: Request, replica: int, first_token: float, finish: float) -> None:
        """The whole lifecycle at once, from a model that knows it at dispatch (one call, as
        this runs once per request)."""
        seq = request.seq
        self.replica[seq] = replica
        self.first_token_ms[seq] = first_token
        self.finish_ms[seq] = finish

    def finished(self, request: Request, now: float) -> None:
        self.finish_ms[request.seq] = now

    def placed(self, request: Request, replica: int) -> None:
        self.replica[request.seq] = replica

    def cached(self, request: Request, tokens: int) -> None:
        """`tokens` found in the cache as the request starts: its first start's lookup is its
        `cached_tokens`; restarts after a preemption add to `preempted_cached_tokens`."""
        seq = request.seq
        if self.preemptions[seq]:
            self.preempted_cached_tokens[seq] += tokens
        else:
            self.cached_tokens[seq] = tokens

    def preempted(self, request: Request) -> None:
        self.preemptions[request.seq] += 1

    def __len__(self) -> int:
        return len(self.order)


def _floats(size: int) -> array:
    return array("d", [NAN]) * size
