"""A plan's knob: the candidate values LO, LO+S, ..., HI (HI always one, even off the step).

An integer setting gets integer candidates (LO, HI and S must then be whole), a float setting
float ones; a setting the file leaves unset (null) takes the kind of the range's own numbers.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterator
from typing import Any

from simsched.config.overrides import OverrideError, get_path, split_path
from simsched.config.scenario import Scenario
from simsched.errors import InputError
from simsched.studies.limits import check_candidates

FLOAT_STEPS = 64  # a float knob's default step is (HI - LO) / FLOAT_STEPS
Number = int | float


def knob_values(
    scenario: Scenario,
    knob: str,
    range_: str | tuple[Number, Number],
    step: Number | None,
    label: str = "",
    flag: str = "--vary",
) -> list[Number]:
    """The candidate values, LO to HI; integers when the knob is an integer setting."""
    lo, hi = parse_range(range_, label) if isinstance(range_, str) else range_
    if lo > hi:
        raise InputError(label, "--range", f"LO ({lo}) is above HI ({hi})")
    if step is not None and not step > 0:
        raise InputError(label, "--step", f"must be positive, got {step}")
    if _is_integer_knob(scenario, knob, (lo, hi, step), label, flag):
        return _integer_values(lo, hi, step, label)
    if not math.isfinite(float(hi) - float(lo)):  # -1.7e308:1.7e308: HI - LO overflows
        raise InputError(label, "--range", f"{lo:g}:{hi:g} is wider than a float can hold")
    step = step if step is not None else (hi - lo) / FLOAT_STEPS
    if step:
        check_candidates(lo, hi, step, label)
    count = math.floor((hi - lo) / step + 1e-9) + 1 if step else 1
    values = [float(f"{lo + i * step:.12g}") for i in range(count)]
    return values if math.isclose(values[-1], hi) else [*values, float(hi)]


def parse_range(text: str, label: str = "") -> tuple[Number, Number]:
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        lo, hi = (_number(part) for part in parts)
    except ValueError:
        raise InputError(label, f"--range {text}", "expected LO:HI, two numbers") from None
    return lo, hi


def _number(text: str) -> Number:
    value = float(text)  # ValueError for anything else
    if not math.isfinite(value):
        raise ValueError(text)
    return int(value) if re.fullmatch(r"\s*[-+]?\d+\s*", text) else value


def _integer_values(lo: Number, hi: Number, step: Number | None, label: str) -> list[int]:
    for flag, value in (("--range", lo), ("--range", hi), ("--step", step)):
        if value is not None and not float(value).is_integer():
            raise InputError(label, flag, f"the knob is an integer setting; {value} is not one")
    lo, hi, step = int(lo), int(hi), int(step or 1)
    check_candidates(lo, hi, step, label)
    values = list(range(lo, hi + 1, step))
    return values if values[-1] == hi else [*values, hi]


def _is_integer_knob(scenario, knob, numbers, label, flag) -> bool:
    current = scenario_value(scenario, knob, label, flag)
    if current is None:  # unset (null) in the file: the range's own numbers decide
        return all(isinstance(n, int) for n in numbers if n is not None)
    if isinstance(current, bool) or not isinstance(current, (int, float)):
        raise InputError(label, f"{flag} {knob}", _not_a_number(knob, current))
    return isinstance(current, int)


def scenario_value(scenario: Scenario, path: str, label: str = "", flag: str = "--vary") -> Any:
    """The value at a dotted path of the scenario, defaults included (`tenants.<id>.weight`)."""
    raw = scenario.model_dump(mode="python")
    try:
        return get_path(raw, path)
    except OverrideError as exc:
        raise InputError(label, f"{flag} {path}", exc.problem) from None
    except LookupError:
        close = _closest(raw, path)
        hint = f"; did you mean {close}?" if close else ""
        raise InputError(
            label, f"{flag} {path}", f"no such setting in the scenario{hint}"
        ) from None


def _closest(raw: Any, path: str) -> str | None:
    """`path` with its first wrong segment replaced by the closest key found there."""
    segments = split_path(path)
    for depth in range(len(segments)):
        try:
            node = get_path(raw, ".".join(segments[: depth + 1]))
        except LookupError:
            parent = get_path(raw, ".".join(segments[:depth])) if depth else raw
            if not isinstance(parent, dict):
                return None
            close = difflib.get_close_matches(segments[depth], list(parent), n=1, cutoff=0.6)
            return (
                ".".join([*segments[:depth], close[0], *segments[depth + 1 :]]) if close else None
            )
        if not isinstance(node, (dict, list)):
            return None
    return None


def _not_a_number(knob: str, value: Any) -> str:
    """A section or a word where a number was wanted: name the numbers inside, not the dict."""
    if isinstance(value, dict):
        numbers = list(_number_paths(value, knob))
        inside = f"; vary one of its numbers, e.g. {numbers[0]}" if numbers else ""
        return f"is a section ({', '.join(map(str, value))}), not a number{inside}"
    if isinstance(value, list):
        return f"is a list of {len(value)}, not a number"
    return f"is {value!r}, not a number"


def _number_paths(node: Any, prefix: str = "") -> Iterator[str]:
    """Dotted paths of every number under `node` (list elements by index)."""
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, (dict, list)):
            yield from _number_paths(value, path)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield path
