"""Look at a workload before simulating it: per-tenant statistics (`simsched workload`).

Statistics per tenant: request count; mean rate = 1 / mean inter-arrival gap in req/s;
CV (std/mean, population std) of inter-arrival gaps; nearest-rank percentiles of token counts
(`results.percentiles`, unrounded). Undefined values (a single request, a zero span) are NaN
rather than 0, so they cannot pass for measurements.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simsched.results.percentiles import nearest_rank
from simsched.workload.table import RequestTable

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
