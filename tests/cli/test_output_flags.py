"""Output flags and results folders: bad ones are one-line exit-2 errors, checked before a run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOISY = str(REPO / "scenarios" / "noisy_neighbor.yaml")


def one_line_error(code, err: str) -> str:
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_report_pointing_at_a_file_fails_before_anything_is_written(tmp_path, simsched_cli):
    (tmp_path / "notes.txt").write_text("x")
    out = tmp_path / "out"
    args = ("scenario", NOISY, "--out", str(out), "--report", str(tmp_path / "notes.txt"))
    code, _, err = simsched_cli(*args)
    assert "--report: exists and is not a folder" in one_line_error(code, err)
    assert not out.exists()


def test_a_folder_given_as_an_output_file(tmp_path, simsched_cli):
    code, _, err = simsched_cli("workload", NOISY, "--out", str(tmp_path))
    assert "--out: is a folder, not a file" in one_line_error(code, err)


def test_report_on_a_damaged_results_folder(tmp_path, simsched_cli):
    results = tmp_path / "results"
    code, _, _ = simsched_cli("scenario", NOISY, "--out", str(results))
    assert code in (0, None)
    (results / "requests.csv").write_text("x,y\n")
    code, _, err = simsched_cli("report", str(results), "--out", str(tmp_path / "r"))
    assert "requests.csv: header: missing column(s)" in one_line_error(code, err)
    assert not (tmp_path / "r").exists()


def test_validate_reads_each_variants_own_trace(tmp_path, simsched_cli):
    scenario = tmp_path / "x.yaml"
    shutil.copy(NOISY, scenario)
    text = scenario.read_text().replace(
        "  - name: service_token_drr_with_admission\n    set: {}",
        "  - name: service_token_drr_with_admission\n    set: {trace: {path: gone.csv}}",
    )
    scenario.write_text(text)
    code, _, err = simsched_cli("validate", str(scenario))
    message = one_line_error(code, err)
    assert "variant 'service_token_drr_with_admission'" in message
    assert "no such trace file" in message


@pytest.mark.parametrize("flag", ["--out", "--report"])
def test_an_output_below_a_file(tmp_path, flag, simsched_cli):
    (tmp_path / "f").write_text("x")
    code, _, err = simsched_cli("scenario", NOISY, flag, str(tmp_path / "f" / "d"))
    assert f"{flag}:" in one_line_error(code, err)
