"""Fairness measures: Jain's index and the backlogged service gap, on hand-made frames."""

from __future__ import annotations

import math
import random

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
    # no service at all is no answer, not perfect fairness
    assert math.isnan(jain_index([]))
    assert math.isnan(jain_index([0, 0]))


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
    assert summary["jain_index_admitted"] == pytest.approx(0.5)


def test_demand_fairness_sees_what_admitted_fairness_cannot() -> None:
    # Both tenants are served in proportion to their weights (admitted: 1.0), but b had 3 of its
    # 4 requests shed: against what each asked for, b got a quarter and a all of it.
    rows = [
        ("a", 0, 10, 100, 200, 10),
        ("b", 0, 20, 100, 200, 20),
        *[("b", 1, None, 100, 429, 0.0)] * 3,
    ]
    summary = fairness_summary(frame(rows), {"a": 1.0, "b": 1.0})
    assert summary["jain_index_admitted"] == pytest.approx(1.0)
    # x = (1, 0.25): (1.25)^2 / (2 * (1 + 0.0625))
    assert summary["jain_index_demand"] == pytest.approx(round(1.5625 / 2.125, 4))


def test_demand_fairness_counts_tenants_by_weight() -> None:
    # x = (1, 0.5) with weights (3, 1): (3 + 0.5)^2 / (4 * (3 + 0.25))
    rows = [("a", 0, 10, 100, 200, 10), ("b", 0, 20, 100, 200, 20), ("b", 1, None, 100, 429, 0)]
    summary = fairness_summary(frame(rows), {"a": 3.0, "b": 1.0})
    assert summary["jain_index_demand"] == pytest.approx(round(12.25 / 13, 4))


def test_all_served_is_fair_against_demand_whatever_the_weights() -> None:
    rows = [("a", 0, 10, 100, 200, 10), ("b", 0, 20, 300, 200, 20)]
    assert fairness_summary(frame(rows), {"a": 3.0, "b": 1.0})["jain_index_demand"] == 1.0


def test_nothing_admitted_has_no_fairness_figure() -> None:
    rows = [("a", 0, None, 100, 429, 0.0), ("b", 0, None, 100, 429, 0.0)]
    summary = fairness_summary(frame(rows), {"a": 1.0, "b": 1.0})
    assert summary["jain_index_admitted"] is None
    assert summary["jain_index_demand"] is None


# --- the gap against a brute force over every run of service events ------------------------


def _brute_gap(rows: list[tuple], weights: dict[str, float]) -> float:
    """The definition spelled out: over each interval both tenants are backlogged, the largest
    |a's weighted service - b's| over any run of consecutive service events in it."""
    queued = [r for r in rows if r[4] == 200 or r[5] > 0]  # admitted, or waited before a shed
    left = {id(r): r[1] + r[5] if r[2] is None else r[2] for r in queued}

    def merged(tenant: str) -> list[list[float]]:
        spans: list[list[float]] = []
        for r in sorted((r for r in queued if r[0] == tenant), key=lambda r: r[1]):
            if spans and r[1] <= spans[-1][1]:  # touching or overlapping: one backlog
                spans[-1][1] = max(spans[-1][1], left[id(r)])
            else:
                spans.append([r[1], left[id(r)]])
        return spans

    def events(tenant: str, sign: float) -> list[tuple[float, float]]:
        served = [r for r in queued if r[0] == tenant and r[4] == 200]
        # by time, equal times in row order (the order the requests are listed in)
        return sorted(((left[id(r)], sign * r[3] / weights[tenant]) for r in served), key=at)

    def at(event: tuple[float, float]) -> float:
        return event[0]

    best = 0.0
    tenants = [t for t in weights if any(r[0] == t for r in queued)]
    for i, a in enumerate(tenants):
        for b in tenants[i + 1 :]:
            both = [
                (max(s1, s2), min(e1, e2))
                for s1, e1 in merged(a)
                for s2, e2 in merged(b)
                if max(s1, s2) < min(e1, e2)
            ]
            timed = sorted(events(a, 1.0) + events(b, -1.0), key=at)
            for start, end in both:
                values = [v for t, v in timed if start <= t <= end]
                for first in range(len(values)):
                    for last in range(first, len(values)):
                        best = max(best, abs(sum(values[first : last + 1])))
    return best


@pytest.mark.parametrize("seed", range(12))
def test_gap_matches_the_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    weights = {"a": rng.choice([1.0, 1.5, 3.0]), "b": rng.choice([0.5, 1.0, 2.0]), "c": 1.0}
    rows = []
    for _ in range(rng.randint(2, 14)):
        arrival = rng.randint(0, 60)
        wait = rng.choice([0.0, float(rng.randint(1, 30))])
        status = 200 if rng.random() < 0.8 else 429
        dispatch = arrival + wait if status == 200 else None
        rows.append((rng.choice("abc"), arrival, dispatch, rng.randint(1, 500), status, wait))
    expected = _brute_gap(rows, weights)
    assert max_backlogged_gap(frame(rows), weights) == pytest.approx(expected, abs=1e-9)
