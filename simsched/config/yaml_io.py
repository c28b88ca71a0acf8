"""Reading input files: checked UTF-8 text, and YAML mappings that refuse a key given twice.

Every failure is an `InputError` naming the file (and the line, for YAML), for scenario files
and trace files alike.
"""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

from simsched.errors import InputError


def read_text(path: Path, what: str = "file") -> str:
    """The UTF-8 text of `path`, or an InputError saying why it cannot be read."""
    label = str(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(label, "", f"no such {what}") from None
    except IsADirectoryError:
        raise InputError(label, "", f"is a directory, not a {what}") from None
    except OSError as exc:
        raise InputError(label, "", f"cannot read: {exc.strerror or exc}") from None
    if b"\0" in data:
        raise InputError(label, "", f"is a binary file, not a {what}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(label, "", "is not UTF-8 text") from None
    if not text.strip():
        raise InputError(label, "", "is empty")
    return text


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping.

    PyYAML silently keeps the last of two equal keys, so a second `cluster:` section would
    quietly replace the first; a scenario file should say what it means once.
    """


def _construct_unique_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *defaults` may repeat keys
            continue
        key = loader.construct_object(key_node)
        if not isinstance(key, Hashable):
            continue  # construct_mapping reports it
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping
)


def parse_yaml_mapping(text: str, label: str) -> dict[str, Any]:
    try:
        raw = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader: builds plain data only
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}" if mark is not None else ""
        raise InputError(label, where, f"invalid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise InputError(label, "", f"invalid YAML: {exc}") from None
    if not isinstance(raw, dict):
        kind = "empty" if raw is None else type(raw).__name__
        raise InputError(label, "", f"the top level must be a mapping, not {kind}")
    return raw
