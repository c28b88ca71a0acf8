"""Reading scenario files: text -> YAML -> overrides -> validated, immutable `Scenario`.

Every failure becomes an `InputError` naming the file and the field, so the CLI can print one line
and exit 2.
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from simsched.config.overrides import (
    OverrideError,
    apply_overrides,
    assignment_texts,
    overlapping,
    parse_assignment,
)
from simsched.config.scenario import Scenario
from simsched.config.validation_errors import input_error, pick_error
from simsched.config.yaml_io import MAX_SCENARIO_BYTES, parse_yaml_mapping, read_text
from simsched.errors import InputError

BASE_VARIANT = "base"


def load_scenario(
    path: str | Path, overrides: list[str] | None = None, variants: list[str] | None = None
) -> Scenario:
    """Load, override (`["a.b=c", ...]`) and validate a scenario file, including its variants;
    with `variants` (`--variant`), only those: the others are left out before validation, so
    that a `--set` they cannot take (a router that needs prefix caching, with caching off)
    does not refuse the run."""
    path = Path(path)
    label = str(path)
    raw = parse_yaml_mapping(read_text(path, "scenario file", MAX_SCENARIO_BYTES), label)
    # absolute: `with_overrides` resolves against it later, whatever the working folder is then
    return scenario_from_mapping(
        raw, overrides, label, Path(os.path.abspath(path.parent)), variants
    )


def keep_variants(raw: dict[str, Any], names: list[str], label: str) -> dict[str, Any]:
    """The raw mapping with only the named variants (an unknown name is an input error)."""
    declared = raw.get("variants")
    if not isinstance(declared, list):  # no variants, or a malformed list: validation says so
        return raw
    known = [v.get("name") for v in declared if isinstance(v, dict)]
    for name in names:
        if name not in known:
            shown = ", ".join(str(k) for k in known)
            raise InputError(label, "--variant", f"no variant {name!r} (known: {shown})")
    kept = [v for v in declared if isinstance(v, dict) and v.get("name") in names]
    return {**raw, "variants": kept}


def scenario_from_mapping(
    raw: dict[str, Any],
    overrides: list[str] | None,
    label: str,
    base_dir: Path | None = None,
    variants: list[str] | None = None,
) -> Scenario:
    """What `load_scenario` does after reading the file: with `variants`, only those (the
    others left out before validation), then overrides, paths, validation."""
    if variants:
        raw = keep_variants(raw, variants, label)
    versions = [("", raw)]  # (the flag that made it, the raw mapping), the file's own first
    for text in overrides or []:
        versions.append((f"--set {text}", _override(versions[-1][1], text, label)))
    if base_dir is not None:
        _resolve_paths(versions[-1][1], base_dir)
    scenario = _validate_versions(versions, label).located_in(base_dir)
    resolve_variants(scenario, label)  # a bad variant is a bad file: fail now, not mid-run
    return scenario


def validate(raw: dict[str, Any], label: str, context: str = "") -> Scenario:
    try:
        return Scenario.model_validate(raw)
    except ValidationError as exc:
        raise input_error(pick_error(exc.errors()), label, context, Scenario) from None


def _validate_versions(versions: list[tuple[str, dict[str, Any]]], label: str) -> Scenario:
    """Validate the last version; a failure names the `--set` that brought it in.

    The error belongs to the version after which it stays: the file itself, or the `--set`
    after which it appears and no later flag takes it away (the last one, if only the flags
    together cause it). A flag that caused it once, before another flag mended it, is not
    blamed for a later flag undoing the mend.
    """
    try:
        return Scenario.model_validate(versions[-1][1])
    except ValidationError as exc:
        error = pick_error(exc.errors())
    owner = versions[-1][0]
    for flag, raw in reversed(versions[:-1]):  # back to the last version without it
        errors = _errors(raw)
        if not errors:
            break  # valid: the error came after it
        if any(_same_error(other, error) for other in errors):
            owner = flag
        # failing otherwise says nothing: a field's error hides the model's own checks
    raise input_error(error, label, owner, Scenario)


def _errors(raw: dict[str, Any]) -> list[dict[str, Any]]:
    try:
        Scenario.model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors()
        return [pick_error(errors), *errors]  # the one reported, and every other
    return []


def _same_error(a: dict[str, Any] | None, b: dict[str, Any]) -> bool:
    """The same error: at the same place, of the same kind and words, and (for a plain value)
    of the same value: seed -1 and seed -2 are two errors, made by two flags."""
    if a is None or (a["loc"], a["type"], a["msg"]) != (b["loc"], b["type"], b["msg"]):
        return False
    values = (a.get("input"), b.get("input"))
    return any(isinstance(v, dict | list) for v in values) or values[0] == values[1]


# Resolving validates every variant, which is the slow part of loading a large scenario, and a
# command asks several times (the CLI, simulate, describe, reports): remember the answer while the
# scenario object lives. Scenarios are frozen, so it cannot go stale. Keys are identities, not
# hashes of the whole scenario; an entry leaves with its scenario, before its id can be reused.
_RESOLVED: dict[int, list[tuple[str, Scenario]]] = {}


def resolve_variants(scenario: Scenario, label: str = "") -> list[tuple[str, Scenario]]:
    """Each variant's full scenario: the base with that variant's overrides applied."""
    if not scenario.variants:
        return [(BASE_VARIANT, scenario)]
    key = id(scenario)
    known = _RESOLVED.get(key)
    if known is None:
        known = _resolve(scenario, label)
        _RESOLVED[key] = known
        weakref.finalize(scenario, _RESOLVED.pop, key, None)
    return list(known)


def _resolve(scenario: Scenario, label: str) -> list[tuple[str, Scenario]]:
    # Only what the file (and --set) said, as for --set: defaults of one cluster model must not
    # travel into a variant that switches to another.
    base = scenario.model_dump(mode="python", exclude={"variants"}, exclude_unset=True)
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


def _resolve_paths(root: Any, base_dir: Path) -> None:
    """Every `path:` in a scenario (traces, trace-drawn lengths) is relative to the file.

    The walk keeps its own stack and visits each shared (aliased) node once, so neither a long
    alias chain nor a node many aliases share can exhaust the recursion limit or repeat work."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            for key, value in node.items():
                # `path:` in a mapping, or a variant's dotted `trace.path:` override
                if _is_path_key(key) and isinstance(value, str) and value:
                    # no symlink following: keep the name given
                    node[key] = os.path.abspath(base_dir / value)
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(item for item in node if isinstance(item, (dict, list)))


