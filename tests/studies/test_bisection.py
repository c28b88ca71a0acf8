"""The search stepper: free slots probe more points of the interval, and the answer of a
monotone search does not depend on how many probes run at once."""

from __future__ import annotations

import pytest

from simsched.studies.bisection import Bisection, PlanResult, Probe


def search(
    width: int, boundary: int, n: int = 17, first: int | None = None
) -> tuple[Bisection, list[list[int]]]:
    """Rounds of probes; `first`: the width of the first round (the plan's width grows when
    other combinations' searches end)."""
    result = PlanResult("knob", "v", False, list(range(n)), [])
    bisection = Bisection(result)
    rounds = []
    while wanted := bisection.wanted(first if first and not rounds else width):
        rounds.append(wanted)
        for index in wanted:
            value = bisection.order[index]
            bisection.record(index, Probe(value, value >= boundary, {}))
    bisection.finish()
    return bisection, rounds


def test_free_slots_probe_the_interval_with_lo() -> None:
    found, rounds = search(width=4, boundary=11, first=1)  # HI alone, then four slots free
    assert rounds[:2] == [[16], [0, 4, 8, 12]]
    assert found.result.answer == 11
    _, both = search(width=4, boundary=11)
    assert both[:2] == [[16, 0], [3, 6, 9, 12]]
    _, serial = search(width=1, boundary=11)
    assert serial[:2] == [[16], [0]]  # one slot: the classic order


@pytest.mark.parametrize("boundary", [0, 1, 5, 11, 16])
@pytest.mark.parametrize("width", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("first", [None, 1])
def test_the_answer_does_not_depend_on_the_width(width: int, boundary: int, first) -> None:
    found, rounds = search(width, boundary, first=first)
    assert found.result.answer == boundary
    assert all(len(r) <= max(width, 1) for r in rounds)
