"""Issue 10 items 11 and 13: scenario files built to hang or crash the loader are refused fast.

Deep nesting, alias bombs ("billion laughs"), self-referencing aliases, files that are not
regular files, and files too large to be a scenario: each is one `InputError` naming the file,
within a fraction of a second.

How fast is checked by `make bench` (row budget), not here: a wall-clock assertion flakes
on a loaded machine.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from simsched.config.loading import load_scenario
from simsched.config.yaml_io import MAX_TEXT_BYTES, parse_yaml_mapping, read_text
from simsched.errors import InputError

REPO = Path(__file__).resolve().parents[2]
STUDY = (REPO / "scenarios" / "noisy_neighbor.yaml").read_text(encoding="utf-8")


def _refused(text: str, *words: str) -> str:
    with pytest.raises(InputError) as info:
        parse_yaml_mapping(text, "x.yaml")
    message = str(info.value)
    assert message.startswith("x.yaml"), message
    for word in words:
        assert word in message, message
    return message


def test_deep_nesting_is_refused() -> None:
    _refused("a: " + "[" * 1000 + "]" * 1000 + "\n", "nested")
    _refused("a:\n" + "".join(" " * i + "- \n" for i in range(1, 400)), "nested")
    _refused("a: " + "{b: " * 1000 + "1" + "}" * 1000, "nested")


def test_an_alias_bomb_is_refused_fast() -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    _refused("\n".join(lines) + "\n", "alias")


def test_a_self_referencing_alias_is_refused() -> None:
    _refused("a: &a [*a]\n", "refers to itself")
    _refused("a: &m {b: *m}\n", "refers to itself")


def test_an_alias_chain_is_refused_by_its_expanded_depth(tmp_path: Path) -> None:
    # Each line nests one level deeper through an alias: the text is flat, the value is not.
    lines = ["_i0: &v0 [1]"] + [f"_i{n}: &v{n} [*v{n - 1}]" for n in range(1, 1200)]
    _refused("\n".join(lines) + "\n", "nested", "aliases")
    path = tmp_path / "chain.yaml"
    path.write_text(STUDY + "\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="nested"):
        load_scenario(path)


def test_a_shallow_alias_chain_still_loads() -> None:
    lines = ["_i0: &v0 [1]"] + [f"_i{n}: &v{n} [*v{n - 1}]" for n in range(1, 20)]
    raw = parse_yaml_mapping("\n".join(lines) + "\n", "x.yaml")
    assert raw["_i2"] == [[[1]]]


def test_aliases_that_stay_small_still_work() -> None:
    raw = parse_yaml_mapping("d: &d {x: 1}\ne: *d\nf: {<<: *d, y: 2}\n", "x.yaml")
    assert raw == {"d": {"x": 1}, "e": {"x": 1}, "f": {"x": 1, "y": 2}}


def test_a_scenario_with_a_shared_anchor_loads() -> None:
    text = STUDY.replace("variants:", "x_anchor: &q 1\nvariants:", 1)
    assert "x_anchor" in text  # the loader still judges unknown keys; only the YAML part is new
    raw = parse_yaml_mapping(text, "x.yaml")
    assert raw["x_anchor"] == 1


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "x.yaml"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        read_text(fifo, "scenario file")


def test_a_device_is_refused() -> None:
    with pytest.raises(InputError, match="not a regular file"):
        read_text(Path("/dev/zero"), "scenario file")


def test_a_huge_sparse_file_is_refused_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "x.yaml"
    with open(big, "wb") as out:
        out.truncate(2 * 1024**3)  # sparse: costs no disk
    with pytest.raises(InputError, match="too large"):
        load_scenario(big)
    assert MAX_TEXT_BYTES < 2 * 1024**3


def test_a_nul_in_a_tenant_id_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(STUDY.replace("id: tenant_chat_pro", 'id: "tenant\\0chat"', 1))
    with pytest.raises(InputError, match=r"tenants\[0\]\.id"):
        load_scenario(path)


@pytest.mark.parametrize("char", ["\\x85", "\\x9b", "\\x7f"])
def test_c1_control_characters_in_a_tenant_id_are_rejected(tmp_path: Path, char: str) -> None:
    # U+0085 (next line) and U+009B (a terminal escape) are control characters too
    path = tmp_path / "x.yaml"
    path.write_text(STUDY.replace("id: tenant_chat_pro", f'id: "tenant{char}chat"', 1))
    with pytest.raises(InputError, match=r"tenants\[0\]\.id.*control"):
        load_scenario(path)


@pytest.mark.parametrize(
    "value", ["[" * 1000 + "]" * 1000, "[&a [1, 2], *a, *a]", "&a [*a]", "{a: " * 500 + "1"]
)
def test_set_values_are_bounded_too(tmp_path: Path, value: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(STUDY)
    with pytest.raises(InputError, match=r"--set seed="):
        load_scenario(path, [f"seed={value}"])
