"""Issue 10 item 13: SIGTERM is handled like Ctrl-C.

It used to kill `simsched` outright, leaving a hidden staging folder and, under
`sweep --jobs 2`, worker processes that ran on. Now the command stops as on SIGINT: one line on
stderr, exit status 143 (128 + SIGTERM), nothing left in the output folder's parent, no worker
process left behind.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STUDY = REPO / "scenarios" / "noisy_neighbor.yaml"
SLOW = "tenants.0.arrivals={kind: poisson, rate_per_s: 4000, duration_s: 60}"

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
# The waits only stop a hung run: a loaded machine took over 20 s to start a worker.
START_LIMIT_S = 120.0


def _catches_sigterm(pid: int) -> bool:
    """Whether the process has installed its SIGTERM handler (the SigCgt mask in /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught, 16) >> (signal.SIGTERM - 1) & 1)


def _start(tmp_path: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "simsched", *args],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _terminate(process: subprocess.Popen) -> str:
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.slow  # a real process, signalled
def test_sigterm_during_a_run_leaves_nothing(tmp_path: Path, processes) -> None:
    process = _start(tmp_path, "scenario", str(STUDY), "--set", SLOW, "--out", "out")
    # signal once the handler is in place: a fixed sleep raced the import on a loaded machine
    processes.wait_until(
        lambda: _catches_sigterm(process.pid) or process.poll() is not None, START_LIMIT_S
    )
    time.sleep(0.5)
    assert process.poll() is None, "the run ended before the signal"
    assert "interrupted" in _terminate(process)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # a real process and its workers, signalled
def test_sigterm_stops_sweep_workers(tmp_path: Path, processes) -> None:
    process = _start(
        tmp_path, "sweep", str(STUDY), "--set", SLOW, "--grid", "seed=1,2,3,4", "--jobs", "2",
        "--out", "x.csv",
    )  # fmt: skip
    workers: set[int] = set()

    def settled() -> bool:  # every worker started: no process forked for a second
        nonlocal workers
        before, workers = workers, processes.descendants(process.pid)
        time.sleep(1.0)
        return len(workers) >= 2 and workers == before

    processes.wait_until(settled, START_LIMIT_S)
    assert workers, "no worker process started"
    _terminate(process)
    processes.wait_until(lambda: not any(processes.alive(pid) for pid in workers), 60.0)
    assert not [pid for pid in workers if processes.alive(pid)]
    assert list(tmp_path.iterdir()) == []


def test_sigterm_inside_a_library_that_wraps_it_is_still_an_interruption(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The signal landed while pydantic built a validator, which turned the handler's exception
    into a SchemaError: exit 143 and one line, as for any SIGTERM, not a traceback."""
    from simsched.cli import app as cli

    def run() -> None:
        try:
            cli._terminate(signal.SIGTERM, None)
        except BaseException as exc:
            raise ValueError("Error building validator") from exc

    monkeypatch.setattr(cli, "app", run)
    monkeypatch.setattr(cli.Terminated, "signalled", False)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as exit_info:
            cli.main()
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert exit_info.value.code == 128 + signal.SIGTERM
    assert capsys.readouterr().err.strip() == "simsched: interrupted (SIGTERM)"


def test_an_error_with_no_signal_keeps_its_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    from simsched.cli import app as cli

    def run() -> None:
        raise ValueError("a bug")

    monkeypatch.setattr(cli, "app", run)
    monkeypatch.setattr(cli.Terminated, "signalled", False)
    with pytest.raises(ValueError, match="a bug"):
        cli.main()
