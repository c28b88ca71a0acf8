"""Chain numbers for a trace's prefix blocks, computed in bulk (numpy), not one tuple per block.

A trace row's prompt is a list of block ids (Mooncake's `hash_ids`). Block `i` of a row is
known by its whole prefix, the row's blocks `0..i`, as chained hashes are (vLLM, Mooncake):
two rows' blocks get the same chain number exactly when their blocks up to there are equal.
`ChainIds.chain` would intern one `(parent, source, block)` tuple per block, which for the
Mooncake conversation trace is ~290k tuples held for the whole run and a Python call each.
Here the numbering goes depth by depth over all rows at once: the chains at depth `d` are the
distinct pairs (chain number at depth `d - 1`, block id), found by one `np.unique` per depth.

Most traces need none of that: their ids are chained hashes already (Mooncake's are), so an id
always follows the same id (or always starts a row), and then equal ids mean equal whole
prefixes (by induction on the depth) and the id itself can be the chain number. One check over
every block finds that out (`_chained_already`); only a trace that fails it is numbered depth by
depth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TraceChains:
    """Every row's blocks as chain numbers in `[0, count)`, flat and row after row: row `r`'s
    are `numbers[starts[r] : starts[r] + lengths[r]]`. Equal numbers, equal prefixes; some
    numbers below `count` may name no chain (a trace's own ids with gaps)."""

    numbers: np.ndarray  # int64
    starts: np.ndarray  # int64, one per row
    lengths: np.ndarray  # int64, one per row
    count: int  # chain numbers in use are below it

    def ids(self, first_id: int) -> list[int]:
        """Every block's chain id, flat, numbering chains from `first_id` (one list to slice
        rows from: a slice per row costs far less than a numpy conversion per row)."""
        return (self.numbers + first_id).tolist()


def chain_numbers(block_ids: list[int], lengths: list[int]) -> TraceChains:
    """Number the chains of rows given as their block ids, flat (`lengths` per row)."""
    sizes = np.asarray(lengths, dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    codes, width = _codes(block_ids)
    if len(codes) == 0:
        return TraceChains(codes, starts, sizes, 0)
    if _chained_already(codes, starts, sizes, width):
        return TraceChains(codes, starts, sizes, width)
    return TraceChains(*_by_depth(codes, starts, sizes, width))


def _chained_already(codes: np.ndarray, starts: np.ndarray, sizes: np.ndarray, width: int) -> bool:
    """Whether every code always follows one same code (or always starts a row): then two blocks
    with equal codes have equal parents, so, depth by depth, equal whole prefixes."""
    parents = np.empty(len(codes), dtype=np.int64)
    parents[1:] = codes[:-1]
    parents[starts[sizes > 0]] = -1  # a row's first block follows nothing
    seen = np.empty(width, dtype=np.int64)
    seen[codes] = parents  # one occurrence's parent, whichever: the others must all equal it
    return bool((seen[codes] == parents).all())


def _by_depth(
    codes: np.ndarray, starts: np.ndarray, sizes: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Chain numbers depth by depth: the distinct (parent number, code) pairs of each depth."""
    numbers = np.empty(len(codes), dtype=np.int64)
    rows = np.arange(len(sizes), dtype=np.int64)
    count = 0
    for depth in range(int(sizes.max()) if len(sizes) else 0):
        rows = rows[sizes[rows] > depth]  # the rows that reach this depth
        at = starts[rows] + depth
        parents = numbers[at - 1] + 1 if depth else 0  # 0: the root, no block before
        # a pair as one int: parents <= count <= len(codes) and codes < width, both far below
        # 2**31 for any trace that fits in memory, so the product stays within int64
        distinct, inverse = np.unique(parents * width + codes[at], return_inverse=True)
        numbers[at] = inverse + count
        count += len(distinct)
    return numbers, starts, sizes, count


def _codes(block_ids: list[int]) -> tuple[np.ndarray, int]:
    """Block ids as codes in `[0, width)` (equal ids, equal codes), and `width`. Ids that span
    no more values than there are blocks (Mooncake's are 0..n-1) are coded by their distance
    from the least, with no sort; others are coded densely. JSON integers may
    exceed int64; those files are coded through Python's own integers instead."""
    try:
        ids = np.asarray(block_ids, dtype=np.int64)
    except OverflowError:
        ids = np.asarray(block_ids, dtype=object)
    else:
        if len(ids) == 0:
            return ids, 0
        low, high = int(ids.min()), int(ids.max())
        if high - low < len(ids):
            return ids - low, high - low + 1
    codes = np.unique(ids, return_inverse=True)[1].astype(np.int64, copy=False)
    return codes, int(codes.max()) + 1 if len(codes) else 1
