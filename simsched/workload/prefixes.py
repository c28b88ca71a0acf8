"""Where a request's prompt repeats earlier prompts: prefix segments and their KV-block keys.

A request's `Prefix` is a list of segments `(chain_id, end)`: the chain id names the content of
the prompt's tokens `[0, end)`, so two requests whose segment has the same chain id share those
tokens exactly. Chain ids are interned from `(parent chain id, content)` pairs (`ChainIds`), so
equal ids mean equal whole prefixes, as chained block hashes do in vLLM; tokens after the last
segment belong to this request alone.

KV block `j` (tokens `[j*B, (j+1)*B)` for block size `B`) is keyed by the first segment that
covers all of its tokens (`end >= (j+1)*B`), as `chain_id * 2**24 + j`: the same key means the
same tokens in the block and before it. A block that no segment covers has key -1 and is never
shared. The same keys as runs: segment `i` keys blocks `[ends[i-1] // B, ends[i] // B)`, so a
request's keys are a few `(chain_id, first block, end block)` runs (`Prefix.runs`), which is how
the replicas' prefix caches index them (one entry per run, not per block).

With Mooncake's 512-token blocks and `B = 16`, each trace block covers 32 KV blocks, and
a trace block's last partial part (a prompt not a multiple of 512) covers `floor(part / B)`
full KV blocks; what remains is unique to the request.

Sources: trace `hash_ids` (`prefix_sources.py`), a tenant's system prompt (`prefix:`), and a
session's earlier turns (`sessions.py`).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import chain as chain_all

import numpy as np

KEY_SPAN = 2**24  # KV blocks per prompt a key can index (2**24 blocks of 16 = 268M tokens)
NO_KEY = -1


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run a block with Python's cyclic garbage collector paused (`build_workload` builds a
    whole workload so: its prefixes are tens of thousands of `Prefix` objects and lists of ints,
    none of them in a reference cycle). Every container they allocate counts toward the
    collector's next pass, and each pass would walk the young ones, and a full pass every live
    one, to free nothing. Reference counting frees what they
    drop as before, so nothing but the collector's time changes (the Mooncake trace: 0.08
    CPU-seconds of collector time in building its workload, against 0.01 with caching off)."""
    if not gc.isenabled():  # already paused by a caller: leave it so
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class ChainIds:
    """Interns `(parent, *content)` tuples as consecutive ints, so chains compare in O(1).
    A trace's blocks, hundreds of thousands of them, are numbered apart (`reserve`): a tuple
    per block would hold tens of megabytes for the whole run."""

    def __init__(self, first: int = 1) -> None:
        self._ids: dict[tuple, int] = {}
        self._next = first

    def chain(self, parent: int, *content: object) -> int:
        pair = (parent, *content)
        found = self._ids.get(pair)
        if found is None:
            found = self._ids[pair] = self._next
            self._next += 1
        return found

    def reserve(self, count: int) -> int:
        """The first of `count` fresh consecutive ids, which no chain is given: for chains
        numbered elsewhere (`trace_chains.chain_numbers`), shifted by it."""
        first = self._next
        self._next += count
        return first


class Prefix:
    """A request's prefix segments. Its block keys are computed when asked and not kept: the
    workload holds every request's Prefix for the whole run, and a long prompt has hundreds of
    keys (the replica keeps them while the request runs)."""

    __slots__ = ("ids", "ends")

    def __init__(self, ids: list[int], ends: list[int]) -> None:
        self.ids = ids  # chain ids, one per segment
        self.ends = ends  # the token each segment ends at, increasing

    @property
    def tokens(self) -> int:
        """Tokens that some segment covers."""
        return self.ends[-1] if self.ends else 0

    def keys(self, block_size: int) -> list[int]:
        """The key of every KV block the segments cover fully (the rest have no key)."""
        return block_keys(self.ids, self.ends, block_size)

    def runs(self, block_size: int) -> tuple[Run, ...]:
        """The keys as runs, computed on each call and not kept here: the replica keeps them
        while the request runs (`Seq.runs`) and a router scorer for the request it places.
        Kept on the workload's every `Prefix` for the whole run, they were five tuples a
        request that outlived their use, so the collector promoted them (the Mooncake trace:
        60,000) and ran a full pass over every live object during the simulation."""
        return block_runs(self.ids, self.ends, block_size)

    def extend(self, ids: list[int], ends: list[int]) -> Prefix:
        return Prefix(self.ids + ids, self.ends + ends)

    def __repr__(self) -> str:
        return f"Prefix(ids={self.ids}, ends={self.ends})"


