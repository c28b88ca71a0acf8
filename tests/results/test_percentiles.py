"""The nearest-rank percentile (results.percentiles.nearest_rank) against its definition: the
sorted values at index ceil(p/100 * n) - 1, kept within 0..n-1, over random arrays with ties,
NaNs, zeros of both signs and every percentile the results ask for."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simsched.results.percentiles import nearest_rank


def by_definition(values: np.ndarray, p: float) -> float:
    ordered = np.sort(values)
    index = min(len(ordered) - 1, max(0, math.ceil((p / 100.0) * len(ordered)) - 1))
    return float(ordered[index])


@pytest.mark.parametrize("seed", range(5))
def test_the_partitioned_percentile_is_the_sorted_one(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(2000):
        size = int(rng.integers(1, 80))
        pool = [0.0, -0.0, 1.0, 2.5, 3.0, np.nan, float(rng.random()), float(rng.random())]
        values = rng.choice(pool, size=size)
        p = float(rng.choice([0, 1, 25, 50, 90, 99, 99.9, 100]))
        got, want = nearest_rank(values, p), by_definition(values, p)
        # the same float: NaN where the sort gives NaN, and a zero's sign as the sort gives it
        assert np.array_equal([got], [want], equal_nan=True)
        assert math.copysign(1.0, got) == math.copysign(1.0, want)


def test_empty_values_and_rounding() -> None:
    assert math.isnan(nearest_rank([], 50))
    assert nearest_rank([], 50, empty=0.0) == 0.0
    assert nearest_rank([3.14159, 1.0, 2.0], 100, digits=2) == 3.14
    assert nearest_rank([5.0, 1.0, 4.0, 2.0, 3.0], 50) == 3.0  # index ceil(2.5) - 1 = 2
