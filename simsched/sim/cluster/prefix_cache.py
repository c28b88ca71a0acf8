"""A replica's prefix cache (`cluster.prefix_caching: true`), with vLLM's automatic prefix caching.

Semantics, block by block. Full KV blocks are known by a key that names their tokens and every
token before them (chained hashes in vLLM; `workload/prefixes.py` here). A block computed for one
request is registered under its key; a later request whose leading blocks have registered keys
starts with them (hits): they need no compute and no new block, only a reference. Blocks are
reference-counted: when the last request holding a registered block finishes or is preempted,
the block stays cached but free, and is evicted least-recently-used when new blocks are needed.
Blocks of a finished request are queued for eviction tail first, so its prompt's beginning (the
part most likely shared) goes last, as vLLM frees them in reverse order.

The `level` stays "blocks held by running sequences" (what occupancy, admission rules and the
router read); cached free blocks are counted apart and give way to new blocks (`hold` evicts as
needed). New blocks come from free blocks that hold nothing cached first, then from evictions:
vLLM keeps one free queue and may reuse a cached block while an empty one is free; taking empty
ones first keeps every cached block that could still hit.

A request's hits never reach its last prompt token, which is always computed (the model needs
its logits). A duplicate (a block computed while another copy of it was registered meanwhile)
stays the request's own and is freed uncached.

The index, by prompt segment. A request's keys are a few runs `(chain, first block, end block)`
(`Prefix.runs`), so the cache keeps, per chain, sorted disjoint `Piece`s: blocks `[lo, hi)` in
the same state (held by `refs` requests, or free since release number `stamp`). An operation
costs a few pieces, not one dictionary entry per 16-token block (a Mooncake prompt is ~750
blocks in ~25 runs). Pieces are split where an operation's range ends inside one and joined again
when neighbours agree, so the state is always exactly the block-by-block one: the eviction order
of free block `j` of release `r` is `(r, -j)` (oldest release first, tail first within it), which
a heap of free pieces keyed `(stamp, -hi)` gives, taking blocks from a piece's top.
tests/sim/cluster/test_prefix_cache_index.py checks it against a block-by-block cache.
"""

from __future__ import annotations

import heapq
import sys
from bisect import bisect_left, bisect_right
from itertools import count as counter
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING

from simsched.sim.cluster.kv_memory import PlainKv
from simsched.sim.recorder import Recorder

if TYPE_CHECKING:
    from collections.abc import Sequence

    import simpy

    from simsched.sim.cluster.kv_level import FleetKv
    from simsched.sim.cluster.sequences import Seq
    from simsched.workload.prefixes import Run

NOT_QUEUED = -1  # a piece's token while it is held (or gone): its heap entries are stale
ALL = sys.maxsize  # `_release`'s stop for runs released whole


class Piece:
    """Blocks `[lo, hi)` of one chain in one state: held by `refs` requests, or free (refs 0)
    since release `stamp`. `token` names its one live eviction-queue entry while free."""

    __slots__ = ("chain", "lo", "hi", "refs", "stamp", "token")

    def __init__(self, chain: int, lo: int, hi: int, refs: int, stamp: int = 0) -> None:
        self.chain = chain
        self.lo = lo
        self.hi = hi
        self.refs = refs
        self.stamp = stamp
        self.token = NOT_QUEUED


_lo = attrgetter("lo")  # a piece's first block
_hi = itemgetter(2)  # a run's end block


def _share(shared: list[Run], chain: int, lo: int, hi: int) -> None:
    """Add blocks `[lo, hi)` of `chain` to a sequence's held runs, extending the last run when
    they continue it: a prefill registers chunk by chunk, and its release then cuts one run
    per chain instead of one per chunk (the same blocks, so the same state after it)."""
    if shared:
        last_chain, last_lo, last_hi = shared[-1]
        if last_chain == chain and last_hi == lo:
            shared[-1] = (chain, last_lo, hi)
            return
    shared.append((chain, lo, hi))


