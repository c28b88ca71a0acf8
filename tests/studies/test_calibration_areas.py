"""Calibration areas: which case falls where, and each area's median and worst error."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simsched.errors import InputError
from simsched.studies.calibration.areas import OTHER, area_of_cases, summarise_areas
from tests.studies.test_calibrate import calibration_file

NAMES = ["trt_8b", "trt_70b", "moe_qwen", "moe_mixtral", "sd_mtp1", "lone"]


def test_cases_fall_in_the_area_whose_pattern_they_match_and_the_rest_in_other() -> None:
    areas = {"dense": ["trt_*"], "moe": ["moe_*"], "spec": ["sd_mtp?"]}
    assert area_of_cases(areas, NAMES, "cal.yaml") == [
        "dense", "dense", "moe", "moe", "spec", OTHER,
    ]  # fmt: skip


def test_other_is_not_an_area_name() -> None:
    with pytest.raises(InputError, match=r"areas\.other"):
        area_of_cases({"other": ["trt_*"]}, NAMES, "cal.yaml")


def test_patterns_are_case_sensitive() -> None:
    with pytest.raises(InputError, match="'TRT_\\*' matches no case"):
        area_of_cases({"dense": ["TRT_*"]}, NAMES, "cal.yaml")


def test_each_area_gets_its_median_and_worst_of_absolute_errors() -> None:
    # dense: |+0.10|, |-0.30|, |+0.20| -> median 0.20, worst 0.30 (the sign does not matter);
    # moe: |-0.05|, |+0.15| -> median 0.10 (the mean of the middle two), worst 0.15;
    # one case without an area, listed last as `other` although it comes first
    case_areas = [OTHER, "dense", "moe", "dense", "moe", "dense"]
    errors = [0.5, 0.10, -0.05, -0.30, 0.15, 0.20]
    rows = summarise_areas(["dense", "moe"], case_areas, errors)
    assert [(r.name, r.figures) for r in rows] == [("dense", 3), ("moe", 2), (OTHER, 1)]
    assert rows[0].median == pytest.approx(0.20) and rows[0].worst == pytest.approx(0.30)
    assert rows[1].median == pytest.approx(0.10) and rows[1].worst == pytest.approx(0.15)
    assert rows[2].median == pytest.approx(0.5)


def test_an_area_with_no_case_in_a_column_is_not_printed() -> None:
    assert [r.name for r in summarise_areas(["dense", "moe"], ["moe"], [0.1])] == ["moe"]


def test_the_command_prints_each_areas_errors_from_the_case_table(
    tmp_path: Path, simsched_cli
) -> None:
    path = calibration_file(tmp_path, {"prefill": 900.0, "lone_decode": 8.0, "batch_decode": 20.0})
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    spec["areas"] = {"decode": ["*_decode"]}
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
        for column, at in ((0, 2), (1, 5)):  # "m% / w%;" then the second column's
            values = sorted(abs(case[column]) for case in cases)
            median = sum(values[:2]) / len(values[:2]) if len(values) == 2 else values[0]
            assert float(fields[at].rstrip("%")) == pytest.approx(100 * median, abs=0.11)
            assert float(fields[at + 2].rstrip("%")) == pytest.approx(100 * values[-1], abs=0.11)


def test_no_areas_no_area_lines(tmp_path: Path, simsched_cli) -> None:
    path = calibration_file(tmp_path, {"prefill": 900.0, "lone_decode": 8.0, "batch_decode": 20.0})
    code, out, _ = simsched_cli("calibrate", str(path), "--no-fit")
    assert code in (0, None) and "by area" not in out
