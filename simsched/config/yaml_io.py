"""Reading input files: checked UTF-8 text, and YAML mappings that refuse a key given twice.

Every failure is an `InputError` naming the file (and the line, for YAML), for scenario files
and trace files alike. Input is bounded before it is trusted: only regular files (a FIFO would
block, a device never end), of a bounded size, read whole; YAML of a bounded nesting depth and a
bounded size once its aliases are expanded (see `yaml_limits.py`), so no file can hang or crash
the loader.
"""

from __future__ import annotations

import copy
import re
import stat
import threading
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

from simsched.config.yaml_limits import YamlTooLarge, check_events, check_graph, check_text
from simsched.errors import InputError

MIB = 1024**2
# The largest file read whole: public traces are a few hundred MiB at most. Scenario files are
# written by hand and stay far below their own bound.
MAX_TEXT_BYTES = 1024 * MIB
MAX_SCENARIO_BYTES = 16 * MIB


def read_text(path: Path, what: str = "file", limit: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of `path`, or an InputError saying why it cannot be read.

    The file's type and size are checked before a byte is read: a FIFO or a device would block
    or never end, and a sparse file of gigabytes would be read whole.
    """
    label = str(path)
    try:
        info = path.stat()
        _check_kind(info, label, what, limit)
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise InputError(label, "", f"no such {what}") from None
    except IsADirectoryError:
        raise InputError(label, "", f"is a directory, not a {what}") from None
    except OSError as exc:
        raise InputError(label, "", f"cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:  # it grew since the check
        raise _too_large(label, what, len(data), limit)
    if b"\0" in data:
        raise InputError(label, "", f"is a binary file, not a {what}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(label, "", "is not UTF-8 text") from None
    if not text.strip():
        raise InputError(label, "", "is empty")
    return text


def _check_kind(info, label: str, what: str, limit: int) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise InputError(label, "", f"is a directory, not a {what}")
    if not stat.S_ISREG(info.st_mode):
        raise InputError(
            label, "", f"is not a regular file (a device, FIFO or socket), not a {what}"
        )
    if info.st_size > limit:
        raise _too_large(label, what, info.st_size, limit)


def _too_large(label: str, what: str, size: int, limit: int) -> InputError:
    return InputError(
        label,
        "",
        f"is too large ({size / MIB:,.0f} MiB; a {what} may have at most {limit // MIB} MiB)",
    )


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


# `5e7` (no dot, no negative exponent) names a whole number: read it as the exact int, so
# that integer settings (`limits.max_requests=5e7`) take it; a float setting takes an int too.
_WHOLE_EXPONENT = "tag:simsched,2026:whole-exponent"
_UniqueKeyLoader.add_implicit_resolver(
    _WHOLE_EXPONENT, re.compile(r"^[-+]?[0-9][0-9_]*[eE]\+?[0-9]+$"), list("-+0123456789")
)


def _construct_whole_exponent(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | float:
    text = loader.construct_scalar(node).replace("_", "")
    mantissa, exponent = re.split("[eE]", text)
    if int(exponent) + len(mantissa.lstrip("+-")) > 308:  # near or beyond any float: as one
        return float(text)  # (inf beyond), which the bounds refuse
    return int(mantissa) * 10 ** int(exponent)


_UniqueKeyLoader.add_constructor(_WHOLE_EXPONENT, _construct_whole_exponent)

# YAML 1.1 reads `1e6` and `1e+20` as strings (its floats need a dot, and a sign on the
# exponent); the scenario models take numbers strictly, so read them as the floats YAML 1.2 and
# every reader of a scenario take them for. `json.dumps` writes floats that way too.
_UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)
_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping
)


# Texts parsed before in this process, and what they gave: a plan loads its scenario file and
# parses each `--set` value again for every probe (some forty loads and two hundred small
# parses a plan, a tenth of its time outside the simulation), and the pure-Python parse with
# its limit checks is milliseconds each. Bounded: texts past PARSED_TEXT_SIZE are not kept, and
# past PARSED_TEXTS entries the least recently used text is dropped (a dict keeps insertion
# order, and a hit is moved to the end), so a stream of one-off texts (a sweep's values, hostile
# inputs) never evicts the scenario file every probe reloads.
_PARSED: dict[str, Any] = {}
PARSED_TEXTS = 256
PARSED_TEXT_SIZE = 1 << 20
_MISSING = object()  # a parse may give None, so a miss needs its own marker
# A Dask worker runs probes in threads: a hit's move and an eviction are several dict steps, and
# two threads evicting at once would both pick the same oldest text. Parsing stays outside.
_MEMO_LOCK = threading.Lock()


def load_yaml(text: str) -> Any:
    """YAML text as plain data (a SafeLoader's), refusing deep nesting and alias bombs.

    The number of values written out is estimated from the text before parsing (`check_text`);
    nesting is checked on the event stream, before PyYAML's recursive composer sees it; the
    expanded size and self-reference on the composed graph, before anything is constructed.
    Failures are `yaml.YAMLError`s (`YamlTooLarge` for the limits).

    The result is a function of the text alone, so a text parsed before is answered with a deep
    copy of its first result (callers may change what they get; aliases stay shared within the
    copy, as the parser shares them); a text that fails is parsed, and fails, every time.
    """
    with _MEMO_LOCK:
        data = _PARSED.pop(text, _MISSING)
        if data is not _MISSING:
            _PARSED[text] = data  # now the most recently used
    if data is not _MISSING:
        return copy.deepcopy(data)  # the kept result is never changed, so no lock to copy it
    data = _parse(text)
    if len(text) > PARSED_TEXT_SIZE:
        return data
    with _MEMO_LOCK:
        while len(_PARSED) >= PARSED_TEXTS:
            del _PARSED[next(iter(_PARSED))]  # the least recently used
        _PARSED[text] = data
    return copy.deepcopy(data)


def _parse(text: str) -> Any:
    check_text(text)  # first: parsing a huge literal list is itself the hang
    check_events(yaml.parse(text, Loader=_UniqueKeyLoader))
    loader = _UniqueKeyLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check_graph(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def parse_yaml_mapping(text: str, label: str) -> dict[str, Any]:
    try:
        raw = load_yaml(text)
    except YamlTooLarge as exc:
        raise InputError(label, exc.where, str(exc)) from None
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
