"""Dotted-path overrides (`--set`, `variants[].set`) on a raw scenario mapping."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from simsched.config.overrides import OverrideError, apply_overrides, parse_assignment, split_path


@pytest.fixture
def raw() -> dict[str, Any]:
    return {
        "seed": 1,
        "cluster": {"total_kv_blocks": 1600},
        "admission": None,
        "tenants": [
            {"id": "chat", "weight": 2.0, "quota": {"burst_service_tokens": 100}},
            {"id": "rag", "weight": 1.0},
        ],
        "variants": [{"name": "fifo", "set": {}}],
    }


@pytest.mark.parametrize(
    ("path", "segments"),
    [
        ("cluster.total_kv_blocks", ["cluster", "total_kv_blocks"]),
        ("tenants[1].weight", ["tenants", "1", "weight"]),
        ("tenants.1.weight", ["tenants", "1", "weight"]),
        (
            "tenants[0].quota.burst_service_tokens",
            ["tenants", "0", "quota", "burst_service_tokens"],
        ),
        ("  seed ", ["seed"]),
        # a name in brackets names an element by id or name, as a dotted segment does
        ("cluster.pools[prefill].replicas", ["cluster", "pools", "prefill", "replicas"]),
    ],
)
def test_split_path(path: str, segments: list[str]) -> None:
    assert split_path(path) == segments


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("", "empty path"),
        ("cluster..total_kv_blocks", "malformed path (an empty segment)"),
        (".seed", "malformed path (an empty segment)"),
        ("seed.", "malformed path (an empty segment)"),
        ("tenants[].weight", "malformed path (an index is written [0], [1], ...)"),
        ("tenants[-1].weight", "malformed path (an index is written [0], [1], ...)"),
    ],
)
def test_split_path_rejects_malformed_paths(path: str, problem: str) -> None:
    with pytest.raises(OverrideError) as info:
        split_path(path)
    assert info.value.problem == problem


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cluster.total_kv_blocks=2400", ("cluster.total_kv_blocks", 2400)),
        ("tenants[0].weight=1.5", ("tenants[0].weight", 1.5)),
        ("admission.enabled=false", ("admission.enabled", False)),
        ("scheduler.policy=request_count_fifo", ("scheduler.policy", "request_count_fifo")),
        ("name='007'", ("name", "007")),  # quoted: stays a string
        ("tenants[0].quota=null", ("tenants[0].quota", None)),
        ("description=", ("description", "")),
        ("x={a: 1, b: [2, 3]}", ("x", {"a": 1, "b": [2, 3]})),
        (" seed = 3 ", ("seed", 3)),
        ("name=a=b", ("name", "a=b")),  # only the first '=' separates
        ("name=[unclosed", ("name", "[unclosed")),  # not YAML: kept as text
    ],
)
def test_parse_assignment_reads_values_as_yaml(text: str, expected: tuple[str, Any]) -> None:
    assert parse_assignment(text) == expected


@pytest.mark.parametrize("text", ["seed", "=3", "  =3", ""])
def test_parse_assignment_needs_path_and_equals(text: str) -> None:
    with pytest.raises(OverrideError, match="expected PATH=VALUE"):
        parse_assignment(text)


def test_apply_sets_a_nested_key_and_leaves_the_input_alone(raw: dict[str, Any]) -> None:
    before = copy.deepcopy(raw)
    result = apply_overrides(raw, {"cluster.total_kv_blocks": 2400})
    assert result["cluster"] == {"total_kv_blocks": 2400}
    assert raw == before  # a deep copy: the caller's mapping is untouched
    result["tenants"][0]["weight"] = 99.0
    assert raw["tenants"][0]["weight"] == 2.0


@pytest.mark.parametrize("path", ["tenants[1].weight", "tenants.1.weight", "tenants.rag.weight"])
def test_list_elements_by_index_or_id(raw: dict[str, Any], path: str) -> None:
    result = apply_overrides(raw, {path: 3.0})
    assert [t["weight"] for t in result["tenants"]] == [2.0, 3.0]


def test_list_elements_by_name(raw: dict[str, Any]) -> None:
    result = apply_overrides(raw, {"variants.fifo.set": {"scheduler.policy": "fcfs"}})
    assert result["variants"][0]["set"] == {"scheduler.policy": "fcfs"}


def test_a_whole_list_element_can_be_replaced(raw: dict[str, Any]) -> None:
    result = apply_overrides(raw, {"tenants[0]": {"id": "solo"}})
    assert result["tenants"][0] == {"id": "solo"}


def test_missing_and_null_sections_are_created(raw: dict[str, Any]) -> None:
    # defaults left out of a file can still be overridden; validation judges the keys later
    result = apply_overrides(
        raw, {"scheduler.decode_weight": 2, "admission.enabled": False, "slo.new.deep": 1}
    )
    assert result["scheduler"] == {"decode_weight": 2}
    assert result["admission"] == {"enabled": False}
    assert result["slo"] == {"new": {"deep": 1}}


def test_overrides_apply_in_order(raw: dict[str, Any]) -> None:
    result = apply_overrides(raw, {"seed": 5, "tenants.chat.weight": 4.0, "tenants[0].weight": 6})
    assert result["seed"] == 5
    assert result["tenants"][0]["weight"] == 6


def test_no_overrides_is_a_copy(raw: dict[str, Any]) -> None:
    result = apply_overrides(raw, {})
    assert result == raw
    assert result is not raw


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (
            "tenants[2].weight",
            "tenants[2].weight: index 2 is out of range (tenants has 2 elements)",
        ),
        ("tenants.7", "tenants.7: index 7 is out of range (tenants has 2 elements)"),
        ("tenants.ghost.weight", "tenants.ghost.weight: tenants has no element with id or name"),
        ("seed.value", "seed.value: seed is 1, not a mapping or list"),
        (
            "tenants.chat.weight.x",
            "tenants.chat.weight.x: tenants.chat.weight is 2.0, not a mapping or list",
        ),
        ("tenants..weight", "tenants..weight: malformed path"),
    ],
)
def test_paths_that_cannot_be_followed(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(OverrideError) as info:
        apply_overrides(raw, {path: 1})
    assert str(info.value).startswith(message)
    assert info.value.path == path
    assert path not in info.value.problem  # callers that show the path use `problem` alone


def test_an_index_into_an_empty_list_says_so() -> None:
    with pytest.raises(OverrideError, match=r"variants has 0 elements"):
        apply_overrides({"variants": []}, {"variants.0.name": "x"})


def test_a_failed_override_changes_nothing(raw: dict[str, Any]) -> None:
    before = copy.deepcopy(raw)
    with pytest.raises(OverrideError):
        apply_overrides(raw, {"seed": 9, "tenants.ghost.weight": 1})
    assert raw == before