def block_keys(ids: list[int], ends: list[int], block_size: int) -> list[int]:
    if not ends:
        return []
    count = ends[-1] // block_size
    if count == 0:
        return []
    blocks = np.arange(count, dtype=np.int64)
    segment = np.searchsorted(np.asarray(ends, dtype=np.int64), (blocks + 1) * block_size)
    return (np.asarray(ids, dtype=np.int64)[segment] * KEY_SPAN + blocks).tolist()


Run = tuple[int, int, int]  # (chain id, first block, end block): the blocks [first, end) it keys


def block_runs(ids: list[int], ends: list[int], block_size: int) -> tuple[Run, ...]:
    """The keys of `block_keys` as runs: block `j` of run `(chain, lo, hi)` has key
    `chain * KEY_SPAN + j`. Segments that fully cover no block of their own give no run."""
    runs = []
    first = 0
    for chain, end in zip(ids, ends, strict=True):
        stop = end // block_size
        if stop > first:
            runs.append((chain, first, stop))
            first = stop
    return tuple(runs)


def compress_chains(prefixes: np.ndarray) -> None:
    """Join unbranched chains in place, as a radix tree compresses its paths: a segment whose
    chain is always followed by the same chain, never ends a prompt and always ends at the same
    token is merged into the segment after it, which keeps its own (chained, so equally
    distinctive) id. Two blocks then have equal keys exactly when they had before, so every
    cache and router answers alike, with a few runs per prompt instead of one per trace block
    (the Mooncake conversation trace: 24 segments a prompt, 3 after). `prefixes`: one `Prefix`
    or None per request, all built for this workload by one `ChainIds`."""
    present = [prefix for prefix in prefixes if prefix is not None and prefix.ids]
    if not present:
        return
    # every segment of every prompt as flat columns (numpy: a trace has ~10^5-10^6 of them)
    sizes = np.fromiter((len(p.ids) for p in present), dtype=np.int64, count=len(present))
    total = int(sizes.sum())
    ids = np.fromiter(chain_all.from_iterable(p.ids for p in present), dtype=np.int64, count=total)
    ends = np.fromiter(
        chain_all.from_iterable(p.ends for p in present), dtype=np.int64, count=total
    )
    after = np.empty(total, dtype=np.int64)
    after[:-1] = ids[1:]
    offsets = np.cumsum(sizes) - sizes
    after[offsets + sizes - 1] = -1  # a prompt's last segment is followed by nothing
    # a chain joins the next one when every occurrence has the same successor and end; chain
    # ids are ChainIds' consecutive ints, so arrays indexed by id hold each chain's figures
    # (no sort of every segment: that and np.isin were a third of this function)
    chain_count = int(ids.max()) + 1
    seen_after = np.empty(chain_count, dtype=np.int64)
    seen_after[ids] = after  # one occurrence's, whichever: the others must all equal it
    seen_end = np.empty(chain_count, dtype=np.int64)
    seen_end[ids] = ends
    odd = (after != seen_after[ids]) | (ends != seen_end[ids]) | (after == -1)
    joins = np.zeros(chain_count, dtype=bool)
    joins[ids] = True
    joins[ids[odd]] = False
    if not joins.any():
        return
    keep = ~joins[ids]
    # the kept segments as two Python lists sliced per prompt (numpy calls per prompt would
    # cost more than the rest of this function)
    kept_sizes = np.add.reduceat(keep, offsets).tolist()
    kept_ids, kept_ends = ids[keep].tolist(), ends[keep].tolist()
    start = 0
    for prefix, size, kept in zip(present, sizes.tolist(), kept_sizes, strict=True):
        if kept != size:
            prefix.ids = kept_ids[start : start + kept]
            prefix.ends = kept_ends[start : start + kept]
        start += kept


def prepend(shared: tuple[int, int] | None, prefix: Prefix | None, interner: ChainIds) -> Prefix:
    """A system prompt `(chain id, tokens)` in front of a request's own segments (which move
    back by its length and are re-chained from it)."""
    if shared is None:
        return prefix
    head, length = shared
    ids, ends = [head], [length]
    if prefix is not None:
        parent = head
        for chain_id, end in zip(prefix.ids, prefix.ends, strict=True):
            parent = interner.chain(parent, chain_id)
            ids.append(parent)
            ends.append(end + length)
    return Prefix(ids, ends)
