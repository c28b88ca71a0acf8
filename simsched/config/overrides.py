"""Dotted-path overrides over a raw scenario mapping.

One mechanism serves `--set a.b=c` on the command line, `variants[i].set` in a scenario and the
sweep and plan commands. Overrides act on the raw mapping before validation, so a setting that the
file leaves at its default can still be overridden and the pydantic models stay the single judge
of what is valid. `get_path` reads a value at a path found the same way (plan reads its knob).

Path segments are mapping keys; inside a list a segment is an index (`tenants.1.weight` or
`tenants[1].weight`) or the `id`/`name` of an element (`tenants.tenant_batch_rag.weight` or
`cluster.pools[prefill].replicas`).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import yaml

from simsched.config.yaml_io import load_yaml

# `[1]` or `[name]`: an index or an element's id/name (`cluster.pools[prefill].replicas`)
_INDEX = re.compile(r"\[([A-Za-z0-9_][^\[\].]*)\]")


class OverrideError(ValueError):
    """An override whose path cannot be followed.

    `problem` says what is wrong without repeating the path, for callers that already show it
    (`--set PATH=VALUE: problem`); `str()` is `path: problem`.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)


def split_path(path: str) -> list[str]:
    """`tenants[1].weight` or `tenants.1.weight` -> ["tenants", "1", "weight"]; a name in
    brackets is a segment too (`pools[prefill]` -> ["pools", "prefill"])."""
    segments = _INDEX.sub(r".\1", path.strip()).split(".")
    if not path.strip():
        raise OverrideError(path, "empty path")
    if any(not s.strip() for s in segments):
        raise OverrideError(path, "malformed path (an empty segment)")
    if any("[" in s or "]" in s for s in segments):
        raise OverrideError(path, "malformed path (an index is written [0], [1], ...)")
    return segments


def parse_assignment(text: str) -> tuple[str, Any]:
    """`a.b=value` -> ("a.b", value), the value read as a YAML scalar or flow collection."""
    path, sep, value = text.partition("=")
    if not sep or not path.strip():
        raise OverrideError("", f"expected PATH=VALUE, got {text!r}")
    try:
        parsed = load_yaml(value) if value.strip() else ""
    except yaml.YAMLError:
        parsed = value  # not YAML (an unclosed bracket, say): take the text as it is
    return path.strip(), parsed


def format_assignment(path: str, value: Any) -> str:
    """The `--set` text that sets `path` to `value`, the value written as JSON (YAML reads it)."""
    return f"{path}={json.dumps(value)}"


def assignment_texts(overrides: Any) -> list[str]:
    """`Scenario.with_overrides`'s argument as `--set` texts: a mapping of path to a value JSON
    can write, or a list of `PATH=VALUE` strings. Anything else is an `OverrideError` naming
    the entry, as `--set` names a bad flag."""
    if isinstance(overrides, dict):
        return [_assignment_text(path, value) for path, value in overrides.items()]
    if not isinstance(overrides, (list, tuple)):
        raise OverrideError(
            "",
            f"overrides are a mapping {{path: value}} or a list of 'PATH=VALUE' strings, "
            f"not {type(overrides).__name__}",
        )
    for index, text in enumerate(overrides):
        if not isinstance(text, str):
            raise OverrideError(
                f"[{index}]", f"must be a 'PATH=VALUE' string, not {type(text).__name__}"
            )
    return list(overrides)


def _assignment_text(path: Any, value: Any) -> str:
    if not isinstance(path, str):
        raise OverrideError(repr(path), f"a path is a string, not {type(path).__name__}")
    try:
        json.dumps(value, allow_nan=False)  # what --set could have been given, no more
    except (TypeError, ValueError):
        raise OverrideError(
            path,
            f"{value!r:.80} cannot be a setting (numbers, strings, booleans, null, and lists "
            "and mappings of them only)",
        ) from None
    return format_assignment(path, value)


