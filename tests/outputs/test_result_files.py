"""`--out DIR`: all three files or none, byte-identical from run to run."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml

import simsched.outputs.files
from simsched.config.loading import load_scenario
from simsched.errors import InputError
from simsched.outputs.files import write_result
from simsched.results.simulate import simulate

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "noisy_neighbor.yaml"
FILES = ["requests.csv", "summary.json", "tenants.csv", "timeline.csv"]


def contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def bad_trace_scenario(folder: Path) -> Path:
    """The study with one tenant replayed from a trace naming an undeclared tenant."""
    raw = yaml.safe_load(SCENARIO.read_text(encoding="utf-8"))
    for key in ("arrivals", "prefill_tokens", "decode_tokens"):
        del raw["tenants"][0][key]
    raw["trace"] = {"path": "requests.csv"}
    (folder / "requests.csv").write_text(
        "request_id,tenant_id,arrival_ms,prefill_tokens,decode_tokens\nr1,ghost,0,10,10\n"
    )
    path = folder / "bad.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def test_two_runs_give_byte_identical_files(tmp_path: Path, simsched_cli) -> None:
    assert simsched_cli("scenario", str(SCENARIO), "--out", str(tmp_path / "a")).code == 0
    assert simsched_cli("scenario", str(SCENARIO), "--out", str(tmp_path / "b")).code == 0
    first, second = contents(tmp_path / "a"), contents(tmp_path / "b")
    assert list(first) == FILES
    assert first == second
    assert all(data.endswith(b"\n") and b"\r" not in data for data in first.values())


def test_an_existing_folder_gets_the_files_replaced(tmp_path: Path, simsched_cli) -> None:
    fresh, out = tmp_path / "fresh", tmp_path / "out"
    assert simsched_cli("scenario", str(SCENARIO), "--out", str(fresh)).code == 0
    out.mkdir()
    for name in FILES:
        (out / name).write_text("stale\n")
    (out / "notes.txt").write_text("mine\n")
    assert simsched_cli("scenario", str(SCENARIO), "--out", str(out)).code == 0
    assert {k: v for k, v in contents(out).items() if k != "notes.txt"} == contents(fresh)
    assert (out / "notes.txt").read_text() == "mine\n"  # other files are left alone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh", "out"]  # no temporary left


def test_a_failed_run_leaves_no_folder(tmp_path: Path, simsched_cli) -> None:
    scenario = bad_trace_scenario(tmp_path)
    before = sorted(tmp_path.iterdir())
    run = simsched_cli("scenario", str(scenario), "--out", str(tmp_path / "out"))
    assert run.code == 2
    assert "requests.csv line 2: tenant 'ghost' is not declared" in run.err
    assert sorted(tmp_path.iterdir()) == before  # neither the folder nor a temporary one


def test_a_failed_run_leaves_an_existing_folder_alone(tmp_path: Path, simsched_cli) -> None:
    scenario = bad_trace_scenario(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_text("{}\n")
    assert simsched_cli("scenario", str(scenario), "--out", str(out)).code == 2
    assert contents(out) == {"summary.json": b"{}\n"}


@pytest.fixture(scope="module")
def result():
    return simulate(load_scenario(SCENARIO), ["request_count_no_admission"])


def test_write_result_returns_the_written_paths(tmp_path: Path, result) -> None:
    written = write_result(result, tmp_path / "out")
    assert [p.name for p in written] == FILES
    assert all(p.parent == tmp_path / "out" for p in written)


def test_a_new_folder_is_not_private(tmp_path: Path, result) -> None:
    # the staging folder comes from mkdtemp (0700); the result should follow the umask
    write_result(result, tmp_path / "out")
    mask = os.umask(0o022)
    os.umask(mask)
    mode = stat.S_IMODE((tmp_path / "out").stat().st_mode)
    assert mode == 0o777 & ~mask


def test_an_interrupted_write_leaves_nothing(
    tmp_path: Path, result, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure after some files are written (a full disk, say): no folder, no temporary."""
    real_write = simsched.outputs.files._write_files

    def write_then_fail(res, folder: Path) -> None:
        real_write(res, folder)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(simsched.outputs.files, "_write_files", write_then_fail)
    with pytest.raises(InputError) as info:
        write_result(result, tmp_path / "out")
    assert str(info.value) == f"{tmp_path / 'out'}: --out: cannot write: No space left on device"
    assert list(tmp_path.iterdir()) == []


def test_out_that_is_a_file_is_refused(tmp_path: Path, result) -> None:
    target = tmp_path / "taken"
    target.write_text("x")
    with pytest.raises(InputError, match="exists and is not a folder"):
        write_result(result, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_text_that_needs_quoting_survives_the_csv(tmp_path: Path) -> None:
    import pandas as pd

    from simsched.outputs.files import write_csv

    frame = pd.DataFrame({"request_id": ["a,b", 'say "hi"', "plain"], "ttft_ms": [1.5, None, 2]})
    write_csv(frame, tmp_path / "x.csv")
    back = pd.read_csv(tmp_path / "x.csv")
    assert back["request_id"].tolist() == frame["request_id"].tolist()
    assert back["ttft_ms"].isna().tolist() == [False, True, False]
