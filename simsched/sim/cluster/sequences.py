"""The replica's sequence bookkeeping: one `Seq` per request, decoding ones in aggregate.

A sequence of `n` tokens holds `ceil(n / block_size)` blocks. While it is in prefill its `Seq`
counts them; once it decodes, its token count follows from the iteration index, so the
`DecodeSet` keeps only sums over all decoding sequences and an iteration costs O(1) for them.
"""

from __future__ import annotations

import heapq

from simsched.sim.requests import Request


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


class Seq:
    """A request on a replica: its prefill progress, tokens generated and KV blocks."""

    __slots__ = (
        "request",
        "prefill",
        "decode",
        "generated",
        "target",
        "done",
        "blocks",
        "off",
        "finish",
        "runs",
        "shared",
        "shared_blocks",
        "reg",
        "at",
    )

    def __init__(self, request: Request) -> None:
        self.request = request
        # max(1, tokens) without the calls (one Seq a request): a prompt is at least one token,
        # and the prefill always yields one
        prefill, decode = request.prefill_tokens, request.decode_tokens
        self.prefill = prefill if prefill > 1 else 1
        self.decode = decode if decode > 1 else 1
        self.generated = 0
        self.target = self.prefill  # tokens to compute before the next token comes
        self.done = 0  # of those, computed
        self.blocks = 0  # held, while in prefill (the DecodeSet knows them afterwards)
        self.off = 0  # while decoding: its tokens = iteration index + off
        self.finish = -1  # while decoding: the iteration at whose end it finishes; -1 otherwise
        # prefix caching only (prefix_cache.py): the prompt's key runs, the registered blocks it
        # holds (as runs, and their count; None: the runs' blocks below `reg`), blocks
        # considered for registration so far
        self.runs: tuple | None = None
        self.shared: list[tuple[int, int, int]] | None = []
        self.shared_blocks = 0
        self.reg = 0
        self.at = 0  # the first of `runs` that ends past `reg` (where registering goes on)

    def restart(self) -> None:
        """Preempted: recompute the prompt and everything generated so far."""
        self.target = self.prefill + self.generated
        self.done = self.blocks = 0


class DecodeSet:
    """Decoding sequences in aggregate, so that an iteration costs O(1) for all of them.

    A sequence decoding in iteration `it` has `it + off` tokens, so the batch's context is
    `count * it + sum(off)`; it needs a new block when its token count is 1 past a multiple of
    the block size, i.e. in iterations with `(1 - it) % block_size == off % block_size`, so
    `residues` (sequences per `off % block_size`) gives each iteration's new blocks.
    """

    jumpable = True  # fast_forward.py may plan a run of its iterations at once

    def __init__(self, block_size: int) -> None:
        self.block_size = block_size
        self.count = 0
        self.sum_off = 0
        self.residues = [0] * block_size
        self.by_finish: dict[int, list[Seq]] = {}  # the iteration at whose end they finish
        self.finish_heap: list[int] = []  # the keys of by_finish, with stale ones popped late

    def add(self, seq: Seq, off: int, finish_it: int) -> None:
        seq.off, seq.finish = off, finish_it
        self.count += 1
        self.sum_off += off
        self.residues[off % self.block_size] += 1
        bucket = self.by_finish.get(finish_it)
        if bucket is None:
            self.by_finish[finish_it] = [seq]
            heapq.heappush(self.finish_heap, finish_it)
        else:
            bucket.append(seq)

    def remove(self, seq: Seq) -> None:
        bucket = self.by_finish[seq.finish]
        bucket.remove(seq)
        if not bucket:
            del self.by_finish[seq.finish]
        self._forget(seq)

    def pop_finishing(self, it: int) -> list[Seq]:
        bucket = self.by_finish.pop(it, None)
        if bucket is None:
            # most iterations finish nothing (asked at every step and jump); the heap's keys
            # at or before `it` are stale then, and `next_finish` drops stale keys itself
            return []
        heap = self.finish_heap
        while heap and heap[0] <= it:
            heapq.heappop(heap)
        for seq in bucket:
            self._forget(seq)
        return bucket

    def next_finish(self) -> int:
        heap = self.finish_heap
        while heap[0] not in self.by_finish:
            heapq.heappop(heap)
        return heap[0]

    def new_blocks(self, it: int) -> int:
        return self.residues[(1 - it) % self.block_size]

    def verified_tokens(self) -> int:
        """Tokens the decodes put through the model in an iteration: one each."""
        return self.count

    def tokens(self, seq: Seq, it: int) -> int:
        """Tokens of `seq` during iteration `it`: its prompt, then one per decode step."""
        return it + seq.off

    def generated(self, seq: Seq, it: int) -> int:
        """Tokens `seq` has emitted once iteration `it` has run: those it holds in the next
        iteration past its prompt (the last of them not yet in its KV cache)."""
        return self.tokens(seq, it + 1) - seq.prefill

    def blocks_held(self, seq: Seq, it: int) -> int:
        """Blocks `seq` holds once iteration `it` has run: ceil((it + off) / block_size)."""
        return ceil_div(it + seq.off, self.block_size)

    def context(self, it: int) -> int:
        return self.count * it + self.sum_off

    def _forget(self, seq: Seq) -> None:
        self.count -= 1
        self.sum_off -= seq.off
        self.residues[seq.off % self.block_size] -= 1
        seq.finish = -1
