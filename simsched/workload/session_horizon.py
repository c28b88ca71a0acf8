"""A session's last instant, bounded before the run.

A session's turns are sent one after another: turn k+1 leaves `think_ms[k+1]` after turn k's
answer, and under `on_shed: retry` a shed turn is sent again `retry_after_ms` after its 429, at
most `max_retries` times. Think times are drawn before the run (session_plans.py), so the
client's own share of a session's last instant is known up front:

    last = start + sum(think of turns 2..n) + n * max_retries * retry_after_ms   (retry)
    last = start + sum(think of turns 2..n)                                      (end)

The cluster's share (each turn's wait and service) comes on top and is bounded by the clock
check during the run. If the client's share alone passes `MAX_TIME_MS`, the run could only end
by blaming the cluster's speed, so it is refused here, naming the setting that weighs most.
"""

from __future__ import annotations

import numpy as np

from simsched.errors import InputError
from simsched.workload.limits import MAX_TIME_MS


def check_session_horizon(
    spec, starts_ms: np.ndarray, turns: np.ndarray, think_ms: np.ndarray, where: str
) -> None:
    """Refuse sessions whose turns could be sent past the clock bound; `where` names the
    tenant's arrivals (the caller names the scenario file)."""
    if len(turns) == 0:
        return
    parts = session_parts(spec, starts_ms, turns, think_ms)
    last = parts["start"] + parts["think_time_ms"] + parts["retry_after_ms"]
    worst = int(np.argmax(last))
    if last[worst] <= MAX_TIME_MS:
        return
    field = max(parts, key=lambda name: parts[name][worst])
    raise InputError(
        "",
        f"{where}.{field}",
        f"session {worst} could send its last turn as late as {last[worst]:.6g} ms (start "
        f"{parts['start'][worst]:.6g} + think times {parts['think_time_ms'][worst]:.6g} + "
        f"retries at worst {parts['retry_after_ms'][worst]:.6g}), beyond the {MAX_TIME_MS:g} ms "
        "(about 31,700 years) a simulation clock resolves; lower start, turns, think_time_ms, "
        "max_retries or retry_after_ms",
    )


def session_parts(
    spec, starts_ms: np.ndarray, turns: np.ndarray, think_ms: np.ndarray
) -> dict[str, np.ndarray]:
    """Per session, in ms: its start, the sum of its think times (the first turn has none:
    it leaves at the start), and the worst case of its retries' backoffs."""
    first = np.concatenate([[0], np.cumsum(turns)[:-1]]).astype(np.int64)
    think = np.asarray(think_ms, dtype=np.float64)
    thinking = np.add.reduceat(think, first) - think[first]
    retries = spec.max_retries * spec.retry_after_ms if spec.on_shed == "retry" else 0.0
    return {
        "start": np.asarray(starts_ms, dtype=np.float64),
        "think_time_ms": thinking,
        "retry_after_ms": turns.astype(np.float64) * retries,
    }
