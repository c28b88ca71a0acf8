"""Calibration areas: which case falls where, and each area's median and worst error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from simsched.errors import InputError
from simsched.studies.calibration.areas import (
    OTHER,
    Area,
    AreaSummary,
    area_of_cases,
    summarise_areas,
)
from tests.studies.test_calibrate import calibration_file

NAMES = ["trt_8b", "trt_70b", "moe_qwen", "moe_mixtral", "sd_mtp1", "lone"]


def areas_of(**patterns: list[str]) -> dict[str, Area]:
    return {name: Area(cases=globs) for name, globs in patterns.items()}


def test_cases_fall_in_the_area_whose_pattern_they_match_and_the_rest_in_other() -> None:
    areas = areas_of(dense=["trt_*"], moe=["moe_*"], spec=["sd_mtp?"])
    assert area_of_cases(areas, NAMES, "cal.yaml") == [
        "dense", "dense", "moe", "moe", "spec", OTHER,
    ]  # fmt: skip


def test_other_is_not_an_area_name() -> None:
    with pytest.raises(InputError, match=r"areas\.other"):
        area_of_cases(areas_of(other=["trt_*"]), NAMES, "cal.yaml")


def test_patterns_are_case_sensitive() -> None:
    with pytest.raises(InputError, match="'TRT_\\*' matches no case"):
        area_of_cases(areas_of(dense=["TRT_*"]), NAMES, "cal.yaml")


def test_each_area_gets_its_median_and_worst_of_absolute_errors() -> None:
    # dense: |+0.01|, |-0.90|, |+0.02| -> median 0.02 (the middle one, not the mean 0.31),
    # worst 0.90 (the sign does not matter); moe: |-0.05|, |+0.15|, |+0.02|, |-0.60| -> median
    # 0.10 (the mean of the middle two, 0.05 and 0.15; the mean of all four would be 0.205),
    # worst 0.60; one case without an area, listed last as `other` although it comes first
    case_areas = [OTHER, "dense", "moe", "dense", "moe", "dense", "moe", "moe"]
    errors = [0.5, 0.01, -0.05, -0.90, 0.15, 0.02, 0.02, -0.60]
    rows = summarise_areas(areas_of(dense=["d*"], moe=["m*"]), case_areas, errors)
    assert [(r.name, r.figures) for r in rows] == [("dense", 3), ("moe", 4), (OTHER, 1)]
    assert rows[0].median == pytest.approx(0.02) and rows[0].worst == pytest.approx(0.90)
    assert rows[1].median == pytest.approx(0.10) and rows[1].worst == pytest.approx(0.60)
    assert rows[2].median == pytest.approx(0.5)


def test_an_area_with_no_case_in_a_column_is_not_printed() -> None:
    areas = areas_of(dense=["d*"], moe=["m*"])
    assert [r.name for r in summarise_areas(areas, ["moe"], [0.1])] == ["moe"]


def test_a_target_is_met_at_or_under_it_before_rounding() -> None:
    # 12% exactly is within a 12% target; 12.04% prints as 12.0% but misses it
    assert AreaSummary("moe", 3, 0.12, 0.3, 12.0).verdict == "met"
    # medians exactly at a whole-number target, where the median times 100 rounds above it
    # (0.07 * 100 == 7.000000000000001): each is met, as every percent from 1 to 100 is
    for percent in range(1, 101):
        at = float(np.median([percent / 100 - 0.01, percent / 100 + 0.01]))
        exact = percent / 100
        assert AreaSummary("x", 1, exact, exact, float(percent)).verdict == "met", percent
        assert at == pytest.approx(exact)
    assert AreaSummary("x", 1, 0.07, 0.07, 7.0).verdict == "met"
    assert AreaSummary("x", 1, 0.14, 0.14, 14.0).verdict == "met"
    assert AreaSummary("moe", 3, 0.1204, 0.3, 12.0).verdict == "missed"
    assert AreaSummary("moe", 3, 0.5, 0.9, None).verdict == ""
    areas = {"moe": Area(cases=["m*"], median_target=12.0), "dense": Area(cases=["d*"])}
    rows = summarise_areas(areas, ["moe", "dense", OTHER], [0.2, 0.01, 0.3])
    assert [(r.name, r.target, r.verdict) for r in rows] == [
        ("moe", 12.0, "missed"), ("dense", None, ""), (OTHER, None, ""),
    ]  # fmt: skip


def test_the_command_prints_each_areas_errors_from_the_case_table(
    tmp_path: Path, simsched_cli
) -> None:
    path = calibration_file(tmp_path, {"prefill": 900.0, "lone_decode": 8.0, "batch_decode": 20.0})
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    # a target between the decode area's two columns' medians would be read off either; a huge
    # one is met by both, a tiny one missed by both
    spec["areas"] = {"decode": {"cases": ["*_decode"], "median_target": 1000}}
    spec["median_target"] = 0.001
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    code, out, _ = simsched_cli("calibrate", str(path), "--no-fit")
    assert code in (0, None)
    lines = out.splitlines()
    # the per-case errors of the table, recomputed here from its own columns
    errors = {}
    for line in lines[1:4]:
        name, _, measured, written, start, _ = line.split()
        errors[name] = (float(written) / float(measured) - 1, float(start) / float(measured) - 1)
    decode = [errors["lone_decode"], errors["batch_decode"]]
    head = lines.index(next(line for line in lines if line.startswith("by area")))
    assert "as written median / worst" in lines[head] and "start values" in lines[head]
    for row, area, cases in ((1, "decode", decode), (2, OTHER, [errors["prefill"]])):
        fields = lines[head + row].split()
        assert fields[0] == area and int(fields[1]) == len(cases)
        assert fields[2] == ("1000%" if area == "decode" else "-")
        # "median% / worst%" and, with a target, its verdict; then the second column's (the
        # area names here have no spaces: the row splits on whitespace)
        at = 3
        for column in (0, 1):
            values = sorted(abs(case[column]) for case in cases)
            median = sum(values[:2]) / len(values[:2]) if len(values) == 2 else values[0]
            assert float(fields[at].rstrip("%")) == pytest.approx(100 * median, abs=0.11)
            assert float(fields[at + 2].rstrip("%")) == pytest.approx(100 * values[-1], abs=0.11)
            if area == "decode":
                assert fields[at + 3] == "met"
                at += 1
            at += 3
    assert all(line.endswith("(target 0.001%: missed)") for line in lines[head - 2 : head])


def test_no_areas_no_area_lines(tmp_path: Path, simsched_cli) -> None:
    path = calibration_file(tmp_path, {"prefill": 900.0, "lone_decode": 8.0, "batch_decode": 20.0})
    code, out, _ = simsched_cli("calibrate", str(path), "--no-fit")
    assert code in (0, None) and "by area" not in out
