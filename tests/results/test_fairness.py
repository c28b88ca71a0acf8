"""Fairness measures: Jain's index and the backlogged service gap, on hand-made frames."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from simsched.results.fairness import fairness_summary, jain_index, max_backlogged_gap


def frame(rows: list[tuple]) -> pd.DataFrame:
    """rows: (tenant, arrival_ms, dispatch_ms or None, service_tokens, status, queue_wait_ms)."""
    columns = ["tenant_id", "arrival_ms", "dispatch_ms", "service_tokens", "status_code"]
    data = [(*r[:2], math.nan if r[2] is None else r[2], *r[3:5]) for r in rows]
    result = pd.DataFrame(data, columns=columns)
    result["queue_wait_ms"] = [r[5] for r in rows]
    return result


def test_jain_index_extremes() -> None:
    assert jain_index([5, 5, 5]) == pytest.approx(1.0)
    assert jain_index([9, 0, 0]) == pytest.approx(1 / 3)
    assert jain_index([]) == 1.0


def test_gap_counts_only_while_both_tenants_are_backlogged() -> None:
    # a is backlogged over [0, 30], b over [0, 20]; a gets 100 at t=10 and 100 at t=30,
    # b gets 50 at t=20. While both wait (up to 20): a +100, b +50 -> max gap 100.
    rows = [
        ("a", 0, 10, 100, 200, 10),
        ("a", 0, 30, 100, 200, 30),
        ("b", 0, 20, 50, 200, 20),
    ]
    assert max_backlogged_gap(frame(rows), {"a": 1.0, "b": 1.0}) == pytest.approx(100)


def test_gap_is_weight_normalised() -> None:
    rows = [("a", 0, 10, 100, 200, 10), ("b", 0, 20, 50, 200, 20)]
    # a's 100 tokens at weight 2 count as 50: the running difference goes 0 -> 50 -> 0.
    assert max_backlogged_gap(frame(rows), {"a": 2.0, "b": 1.0}) == pytest.approx(50)


def test_no_common_backlog_means_no_gap() -> None:
    rows = [("a", 0, 10, 100, 200, 10), ("b", 11, 20, 500, 200, 9)]
    assert max_backlogged_gap(frame(rows), {"a": 1.0, "b": 1.0}) == 0.0


def test_gateway_sheds_are_not_backlog_and_not_service() -> None:
    rows = [
        ("a", 0, 10, 100, 200, 10),
        ("b", 0, None, 900, 429, 0.0),  # shed at the gateway: never queued
    ]
    summary = fairness_summary(frame(rows), {"a": 1.0, "b": 1.0})
    assert summary["max_backlogged_service_gap"] == 0.0
    assert summary["jain_index"] == pytest.approx(0.5)
