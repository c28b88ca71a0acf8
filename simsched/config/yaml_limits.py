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
# Values a file may write out, estimated from its text before parsing (commas and line breaks,
# one pass in C): PyYAML's pure-Python parser takes seconds per hundred thousand values, so a
# 16 MiB literal list of 8 million would run for many minutes before any other check saw it.
# The largest shipped scenario (an imported ServeGen fleet) has about 20,000.
MAX_TEXT_VALUES = 250_000


class YamlTooLarge(yaml.YAMLError):
    """YAML beyond the bounds; `where` is the line, when known."""

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.where = where


def _line(mark) -> str:
    return f"line {mark.line + 1}" if mark is not None else ""


def check_text(text: str) -> None:
    """Refuse text that writes out more than MAX_TEXT_VALUES values, before it is parsed."""
    separators = text.count(",") + text.count("\n")
    if separators > MAX_TEXT_VALUES:
        raise YamlTooLarge(
            f"holds about {separators:,} values (counting commas and lines), more than the "
            f"{MAX_TEXT_VALUES:,} a scenario or calibration file may hold; put long data in a "
            "trace file"
        )


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
    """Refuse a node graph that contains itself, nests deeper than MAX_DEPTH once aliases are
    expanded, or expands to more than MAX_NODES values.

    The text check above cannot see depth gained through aliases (`&v2 [*v1]`, `&v3 [*v2]`, ...
    nest one level per line). Size and depth are memoised per node, so a node shared by many
    aliases is walked once, and the walk keeps its own stack, so a long alias chain cannot
    exhaust Python's.
    """
    done: dict[int, tuple[int, int]] = {}  # id -> (values, levels) once expanded
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in done:
            continue
        children = _children(node)
        if not children_done:
            if key in open_nodes:
                raise YamlTooLarge("an alias refers to itself (a value inside its own anchor)",
                                   _line(node.start_mark))  # fmt: skip
            open_nodes.add(key)
            stack.append((node, True))
            for child in children:
                if id(child) in open_nodes:
                    raise YamlTooLarge("an alias refers to itself (a value inside its own anchor)",
                                       _line(child.start_mark))  # fmt: skip
                if id(child) not in done:
                    stack.append((child, False))
            continue
        open_nodes.discard(key)
        total = 1 + sum(done[id(child)][0] for child in children)
        levels = (1 + max((done[id(child)][1] for child in children), default=0)) if isinstance(
            node, yaml.CollectionNode) else 0  # fmt: skip
        if levels > MAX_DEPTH:
            raise YamlTooLarge(
                f"nested more than {MAX_DEPTH} levels deep once aliases are expanded",
                _line(node.start_mark),
            )
        if total > MAX_NODES:
            raise YamlTooLarge(
                f"aliases expand to more than {MAX_NODES:,} values (an alias bomb?)",
                _line(node.start_mark),
            )
        done[key] = (total, levels)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
