"""The noisy-neighbor study reproduces the reference's `comparison` block exactly.

`tests/data/noisy_neighbor_comparison.json` is a copy of that block of the reference's expected
output, kept in the project so this test never needs the reference folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import simsched

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "noisy_neighbor.yaml"
EXPECTED = Path(__file__).resolve().parents[2] / "tests" / "data" / "noisy_neighbor_comparison.json"
VARIANTS = ("request_count_no_admission", "service_token_drr_with_admission")


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """`{"a": {"b": 1}}` -> `{"a.b": 1}`, so a failure names the exact keys that differ."""
    if not isinstance(tree, dict):
        return {prefix: tree}
    if not tree:
        return {prefix: {}}
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        flat |= flatten(value, f"{prefix}.{key}" if prefix else str(key))
    return flat


def differences(got: dict[str, Any], want: dict[str, Any]) -> list[str]:
    missing = object()
    flat_got, flat_want = flatten(got), flatten(want)
    lines = []
    for key in sorted(flat_got.keys() | flat_want.keys()):
        have, expect = flat_got.get(key, missing), flat_want.get(key, missing)
        if have is missing or expect is missing or have != expect or type(have) is not type(expect):
            shown_have = "<missing>" if have is missing else repr(have)
            shown_expect = "<missing>" if expect is missing else repr(expect)
            lines.append(f"{key}: got {shown_have}, reference {shown_expect}")
    return lines


def assert_matches_reference(got: dict[str, Any], want: dict[str, Any]) -> None:
    diff = differences(got, want)
    assert not diff, "summaries differ from the reference:\n" + "\n".join(diff)
    assert got == want


@pytest.fixture(scope="module")
def expected() -> dict[str, Any]:
    return json.loads(EXPECTED.read_text())


@pytest.fixture(scope="module")
def scenario() -> simsched.Scenario:
    return simsched.load_scenario(SCENARIO)


@pytest.fixture(scope="module")
def result(scenario: simsched.Scenario) -> simsched.SimulationResult:
    return simsched.simulate(scenario)


def test_stored_reference_has_both_variants(expected: dict[str, Any]) -> None:
    assert list(expected) == list(VARIANTS)


def test_summaries_equal_the_reference(
    result: simsched.SimulationResult, expected: dict[str, Any]
) -> None:
    assert list(result.summaries) == list(VARIANTS)
    assert_matches_reference(result.summaries, expected)


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_alone_gives_the_same_summary(
    scenario: simsched.Scenario, expected: dict[str, Any], variant: str
) -> None:
    alone = simsched.simulate(scenario, [variant])
    assert alone.variants == [variant]
    assert list(alone.summaries) == [variant]
    assert_matches_reference(alone.summaries[variant], expected[variant])


def test_running_twice_gives_identical_frames(
    scenario: simsched.Scenario, result: simsched.SimulationResult
) -> None:
    again = simsched.simulate(scenario)
    pd.testing.assert_frame_equal(result.requests, again.requests)
    pd.testing.assert_frame_equal(result.tenants, again.tenants)
    assert again.summaries == result.summaries


def test_every_request_has_one_row_per_variant(result: simsched.SimulationResult) -> None:
    requests = result.requests
    assert len(requests) == 2 * 60
    for variant in VARIANTS:
        rows = requests[requests["variant"] == variant]
        assert rows["request_id"].is_unique
        assert len(rows) == 60


def test_flatten_names_differing_leaves() -> None:
    # The diff helper itself must point at the right key, or failures would mislead.
    got = {"a": {"b": 1, "c": {}}, "d": 2.0}
    want = {"a": {"b": 2, "c": {"x": 1}}, "d": 2}
    assert differences(got, want) == [
        "a.b: got 1, reference 2",
        "a.c: got {}, reference <missing>",
        "a.c.x: got <missing>, reference 1",
        "d: got 2.0, reference 2",
    ]
