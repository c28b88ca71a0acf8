"""Bulk rounding is Python's `round`, bit for bit, ties and large values included."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.results.rounding import python_round


def same_bits(values: list[float], digits: int) -> None:
    got = python_round(np.array(values, dtype=np.float64), digits)
    want = np.array([round(v, digits) for v in values], dtype=np.float64)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))  # -0.0 stays -0.0


def test_ties_stored_below_or_above_round_as_python_does() -> None:
    # 2.675 is stored as 2.67499999...: Python gives 2.67, a naive scale-and-round 2.68
    values = [2.675, 1.005, 0.125, 0.375, 2.5, 3.5, 0.145, 1.0005, -2.675, -0.001, 0.0, -0.0]
    assert python_round(np.array([2.675]), 2)[0] == 2.67
    same_bits(values, 2)
    same_bits(values, 4)


def test_every_cent_tie_up_to_three_hundred() -> None:
    # x.xx5 for every cent below 300: each is a near-tie one way or the other
    values = (np.arange(30_000) / 100 + 0.005).tolist()
    same_bits(values, 2)
    values = (np.arange(10_000) / 10_000 + 0.00005).tolist()
    same_bits(values, 4)


def test_nan_infinities_and_huge_values() -> None:
    same_bits([math.nan, math.inf, -math.inf, 1e300, 2.0**60 + 2048, 4.5e15 + 0.25], 2)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=20),
    st.sampled_from([2, 3, 4]),
)
def test_any_floats(values: list[float], digits: int) -> None:
    same_bits(values, digits)


def test_without_extended_precision_python_rounds_each(monkeypatch) -> None:
    import simsched.results.rounding as rounding

    monkeypatch.setattr(rounding, "EXTENDED", False)
    same_bits([2.675, 1.005, -0.001, math.nan, 0.125], 2)