def _is_path_key(key: Any) -> bool:
    return isinstance(key, str) and (
        key in ("path", "hf_config") or key.endswith((".path", ".hf_config"))
    )


def shadowing_variants(
    scenario: Scenario, path: str, names: list[str] | None = None
) -> list[tuple[str, str]]:
    """(variant, its override) pairs that set `path` themselves, among the named variants (all by
    default): a sweep or plan that varies `path` through the base would not change them."""
    if not scenario.variants:
        return []
    # Paths are compared on the mapping the variants apply to, so that a tenant named by id in
    # one and by index in the other is the same tenant.
    raw = scenario.model_dump(mode="python", exclude={"variants"})
    return [
        (variant.name, key)
        for variant in scenario.variants
        if names is None or variant.name in names
        for key in variant.set
        if overlapping(key, path, raw)
    ]


def settings_of(scenario: Scenario) -> dict[str, Any]:
    """What a scenario object says, as the mapping a file would hold (only what was set, so that
    defaults of one cluster model do not travel into a variant that switches to another)."""
    return scenario.model_dump(mode="json", exclude_unset=True)


def override_scenario(scenario: Scenario, overrides: dict[str, Any] | list[str]) -> Scenario:
    """`scenario` with settings changed, validated as `--set` is (`Scenario.with_overrides`)."""
    try:
        texts = assignment_texts(overrides)
    except OverrideError as exc:
        where = _join_where("with_overrides", exc.path)
        raise InputError(scenario.name, where, exc.problem) from None
    return scenario_from_mapping(settings_of(scenario), texts, scenario.name, scenario.folder)


def _join_where(context: str, path: str) -> str:
    return f"{context} {path}" if path else context


def checked(scenario: Scenario) -> Scenario:
    """`scenario` if every setting holds, else the InputError `--set` would give: an object built
    with `model_copy(update=...)` skips validation, and a negative replica count must not run."""
    try:
        Scenario.model_validate(scenario.model_dump(mode="python"))
    except ValidationError as exc:
        raise input_error(exc.errors()[0], scenario.name, "", Scenario) from None
    resolve_variants(scenario, scenario.name)
    return scenario
