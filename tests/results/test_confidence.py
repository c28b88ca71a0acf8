"""The t quantile behind every seed interval: tabled to 30 degrees of freedom, expanded beyond."""

from __future__ import annotations

import pytest

from simsched.results.confidence import estimate, t_quantile


@pytest.mark.parametrize(
    ("df", "expected"),  # published t(0.975, df) values
    [(1, 12.706), (30, 2.042), (31, 2.0395), (40, 2.0211), (60, 2.0003), (120, 1.9799)],
)
def test_t_quantile(df: int, expected: float) -> None:
    assert t_quantile(df) == pytest.approx(expected, abs=2e-4)


def test_interval_of_41_seeds_uses_the_t_quantile() -> None:
    values = [float(i % 2) for i in range(41)]  # sd of 0/1 values
    found = estimate(values)
    mean = sum(values) / 41
    sd = (sum((v - mean) ** 2 for v in values) / 40) ** 0.5
    assert found.high - found.mean == pytest.approx(2.0211 * sd / 41**0.5, abs=1e-4)
