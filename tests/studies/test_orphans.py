"""Issue 21 item 3: sweep and plan workers end when their command dies, SIGKILL included.

SIGKILL runs no cleanup: the workers, and the forkserver and resource tracker that live while
a worker holds their pipes, used to run on, each holding its memory. Each worker now waits for
its command to end (`simsched.studies.orphans`) and then ends itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from simsched.studies import orphans

REPO = Path(__file__).resolve().parents[2]
STUDY = REPO / "scenarios" / "noisy_neighbor.yaml"
SLOW = "tenants.0.arrivals={kind: poisson, rate_per_s: 4000, duration_s: 60}"


def _sleeper() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


@pytest.mark.parametrize("kind", sorted(orphans.WAITERS))
def test_each_waiter_returns_once_the_process_ends(kind: str, monkeypatch) -> None:
    if kind == "pidfd" and not hasattr(orphans.os, "pidfd_open"):
        pytest.skip("no pidfd on this system")
    monkeypatch.setattr(orphans, "POLL_S", 0.02)
    process = _sleeper()
    waiter = threading.Thread(target=orphans.WAITERS[kind], args=(process.pid,), daemon=True)
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive()  # the process still runs: it waits
    process.kill()
    process.wait()  # reaped, as an init process reaps an orphan's dead parent
    waiter.join(5.0)
    assert not waiter.is_alive()


def test_a_waiter_for_a_process_already_gone_returns() -> None:
    process = _sleeper()
    process.kill()
    process.wait()
    for wait in orphans.WAITERS.values():
        wait(process.pid)  # returns at once


# slow: a real sweep or plan process with workers, killed, then the process table watched.
@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        ("sweep", "--grid", "seed=1,2,3,4", "--out", "x.csv"),
        ("plan", "--vary", "cluster.total_kv_blocks", "--range", "1600:3200", "--step", "400",
         "--slo", "all.p99_ttft_ms<=1000"),
    ],
    ids=["sweep", "plan"],
)  # fmt: skip
def test_sigkill_leaves_no_process_behind(
    command: tuple[str, ...], tmp_path: Path, processes
) -> None:
    name, *rest = command
    process = subprocess.Popen(
        [sys.executable, "-m", "simsched", name, str(STUDY), "--set", SLOW, "--jobs", "2", *rest],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its session id is its pid: every process it starts keeps it
    )
    # the command, the tracker, the forkserver and two workers
    processes.wait_until(lambda: len(processes.in_session(process.pid)) >= 5, 30.0, poll_s=0.2)
    assert len(processes.in_session(process.pid)) >= 5, "the workers did not start"
    process.send_signal(signal.SIGKILL)
    process.wait()
    processes.wait_until(lambda: not processes.in_session(process.pid), 15.0)
    left = processes.in_session(process.pid)
    for pid in left:  # leave nothing running, whatever the verdict
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not left


# A case heavy enough to still run when the parent is killed: a few minutes of saturating load.
SLOW_CASE = """name: slow
seed: 1
tenants:
  - id: load
    arrivals: {kind: poisson, rate_per_s: 4000, duration_s: 60}
    prefill_tokens: 200
    decode_tokens: 50
cluster: {service_model: continuous_batching}
admission: {enabled: false}
"""


def _slow_calibration(folder: Path) -> Path:
    (folder / "slow.yaml").write_text(SLOW_CASE, encoding="utf-8")
    cases = "".join(
        f"  - {{name: {name}, scenario: slow.yaml, metric: mean_tpot_ms, measured: 20}}\n"
        for name in ("first", "second")  # two cases: one per worker
    )
    path = folder / "cal.yaml"
    path.write_text(
        "settings:\n  - {path: cluster.latency_model.overhead_ms, low: 0, high: 5}\n"
        f"cases:\n{cases}",
        encoding="utf-8",
    )
    return path


# slow: a real calibrate process with workers, killed, then the process table watched.
@pytest.mark.slow
def test_sigkill_of_calibrate_leaves_no_process_behind(tmp_path: Path, processes) -> None:
    calibration = _slow_calibration(tmp_path)
    process = subprocess.Popen(
        [sys.executable, "-m", "simsched", "calibrate", str(calibration), "--jobs", "2"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    processes.wait_until(lambda: len(processes.in_session(process.pid)) >= 5, 30.0, poll_s=0.2)
    assert len(processes.in_session(process.pid)) >= 5, "the workers did not start"
    process.send_signal(signal.SIGKILL)
    process.wait()
    processes.wait_until(lambda: not processes.in_session(process.pid), 15.0)
    left = processes.in_session(process.pid)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not left
