"""Look at a workload before simulating it: per-tenant statistics, and export as a trace CSV.

Statistics per tenant: request count; mean rate = requests / (last - first arrival) in req/s;
CV (std/mean, population std) of inter-arrival gaps; nearest-rank percentiles of token counts
(the sorted value at index ceil(p/100 * n) - 1, as in `results.py`). Undefined values (a single
request, a zero span) are NaN rather than 0, so they cannot pass for measurements.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from simsched.errors import InputError
from simsched.requests import CLASS_NAMES
from simsched.workload.table import RequestTable

PERCENTILES = (50, 90, 99)
ALL = "all"
TRACE_COLUMNS = [
    "request_id",
    "tenant_id",
    "arrival_ms",
    "prefill_tokens",
    "decode_tokens",
    "priority_class",
]


def workload_stats(table: RequestTable, tenant_ids: list[str]) -> pd.DataFrame:
    """One row per tenant (in `tenant_ids` order, tenant index = position) and a final `all`."""
    rows = [_stats(tid, table, table.tenant == i) for i, tid in enumerate(tenant_ids)]
    rows.append(_stats(ALL, table, np.ones(len(table), dtype=bool)))
    return pd.DataFrame(rows)


def _stats(tenant_id: str, table: RequestTable, mask: np.ndarray) -> dict:
    arrivals = np.sort(table.arrival_ms[mask])
    row = {
        "tenant_id": tenant_id,
        "requests": int(mask.sum()),
        "mean_rate_per_s": _mean_rate(arrivals),
        "interarrival_cv": _cv(np.diff(arrivals)),
    }
    for column in ("prefill_tokens", "decode_tokens"):
        values = np.sort(getattr(table, column)[mask])
        for p in PERCENTILES:
            row[f"{column}_p{p}"] = _nearest_rank(values, p)
    return row


def _mean_rate(arrivals: np.ndarray) -> float:
    span_ms = arrivals[-1] - arrivals[0] if len(arrivals) else 0.0
    return len(arrivals) / (span_ms / 1000.0) if span_ms > 0 else float("nan")


def _cv(gaps: np.ndarray) -> float:
    mean = gaps.mean() if len(gaps) else 0.0
    return float(gaps.std() / mean) if mean > 0 else float("nan")


def _nearest_rank(ordered: np.ndarray, p: float) -> float:
    if not len(ordered):
        return float("nan")
    index = min(len(ordered) - 1, max(0, int(np.ceil(p / 100.0 * len(ordered))) - 1))
    return float(ordered[index])


def write_trace_csv(table: RequestTable, tenant_ids: list[str], path: str | Path) -> Path:
    """The workload in the project's trace CSV format; `read_trace_csv` reads it back exactly."""
    frame = pd.DataFrame(
        {
            "request_id": table.request_id,
            "tenant_id": np.asarray(tenant_ids, dtype=object)[table.tenant],
            "arrival_ms": table.arrival_ms,
            "prefill_tokens": table.prefill_tokens,
            "decode_tokens": table.decode_tokens,
            "priority_class": np.asarray(CLASS_NAMES, dtype=object)[table.lane],
        },
        columns=TRACE_COLUMNS,
    )
    # repr-style floats (pandas' default) are the shortest text that parses to the same double
    return write_text_atomic(Path(path), frame.to_csv(index=False, lineterminator="\n"))


def write_text_atomic(path: Path, text: str) -> Path:
    """Write via a temporary file in the same folder and `os.replace`, so no half files."""
    try:
        handle, temporary = tempfile.mkstemp(
            prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
        )
    except OSError as exc:
        raise InputError(str(path), "", f"cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; an output file is not
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
