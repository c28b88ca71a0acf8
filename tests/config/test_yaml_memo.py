"""`load_yaml` answers a text it parsed before with a copy of its first result: equal to a fresh
parse, never the same objects (a caller may change what it gets), aliases shared within the
copy as the parser shares them, and a text that fails fails every time."""

from __future__ import annotations

import pytest
import yaml

from simsched.config import yaml_io

load_yaml = yaml_io.load_yaml

TEXT = "a: &shared [1, 2]\nb: *shared\nc: {d: 1e6}\n"


def test_a_second_load_is_a_fresh_copy_of_the_first() -> None:
    first = load_yaml(TEXT)
    assert TEXT in yaml_io._PARSED
    first["a"].append(3)  # a caller changes what it got
    second = load_yaml(TEXT)
    assert second == yaml_io._parse(TEXT) == {"a": [1, 2], "b": [1, 2], "c": {"d": 1e6}}
    assert second["a"] is second["b"]  # the alias, shared within the copy
    assert second["a"] is not first["a"]


def test_a_failing_text_fails_every_time() -> None:
    bad = "a: 1\na: 2\n"  # a duplicate key
    for _ in range(2):
        with pytest.raises(yaml.YAMLError):
            load_yaml(bad)
    assert bad not in yaml_io._PARSED


def test_the_memo_is_bounded_and_keeps_the_text_used_last(monkeypatch) -> None:
    monkeypatch.setattr(yaml_io, "PARSED_TEXTS", 3)
    monkeypatch.setattr(yaml_io, "_PARSED", {})
    scenario = "scenario: 1"
    for value in range(5):
        assert load_yaml(scenario) == {"scenario": 1}  # reloaded between one-off texts
        assert load_yaml(f"x: {value}") == {"x": value}
        assert len(yaml_io._PARSED) <= 3
    # by hand, least recent first: x: 3, then the scenario (reloaded before x: 4), then x: 4
    assert list(yaml_io._PARSED) == ["x: 3", scenario, "x: 4"]
    parses = []
    real_parse = yaml_io._parse
    monkeypatch.setattr(yaml_io, "_parse", lambda text: parses.append(text) or real_parse(text))
    assert load_yaml("null") is None  # a text that parses to None is kept and answered too
    assert load_yaml("null") is None and parses == ["null"]  # parsed once, not twice
    monkeypatch.setattr(yaml_io, "PARSED_TEXT_SIZE", 4)
    assert load_yaml("long: 1") == {"long": 1}
    assert "long: 1" not in yaml_io._PARSED


def test_a_result_answered_from_the_memo_is_a_copy_too() -> None:
    text = "k: [1]\nm: {n: 2}\n"
    load_yaml(text)  # parsed and kept
    second = load_yaml(text)  # answered from the memo
    second["k"].append(2)  # a caller changes what the memo gave it
    second["m"]["n"] = 3
    assert load_yaml(text) == {"k": [1], "m": {"n": 2}}
