"""Issue 21: a session's last instant is bounded before the run.

Sessions used to place turns past the simulation clock's bound (1e15 ms) without being refused;
the run then stopped blaming the cluster's speed. Now the client's share of each session's last
instant (start + think times + worst-case retry backoffs, simsched.workload.session_horizon) is
checked before anything runs: exit 2, one line naming the file and the setting that weighs most.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import yaml

from simsched.workload.limits import MAX_TIME_MS
from simsched.workload.session_horizon import session_parts

MAX_THINK_MS = 2**31 - 1  # think_time_ms is a token-like count: its largest value


def session_scenario(start_ms: float, **arrivals: Any) -> dict[str, Any]:
    start = {"kind": "periodic", "start_ms": start_ms, "interval_ms": 1, "count": 1}
    spec = {"kind": "sessions", "start": start} | arrivals
    return {
        "name": "horizon",
        "tenants": [{"id": "chat", "arrivals": spec, "prefill_tokens": 1, "decode_tokens": 1}],
    }


def run_validate(raw: dict, folder: Path, monkeypatch, simsched_cli) -> tuple[int, str]:
    (folder / "x.yaml").write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    monkeypatch.chdir(folder)
    before = (folder / "x.yaml").read_bytes()
    code, _, err = simsched_cli("validate", "x.yaml")
    assert "Traceback" not in err
    assert (folder / "x.yaml").read_bytes() == before
    return code, err.strip()


def test_parts_by_hand() -> None:
    # two sessions: turns 2 and 3; the first turn of each has no think (it leaves at the start)
    spec = SimpleNamespace(on_shed="retry", max_retries=3, retry_after_ms=10.0)
    parts = session_parts(
        spec, np.array([0.0, 100.0]), np.array([2, 3]), np.array([5.0, 7.0, 1.0, 2.0, 3.0])
    )
    assert parts["start"].tolist() == [0.0, 100.0]
    assert parts["think_time_ms"].tolist() == [7.0, 2.0 + 3.0]
    assert parts["retry_after_ms"].tolist() == [2 * 3 * 10.0, 3 * 3 * 10.0]
    ended = SimpleNamespace(on_shed="end", max_retries=3, retry_after_ms=10.0)
    assert session_parts(ended, np.zeros(1), np.array([4]), np.ones(4))["retry_after_ms"] == 0


CASES = {
    # 9.99e14 + 999 thinks of 2e9 ms = 1.000998e15 ms: the start weighs most
    "late start": (
        session_scenario(999e12, turns=1000, think_time_ms=2_000_000_000),
        "x.yaml: tenants[0].arrivals.start: session 0 could send its last turn as late as "
        "1.001e+15 ms",
    ),
    # 2 turns x 1000 retries x 1e12 ms = 2e15 ms of backoff at worst
    "retry backoffs": (
        session_scenario(0, turns=2, on_shed="retry", max_retries=1000, retry_after_ms=1e12),
        "x.yaml: tenants[0].arrivals.retry_after_ms: session 0 could send its last turn as "
        "late as 2e+15 ms",
    ),
    # 4e14 + 280,000 thinks of 2^31-1 ms = 4e14 + 6.013e14 ms: the think times weigh most
    "long thinks": (
        session_scenario(4e14, turns=280_001, think_time_ms=MAX_THINK_MS),
        "x.yaml: tenants[0].arrivals.think_time_ms: session 0 could send its last turn as "
        f"late as {4e14 + 280_000 * MAX_THINK_MS:.6g} ms",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_session_past_the_clock_is_refused(
    case: str, tmp_path: Path, monkeypatch, simsched_cli
) -> None:
    raw, expected = CASES[case]
    code, err = run_validate(raw, tmp_path, monkeypatch, simsched_cli)
    assert code == 2
    assert err.count("\n") == 0 and err.startswith(expected), err


def test_a_session_ending_exactly_on_the_bound_is_accepted(
    tmp_path: Path, monkeypatch, simsched_cli
) -> None:
    # 1e15 - 1e12 + 1000 thinks of 1e9 ms = exactly 1e15 ms; one millisecond later is refused
    exact = MAX_TIME_MS - 1e12
    raw = session_scenario(exact, turns=1001, think_time_ms=1_000_000_000)
    assert run_validate(raw, tmp_path, monkeypatch, simsched_cli)[0] == 0
    raw = session_scenario(exact + 1, turns=1001, think_time_ms=1_000_000_000)
    code, err = run_validate(raw, tmp_path, monkeypatch, simsched_cli)
    assert code == 2 and "tenants[0].arrivals.start" in err
