"""Dispersion of the service tenants received while they were backlogged, window by window.

Over a whole run every tenant that is not shed gets its demand, so whole-run dispersion
(results/dispersion.py) is the same under every fairness policy. What a policy decides is how
the service is shared while several tenants wait: the fair-queueing definition (Demers,
Keshav and Shenker 1989; for LLM serving, Sheng et al., "Fairness in Serving Large Language
Models", OSDI 2024, the VTC paper) compares the service W_i(t1, t2) two tenants receive over an
interval during which both are continuously backlogged. This module reads that per window:

- the run is cut into windows [k*D, (k+1)*D) of D = `fairness.backlog_window_ms`, from 0;
- a tenant is backlogged through window k when one of its backlog periods (results/fairness.py:
  a request's arrival until it leaves the queue, merged per tenant) covers the whole window;
- a window counts when at least two tenants are backlogged through it;
- in a counted window each such tenant i has x_ik = (service tokens of its requests dispatched
  in the window) / weight_i; requests of tenants not backlogged through the window, shed
  requests and requests dispatched outside counted windows are not read;
- `backlogged_service_cv` = the mean over counted windows of std(x_k) / mean(x_k) (population
  standard deviation; a window where every backlogged tenant got nothing counts as 0): 0 when
  every backlogged tenant was served in proportion to its weight in every window;
- `backlogged_starved_share` = the share of (counted window, backlogged tenant) pairs in which
  the tenant was dispatched nothing: a backlogged tenant served nothing for a whole window;
- `backlogged_windows` = how many windows counted (0: the others are null).

Service counts at dispatch (the gateway's decision), whole, so a window shorter than a few
requests' dispatch spacing reads granularity rather than policy.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simsched.errors import InputError
from simsched.results.fairness import backlog_periods, queued_rows
from simsched.results.frames import admitted

DIGITS = 4
MAX_WINDOWS = 1_000_000


def backlogged_windows(periods: np.ndarray, window_ms: float, windows: int) -> np.ndarray:
    """Which of the first `windows` windows the periods cover whole (a boolean per window):
    window k is covered by [begin, end] when begin <= k * D and (k + 1) * D <= end, that is
    for k from ceil(begin / D) to floor(end / D) - 1 (a difference array: one pass)."""
    steps = np.zeros(windows + 1, dtype=np.int64)
    if len(periods):
        first = np.ceil(periods[:, 0] / window_ms).astype(np.int64)
        after = np.minimum(np.floor(periods[:, 1] / window_ms).astype(np.int64), windows)
        whole = first < after
        np.add.at(steps, first[whole], 1)
        np.add.at(steps, after[whole], -1)
    return np.cumsum(steps[:-1]) > 0


def windowed_service(rows: pd.DataFrame, weight: float, window_ms: float, windows: int):
    """Weight-normalised service dispatched in each window."""
    served = rows[admitted(rows)]
    index = np.floor(served["left_ms"].to_numpy(dtype=np.float64) / window_ms).astype(np.int64)
    keep = index < windows
    tokens = served["service_tokens"].to_numpy(dtype=np.float64)[keep] / weight
    return np.bincount(index[keep], weights=tokens, minlength=windows)


def backlog_matrices(frame: pd.DataFrame, weights: dict[str, float], window_ms: float):
    """(backlogged, service): tenants x windows, for the tenants that ever queued."""
    queued = queued_rows(frame)
    if queued.empty:
        return np.zeros((0, 0), dtype=bool), np.zeros((0, 0))
    span_ms = float(queued["left_ms"].max())
    windows = int(np.floor(span_ms / window_ms)) + 1
    if windows > MAX_WINDOWS:  # the arrays below hold one value a window
        raise InputError(
            "",
            "fairness.backlog_window_ms",
            f"{window_ms:g} ms cuts the run ({span_ms:g} ms) into more than {MAX_WINDOWS:,} "
            "windows; give a longer window",
        )
    tenants = [t for t in weights if (queued["tenant_id"] == t).any()]
    backlogged, service = [], []
    for tenant in tenants:
        rows = queued[queued["tenant_id"] == tenant]
        backlogged.append(backlogged_windows(backlog_periods(rows), window_ms, windows))
        service.append(windowed_service(rows, weights[tenant], window_ms, windows))
    return np.array(backlogged), np.array(service)


def window_cv(values: np.ndarray) -> float:
    if not np.any(values):
        return 0.0  # nobody was served: no spread to read (the starved share says it)
    scaled = values / values.max()
    return float(np.std(scaled) / np.mean(scaled))


def backlog_dispersion(
    frame: pd.DataFrame, weights: dict[str, float], window_ms: float
) -> dict[str, float | int | None]:
    backlogged, service = backlog_matrices(frame, weights, window_ms)
    counted = np.flatnonzero(backlogged.sum(axis=0) >= 2) if backlogged.size else []
    cvs, pairs, starved = [], 0, 0
    for k in counted:
        values = service[backlogged[:, k], k]
        cvs.append(window_cv(values))
        pairs += len(values)
        starved += int(np.count_nonzero(values == 0))
    return {
        "backlog_window_ms": window_ms,
        "backlogged_windows": len(counted),
        "backlogged_service_cv": round(float(np.mean(cvs)), DIGITS) if cvs else None,
        "backlogged_starved_share": round(starved / pairs, DIGITS) if pairs else None,
    }
