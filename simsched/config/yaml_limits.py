"""Bounds on YAML input: nesting depth and size once aliases are expanded.

A 1 KB file can name a billion values through nested aliases ("billion laughs"), refer to itself
(`&a [*a]`, a list that contains itself) or nest a thousand brackets deep; each would hang the
loader or end in a RecursionError. These checks run before any value is built and cost one pass
over the events and one over the distinct nodes.
"""

from __future__ import annotations

from collections.abc import Iterable

import yaml

MAX_DEPTH = 50  # a scenario nests about 6 levels deep
MAX_NODES = 1_000_000  # values after expanding aliases; a large scenario has a few thousand


class YamlTooLarge(yaml.YAMLError):
    """YAML beyond the bounds; `where` is the line, when known."""

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.where = where


def _line(mark) -> str:
    return f"line {mark.line + 1}" if mark is not None else ""


def check_events(events: Iterable[yaml.Event]) -> None:
    """Refuse nesting deeper than MAX_DEPTH, from the parser's flat event stream."""
    depth = 0
    for event in events:
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise YamlTooLarge(
                    f"nested more than {MAX_DEPTH} levels deep", _line(event.start_mark)
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def check_graph(root: yaml.Node) -> None:
    """Refuse a node graph that contains itself, or expands to more than MAX_NODES values.

    Sizes are memoised per node, so a node shared by many aliases is walked once; the
    recursion is bounded by MAX_DEPTH, checked before.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise YamlTooLarge("an alias refers to itself (a value inside its own anchor)",
                               _line(node.start_mark))  # fmt: skip
        open_nodes.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        open_nodes.discard(key)
        if total > MAX_NODES:
            raise YamlTooLarge(
                f"aliases expand to more than {MAX_NODES:,} values (an alias bomb?)",
                _line(node.start_mark),
            )
        sizes[key] = total
        return total

    size(root)
