"""Reading scenario files: text -> YAML -> overrides -> validated, immutable `Scenario`.

Every failure becomes an `InputError` naming the file and the field, so the CLI can print one line
and exit 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from simsched.errors import InputError
from simsched.overrides import OverrideError, apply_overrides, parse_assignment
from simsched.scenario import Scenario
from simsched.workload.specs import UNION_TAGS

BASE_VARIANT = "base"


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


def parse_yaml_mapping(text: str, label: str) -> dict[str, Any]:
    try:
        raw = yaml.safe_load(text)
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
    for text in overrides or []:
        raw = _override(raw, text, label)
    _resolve_paths(raw, path.parent)
    scenario = validate(raw, label)
    resolve_variants(scenario, label)  # a bad variant is a bad file: fail now, not mid-run
    return scenario


def validate(raw: dict[str, Any], label: str, context: str = "") -> Scenario:
    try:
        return Scenario.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = _location(error["loc"])
        if context:
            where = f"{context}: {where}" if where else context
        raise InputError(label, where, _message(error)) from None


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
    except OverrideError as exc:
        raise InputError(label, f"--set {text}", str(exc)) from None


def _resolve_paths(node: Any, base_dir: Path) -> None:
    """Every `path:` in a scenario (traces, trace-drawn lengths) is relative to the file."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "path" and isinstance(value, str) and value:
                node[key] = str((base_dir / value).resolve())
            else:
                _resolve_paths(value, base_dir)
    elif isinstance(node, list):
        for item in node:
            _resolve_paths(item, base_dir)


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
    return part in UNION_TAGS or "[" in part or "(" in part


def _message(error: dict[str, Any]) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown key (not part of the scenario format; check the spelling)"
    message = str(error["msg"])
    return message.removeprefix("Value error, ")
