"""Issue 10 item 13 (outputs and command lines): refused before the run, nothing half-written.

An unwritable `--out` is found before the simulation, not after it; a results folder whose
`timeline.csv` became a folder is left exactly as it was; `workload` does not overwrite its own
input; `--dask ''` is an error; absurd sweep and plan grids are refused.
"""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STUDY = REPO / "scenarios" / "noisy_neighbor.yaml"
FAST = ("--variant", "service_token_drr_with_admission")


def one_line(code: object, err: str, *words: str) -> None:
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err


@pytest.fixture
def no_simulation(monkeypatch):
    """Fail the test if a simulation starts: the problem must be found before it."""

    def refuse(*args, **kwargs):
        raise AssertionError("the run started before the output was checked")

    # Modules that bind `simulate` by name on import must be imported before the patch, or
    # they keep the refusing stand-in for the rest of the test session.
    importlib.import_module("simsched.studies.runners")
    importlib.import_module("simsched.studies.sweep")

    monkeypatch.setattr("simsched.results.simulate.simulate", refuse)
    monkeypatch.setattr("simsched.workload.build.build_workload", refuse)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
@pytest.mark.parametrize("flag", ["--out", "--report"])
def test_an_unwritable_folder_is_found_before_the_run(
    monkeypatch, tmp_path, no_simulation, flag, simsched_cli
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = simsched_cli("scenario", str(STUDY), *FAST, flag, "/proc/sim/out")
    one_line(code, err, flag, "cannot write")


def test_a_folder_under_a_file_is_found_before_the_run(
    monkeypatch, tmp_path, no_simulation, simsched_cli
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("afile.txt").write_text("notes\n")
    for args in (
        ("scenario", str(STUDY), "--out", "afile.txt/out"),
        ("workload", str(STUDY), "--out", "afile.txt/x.csv"),
        ("sweep", str(STUDY), "--grid", "seed=1,2", "--out", "afile.txt/x.csv"),
    ):
        code, _, err = simsched_cli(*args)
        one_line(code, err, "afile.txt")


def test_a_name_over_255_bytes_is_refused(
    monkeypatch, tmp_path, no_simulation, simsched_cli
) -> None:
    monkeypatch.chdir(tmp_path)
    long = "x" * 300
    for args in (
        ("scenario", str(STUDY), "--out", f"{long}/out"),
        ("workload", str(STUDY), "--out", f"{long}.csv"),
        ("sweep", str(STUDY), "--grid", "seed=1,2", "--out", f"{long}.csv"),
    ):
        code, _, err = simsched_cli(*args)
        one_line(code, err, "255")


def test_replacing_a_results_folder_is_all_or_nothing(monkeypatch, tmp_path, simsched_cli) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = simsched_cli("scenario", str(STUDY), *FAST, "--out", "out")
    assert code in (0, None), err
    before = {p.name: p.read_bytes() for p in Path("out").iterdir()}
    Path("out/timeline.csv").unlink()
    Path("out/timeline.csv").mkdir()
    del before["timeline.csv"]
    code, _, err = simsched_cli("scenario", str(STUDY), *FAST, "--set", "seed=7", "--out", "out")
    one_line(code, err, "timeline.csv")
    after = {p.name: p.read_bytes() for p in Path("out").iterdir() if p.is_file()}
    assert after == before  # nothing replaced
    assert Path("out/timeline.csv").is_dir()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_workload_does_not_overwrite_its_input(monkeypatch, tmp_path, simsched_cli) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(STUDY, "x.yaml")
    text = Path("x.yaml").read_bytes()
    code, _, err = simsched_cli("workload", "x.yaml", "--out", "./x.yaml")
    one_line(code, err, "x.yaml", "--out")
    assert Path("x.yaml").read_bytes() == text


def test_an_empty_dask_address_is_an_error(
    monkeypatch, tmp_path, no_simulation, simsched_cli
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = simsched_cli("sweep", str(STUDY), "--grid", "seed=1,2", "--dask", "",
        "--out", "x.csv",
    )  # fmt: skip
    one_line(code, err, "--dask")
    assert not Path("x.csv").exists()


@pytest.mark.parametrize(
    "args",
    [
        ("sweep", str(STUDY), "--grid", "seed=1,2", "--seeds", "1000000000", "--out", "x.csv"),
        (
            "plan",
            str(STUDY),
            "--vary",
            "cluster.total_kv_blocks",
            "--range",
            "1:1e12",
            "--slo",
            "all.shed<=0",
        ),
        (
            "plan",
            str(STUDY),
            "--vary",
            "cluster.service_tokens_per_ms",
            "--range",
            "1:2",
            "--step",
            "1e-12",
            "--slo",
            "all.shed<=0",
        ),
    ],  # fmt: skip
)
def test_absurd_grids_are_refused_at_once(monkeypatch, tmp_path, no_simulation, args, simsched_cli):
    monkeypatch.chdir(tmp_path)
    code, _, err = simsched_cli(*args)
    one_line(code, err)


def test_an_output_onto_a_fifo_is_refused(
    monkeypatch, tmp_path, no_simulation, simsched_cli
) -> None:
    import os
    import stat

    monkeypatch.chdir(tmp_path)
    os.mkfifo("pipe.csv")
    for args in (
        ("workload", str(STUDY), "--out", "pipe.csv"),
        ("sweep", str(STUDY), "--grid", "seed=1,2", "--out", "pipe.csv"),
    ):
        code, _, err = simsched_cli(*args)
        one_line(code, err, "pipe.csv", "not a regular file")
        assert stat.S_ISFIFO(os.stat("pipe.csv").st_mode)  # never replaced by a file


TRACE_ROWS = "arrival_ms,prefill_tokens,decode_tokens\n0,100,10\n5,200,20\n"


def _reads(trace: str) -> tuple[str, str]:
    return ("--set", f"tenants.0.prefill_tokens={{dist: trace, path: {trace}}}")


@pytest.mark.parametrize(
    ("trace", "args"),
    [
        ("t.csv", ("workload", "x.yaml", *_reads("t.csv"), "--out", "t.csv")),
        ("t.csv", ("sweep", "x.yaml", *_reads("t.csv"), "--grid", "seed=1,2", "--out", "t.csv")),
        ("r.ci.csv", ("sweep", "x.yaml", *_reads("r.ci.csv"), "--seeds", "2", "--out", "r.csv")),
        ("u.csv", ("sweep", "x.yaml", *_reads("t.csv"),
                   "--grid", "tenants.0.prefill_tokens.path=t.csv,u.csv", "--out", "u.csv")),
        ("out/requests.csv", ("scenario", "x.yaml", *FAST, *_reads("out/requests.csv"),
                              "--out", "out")),
    ],
)  # fmt: skip
def test_no_output_overwrites_a_trace_the_scenario_reads(
    monkeypatch, tmp_path, no_simulation, trace: str, args: tuple[str, ...], simsched_cli
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(STUDY, "x.yaml")
    Path("out").mkdir()
    for name in {"t.csv", trace}:
        Path(name).write_text(TRACE_ROWS)
    code, _, err = simsched_cli(*args)
    one_line(code, err, "--out", "is the input", trace.split("/")[-1])
    assert Path(trace).read_text() == TRACE_ROWS
