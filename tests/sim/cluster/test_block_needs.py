"""A jump's block needs (fast_forward.block_needs) against stepping through its iterations one
by one: iteration `it + step` takes `residues[(1 - it - step) % block_size]` new blocks, and the
jump stops before the first iteration whose cumulated blocks exceed the free ones."""

from __future__ import annotations

import random

import pytest

from simsched.sim.cluster.fast_forward import block_needs
from simsched.sim.cluster.sequences import DecodeSet


def stepped(decoding: DecodeSet, it: int, horizon: int, free: int) -> list[int]:
    need, total = [], 0
    for step in range(horizon):
        total += decoding.new_blocks(it + step)  # what a stepped iteration holds
        if total > free:
            break
        need.append(total)
    return need


@pytest.mark.parametrize("seed", range(10))
def test_block_needs_are_those_of_stepping(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        size = rng.choice([1, 2, 3, 16])
        decoding = DecodeSet(size)
        # sparse residues (zeros are common: whole stretches take no block) or crowded ones
        decoding.residues = [rng.choice([0, 0, 1, 5]) for _ in range(size)]
        it, horizon = rng.randint(0, 10_000), rng.randint(1, 600)
        free = rng.choice([0, 1, 7, 50, 10_000])
        assert block_needs(decoding, it, horizon, free) == stepped(decoding, it, horizon, free)


def test_block_needs_by_hand() -> None:
    decoding = DecodeSet(4)
    decoding.residues = [1, 0, 2, 0]  # iteration i takes residues[(1 - i) % 4]
    # iterations 5, 6, 7, 8 take residues[0], [3], [2], [1] = 1, 0, 2, 0; then 1 again
    assert block_needs(decoding, 5, 6, 100) == [1, 1, 3, 3, 4, 4]
    assert block_needs(decoding, 5, 6, 3) == [1, 1, 3, 3]  # the fifth would hold 4 > 3
    assert block_needs(decoding, 5, 6, 0) == []