def get_path(raw: Any, path: str) -> Any:
    """The value at `path` in `raw`; a malformed path is an `OverrideError`.

    A path that leads nowhere is a `LookupError`: reading, unlike writing, creates no section.
    """
    node = raw
    for segment in split_path(path):
        node = _existing_child(node, segment)
    return node


def _existing_child(node: Any, segment: str) -> Any:
    if isinstance(node, dict):
        return node[segment]
    index = _element(node, segment) if isinstance(node, list) else None
    if index is None:
        raise LookupError(segment)
    return node[index]


def apply_overrides(raw: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of `raw` with every `path: value` of `overrides` set, in order."""
    result = copy.deepcopy(raw)
    for path, value in overrides.items():
        _set_path(result, split_path(path), value, path)
    return result


def _set_path(node: Any, segments: list[str], value: Any, path: str) -> None:
    *parents, last = segments
    for depth, segment in enumerate(parents):
        node = _child(node, segment, path, _walked(segments, depth))
    _assign(node, last, value, path, _walked(segments, len(parents)))


def _walked(segments: list[str], depth: int) -> str:
    # the part of the path already followed, to name the value that stops us
    return ".".join(segments[:depth]) or "the top level"


def _child(node: Any, segment: str, path: str, walked: str) -> Any:
    if isinstance(node, dict):
        # a missing or empty section is created, so a default can be overridden; the scenario
        # models then reject any key that is not part of the format
        if segment not in node or node[segment] is None:
            node[segment] = {}
        return node[segment]
    if isinstance(node, list):
        return node[_list_index(node, segment, path, walked)]
    raise _not_a_container(node, path, walked)


def _assign(node: Any, segment: str, value: Any, path: str, walked: str) -> None:
    if isinstance(node, dict):
        node[segment] = value
    elif isinstance(node, list):
        node[_list_index(node, segment, path, walked)] = value
    else:
        raise _not_a_container(node, path, walked)


def _not_a_container(node: Any, path: str, walked: str) -> OverrideError:
    return OverrideError(path, f"{walked} is {node!r}, not a mapping or list")


def _list_index(items: list[Any], segment: str, path: str, walked: str) -> int:
    index = _element(items, segment)
    if index is not None:
        return index
    if segment.isdecimal():
        count = f"{len(items)} element{'s' if len(items) != 1 else ''}"
        raise OverrideError(path, f"index {int(segment)} is out of range ({walked} has {count})")
    names = [str(n) for item in items if isinstance(item, dict) for n in [_name(item)] if n]
    known = f" (known: {', '.join(names)}; or an index 0-{len(items) - 1})" if names else ""
    raise OverrideError(path, f"{walked} has no element with id or name {segment!r}{known}")


def _name(item: dict[str, Any]) -> Any:
    return item.get("id", item.get("name"))


def _element(items: list[Any], segment: str) -> int | None:
    """The position `segment` names: an index, or the `id`/`name` of a mapping element."""
    if segment.isdecimal():
        return int(segment) if int(segment) < len(items) else None
    for index, item in enumerate(items):
        if isinstance(item, dict) and segment in (item.get("id"), item.get("name")):
            return index
    return None


def overlapping(path: str, other: str, raw: Any = None) -> bool:
    """Whether setting one of the two dotted paths can change what the other holds (one is the
    other or lies inside it). With `raw`, the mapping both paths apply to, list elements named by
    `id`/`name` are compared by position: `tenants.1` and `tenants.tenant_chat_pro` are the same
    element when that tenant is the second."""
    a, b = canonical_path(raw, path), canonical_path(raw, other)
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def canonical_path(raw: Any, path: str) -> list[str]:
    """`path`'s segments with every list element written as its index, as far as `raw` has it.

    Segments past what `raw` holds (a section the file leaves out) stay as written.
    """
    segments = split_path(path)
    node = raw
    for depth, segment in enumerate(segments):
        if isinstance(node, list):
            index = _element(node, segment)
            if index is None:
                break
            segments[depth] = str(index)
            node = node[index]
        elif isinstance(node, dict) and segment in node:
            node = node[segment]
        else:
            break
    return segments
