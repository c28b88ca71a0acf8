"""Fast-forward: a stretch of decode-only iterations planned at once and taken as one event.

While nothing waits and nothing is in prefill, every iteration decodes the same sequences, so
their end instants (`decode_run`) and the blocks they take (`DecodeSet.residues`) are known in
advance. A jump runs to the first completion, to the last iteration the free blocks cover, or to
MAX_JUMP iterations, whichever comes first. The replica owns the jump; this module only plans it
and answers what it holds at a given instant.
"""

from __future__ import annotations

import bisect

from simsched.sim.cluster.contract import LatencyModel
from simsched.sim.cluster.latency import RooflineLatency, decode_run, roofline_decode_terms
from simsched.sim.cluster.sequences import DecodeSet

# A jump of one iteration is a step. Longer jumps are split at MAX_JUMP, which bounds the work a
# jump cut short by a new request throws away.
MIN_JUMP = 2
MAX_JUMP = 512


class Jump:
    """`k` decode-only iterations from iteration `first`: their end instants and block needs."""

    __slots__ = ("first", "k", "ends", "need", "current")

    def __init__(self, first: int, ends: list[float], need: list[int]) -> None:
        self.first = first
        self.k = len(ends)
        self.ends = ends
        self.need = need  # blocks taken by iterations first..first+i, cumulated
        self.current = 0  # the iteration in progress at the last `need_now` (see there)

    def index_at(self, now: float) -> int:
        """The iteration in progress at `now` (one that ended at `now` is over)."""
        return min(bisect.bisect_right(self.ends, now), self.k - 1)

    def need_now(self, now: float) -> int:
        """`need[index_at(now)]` for a clock that never goes back: the KV gate, the routers and
        the timeline read a jumping replica's blocks several times an iteration, so the
        iteration in progress is kept and moved forward past the ends `now` has reached (most
        reads move it by none or one) instead of searching all the ends at every read."""
        ends, current, last = self.ends, self.current, self.k - 1
        while current < last and ends[current] <= now:
            current += 1
        self.current = current
        return self.need[current]

    def cut(self, now: float) -> float | None:
        """End with the iteration in progress at `now`: its end, or None if it is the last."""
        current = self.index_at(now)
        if current < self.k - 1:
            self.k = current + 1
            return self.ends[current]
        return None

    @property
    def last(self) -> int:
        """The last iteration the jump takes."""
        return self.first + self.k - 1


def plan_jump(
    decoding: DecodeSet, it: int, t: float, free: int, latency: LatencyModel
) -> Jump | None:
    """The jump from iteration `it`, starting at `t` with `free` blocks; None if it is too short."""
    horizon = decoding.next_finish() - it + 1
    if horizon < MIN_JUMP:
        return None
    if horizon > MAX_JUMP:
        horizon = MAX_JUMP
    if type(latency) is RooflineLatency:  # exact type, as latency.DECODE_RUNS
        ends, need = roofline_jump(decoding, it, t, free, latency, horizon)
        return Jump(it, ends, need) if len(need) >= MIN_JUMP else None
    need = block_needs(decoding, it, horizon, free)
    if len(need) < MIN_JUMP:
        return None
    ends = decode_run(latency, t, decoding.count, decoding.context(it), len(need))
    return Jump(it, ends, need)


def roofline_jump(
    decoding: DecodeSet, it: int, t: float, free: int, latency: RooflineLatency, horizon: int
) -> tuple[list[float], list[int]]:
    """`block_needs` and the roofline's `decode_run` over the iterations it covers, in one loop:
    (ends, need). The same integer additions as `block_needs` and the same float operations,
    in the same order, as `roofline_decode_run`'s short run (its NumPy run for long ones adds
    in the same order too), so the same lists; a jump is planned for about twenty iterations
    in a plan's runs, and half of them are cut short, so the two loops were a tenth of a run.
    tests/sim/cluster/test_jump_plan.py checks it against the two."""
    seqs = decoding.count
    fixed, per_token = roofline_decode_terms(latency, seqs)
    context = decoding.context(it)
    residues, size = decoding.residues, decoding.block_size
    ends: list[float] = []
    need: list[int] = []
    append_end, append_need = ends.append, need.append
    total, end = 0, t
    residue, top = (1 - it) % size, size - 1  # as in `block_needs`
    for _ in range(horizon):
        total += residues[residue]
        if total > free:
            break
        append_need(total)
        end = end + (fixed + per_token * context)
        append_end(end)
        context += seqs
        residue = residue - 1 if residue else top
    return ends, need


def block_needs(decoding: DecodeSet, it: int, horizon: int, free: int) -> list[int]:
    """Blocks the next iterations take, cumulated, for as many as the free blocks cover."""
    residues, size = decoding.residues, decoding.block_size
    need: list[int] = []
    append = need.append
    total = 0
    # the residue of iteration it + step is (1 - it - step) % size: it steps down by one and
    # wraps from 0 to size - 1 (a subtraction where the modulo took three operations)
    residue, top = (1 - it) % size, size - 1
    for _ in range(horizon):
        total += residues[residue]
        if total > free:
            break
        append(total)
        residue = residue - 1 if residue else top
    return need
