"""One replica: a paged KV cache and iteration-level batching, like vLLM's scheduler.

Each iteration ends with one SimPy event. At its start the replica picks its batch: every
running sequence past its prefill decodes one token; running sequences still in prefill, then
waiting ones from the front, get prefill chunks while the token budget
(`max_num_batched_tokens`), `max_num_seqs` and the free KV blocks allow. A sequence of `n`
tokens holds `ceil(n / block_size)` blocks, taken as it grows. When the running sequences need
more blocks than are free, the newest running sequence is preempted (recompute: its blocks are
freed and it returns to the front of the waiting queue, to prefill its prompt and the tokens it
has generated again), and no waiting request starts in that iteration. The iteration that
completes a prefill yields a token: the first token, or the next one after a recompute; a
sequence finishes with its `decode_tokens`-th token.

Decoding sequences are kept in aggregate (`DecodeSet`), so an iteration costs O(1) plus the
sequences that start, stop or are preempted in it. Stretches where only decoding happens are
jumped over with one event (`Jump`); a request placed here meanwhile cuts the jump short at the
end of the iteration in progress, and everything read during a jump is worked out for the
instant it is read. Iteration ends take the `RELEASE` priority: at any instant the replica has
finished its iteration and picked the next batch before anything else looks at it, in both modes.
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from typing import Any

import simpy

from simsched.cluster.kv import KvPool
from simsched.cluster.latency import Latency, decode_run
from simsched.recorder import Recorder
from simsched.requests import Request
from simsched.timing import RELEASE, SCHEDULER, At, AtInstant

# A jump of one iteration is a step. Longer jumps are split at MAX_JUMP, which bounds the work a
# jump cut short by a new request throws away.
MIN_JUMP = 2
MAX_JUMP = 512


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
    )

    def __init__(self, request: Request) -> None:
        self.request = request
        self.prefill = max(1, request.prefill_tokens)  # a prompt is at least one token
        self.decode = max(1, request.decode_tokens)  # the prefill always yields one
        self.generated = 0
        self.target = self.prefill  # tokens to compute before the next token comes
        self.done = 0  # of those, computed
        self.blocks = 0  # held, while in prefill (the DecodeSet knows them afterwards)
        self.off = 0  # while decoding: its tokens = iteration index + off
        self.finish = -1  # while decoding: the iteration at whose end it finishes; -1 otherwise

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
        heap = self.finish_heap
        while heap and heap[0] <= it:
            heapq.heappop(heap)
        bucket = self.by_finish.pop(it, [])
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

    def context(self, it: int) -> int:
        return self.count * it + self.sum_off

    def _forget(self, seq: Seq) -> None:
        self.count -= 1
        self.sum_off -= seq.off
        self.residues[seq.off % self.block_size] -= 1
        seq.finish = -1


class Jump:
    """`k` decode-only iterations from iteration `first`: their end instants and block needs."""

    __slots__ = ("first", "k", "ends", "need")

    def __init__(self, first: int, ends: list[float], need: list[int]) -> None:
        self.first = first
        self.k = len(ends)
        self.ends = ends
        self.need = need  # blocks taken by iterations first..first+i, cumulated

    def index_at(self, now: float) -> int:
        """The iteration in progress at `now` (one that ended at `now` is over)."""
        return min(bisect.bisect_right(self.ends, now), self.k - 1)


class NoObserver:
    """What tests may watch; by default nothing. Jumped-over iterations are not reported."""

    def iteration(self, *args: Any) -> None:
        """Each stepped iteration: (replica, start_ms, end_ms, prefill, decodes, kv_used)."""

    def preempting(self, *args: Any) -> None:
        """Before each preemption: (replica, blocks needed, blocks free)."""


class Replica:
    def __init__(
        self, env: simpy.Environment, index: int, config: Any, latency: Latency, recorder: Recorder
    ) -> None:
        self.env = env
        self.index = index
        self.block_size = config.block_size
        self.max_tokens = config.max_num_batched_tokens
        self.max_seqs = config.max_num_seqs
        self.fast_forward = config.fast_forward
        self.latency = latency
        self.recorder = recorder
        self.on_room = lambda: None  # set by the cluster: a request left the waiting queue
        self.observer: Any = NoObserver()
        self.capacity = config.blocks_per_replica
        self.pool = KvPool(env, self.capacity)
        self.waiting: deque[Seq] = deque()
        self.running: dict[int, Seq] = {}  # by request seq, in the order they started running
        self.prefilling: list[Seq] = []  # running, prefill not complete, in running order
        self.decoding = DecodeSet(self.block_size)
        self.it = 0  # iterations completed
        self.t = 0.0  # when the last iteration ended
        self.busy = False
        self.chunks: list[tuple[Seq, int, int]] = []  # (seq, tokens, blocks) in this iteration
        self.batch_tokens = 0
        self.jump: Jump | None = None
        self._timer: simpy.Event | None = None
        self._end = 0.0

    # --- what others read ---------------------------------------------------------------
    def blocks_in_use(self) -> int:
        jump = self.jump
        if jump is None:
            return self.pool.level
        return self.pool.level + jump.need[jump.index_at(self.env.now)]

    def outstanding(self) -> int:
        return len(self.running) + len(self.waiting)

    def snapshot(self) -> tuple[int, int, int, int, int]:
        batch = self.batch_tokens if self.busy else 0
        return (len(self.running), len(self.waiting), self.blocks_in_use(), self.capacity, batch)

    # --- arrivals -----------------------------------------------------------------------
    def submit(self, request: Request) -> None:
        self.waiting.append(Seq(request))
        if not self.busy:
            # Start at this instant, after the scheduler has placed all it places now.
            self.busy = True
            At(self.env, 0, SCHEDULER).callbacks.append(self._kick)
        elif self.jump is not None:
            self._cut_jump()

    def _kick(self, _event: simpy.Event) -> None:
        self.t = self.env.now
        self._begin()

    # --- one iteration ------------------------------------------------------------------
    def _begin(self) -> None:
        if not self.running and not self.waiting:
            self.busy = False
            self.batch_tokens = 0
            return
        if self.fast_forward and not self.waiting and not self.prefilling and self._start_jump():
            return
        self._start_step()

    def _start_step(self) -> None:
        it = self.it
        plan, need, budget, free, preempted = self._plan_running(it)
        if not preempted:  # as vLLM: after a preemption no waiting request starts this iteration
            need = self._admit_waiting(plan, need, budget, free)
        self.pool.hold(need)
        prefill = pairs = context = 0
        for seq, chunk, blocks in plan:
            seq.blocks += blocks
            done = seq.done
            prefill += chunk
            pairs += chunk * done + chunk * (chunk + 1) // 2
            context += done
        decodes = self.decoding.count
        step = self.latency.iteration_ms(
            prefill, pairs, context, decodes, self.decoding.context(it)
        )
        if prefill + decodes == 0:
            raise RuntimeError(f"simulation bug: replica {self.index} scheduled an empty batch")
        self.chunks = plan
        self.batch_tokens = prefill + decodes
        end = self.t + step
        self.observer.iteration(self.index, self.t, end, prefill, decodes, self.pool.level)
        self._schedule(end)

    def _plan_running(self, it: int) -> tuple[list, int, int, int, bool]:
        """Chunks for running prefills and the blocks this iteration needs, preempting as needed."""
        preempted = False
        while True:
            free = self.capacity - self.pool.level
            need = self.decoding.new_blocks(it)
            budget = self.max_tokens - self.decoding.count
            plan = []
            for seq in self.prefilling:
                if budget == 0:
                    break
                chunk = min(seq.target - seq.done, budget)
                blocks = ceil_div(seq.done + chunk, self.block_size) - seq.blocks
                plan.append((seq, chunk, blocks))
                need += blocks
                budget -= chunk
            if need <= free:
                return plan, need, budget, free, preempted
            self.observer.preempting(self.index, need, free)
            self._preempt_newest(it)
            preempted = True

    def _admit_waiting(self, plan: list, need: int, budget: int, free: int) -> int:
        """Start waiting requests from the front while budget, seats and blocks allow."""
        waiting = self.waiting
        left = False
        while waiting and budget > 0 and len(self.running) < self.max_seqs:
            seq = waiting[0]
            chunk = min(seq.target, budget)
            blocks = ceil_div(chunk, self.block_size)
            if need + blocks > free:
                break  # as vLLM: a request that does not fit now waits; nothing is preempted
            waiting.popleft()
            self.running[seq.request.seq] = seq
            self.prefilling.append(seq)
            plan.append((seq, chunk, blocks))
            need += blocks
            budget -= chunk
            left = True
        if left:
            self.on_room()
        return need

    def _preempt_newest(self, it: int) -> None:
        seq = self.running.pop(next(reversed(self.running)))
        if seq.finish >= 0:
            blocks = ceil_div(it + seq.off - 1, self.block_size)
            self.decoding.remove(seq)
        else:
            blocks = seq.blocks
            self.prefilling.remove(seq)
        self.pool.release(blocks)
        seq.restart()
        self.waiting.appendleft(seq)
        self.recorder.preempted(seq.request)

    def _schedule(self, end: float) -> None:
        timer = AtInstant(self.env, end, RELEASE)
        timer.callbacks.append(self._on_timer)
        self._timer = timer
        self._end = end

    def _on_timer(self, event: simpy.Event) -> None:
        if event is not self._timer:
            return  # the end of a jump that a new request cut short
        if self.jump is not None:
            self._end_jump()
        else:
            self._end_step()

    def _end_step(self) -> None:
        it, end = self.it, self._end
        for seq, chunk, _ in self.chunks:
            seq.done += chunk
            if seq.done == seq.target:
                self._prefilled(seq, it, end)
        self.chunks = []
        self._finish_decodes(it, end)
        self.it, self.t = it + 1, end
        self._begin()

    def _prefilled(self, seq: Seq, it: int, end: float) -> None:
        self.prefilling.remove(seq)
        seq.generated += 1
        if seq.generated == 1:
            self.recorder.first_token(seq.request, end)
        if seq.generated >= seq.decode:
            self._finish(seq, seq.blocks, end)
        else:
            # The next iteration decodes with target + 1 tokens: tokens = iteration + off.
            self.decoding.add(seq, seq.target - it, it + seq.decode - seq.generated)

    def _finish_decodes(self, it: int, end: float) -> None:
        for seq in self.decoding.pop_finishing(it):
            self._finish(seq, ceil_div(it + seq.off, self.block_size), end)

    def _finish(self, seq: Seq, blocks: int, end: float) -> None:
        self.pool.release(blocks)
        del self.running[seq.request.seq]
        self.recorder.finished(seq.request, end)

    # --- fast-forward -------------------------------------------------------------------
    def _start_jump(self) -> bool:
        """Jump to the first completion, block shortage or MAX_JUMP, if that is far enough."""
        decoding, it = self.decoding, self.it
        horizon = min(decoding.next_finish() - it + 1, MAX_JUMP)
        if horizon < MIN_JUMP:
            return False
        need = self._block_needs(it, horizon)
        if len(need) < MIN_JUMP:
            return False
        context = decoding.context(it)
        ends = decode_run(self.latency, self.t, decoding.count, context, len(need))
        self.jump = Jump(it, ends, need)
        self.batch_tokens = decoding.count
        self._schedule(ends[-1])
        return True

    def _block_needs(self, it: int, horizon: int) -> list[int]:
        """Blocks the next iterations take, cumulated, for as many as the free blocks cover."""
        residues, size = self.decoding.residues, self.block_size
        free = self.capacity - self.pool.level
        need: list[int] = []
        total = 0
        for step in range(horizon):
            total += residues[(1 - it - step) % size]
            if total > free:
                break
            need.append(total)
        return need

    def _cut_jump(self) -> None:
        jump = self.jump
        current = jump.index_at(self.env.now)
        if current < jump.k - 1:
            jump.k = current + 1
            self._schedule(jump.ends[current])

    def _end_jump(self) -> None:
        jump, self.jump = self.jump, None
        last = jump.first + jump.k - 1
        self.pool.hold(jump.need[jump.k - 1])
        end = jump.ends[jump.k - 1]
        self._finish_decodes(last, end)
        self.it, self.t = last + 1, end
        self._begin()
