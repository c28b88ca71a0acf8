"""A sweep's grid: `--grid`/`--zip` flags to axes, axes to numbered points.

Each point carries its overrides as `--set` texts and, for every one, the flag that brought it,
so that an error names `--grid a.b=1` rather than the `--set` it became.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simsched.config.loading import load_scenario
from simsched.config.overrides import OverrideError, format_assignment, parse_assignment, split_path
from simsched.errors import InputError

Axis = tuple[str, list[str], list[tuple[Any, ...]]]  # (flag, paths, a tuple of values per step)


@dataclass(frozen=True)
class Point:
    index: int
    seed: int | None
    params: dict[str, Any]
    overrides: tuple[str, ...]  # `path=json value`, the point's own
    labels: tuple[tuple[str, str], ...]  # override -> the flag that brought it, for messages


def parse_grid(
    specs: list[str], flag: str, label: str = "", most: Callable[[int], None] | None = None
) -> dict[str, list]:
    """`["a.b=1,2,3", ...]` -> {"a.b": [1, 2, 3]}; each value is read as a YAML scalar.

    Commas inside brackets or quotes do not split, so `x=[1,2],[3,4]` has two list values.
    `most(count)` is called with each flag's count of values before any value is read (reading
    is the slow part), so that a bound refuses a million values at once.
    """
    parsed: dict[str, list] = {}
    for spec in specs:
        path, sep, text = spec.partition("=")
        where = f"{flag} {spec}"
        if not sep or not path.strip():
            raise InputError(label, where, "expected PATH=VALUE,VALUE,...")
        items = [item.strip() for item in split_values(text)]
        if most is not None:
            most(len(items))
        if any(not item for item in items):
            raise InputError(label, where, "empty value (values are separated by commas)")
        if path.strip() in parsed:
            raise InputError(label, where, f"{path.strip()} is swept twice")
        # each value is read exactly as the value of a `--set` would be
        parsed[path.strip()] = [parse_assignment(f"x={item}")[1] for item in items]
    return parsed


def split_values(text: str) -> list[str]:
    items, current, depth, quote = [], "", 0, ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth <= 0:
            items.append(current)
            current = ""
            continue
        current += char
    return [*items, current]


def make_axes(grid: dict[str, list], zip_: dict[str, list], label: str) -> list[Axis]:
    axes: list[Axis] = []
    for path, values in grid.items():
        _check_path(path, values, "--grid", label)
        axes.append(("--grid", [path], [(v,) for v in values]))
    for path, values in zip_.items():
        _check_path(path, values, "--zip", label)
        if path in grid:
            raise InputError(label, f"--zip {path}", "is also a --grid path")
    if zip_:
        lengths = {path: len(values) for path, values in zip_.items()}
        if len(set(lengths.values())) > 1:
            counts = ", ".join(f"{p}: {n}" for p, n in lengths.items())
            raise InputError(label, "--zip", f"zipped paths need as many values each ({counts})")
        axes.append(("--zip", list(zip_), list(zip(*zip_.values(), strict=True))))
    return axes


def _check_path(path: str, values: list, flag: str, label: str) -> None:
    try:
        split_path(path)
    except OverrideError as exc:
        raise InputError(label, f"{flag} {path}", exc.problem) from None
    if not values:
        raise InputError(label, f"{flag} {path}", "no values")


def check_axes(path: str | Path, overrides: list[str], axes: list[Axis], load=None) -> None:
    """A path that no value of its axis can set (a typo, say) fails the sweep up front.

    Each axis is tried alone on the scenario, value after value, until one loads; a value that
    fails only at some points (with another axis's value, say) fails only those points.
    """
    for flag, paths, steps in axes:
        first_error = None
        for step in steps:
            texts, labels = _assignments(flag, paths, step)
            try:
                if load is None:
                    load_scenario(path, [*overrides, *texts])
                else:  # a scenario given as an object
                    load([*overrides, *texts])
                break
            except InputError as exc:
                first_error = first_error or relabel(exc, dict(labels))
        else:
            raise first_error


def grid_points(axes: list[Axis]) -> int:
    """Points of the grid, before seeds: the product of the axes' lengths."""
    return math.prod(len(axis[2]) for axis in axes)


def make_points(axes: list[Axis], base_seed: int, seeds: int) -> list[Point]:
    """Every point; the caller has bounded their number (`studies.limits.check_points`)."""
    points: list[Point] = []
    for steps in itertools.product(*(axis[2] for axis in axes)):
        texts, labels, params = [], [], {}
        for (flag, paths, _), step in zip(axes, steps, strict=True):
            text, label = _assignments(flag, paths, step)
            texts += text
            labels += label
            params.update(zip(paths, step, strict=True))
        for replicate in range(seeds):
            points.append(_point(len(points), params, texts, labels, base_seed, seeds, replicate))
    return points


def _point(index, params, texts, labels, base_seed, seeds, replicate) -> Point:
    seed = params.get("seed", base_seed)
    if seeds == 1 or not isinstance(seed, int):
        return Point(index, seed if isinstance(seed, int) else None, params, (*texts,), (*labels,))
    text = f"seed={seed + replicate}"
    return Point(index, seed + replicate, params, (*texts, text), (*labels, (text, "--seeds")))


def _assignments(flag: str, paths: list[str], step: tuple) -> tuple[list[str], list]:
    texts = [format_assignment(path, value) for path, value in zip(paths, step, strict=True)]
    shown = ",".join(f"{p}={show(v)}" for p, v in zip(paths, step, strict=True))
    return texts, [(text, f"{flag} {shown}") for text in texts]


def show(value: Any) -> str:
    """A swept value as the user wrote it: strings bare, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def relabel(exc: InputError, labels: dict[str, str], source: str | None = None) -> InputError:
    """The error as the user would name it: `--grid a=1` rather than the `--set` it became."""
    where = exc.where
    for text, flag in labels.items():
        if where.startswith(f"--set {text}"):
            where = flag + where[len(f"--set {text}") :]
            break
    return InputError(source if source is not None else exc.source, where, exc.message)


def param_names(axes: list[Axis]) -> list[str]:
    # `seed` has its own column, which holds the seed each point actually ran with
    return [path for _, paths, _ in axes for path in paths if path != "seed"]
