"""Areas of a calibration file: named groups of cases (by name patterns) whose errors are
summed up apart, so that a target per area ("MoE within 12%") reads off one run.

    areas:
      dense: ["trt_*", "g?_*"]
      moe: ["moe_*"]

A pattern is a shell-style glob over case names (`fnmatch`, case-sensitive). Each pattern must
match some case, and no case may fall in two areas: a typo or an overlap would move figures
between areas without a word. Cases no area names are summed up as `other`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

import numpy as np

from simsched.errors import InputError

OTHER = "other"  # the cases no area names, when the file has areas


@dataclass(frozen=True)
class AreaSummary:
    """One area's figures: how many, and their median and worst absolute error."""

    name: str
    figures: int
    median: float
    worst: float


def area_of_cases(areas: dict[str, list[str]], names: list[str], label: str) -> list[str]:
    """Each case's area (`OTHER` for a case no area names); an `InputError` naming the file's
    `areas.NAME` field for a pattern that matches no case or a case two areas claim."""
    found: dict[str, str] = {}
    for area, patterns in areas.items():
        if area == OTHER:
            raise InputError(label, f"areas.{area}", f"{OTHER!r} names the cases no area names")
        for pattern in patterns:
            matched = [name for name in names if fnmatchcase(name, pattern)]
            if not matched:
                raise InputError(label, f"areas.{area}", f"pattern {pattern!r} matches no case")
            for name in matched:
                earlier = found.setdefault(name, area)
                if earlier != area:
                    raise InputError(
                        label, f"areas.{area}", f"case {name!r} is in area {earlier!r} too"
                    )
    return [found.get(name, OTHER) for name in names]


def summarise_areas(
    order: list[str], case_areas: list[str], errors: list[float]
) -> list[AreaSummary]:
    """Per area, in the file's order and then `OTHER` if any case has no area (`case_areas`:
    one per case, as `area_of_cases` gives them): the count, median and worst of |error|."""
    by_area: dict[str, list[float]] = {name: [] for name in [*order, OTHER]}
    for area, value in zip(case_areas, errors, strict=True):
        by_area[area].append(abs(value))
    return [
        AreaSummary(name, len(values), float(np.median(values)), max(values))
        for name, values in by_area.items()
        if values
    ]
