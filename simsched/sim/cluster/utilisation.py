"""What a replica's GPU did: time in iterations, batch tokens, running sequences, KV held.

One `UtilisationMeter` per replica, fed at the two places an iteration is decided: a stepped
iteration (`step`) and a fast-forward jump once its length is final (`jump`). A jump is summed
iteration by iteration with the same operations, in the same order, as the steps it stands for,
so fast-forward on and off give identical figures (a closed form would differ in the last bits).
Between iterations a replica runs nothing and holds no KV blocks (waiting requests hold none),
so sums over iterations are sums over time.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReplicaUsage:
    """Sums over one replica's iterations; `results.utilisation` turns them into shares."""

    iterations: int
    busy_ms: float  # time inside iterations
    batch_tokens: int  # tokens computed, over all iterations
    token_budget: int  # max_num_batched_tokens per iteration
    running_ms: float  # running sequences x time (their integral)
    kv_block_ms: float  # KV blocks held x time
    kv_blocks: int  # the replica's blocks
    last_end_ms: float  # when its last iteration ended (0 if none ran)


class UtilisationMeter:
    __slots__ = ("budget", "blocks", "iterations", "busy", "tokens", "running", "kv", "last")

    def __init__(self, token_budget: int, kv_blocks: int) -> None:
        self.budget = token_budget
        self.blocks = kv_blocks
        self.iterations = self.tokens = 0
        self.busy = self.running = self.kv = self.last = 0.0

    def step(self, start: float, end: float, tokens: int, running: int, kv_held: int) -> None:
        """One iteration from `start` to `end` computing `tokens` for `running` sequences."""
        span = end - start
        self.iterations += 1
        self.tokens += tokens
        self.busy += span
        self.running += running * span
        self.kv += kv_held * span
        self.last = end

    def jump(self, start: float, ends: list[float], seqs: int, level: int, need: list[int]) -> None:
        """Decode-only iterations ending at `ends`, each computing one token for each of `seqs`
        sequences, holding `level` blocks plus the cumulated `need` of the jump so far."""
        # `step`'s sums, inlined: a jump's iterations are most of a run's, and one method call
        # each was a tenth of the jump's cost. The same operations in the same order, so the
        # floats are those of `step` called per iteration (tests/sim/cluster/test_utilisation.py).
        busy, running, kv = self.busy, self.running, self.kv
        for end, taken in zip(ends, need, strict=True):
            span = end - start
            busy += span
            running += seqs * span
            kv += (level + taken) * span
            start = end
        self.iterations += len(ends)
        self.tokens += seqs * len(ends)
        self.busy, self.running, self.kv = busy, running, kv
        if ends:
            self.last = ends[-1]

    def usage(self) -> ReplicaUsage:
        return ReplicaUsage(
            self.iterations,
            self.busy,
            self.tokens,
            self.budget,
            self.running,
            self.kv,
            self.blocks,
            self.last,
        )
