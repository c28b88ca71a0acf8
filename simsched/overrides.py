"""Dotted-path overrides over a raw scenario mapping.

One mechanism serves `--set a.b=c` on the command line, `variants[i].set` in a scenario and the
sweep and plan commands. Overrides act on the raw mapping before validation, so a setting that the
file leaves at its default can still be overridden and the pydantic models stay the single judge
of what is valid.

Path segments are mapping keys; inside a list a segment is an index (`tenants.1.weight` or
`tenants[1].weight`) or the `id`/`name` of an element (`tenants.tenant_batch_rag.weight`).
"""

from __future__ import annotations

import copy
import re
from typing import Any

import yaml

_INDEX = re.compile(r"\[(\d+)\]")


class OverrideError(ValueError):
    """An override whose path cannot be followed."""


def split_path(path: str) -> list[str]:
    segments = _INDEX.sub(r".\1", path.strip()).split(".")
    if not path.strip() or any(not s for s in segments):
        raise OverrideError(f"malformed path {path!r}")
    return segments


def parse_assignment(text: str) -> tuple[str, Any]:
    """`a.b=value` -> ("a.b", value), the value read as a YAML scalar or flow collection."""
    path, sep, value = text.partition("=")
    if not sep or not path.strip():
        raise OverrideError(f"expected PATH=VALUE, got {text!r}")
    try:
        parsed = yaml.safe_load(value) if value.strip() else ""
    except yaml.YAMLError:
        parsed = value
    return path.strip(), parsed


def apply_overrides(raw: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of `raw` with every `path: value` of `overrides` set, in order."""
    result = copy.deepcopy(raw)
    for path, value in overrides.items():
        _set_path(result, split_path(path), value, path)
    return result


def _set_path(node: Any, segments: list[str], value: Any, path: str) -> None:
    *parents, last = segments
    for segment in parents:
        node = _child(node, segment, path)
    _assign(node, last, value, path)


def _child(node: Any, segment: str, path: str) -> Any:
    if isinstance(node, dict):
        if segment not in node or node[segment] is None:
            node[segment] = {}
        return node[segment]
    if isinstance(node, list):
        return node[_list_index(node, segment, path)]
    raise OverrideError(f"{path}: {segment!r} is inside a value that is not a mapping or list")


def _assign(node: Any, segment: str, value: Any, path: str) -> None:
    if isinstance(node, dict):
        node[segment] = value
    elif isinstance(node, list):
        node[_list_index(node, segment, path)] = value
    else:
        raise OverrideError(f"{path}: {segment!r} is inside a value that is not a mapping or list")


def _list_index(items: list[Any], segment: str, path: str) -> int:
    if segment.isdigit():
        index = int(segment)
        if index < len(items):
            return index
        raise OverrideError(f"{path}: index {index} is out of range (the list has {len(items)})")
    for index, item in enumerate(items):
        if isinstance(item, dict) and segment in (item.get("id"), item.get("name")):
            return index
    raise OverrideError(f"{path}: no element with id or name {segment!r}")
