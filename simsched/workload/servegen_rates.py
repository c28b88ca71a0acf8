"""ServeGen rate series: per-client `chunk-N-trace.csv` files, the window span, the busiest clients.

Each file is a series of 600 s windows, one row per window: its start (s), the client's request
rate and the inter-arrival CV (further columns, the fitted distribution, are not used). Every
client must share one window grid; an idle window has rate 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simsched.errors import InputError

WINDOW_S = 600
TRACE_FILE = re.compile(r"chunk-(\d+)-trace\.csv")
TRACE_COLUMNS = ["window_start_s", "rate", "cv", "pattern", "shape", "scale"]


@dataclass(frozen=True)
class Span:
    """The selected windows: their start times (s) and positions in the data."""

    starts: np.ndarray
    first: int

    @property
    def end_s(self) -> float:
        return float(self.starts[-1]) + WINDOW_S


def read_rates(directory: Path, label: str):
    """Client ids, the shared window grid, and (clients x windows) rate and CV matrices."""
    if not directory.is_dir():
        raise InputError(label, "", "no such folder")
    files = {int(m.group(1)): p for p in directory.iterdir() if (m := TRACE_FILE.fullmatch(p.name))}
    if not files:
        raise InputError(label, "", "holds no chunk-N-trace.csv files (is it a ServeGen folder?)")
    clients = sorted(files)
    frames = [_read_trace_file(files[c]) for c in clients]
    grid = frames[0]["window_start_s"].to_numpy()
    for client, frame in zip(clients, frames, strict=True):
        if not np.array_equal(frame["window_start_s"].to_numpy(), grid):
            raise InputError(str(files[client]), "", "its windows differ from the other clients'")
    rates = np.vstack([f["rate"].to_numpy(dtype=np.float64) for f in frames])
    cvs = np.vstack([f["cv"].to_numpy(dtype=np.float64) for f in frames])
    return clients, grid, rates, cvs


def _read_trace_file(path: Path) -> pd.DataFrame:
    try:
        frame = pd.read_csv(path, header=None, names=TRACE_COLUMNS, usecols=[0, 1, 2])
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise InputError(str(path), "", f"not a ServeGen trace CSV: {str(exc).strip()}") from None
    numbers = frame.apply(pd.to_numeric, errors="coerce")
    bad = (
        numbers[["window_start_s", "rate"]].isna().any(axis=1) | (numbers["rate"] < 0)
    ).to_numpy()
    if bad.any():
        raise InputError(f"{path} line {int(np.argmax(bad)) + 1}", "", "bad window start or rate")
    return numbers


def select_windows(grid: np.ndarray, start: int, count: int | None, label: str) -> Span:
    total = len(grid)
    if not 0 <= start < total:
        raise InputError(label, "start_window", f"{start} is outside the data (0..{total - 1})")
    count = total - start if count is None else count
    if count < 1:
        raise InputError(label, "windows", f"must be at least 1, not {count}")
    if start + count > total:
        last = start + count - 1
        raise InputError(
            label, "windows", f"windows {start}..{last} are outside the data (0..{total - 1})"
        )
    return Span(starts=grid[start : start + count].astype(np.float64), first=start)


def rank(rates: np.ndarray, top: int, label: str) -> tuple[list[int], list[int]]:
    """The `top` busiest clients (ties: lower id first) and the other active ones."""
    requests = rates.sum(axis=1)
    active = np.flatnonzero(requests > 0)
    if not len(active):
        raise InputError(label, "windows", "no client sends requests in the selected windows")
    ranked = active[np.argsort(-requests[active], kind="stable")]
    return ranked[:top].tolist(), sorted(ranked[top:].tolist())


def group_rates(rates: np.ndarray, cvs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Some clients' summed rate per window, and their rate-weighted mean CV."""
    total = rates.sum(axis=0)
    cv_known = np.where(np.isfinite(cvs) & (cvs > 0), cvs, 0.0)
    weighted = (rates * cv_known).sum(axis=0)
    known_rate = (rates * (cv_known > 0)).sum(axis=0)
    # 1.0 (Poisson) where the window is idle or no member reports a CV
    cv = np.divide(weighted, known_rate, out=np.ones_like(total), where=known_rate > 0)
    return total, cv
