"""Chain numbers for a trace's prefix blocks, computed in bulk (numpy), not one tuple per block.

A trace row's prompt is a list of block ids (Mooncake's `hash_ids`). Block `i` of a row is
known by its whole prefix, the row's blocks `0..i`, as chained hashes are (vLLM, Mooncake):
two rows' blocks get the same chain number exactly when their blocks up to there are equal.
`ChainIds.chain` would intern one `(parent, source, block)` tuple per block, which for the
Mooncake conversation trace is ~290k tuples held for the whole run and a Python call each.
Here the numbering goes depth by depth over all rows at once: the chains at depth `d` are the
distinct pairs (chain number at depth `d - 1`, block id), found by one `np.unique` per depth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TraceChains:
    """Every row's blocks as chain numbers in `[0, count)`, flat and row after row: row `r`'s
    are `numbers[starts[r] : starts[r] + lengths[r]]`."""

    numbers: np.ndarray  # int64
    starts: np.ndarray  # int64, one per row
    lengths: np.ndarray  # int64, one per row
    count: int  # distinct chains

    def ids(self, first_id: int) -> list[int]:
        """Every block's chain id, flat, numbering chains from `first_id` (one list to slice
        rows from: a slice per row costs far less than a numpy conversion per row)."""
        return (self.numbers + first_id).tolist()


def chain_numbers(block_ids: list[int], lengths: list[int]) -> TraceChains:
    """Number the chains of rows given as their block ids, flat (`lengths` per row)."""
    sizes = np.asarray(lengths, dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    codes = _codes(block_ids)
    numbers = np.empty(len(codes), dtype=np.int64)
    width = int(codes.max()) + 1 if len(codes) else 1
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
    return TraceChains(numbers, starts, sizes, count)


def _codes(block_ids: list[int]) -> np.ndarray:
    """Block ids as dense codes `0..k-1` (equal ids, equal codes). JSON integers may exceed
    int64; those files are coded through Python's own integers instead."""
    try:
        ids = np.asarray(block_ids, dtype=np.int64)
    except OverflowError:
        ids = np.asarray(block_ids, dtype=object)
    return np.unique(ids, return_inverse=True)[1].astype(np.int64, copy=False)
