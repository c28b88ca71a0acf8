"""Nearest-rank percentiles, the one definition simsched uses.

The p-th percentile of n values is the sorted value at index ceil(p/100 * n) - 1 (kept within
0..n-1): always one of the values, never an interpolation between two. Callers differ only in
presentation: the reference's summaries round to 2 decimals and give 0.0 for no values; the
workload statistics keep the exact value and give NaN, so that nothing passes for a measurement.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def nearest_rank(
    values: Any, p: float, digits: int | None = None, empty: float = math.nan
) -> float:
    """The nearest-rank `p`-th percentile of `values` (any order), rounded to `digits` if given.

    The value at `index` of the sorted values is found by `np.partition`, which puts the
    index-th smallest there without sorting the rest (NaNs last, as `np.sort` puts them): a
    run's results take some eighty percentiles of up to a run's requests, and the sorts were
    a twentieth of a plan's CPU. Zeros are equal whatever their sign, so a zero is read from
    the sorted values, as before (tests/results/test_percentiles.py checks both against the
    sort)."""
    array = np.asarray(values, dtype=np.float64)
    size = len(array)
    if not size:
        return empty
    index = min(size - 1, max(0, math.ceil((p / 100.0) * size) - 1))
    value = float(np.partition(array, index)[index])
    if value == 0.0:
        value = float(np.sort(array)[index])
    return value if digits is None else round(value, digits)
