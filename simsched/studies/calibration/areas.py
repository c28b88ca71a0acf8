"""Areas of a calibration file: named groups of cases (by name patterns) whose errors are
summed up apart, each with an optional target, so that "MoE within 12%" reads off one run.

    median_target: 8            # percent, the whole file's
    areas:
      dense: ["trt_*", "g?_*"]
      moe: {cases: ["moe_*"], median_target: 12}

A pattern is a shell-style glob over case names (`fnmatch`, case-sensitive). Each pattern must
match some case, and no case may fall in two areas: a typo or an overlap would move figures
between areas without a word. Cases no area names are summed up as `other`. A target is met
when the median absolute error, before rounding, is at most the target.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Annotated, Any

import numpy as np
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from simsched.errors import InputError

OTHER = "other"  # the cases no area names, when the file has areas


def target_value(value: Any) -> Any:
    """A `median_target` before validation: a percent, so `12%` and `0` say how to write it."""
    if isinstance(value, str) and value.strip().endswith("%"):
        raise ValueError(f"write the percent without its sign: {value.strip()[:-1].strip()}")
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and not 0 < value <= 1000:
        raise ValueError(f"{value} is not a percent above 0 and up to 1000 (12 for 12%)")
    return value


# percent: an error target is read as the printed errors are; `12%` and `0` say how to write it,
# wherever a target is taken (an area's, the whole file's)
Target = Annotated[float, BeforeValidator(target_value), Field(gt=0, le=1000, allow_inf_nan=False)]
SHAPE = "an area is a list of case-name globs, or {cases: [globs], median_target: percent}"


class Area(BaseModel):
    """One area: its case-name globs and the median absolute error it should stay within."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    cases: list[str]
    median_target: Target | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        """`dense: ["trt_*"]` is `dense: {cases: ["trt_*"]}`."""
        if isinstance(value, list):
            return {"cases": value}
        if not isinstance(value, dict):
            raise ValueError(SHAPE)
        if "cases" not in value:
            raise ValueError(f"no cases: {SHAPE}")
        return value

    @field_validator("cases", mode="before")
    @classmethod
    def _patterns(cls, value: Any) -> Any:
        if not isinstance(value, list):
            raise ValueError('a list of case-name globs, e.g. ["moe_*"]')
        if not value:
            raise ValueError("give at least one case-name glob, or remove the area")
        for pattern in value:
            if isinstance(pattern, int | float) and not isinstance(pattern, bool):
                raise ValueError(f'pattern {pattern!r} is not a glob: quote it ("{pattern}")')
            if not isinstance(pattern, str) or not pattern:
                raise ValueError(f"pattern {pattern!r} is not a glob: write a case-name glob")
        return value


@dataclass(frozen=True)
class AreaSummary:
    """One area's figures: how many, their median and worst absolute error, and its target
    (percent, None without one)."""

    name: str
    figures: int
    median: float
    worst: float
    target: float | None = None

    @property
    def verdict(self) -> str:
        """'met' or 'missed' against the target ('' without one)."""
        if self.target is None:
            return ""
        # the target as a share (7 / 100 is 0.07 exactly), not the median times 100 (0.07 * 100
        # is 7.000000000000001): a median at the target is met
        return "met" if self.median <= self.target / 100 else "missed"


def area_of_cases(areas: dict[str, Area], names: list[str], label: str) -> list[str]:
    """Each case's area (`OTHER` for a case no area names); an `InputError` naming the file's
    `areas.NAME` field for a pattern that matches no case or a case two areas claim."""
    found: dict[str, str] = {}
    for area, spec in areas.items():
        if area == OTHER:
            raise InputError(
                label, f"areas.{area}", f"{OTHER!r} names the cases no area names: rename it"
            )
        for pattern in spec.cases:
            matched = [name for name in names if fnmatchcase(name, pattern)]
            if not matched:
                raise InputError(
                    label,
                    f"areas.{area}",
                    f"pattern {pattern!r} matches no case (globs: * any text, ? one character, "
                    "case-sensitive)",
                )
            for name in matched:
                earlier = found.setdefault(name, area)
                if earlier != area:
                    raise InputError(
                        label, f"areas.{area}", f"case {name!r} is in area {earlier!r} too"
                    )
    return [found.get(name, OTHER) for name in names]


def summarise_areas(
    areas: dict[str, Area], case_areas: list[str], errors: list[float]
) -> list[AreaSummary]:
    """Per area, in the file's order and then `OTHER` if any case has no area (`case_areas`:
    one per case, as `area_of_cases` gives them): the count, median and worst of |error|."""
    by_area: dict[str, list[float]] = {name: [] for name in [*areas, OTHER]}
    for area, value in zip(case_areas, errors, strict=True):
        by_area[area].append(abs(value))
    return [
        AreaSummary(
            name,
            len(values),
            float(np.median(values)),
            max(values),
            areas[name].median_target if name in areas else None,
        )
        for name, values in by_area.items()
        if values
    ]
