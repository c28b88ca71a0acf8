"""Which rows of a trace are replayed: a time window, then a row limit (then a time scale).

Times are measured from the trace's first row; the kept rows are renumbered from the first one
kept, so a replay starts at 0 whatever the window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simsched.errors import InputError


@dataclass(frozen=True)
class TraceColumns:
    arrival_ms: np.ndarray  # float64, the first row at 0
    prefill_tokens: np.ndarray  # int64
    decode_tokens: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.arrival_ms)


def check_window(label: str, time_scale, start_s, duration_s, max_requests) -> None:
    bad = [
        (not 0 < time_scale < math.inf, f"time_scale must be greater than 0, not {time_scale}"),
        (start_s is not None and not start_s >= 0, f"start_s must be >= 0, not {start_s}"),
        (
            duration_s is not None and not duration_s > 0,
            f"duration_s must be > 0, not {duration_s}",
        ),
        (max_requests is not None and max_requests < 1, "max_requests must be at least 1"),
    ]
    for failed, message in bad:
        if failed:
            raise InputError(label, "", message)


def window(columns: TraceColumns, label: str, start_s, duration_s, max_requests) -> TraceColumns:
    times = columns.arrival_ms
    span_s = float(times[-1]) / 1000.0
    start_ms = 1000.0 * (start_s or 0.0)
    if start_s is not None and start_s > span_s:
        raise InputError(
            label, "", f"start_s {start_s:g} is past the end of the trace ({span_s:.1f} s)"
        )
    end_ms = np.inf if duration_s is None else start_ms + 1000.0 * duration_s
    keep = np.flatnonzero((times >= start_ms) & (times < end_ms))[:max_requests]
    if not len(keep):  # only a bounded window can miss every row: the last row is >= start
        where = f"[{start_ms / 1000:g} s, {end_ms / 1000:g} s)"
        raise InputError(label, "", f"the window {where} selects no requests")
    # Rounding to 1 ns (finer than any trace's clock) drops the subtraction's last-bit noise,
    # so that 29898.966 is written as such rather than as 29898.965999999957.
    kept = np.round(times[keep] - times[keep[0]], 6)
    return TraceColumns(kept, columns.prefill_tokens[keep], columns.decode_tokens[keep])
