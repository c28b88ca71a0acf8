"""Per-variant summaries: the reference study's summary and SLO verdict, and cluster capacity.

`summarize` has exactly the reference's `summarize_outcomes` shape (the golden test compares it
key by key), including its conventions: nearest-rank percentiles rounded to 2 decimals, and 0.0
for a percentile of no values. The verdict never lets that 0.0 pass for a met target. Per-tenant
metrics with the project's own conventions (NaN for no value) are in `tenants.py`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import is_integer_dtype

from simsched.config.scenario import Scenario
from simsched.results.frames import TenantRows, admitted, class_rows
from simsched.results.percentiles import nearest_rank as percentile
from simsched.results.tenants import ALL
from simsched.sim.recorder import STATUS_OK


def nearest_rank(values: Any, p: float) -> float:
    """The reference's percentile: nearest-rank, rounded to 2 decimals, 0.0 for no values."""
    return percentile(values, p, digits=2, empty=0.0)


def summarize(frame: pd.DataFrame) -> dict[str, Any]:
    """The reference's `summarize_outcomes`, over one variant's rows in decision order."""
    ok = admitted(frame)
    interactive = class_rows(frame, "interactive")
    ttft = frame["ttft_ms"].to_numpy()
    shed_reasons = frame.loc[~ok, "reason"].value_counts(sort=False).to_dict()
    return {
        "total_requests": len(frame),
        "admitted_requests": int(ok.sum()),
        "shed_429_requests": int((~ok).sum()),
        "interactive_p50_ttft_ms": nearest_rank(ttft[ok & interactive], 50),
        "interactive_p99_ttft_ms": nearest_rank(ttft[ok & interactive], 99),
        "batch_p99_ttft_ms": nearest_rank(ttft[ok & ~interactive], 99),
        "peak_kv_occupancy_ratio": round(float(frame["kv_occupancy_ratio"].max()), 4)
        if len(frame)
        else 0.0,
        "shed_reasons": {str(k): int(v) for k, v in shed_reasons.items()},
        "tenants": {tid: _tenant_summary(rows) for tid, rows in sorted(_by_tenant(frame))},
    }


def _by_tenant(frame: pd.DataFrame):
    """Each tenant's columns the summary reads, as arrays (a pandas groupby of the whole frame
    was a fixed cost of every run)."""
    tenant_rows = TenantRows(frame)
    columns = {
        name: frame[name].to_numpy() for name in ("status_code", "ttft_ms", "service_tokens")
    }
    for tid in tenant_rows.names:
        mine = tenant_rows.of(tid)
        yield tid, {name: values[mine] for name, values in columns.items()}


def _tenant_summary(rows: dict[str, np.ndarray]) -> dict[str, Any]:
    ok = rows["status_code"] == STATUS_OK
    ttft = rows["ttft_ms"][ok]
    return {
        "submitted": len(ok),
        "admitted": int(ok.sum()),
        "shed_429": int((~ok).sum()),
        "admitted_service_tokens": int(rows["service_tokens"][ok].sum()),
        "p50_ttft_ms": nearest_rank(ttft, 50),
        "p99_ttft_ms": nearest_rank(ttft, 99),
    }


def slo_verdict(
    scenario: Scenario, frame: pd.DataFrame, summary: dict[str, Any], tenants: list[dict]
) -> dict[str, Any]:
    """The reference study's question (interactive p99 TTFT within target) and each tenant's
    verdict against its own class's targets."""
    limit = scenario.slo.interactive_ttft_ms
    return {
        "interactive_ttft_ms": limit,
        "interactive_p99_ttft_ms": summary["interactive_p99_ttft_ms"],
        "met": summary["interactive_p99_ttft_ms"] <= limit and not _interactive_starved(frame),
        "tenants": {row["tenant_id"]: row["slo_met"] for row in tenants if row["tenant_id"] != ALL},
    }


def capacity_summary(
    timeline: pd.DataFrame, overall: dict[str, Any], kv_peak_ratio: float
) -> dict[str, Any]:
    """How hard the cluster worked: the fullest its KV cache got (from the cluster's own count,
    not the figures recorded at decisions), the mean KV use over the sampled timeline, and the
    variant's output-token rate and goodput (from its `all` tenant row).

    A cluster holds at most what it has, so both KV figures are bounded by 1; `token_server`
    does not enforce its capacity (as the reference), and `kv_over_capacity` says when its
    accounting passed the total."""
    ratio = kv_use_per_instant(timeline)
    return {
        "peak_kv_held_ratio": round(min(1.0, kv_peak_ratio), 4),
        "kv_over_capacity": bool(kv_peak_ratio > 1),
        "mean_kv_utilisation": round(float(ratio.mean()), 4) if len(ratio) else 0.0,
        "output_tokens_per_s": overall["output_tokens_per_s"],
        "goodput_rps": overall["goodput_rps"],
    }


def kv_use_per_instant(timeline: pd.DataFrame) -> np.ndarray:
    """The fleet's KV blocks in use over its blocks, per sampled instant in time order (each
    replica's use capped at its capacity)."""
    used, total = timeline["kv_blocks_used"], timeline["kv_blocks_total"]
    if not (is_integer_dtype(used) and is_integer_dtype(total)):  # no samples: object columns
        per_instant = used.clip(upper=total).groupby(timeline["time_ms"]).sum()
        return (per_instant / total.groupby(timeline["time_ms"]).sum()).to_numpy()
    # Block counts are integers, so sums over an instant's replicas are exact in any order:
    # bincount over the instants, not a pandas groupby per run (the fixed cost of a small run).
    _, instant = np.unique(timeline["time_ms"].to_numpy(), return_inverse=True)
    total = total.to_numpy()
    used = np.minimum(used.to_numpy(), total)
    return np.bincount(instant, weights=used) / np.bincount(instant, weights=total)


def _interactive_starved(frame: pd.DataFrame) -> bool:
    """Interactive requests were sent and none admitted: the reference's p99 of no values
    reads 0.0, which must not pass for a met target."""
    interactive = class_rows(frame, "interactive")
    return bool(interactive.any() and not (interactive & admitted(frame)).any())
