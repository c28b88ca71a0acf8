"""A replica's prefix cache (`cluster.prefix_caching: true`), with vLLM's automatic prefix caching.

Full KV blocks are known by a key that names their tokens and every token before them (chained
hashes in vLLM; `workload/prefixes.py` here). A block computed for one request is registered
under its key; a later request whose leading blocks have registered keys starts with them
(hits): they need no compute and no new block, only a reference. Blocks are reference-counted:
when the last request holding a registered block finishes or is preempted, the block stays
cached but free, and is evicted least-recently-used when new blocks are needed. Blocks of a
finished request are queued for eviction tail first, so its prompt's beginning (the part most
likely shared) goes last, as vLLM frees them in reverse order.

The pool's `level` stays "blocks held by running sequences" (what occupancy, admission rules
and the router read); cached free blocks are counted apart and give way to new blocks
(`hold` evicts as needed). New blocks come from free blocks that hold nothing cached first,
then from evictions: vLLM keeps one free queue and may reuse a cached block while an empty one
is free; taking empty ones first keeps every cached block that could still hit.

A request's hits never reach its last prompt token, which is always computed (the model needs
its logits). A duplicate (a block computed while another replica copy of it was registered
meanwhile) stays the request's own and is freed uncached.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from itertools import islice

from simsched.sim.cluster.kv import KvPool
from simsched.workload.prefixes import NO_KEY


class PrefixCachePool(KvPool):
    def __init__(self, capacity: int, block_size: int) -> None:
        super().__init__(capacity)
        self.block_size = block_size
        self.refs: dict[int, int] = {}  # registered key -> requests holding it (0: cached, free)
        self.free_cached: OrderedDict[int, None] = OrderedDict()  # refs 0, oldest first
        self.evictions = 0

    # --- what others read -------------------------------------------------------------------
    def cached_free(self, in_use: int) -> int:
        """Cached blocks that are free (evictable) when `in_use` blocks are held: a fast-forward
        takes its blocks at its end, so at an instant within it fewer may be left."""
        return min(len(self.free_cached), self.capacity - in_use)

    def longest_hit(self, keys: list[int], limit: int) -> int:
        """Leading blocks of `keys` (at most `limit`) that this cache holds."""
        refs = self.refs
        hits = 0
        for key in keys:
            if hits >= limit or key not in refs:
                break
            hits += 1
        return hits

    # --- a request starting -----------------------------------------------------------------
    def peek(self, keys: list[int], limit: int) -> tuple[int, int]:
        """(hits, how many of them are free now and would be taken out of the free blocks)."""
        refs = self.refs
        hits = revived = 0
        for key in keys:
            if hits >= limit:
                break
            held = refs.get(key)
            if held is None:
                break
            hits += 1
            if held == 0:
                revived += 1
        return hits, revived

    def take(self, keys: list[int], hits: int) -> list[int]:
        """Reference the first `hits` blocks; the caller holds the revived ones in `level`."""
        refs, free = self.refs, self.free_cached
        taken = keys[:hits]
        for key in taken:
            held = refs[key]
            if held == 0:
                del free[key]
            refs[key] = held + 1
        return taken

    def hold(self, blocks: int) -> None:
        excess = self.level + len(self.free_cached) + blocks - self.capacity
        if excess > 0:
            self._evict(excess)
        super().hold(blocks)

    def _evict(self, count: int) -> None:
        free = self.free_cached
        # the `count` oldest, dropped in C-level loops (a long prompt evicts hundreds of blocks
        # at a time; a Python loop per block was most of a caching run's time)
        victims = list(islice(free, count)) if count < len(free) else list(free)
        if len(victims) == len(free):
            free.clear()
        else:
            _drain(map(free.pop, victims))
        _drain(map(self.refs.__delitem__, victims))
        self.evictions += count

    # --- blocks computed, requests leaving ----------------------------------------------------
    def register(self, keys: list[int], start: int, stop: int, shared: list[int]) -> None:
        """Blocks `start..stop-1` of a request are computed: register their keys (held by it)."""
        refs = self.refs
        # a request's keys are distinct (each names its block's index), NO_KEY aside
        new = [key for key in keys[start:stop] if key not in refs and key != NO_KEY]
        refs.update(zip(new, [1] * len(new), strict=True))
        shared.extend(new)

    def release_shared(self, shared: list[int]) -> int:
        """A request lets go of its registered blocks; returns those no one holds any more
        (they stay cached, free), queued for eviction last block first."""
        refs, free = self.refs, self.free_cached
        dropped = 0
        # a plain loop: measured faster than batched dict updates here (OrderedDict.update
        # takes a generic path per key)
        for key in reversed(shared):
            held = refs[key] - 1
            refs[key] = held
            if held == 0:
                free[key] = None
                dropped += 1
        return dropped


def _drain(calls) -> None:
    deque(calls, maxlen=0)  # runs an iterator of calls in C


# --- a replica's sequences and the cache (replica.py calls these when caching is on) -----------
def make_pool(capacity: int, config) -> KvPool:
    if getattr(config, "prefix_caching", False):
        return PrefixCachePool(capacity, config.block_size)
    return KvPool(capacity)


def seq_keys(seq, block_size: int) -> list[int]:
    if seq.keys is None:
        prefix = seq.request.prefix
        seq.keys = prefix.keys(block_size) if prefix is not None else []
    return seq.keys


def peek_seq(cache: PrefixCachePool, seq) -> tuple[int, int]:
    """(hit blocks, of which free now) for a waiting sequence about to start."""
    keys = seq_keys(seq, cache.block_size)
    if not keys:
        return 0, 0
    return cache.peek(keys, (seq.target - 1) // cache.block_size)  # the last token is computed


def take_seq(cache: PrefixCachePool, seq, hits: int, recorder) -> None:
    """The sequence starts with its hits computed and held."""
    seq.shared = cache.take(seq.keys, hits) if hits else []
    seq.blocks = seq.reg = hits
    seq.done = hits * cache.block_size
    recorder.cached(seq.request, seq.done)  # a restart's re-hits are recorded apart


def register_done(cache: PrefixCachePool, seq) -> None:
    """After a chunk: its newly full blocks become cached (held by the sequence)."""
    full = seq.done // cache.block_size
    if full > seq.reg:
        cache.register(seq.keys, seq.reg, full, seq.shared)
        seq.reg = full


def release_seq(cache: PrefixCachePool, seq, blocks: int, finished: bool) -> None:
    """The sequence lets go of its `blocks`; a finished one first registers the full blocks of
    its whole sequence (a session's next turn resends them); a preempted one keeps only the
    registrations its prefill made."""
    if finished:
        full = min(blocks, (seq.prefill + seq.decode - 1) // cache.block_size)
        if full > seq.reg:
            cache.register(seq.keys, seq.reg, full, seq.shared)
    dropped = cache.release_shared(seq.shared)
    cache.release(blocks - len(seq.shared) + dropped)
    seq.shared = []
    seq.reg = 0
