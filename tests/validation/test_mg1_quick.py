"""A quick M/G/1 check in every test run (the long one is tests/validation/test_mg1.py).

60k requests at rho = 0.5. Across seeds the relative error of the mean wait had a standard
deviation of about 2.3 % for M/M/1 (exponential sizes) and 1.3 % for M/D/1 (fixed sizes), so
8 % is more than 3 standard deviations (the batch-means standard errors of these two runs are
1.5 % and 2.1 %). A wrong service time, a server idling with work queued, or arrivals seen late
would miss by far more.
"""

from __future__ import annotations

from typing import Any

import pytest

from validation.test_mg1 import EXPONENTIAL, MEAN_PREFILL, pk_check


@pytest.mark.parametrize(
    ("prefill", "seed"), [(MEAN_PREFILL, 1), (EXPONENTIAL, 2)], ids=["MD1", "MM1"]
)
def test_mean_queue_wait_matches_pollaczek_khinchine(prefill: Any, seed: int) -> None:
    error, report = pk_check(prefill, rho=0.5, count=60_000, seed=seed)
    assert abs(error) < 0.08, report