class PrefixCachedKv(PlainKv):
    def __init__(
        self,
        env: simpy.Environment,
        capacity: int,
        block_size: int,
        recorder: Recorder,
        fleet: FleetKv | None = None,
    ):
        super().__init__(env, capacity, block_size, recorder, fleet)
        self.chains: dict[int, list[Piece]] = {}  # chain id -> its pieces, sorted by lo
        self.free_blocks = 0  # cached blocks no one holds (evictable)
        self.queue: list[tuple[int, int, int, Piece]] = []  # (stamp, -hi, token, piece) heap
        self.releases = 0
        self.tokens = counter()

    # --- the read-only view -----------------------------------------------------------------
    def hit_blocks(self, runs: tuple[Run, ...], limit: int) -> int:
        self._settle()
        return self._lookup(runs, limit)[0]

    def cached_free(self) -> int:
        if self.growth is not None:  # `_settle`'s test, inlined: the timeline asks every sample
            self._settle()
        return self.free_blocks

    def _settle(self) -> None:
        """Mid-jump, evict what the jump's iterations have evicted by now, as stepping would
        have (nothing else changes the cache during a jump, so the order is the same)."""
        if self.growth is not None:
            excess = self.in_use() + self.free_blocks - self.capacity
            if excess > 0:
                self._evict(excess)

    # --- the batching loop --------------------------------------------------------------------
    def prompt_hits(self, seq: Seq) -> tuple[int, int]:
        runs = seq.runs if seq.runs is not None else self._runs(seq)
        if not runs:
            return 0, 0
        return self._lookup(runs, (seq.target - 1) // self.block_size)  # the last token computes

    def start(self, seq: Seq, hits: int) -> None:
        runs = seq.runs if seq.runs is not None else self._runs(seq)
        if hits:
            self._reference(runs, hits)
        # it holds the runs' leading blocks up to `reg`: its hits, then what it registers
        seq.shared = None
        seq.blocks = seq.reg = hits
        seq.at = bisect_right(runs, hits, key=_hi)  # registering goes on from the run past hits
        seq.done = hits * self.block_size
        self.recorder.cached(seq.request, seq.done)  # a restart's re-hits are recorded apart

    def hold(self, blocks: int) -> None:
        """Evict what the new blocks displace, then hold them: once an iteration, so the
        common eviction (from the top of the oldest free piece) and `KvPool.hold`'s checks and
        count are inlined here, one call where there were four."""
        free, capacity = self.free_blocks, self.capacity
        level = self.level + blocks
        excess = level + free - capacity
        if excess > 0 and free:
            count = excess if excess < free else free  # more than that overflows, below
            _, _, token, piece = self.queue[0]
            if piece.token == token and piece.hi - piece.lo > count:
                self.free_blocks = free - count  # `_evict`'s first case: the piece outlasts it
                piece.hi -= count
            else:
                self._evict(count)
        if blocks < 0 or level > capacity:
            super().hold(blocks)  # raises, naming the violation
        self.level = level
        if level > self.peak:
            self.peak = level
        self.fleet.held += blocks

    def computed(self, seq: Seq) -> None:
        """Its newly full blocks become cached (held by the sequence). A call per prefill chunk
        (the Mooncake bench: 75,000), so a sequence that has registered every block it computed
        skips `_add_missing`'s search and listing (`seq.shared` None: what it holds is the runs'
        blocks below `reg`, counted at its release), going on from `seq.at`, the run
        registering stopped in."""
        full = seq.done // self.block_size
        reg = seq.reg
        if full <= reg:
            return
        seq.reg = full
        runs = seq.runs if seq.runs is not None else self._runs(seq)
        if seq.shared is not None:  # it kept a duplicate: its runs are listed (`_add_missing`)
            if runs and reg < runs[-1][2]:  # blocks past the runs have no key
                seq.shared_blocks += self._add_missing(runs, reg, full, seq.shared)
            return
        at, count = seq.at, len(runs)
        while at < count and runs[at][2] <= reg:  # only if `at` was left behind (a test's call)
            at += 1
        while at < count:
            chain, lo, hi = runs[at]
            if lo >= full:
                break
            a = lo if lo > reg else reg
            b = hi if hi < full else full
            if not self._grow(chain, a, b):  # someone registered some meanwhile: listed
                seq.shared, seq.shared_blocks = self._held(runs, a)
                seq.shared_blocks += self._add_missing(runs, a, full, seq.shared)
                return
            if hi > full:
                break  # registering goes on in this run
            at += 1
        seq.at = at

    def finish(self, seq: Seq, blocks: int) -> None:
        """A finished sequence first registers the full blocks of its whole sequence (a
        session's next turn resends them); the last token's KV is never computed."""
        runs = seq.runs if seq.runs is not None else self._runs(seq)
        # a finished prompt is registered already and its decoded blocks have no key: only a
        # sequence whose keyed blocks run past what it registered has anything to add
        if runs and seq.reg < runs[-1][2]:
            full = min(blocks, (seq.prefill + seq.decode - 1) // self.block_size)
            if full > seq.reg:
                if seq.shared is None:
                    seq.shared, seq.shared_blocks = self._held(runs, seq.reg)
                self._register(seq, full)
        self._let_go(seq, blocks)

    def preempt(self, seq: Seq, blocks: int) -> None:
        """A preempted sequence keeps only the registrations its prefill made."""
        self._let_go(seq, blocks)

    def clear(self) -> None:
        self.chains.clear()
        self.queue.clear()
        self.free_blocks = 0  # nothing cached any more

    # --- a sequence's part ----------------------------------------------------------------------
    def _runs(self, seq: Seq) -> tuple[Run, ...]:
        if seq.runs is None:
            prefix = seq.request.prefix
            seq.runs = prefix.runs(self.block_size) if prefix is not None else ()
        return seq.runs

    def _register(self, seq: Seq, full: int) -> None:
        runs = self._runs(seq)
        # a finished sequence's prompt is registered already (its decoded blocks have no key)
        if runs and seq.reg < runs[-1][2]:
            seq.shared_blocks += self._add_missing(runs, seq.reg, full, seq.shared)
        seq.reg = full

    def _let_go(self, seq: Seq, blocks: int) -> None:
        if seq.shared is None:  # it holds its runs' blocks below `reg`: released as they are
            runs, stop = self._runs(seq), seq.reg
            held = (stop if stop < runs[-1][2] else runs[-1][2]) if runs else 0
        else:
            runs, stop, held = seq.shared, ALL, seq.shared_blocks
        freed = blocks - held + self._release(runs, stop)
        if freed < 0 or freed > self.level:
            super().release(freed)  # raises, naming the violation
        self.level -= freed  # `PlainKv.release`, inlined: once a request
        self.fleet.held -= freed
        seq.shared = None  # it holds nothing: the runs' blocks below 0
        seq.shared_blocks = seq.reg = 0

    @staticmethod
    def _held(runs: tuple[Run, ...], stop: int) -> tuple[list[Run], int]:
        """The registered blocks of a sequence that holds the runs' blocks below `stop`, as
        runs, and their count (runs are contiguous from block 0)."""
        held = []
        for chain, lo, hi in runs:
            if lo >= stop:
                break
            held.append((chain, lo, hi if hi < stop else stop))
        return held, min(stop, runs[-1][2]) if runs else 0

    # --- the index ------------------------------------------------------------------------------
    def _lookup(self, runs: tuple[Run, ...], limit: int) -> tuple[int, int]:
        """(leading blocks of `runs` held here, at most `limit`; of them, free now)."""
        chains = self.chains
        hits = revived = 0
        for chain, lo, hi in runs:
            end = lo + limit - hits
            if end > hi:
                end = hi
            pieces = chains.get(chain)
            if end <= lo or pieces is None:
                break
            if len(pieces) == 1:  # most chains are one piece
                piece = pieces[0]
                if piece.lo > lo or piece.hi <= lo:
                    break
                j = piece.hi if piece.hi < end else end
                hits += j - lo
                if piece.refs == 0:
                    revived += j - lo
            else:
                j = self._lookup_pieces(pieces, lo, end)
                hits += j[0] - lo
                revived += j[1]
                j = j[0]
            if j < hi:
                break
        return hits, revived

    @staticmethod
    def _lookup_pieces(pieces: list[Piece], lo: int, end: int) -> tuple[int, int]:
        """How far from `lo` (up to `end`) the pieces run unbroken; the free blocks on the way."""
        i = bisect_right(pieces, lo, key=_lo) - 1
        j, revived = lo, 0
        while j < end and 0 <= i < len(pieces):
            piece = pieces[i]
            if piece.lo > j or piece.hi <= j:
                break
            n = (piece.hi if piece.hi < end else end) - j
            if piece.refs == 0:
                revived += n
            j += n
            i += 1
        return j, revived

    def _reference(self, runs: tuple[Run, ...], hits: int) -> None:
        """Reference the first `hits` blocks of `runs` (all held here); free ones leave the free.
        The sequence holds them as the runs' leading blocks (`start`), so nothing is listed."""
        left = hits
        chains = self.chains
        for chain, lo, hi in runs:
            if left <= 0:
                break
            end = hi if hi < lo + left else lo + left
            pieces = chains[chain]
            piece = pieces[0]
            if len(pieces) == 1 and piece.lo == lo and piece.hi == end:
                # the common case: the run's hits are its chain's one piece (no cut or join)
                if piece.refs == 0:
                    self.free_blocks -= end - lo
                    piece.token = NOT_QUEUED
                piece.refs += 1
            else:
                i, k = self._cut(pieces, lo, end)
                for piece in pieces[i:k]:
                    if piece.refs == 0:
                        self.free_blocks -= piece.hi - piece.lo
                        piece.token = NOT_QUEUED
                    piece.refs += 1
                self._join(pieces, i, k)
            left -= end - lo

    def _add_missing(self, runs: tuple[Run, ...], start: int, stop: int, shared: list[Run]) -> int:
        """Register blocks `start..stop-1` of `runs` that no one has registered (held by the
        caller, added to `shared`); those registered meanwhile stay the caller's own."""
        added = 0
        chains = self.chains
        # runs are contiguous from block 0: start at the one holding `start`
        for index in range(bisect_right(runs, start, key=_hi), len(runs)):
            chain, lo, hi = runs[index]
            if lo >= stop:
                break
            a = lo if lo > start else start
            b = hi if hi < stop else stop
            if not self._grow(chain, a, b):
                added += self._fill_gaps(chains[chain], chain, a, b, shared)
                continue
            # `_share`, inlined (a call per prefill chunk): the chunk continues the held run
            last_run = shared[-1] if shared else None
            if last_run is not None and last_run[0] == chain and last_run[2] == a:
                shared[-1] = (chain, last_run[1], b)
            else:
                shared.append((chain, a, b))
            added += b - a
        return added

    def _grow(self, chain: int, a: int, b: int) -> bool:
        """Blocks `[a, b)` of `chain` held once, when they lie past every piece of the chain (the
        common case: a prefill's next chunk): a new piece, or the held piece they continue grown.
        False, and nothing done, when someone registered some of them meanwhile."""
        pieces = self.chains.get(chain)
        if pieces is None:  # nothing of this chain yet: one new piece
            self.chains[chain] = [Piece(chain, a, b, 1)]
            return True
        last = pieces[-1]
        if last.hi > a:
            return False
        if last.hi == a and last.refs == 1:
            last.hi = b  # what a new piece joined to the held one it continues would be
        else:
            pieces.append(Piece(chain, a, b, 1))  # no neighbour it could join
        return True

    def _fill_gaps(self, pieces: list[Piece], chain: int, a: int, b: int, shared: list[Run]) -> int:
        """New pieces (held once) where no piece covers `[a, b)`."""
        added = 0
        i = bisect_right(pieces, a, key=_lo)
        if i > 0 and pieces[i - 1].hi > a:
            a = min(pieces[i - 1].hi, b)
        first = i
        while a < b:
            next_lo = pieces[i].lo if i < len(pieces) else b
            if next_lo > a:
                end = min(next_lo, b)
                pieces.insert(i, Piece(chain, a, end, 1))
                _share(shared, chain, a, end)
                added += end - a
                a = end
            else:
                a = pieces[i].hi
            i += 1
        self._join(pieces, first, i)
        return added

    def _release(self, runs: Sequence[Run], stop: int) -> int:
        """One request lets go of its registered blocks, those of `runs` below block `stop`
        (a sequence's runs clipped where it stopped registering, with no list of them built,
        or its listed runs whole); returns those no one holds any more (they stay cached,
        free, queued for eviction under this release's stamp)."""
        self.releases += 1
        stamp = self.releases
        dropped = 0
        chains, queue, tokens = self.chains, self.queue, self.tokens
        for chain, lo, hi in runs:
            if lo >= stop:
                break
            if hi > stop:
                hi = stop
            pieces = chains[chain]
            piece = pieces[0]
            if len(pieces) == 1 and piece.lo == lo and piece.hi == hi:
                # the common case: the run is its chain's one piece (`_queue`, inlined)
                piece.refs -= 1
                if piece.refs == 0:
                    piece.stamp = stamp
                    dropped += hi - lo
                    piece.token = token = next(tokens)
                    heapq.heappush(queue, (stamp, -hi, token, piece))
                continue
            i, k = self._cut(pieces, lo, hi)
            for piece in pieces[i:k]:
                piece.refs -= 1
                if piece.refs == 0:
                    piece.stamp = stamp
                    dropped += piece.hi - piece.lo
                    self._queue(piece)
            self._join(pieces, i, k)
        self.free_blocks += dropped
        return dropped

    def _evict(self, count: int) -> None:
        """Drop the `count` free blocks first in eviction order."""
        queue, chains, pop = self.queue, self.chains, heapq.heappop
        self.free_blocks -= count
        while count:
            _, _, token, piece = queue[0]
            if piece.token != token:
                pop(queue)  # an entry left behind by a split, join or revival
                continue
            size = piece.hi - piece.lo
            if size > count:
                # from its top; its entry stays first (no piece of an older release is left,
                # and this release's other pieces lie below it)
                piece.hi -= count
                return
            pop(queue)
            count -= size
            piece.token = NOT_QUEUED
            pieces = chains[piece.chain]
            if len(pieces) == 1:
                del chains[piece.chain]
            else:
                del pieces[bisect_left(pieces, piece.lo, key=_lo)]

    # --- pieces: split, join, queue ---------------------------------------------------------------
    def _cut(self, pieces: list[Piece], lo: int, hi: int) -> tuple[int, int]:
        """Split pieces at `lo` and `hi`; the indexes of the pieces that cover `[lo, hi)`."""
        if len(pieces) == 1 and pieces[0].lo == lo and pieces[0].hi == hi:
            return 0, 1  # the common case: a chain's one piece is the run
        self._split_at(pieces, lo)
        self._split_at(pieces, hi)
        return bisect_left(pieces, lo, key=_lo), bisect_left(pieces, hi, key=_lo)

    def _split_at(self, pieces: list[Piece], at: int) -> None:
        i = bisect_right(pieces, at, key=_lo) - 1
        if i < 0:
            return
        piece = pieces[i]
        if piece.lo < at < piece.hi:
            upper = Piece(piece.chain, at, piece.hi, piece.refs, piece.stamp)
            piece.hi = at
            pieces.insert(i + 1, upper)
            if piece.refs == 0:
                self._queue(piece)
                self._queue(upper)

    def _join(self, pieces: list[Piece], first: int, stop: int) -> None:
        """Join neighbours in the same state among `pieces[first - 1 .. stop]` (fewer pieces,
        the same blocks: free ones only within one release, whose order they keep)."""
        if len(pieces) == 1:
            return
        i = max(first - 1, 0)
        last = min(stop, len(pieces) - 1)
        while i < last:
            left, right = pieces[i], pieces[i + 1]
            if (
                left.hi == right.lo
                and left.refs == right.refs
                and (left.refs or left.stamp == right.stamp)
            ):
                left.hi = right.hi
                del pieces[i + 1]
                last -= 1
                if left.refs == 0:
                    right.token = NOT_QUEUED
                    self._queue(left)
            else:
                i += 1

    def _queue(self, piece: Piece) -> None:
        piece.token = token = next(self.tokens)
        heapq.heappush(self.queue, (piece.stamp, -piece.hi, token, piece))
