"""Speculative decoding on a replica: the step's cost (`SpeculativeLatency`) and the decoding
sequences' bookkeeping when a step emits several tokens (`SpecDecodeSet`); docs/moe.md.

Whole tokens from a fractional mean: a sequence keeps a credit. After j of its decode steps it
has emitted floor(j * E) tokens (E the expected tokens per step, so every step emits at least
one), so its R remaining tokens take the fewest S steps with floor(S * E) >= R. The same
request gets the same steps in every run, and the output length is the request's own.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Any

from simsched.config.speculative import SpeculativeSpec, expected_tokens
from simsched.sim.cluster.sequences import DecodeSet, Seq, ceil_div

# the drafter's forward pass as a share of the target's decode step, by method, when
# `drafter_share` is unset: EAGLE's drafter is one decoder layer (Li et al., EAGLE, 2024), an
# MTP module one transformer layer per depth (DeepSeek-V3; S-TRT-B1: "1x Multi-Tokens
# Prediction (MTP) layer"), so 1 / layers; n-gram lookup runs on the CPU beside the GPU
_ONE_LAYER = ("eagle", "mtp")


def drafter_share(spec: SpeculativeSpec, layers: int) -> float:
    if spec.drafter_share is not None:
        return spec.drafter_share
    return 1.0 / layers if spec.method in _ONE_LAYER else 0.0


def steps_for(remaining: int, per_step: float) -> int:
    """The fewest steps S >= 1 with floor(S * per_step) >= remaining (the credit rule)."""
    steps = max(1, math.ceil(remaining / per_step))
    while math.floor(steps * per_step) < remaining:  # float rounding in the division
        steps += 1
    while steps > 1 and math.floor((steps - 1) * per_step) >= remaining:
        steps -= 1
    return steps


class SpeculativeLatency:
    """A decode step verifies k + 1 tokens per sequence and runs the drafter k times:

    step = inner(prefill..., decode_seqs * (k + 1), decode_context)
         + k * share * inner(0, 0, 0, decode_seqs, 0)          (when decode_seqs > 0)

    The k + 1 verified tokens of a sequence read its KV cache once (the same context); where
    the attention's FLOPs bind (MLA under attention DP) the inner MoE roofline counts them
    k + 1 times (its `queries`, set by build_latency)."""

    def __init__(self, inner: Any, spec: SpeculativeSpec, layers: int) -> None:
        self.inner = inner
        self.verified = spec.tokens + 1
        self.draft = spec.tokens * drafter_share(spec, layers)
        self.before_ms, self.after_ms = inner.before_ms, inner.after_ms

    def iteration_ms(
        self,
        prefill_tokens: int,
        prefill_pairs: int,
        prefill_context: int,
        decode_seqs: int,
        decode_context: Any,
        maximum: Callable = max,
    ) -> Any:
        inner = self.inner.iteration_ms
        step = inner(
            prefill_tokens,
            prefill_pairs,
            prefill_context,
            decode_seqs * self.verified,
            decode_context,
            maximum,
        )
        if decode_seqs and self.draft:
            step = step + self.draft * inner(0, 0, 0, decode_seqs, 0, maximum)
        return step


class SpecDecodeSet:
    """Decoding sequences that emit floor(j * E) tokens in their first j steps.

    Kept one by one (an iteration costs O(decoding sequences)), so a replica with speculative
    decoding steps through every iteration instead of fast-forwarding. During a step a sequence
    with n tokens holds blocks for n + k tokens: the drafts it verifies need their KV slots.
    """

    jumpable = False

    def __init__(self, block_size: int, spec: SpeculativeSpec) -> None:
        self.block_size = block_size
        self.k = spec.tokens
        self.per_step = expected_tokens(spec.rate, spec.tokens)
        self.count = 0
        self.state: dict[Seq, tuple[int, int]] = {}  # seq: (first decode iteration, tokens then)
        self.by_finish: dict[int, list[Seq]] = {}
        self.finish_heap: list[int] = []
        self.finished: dict[Seq, int] = {}  # blocks of sequences popped as finishing

    def verified_tokens(self) -> int:
        return self.count * (self.k + 1)

    def add(self, seq: Seq, off: int, finish_it: int) -> None:
        """As DecodeSet.add: tokens `it + off` at the first decode iteration, and `finish_it`
        the iteration one-token-a-step decoding would finish in; the steps follow the credit."""
        added = seq.target - off  # the iteration whose end completed the prefill
        steps = steps_for(finish_it - added, self.per_step)
        seq.off, seq.finish = off, added + steps
        self.state[seq] = (added + 1, seq.target + 1)
        self.count += 1
        bucket = self.by_finish.setdefault(seq.finish, [])
        if not bucket:
            heapq.heappush(self.finish_heap, seq.finish)
        bucket.append(seq)

    def remove(self, seq: Seq) -> None:
        bucket = self.by_finish[seq.finish]
        bucket.remove(seq)
        if not bucket:
            del self.by_finish[seq.finish]
        self._forget(seq)

    def pop_finishing(self, it: int) -> list[Seq]:
        heap = self.finish_heap
        while heap and heap[0] <= it:
            heapq.heappop(heap)
        bucket = self.by_finish.pop(it, [])
        for seq in bucket:
            self.finished[seq] = self.blocks_held(seq, it)  # read once by the replica
            self._forget(seq)
        return bucket

    def tokens(self, seq: Seq, it: int) -> int:
        """Tokens of `seq` during iteration `it`: those before it plus the credit's emissions."""
        first, at_first = self.state[seq]
        return at_first + math.floor((it - first) * self.per_step)

    def generated(self, seq: Seq, it: int) -> int:
        """Tokens `seq` has emitted once iteration `it` has run (`it` from the iteration that
        completed its prefill): those it holds in the next iteration past its prompt."""
        return self.tokens(seq, it + 1) - seq.prefill

    def blocks_held(self, seq: Seq, it: int) -> int:
        """Blocks `seq` holds once iteration `it` has run (its prefill's before it decodes)."""
        if seq not in self.state:  # just finished: what it held in its last step
            return self.finished.pop(seq)
        first, at_first = self.state[seq]
        if it < first:
            return ceil_div(at_first - 1, self.block_size)
        return ceil_div(self.tokens(seq, it) + self.k, self.block_size)

    def new_blocks(self, it: int) -> int:
        return sum(self.blocks_held(s, it) - self.blocks_held(s, it - 1) for s in self.state)

    def context(self, it: int) -> int:
        return sum(self.tokens(seq, it) for seq in self.state)

    def _forget(self, seq: Seq) -> None:
        self.count -= 1
        del self.state[seq]
        seq.finish = -1


def build_decode_set(
    config: Any, one_token: Callable[[int], DecodeSet] = DecodeSet
) -> DecodeSet | SpecDecodeSet:
    """The replica's decoding sequences: one token per step (`one_token`'s set, the iteration
    observer's for chargeback), or speculative."""
    spec = getattr(config, "speculative", None)
    if spec is None:
        return one_token(config.block_size)
    return SpecDecodeSet(config.block_size, spec)
