"""Issue 21 item 3: a staging folder left by a writer killed mid-write (SIGKILL runs no cleanup)
is removed by the next write of the same target; one whose writer still runs, one of another
target and one without a writer id are left alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simsched.outputs.atomic import remove_stale_staging, staging_folder
from simsched.outputs.files import write_result
from simsched.results.simulate import simulate

REPO = Path(__file__).resolve().parents[2]


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _stage(parent: Path, name: str) -> Path:
    folder = parent / name
    folder.mkdir()
    (folder / "requests.csv").write_text("half a file", encoding="utf-8")
    return folder


def test_only_stale_folders_of_the_same_target_go(tmp_path: Path) -> None:
    dead, alive = _dead_pid(), os.getppid()  # pytest's parent outlives this test
    stale = _stage(tmp_path, f".out-{dead}-abcd_123")
    kept = [
        _stage(tmp_path, f".out-{alive}-abcd_123"),  # its writer runs
        _stage(tmp_path, f".out-2-{dead}-abcd_123"),  # target `out-2`'s, not `out`'s
        _stage(tmp_path, ".out-abcd_123"),  # no writer id: an older run's, unknown
        _stage(tmp_path, f".out-{dead}-abcd_1234"),  # not a name staging_folder makes
    ]
    (tmp_path / "out").mkdir()
    assert remove_stale_staging(tmp_path, "out") == [stale]
    assert not stale.exists() and all(folder.exists() for folder in kept)


def test_the_next_write_removes_what_a_killed_write_left(tmp_path: Path) -> None:
    stale = _stage(tmp_path, f".out-{_dead_pid()}-zz9_8765")
    result = simulate(REPO / "scenarios" / "noisy_neighbor.yaml", ["request_count_no_admission"])
    write_result(result, tmp_path / "out")
    assert not stale.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_staging_names_carry_the_writer_id(tmp_path: Path) -> None:
    with staging_folder(tmp_path / "out") as staging:
        assert staging.name.startswith(f".out-{os.getpid()}-")
        assert remove_stale_staging(tmp_path, "out") == []  # our own: alive


@pytest.mark.slow  # a real writer process, killed
@pytest.mark.skipif(sys.platform != "linux", reason="SIGKILL of a child")
def test_sigkill_mid_write_then_a_rerun_leaves_only_the_output(tmp_path: Path) -> None:
    # a writer that stages, writes part of a file and is killed before publishing
    script = (
        "import sys, time; from pathlib import Path\n"
        "from simsched.outputs.atomic import staging_folder\n"
        "with staging_folder(Path(sys.argv[1])) as s:\n"
        "    (s / 'requests.csv').write_text('part'); print(s.name, flush=True); time.sleep(60)\n"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path / "out")], stdout=subprocess.PIPE, text=True
    )
    name = writer.stdout.readline().strip()
    assert (tmp_path / name).is_dir()
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    writer.stdout.close()
    time.sleep(0.05)
    with staging_folder(tmp_path / "out"):
        assert not (tmp_path / name).exists()


def test_a_single_file_write_removes_the_staging_files_killed_writers_left(tmp_path: Path) -> None:
    """`workload --out`, `sweep --out`, `calibrate --out` write one file through a staging
    file: a killed writer's (its id in the name) goes at the next write of the same file."""
    from simsched.outputs.atomic import write_text_atomic

    dead, alive = _dead_pid(), os.getppid()
    stale = tmp_path / f".w.csv.{dead}-abcd_123.tmp"
    kept = [
        tmp_path / f".w.csv.{alive}-abcd_123.tmp",  # its writer runs
        tmp_path / f".w.csv.2.{dead}-abcd_123.tmp",  # another target's (`w.csv.2`)
        tmp_path / ".w.csv.abcd_123.tmp",  # no writer id
    ]
    for path in (stale, *kept):
        path.write_text("half a file", encoding="utf-8")
    write_text_atomic(tmp_path / "w.csv", "a,b\n")
    assert not stale.exists() and all(path.exists() for path in kept)
    assert (tmp_path / "w.csv").read_text(encoding="utf-8") == "a,b\n"


def test_a_seed_beyond_the_result_tables_integers_is_an_input_error() -> None:
    from simsched.config.loading import load_scenario
    from simsched.errors import InputError

    with pytest.raises(InputError, match="seed"):
        load_scenario(REPO / "scenarios" / "noisy_neighbor.yaml", ["seed=18446744073709551615"])
