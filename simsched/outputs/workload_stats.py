"""Look at a workload before simulating it: per-tenant statistics, and export as a trace CSV.

Statistics per tenant: request count; mean rate = 1 / mean inter-arrival gap in req/s;
CV (std/mean, population std) of inter-arrival gaps; nearest-rank percentiles of token counts
(`simsched.results.percentiles`, unrounded). Undefined values (a single request, a zero span) are NaN
rather than 0, so they cannot pass for measurements.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simsched.outputs.atomic import write_text_atomic
from simsched.results.percentiles import nearest_rank
from simsched.sim.requests import CLASS_NAMES
from simsched.workload.table import RequestTable
from simsched.workload.trace_csv import COLUMNS as TRACE_COLUMNS

PERCENTILES = (50, 90, 99)
ALL = "all"


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
        values = getattr(table, column)[mask]
        for p in PERCENTILES:
            row[f"{column}_p{p}"] = nearest_rank(values, p)
    return row


def _mean_rate(arrivals: np.ndarray) -> float:
    # n arrivals span n - 1 gaps: the rate is 1 / mean gap (a 15 ms period reads 66.67/s)
    span_ms = arrivals[-1] - arrivals[0] if len(arrivals) else 0.0
    return (len(arrivals) - 1) / (span_ms / 1000.0) if span_ms > 0 else float("nan")


def _cv(gaps: np.ndarray) -> float:
    mean = gaps.mean() if len(gaps) else 0.0
    return float(gaps.std() / mean) if mean > 0 else float("nan")


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
        columns=list(TRACE_COLUMNS),
    )
    # repr-style floats (pandas' default) are the shortest text that parses to the same double
    return write_text_atomic(Path(path), frame.to_csv(index=False, lineterminator="\n"))
