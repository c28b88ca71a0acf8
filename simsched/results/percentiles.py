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
    """The nearest-rank `p`-th percentile of `values` (any order), rounded to `digits` if given."""
    ordered = np.sort(np.asarray(values, dtype=np.float64))
    if not len(ordered):
        return empty
    index = min(len(ordered) - 1, max(0, math.ceil((p / 100.0) * len(ordered)) - 1))
    value = float(ordered[index])
    return value if digits is None else round(value, digits)
