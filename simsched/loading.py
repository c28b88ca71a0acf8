"""Reading scenario files: text -> YAML -> overrides -> validated, immutable `Scenario`.

Every failure becomes an `InputError` naming the file and the field, so the CLI can print one line
and exit 2.
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from simsched.cluster_config import SERVICE_MODEL_TAGS
from simsched.errors import InputError
from simsched.overrides import OverrideError, apply_overrides, parse_assignment
from simsched.scenario import Scenario
from simsched.workload.specs import UNION_TAGS

BASE_VARIANT = "base"
TAG_ERRORS = ("union_tag_invalid", "union_tag_not_found")


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


def load_scenario(path: str | Path, overrides: list[str] | None = None) -> Scenario:
    """Load, override (`["a.b=c", ...]`) and validate a scenario file, including its variants."""
    path = Path(path)
    label = str(path)
    raw = parse_yaml_mapping(read_text(path, "scenario file"), label)
    versions = [("", raw)]  # (the flag that made it, the raw mapping), the file's own first
    for text in overrides or []:
        versions.append((f"--set {text}", _override(versions[-1][1], text, label)))
    _resolve_paths(versions[-1][1], path.parent)
    scenario = _validate_versions(versions, label)
    resolve_variants(scenario, label)  # a bad variant is a bad file: fail now, not mid-run
    return scenario


def validate(raw: dict[str, Any], label: str, context: str = "") -> Scenario:
    try:
        return Scenario.model_validate(raw)
    except ValidationError as exc:
        raise _input_error(exc.errors()[0], label, context) from None


def _validate_versions(versions: list[tuple[str, dict[str, Any]]], label: str) -> Scenario:
    """Validate the last version; a failure names the `--set` that brought it in.

    The error belongs to the first version that already has it: the file itself, or the first
    `--set` after which it appears (the last one, if only the flags together cause it).
    """
    try:
        return Scenario.model_validate(versions[-1][1])
    except ValidationError as exc:
        error = exc.errors()[0]
    owners = (flag for flag, raw in versions if _same_error(_first_error(raw), error))
    raise _input_error(error, label, next(owners, versions[-1][0]))


def _first_error(raw: dict[str, Any]) -> dict[str, Any] | None:
    try:
        Scenario.model_validate(raw)
    except ValidationError as exc:
        return exc.errors()[0]
    return None


def _same_error(a: dict[str, Any] | None, b: dict[str, Any]) -> bool:
    return a is not None and (a["loc"], a["type"], a["msg"]) == (b["loc"], b["type"], b["msg"])


def _input_error(error: Any, label: str, context: str) -> InputError:
    where = _location(error["loc"])
    if error["type"] in TAG_ERRORS:  # the discriminator key is what the user got wrong
        where = f"{where}.{_tag_key(error)}"
    if context:
        where = f"{context}: {where}" if where else context
    return InputError(label, where, _message(error))


def resolve_variants(scenario: Scenario, label: str = "") -> list[tuple[str, Scenario]]:
    """Each variant's full scenario: the base with that variant's overrides applied."""
    if not scenario.variants:
        return [(BASE_VARIANT, scenario)]
    base = scenario.model_dump(mode="python", exclude={"variants"})
    resolved = []
    for index, variant in enumerate(scenario.variants):
        context = f"variants[{index}] ({variant.name})"
        try:
            raw = apply_overrides(base, variant.set)
        except OverrideError as exc:
            raise InputError(label, context, str(exc)) from None
        resolved.append((variant.name, validate(raw, label, context)))
    return resolved


def select_variants(
    variants: list[tuple[str, Scenario]], names: list[str] | None, label: str
) -> list[tuple[str, Scenario]]:
    if not names:
        return variants
    known = [name for name, _ in variants]
    for name in names:
        if name not in known:
            raise InputError(label, "--variant", f"no variant {name!r} (known: {', '.join(known)})")
    return [(name, s) for name, s in variants if name in names]


def _override(raw: dict[str, Any], text: str, label: str) -> dict[str, Any]:
    try:
        path, value = parse_assignment(text)
        return apply_overrides(raw, {path: value})
    except OverrideError as exc:  # the flag already shows the path
        raise InputError(label, f"--set {text}", exc.problem) from None


def _resolve_paths(node: Any, base_dir: Path) -> None:
    """Every `path:` in a scenario (traces, trace-drawn lengths) is relative to the file."""
    if isinstance(node, dict):
        for key, value in node.items():
            # `path:` in a mapping, or a variant's dotted `trace.path:` override
            if _is_path_key(key) and isinstance(value, str) and value:
                node[key] = os.path.abspath(
                    base_dir / value
                )  # no symlink following: keep the name given
            else:
                _resolve_paths(value, base_dir)
    elif isinstance(node, list):
        for item in node:
            _resolve_paths(item, base_dir)


def _is_path_key(key: Any) -> bool:
    return isinstance(key, str) and (key == "path" or key.endswith(".path"))


def _location(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif not _is_union_tag(str(part)):
            text += f".{part}" if text else str(part)
    return text


def _is_union_tag(part: str) -> bool:
    # pydantic puts the chosen member of a union into the location; users never wrote it
    return part in UNION_TAGS or part in SERVICE_MODEL_TAGS or "[" in part or "(" in part


def _tag_key(error: Any) -> str:
    return str(error.get("ctx", {}).get("discriminator", "kind")).strip("'")


def _message(error: Any) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return "unknown key (not part of the scenario format; check the spelling)"
    if kind == "union_tag_invalid":
        ctx = error["ctx"]
        known = str(ctx["expected_tags"]).replace("'", "")
        return f"unknown {_tag_key(error)} {ctx['tag']!r} (known: {known})"
    if kind == "union_tag_not_found":
        return "Field required"
    message = str(error["msg"])
    return message.removeprefix("Value error, ")
