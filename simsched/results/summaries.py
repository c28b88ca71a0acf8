"""Per-variant summaries: the reference study's summary and SLO verdict, and cluster capacity.

`summarize` has exactly the reference's `summarize_outcomes` shape (the golden test compares it
key by key), including its conventions: nearest-rank percentiles rounded to 2 decimals, and 0.0
for a percentile of no values. The verdict never lets that 0.0 pass for a met target. Per-tenant
metrics with the project's own conventions (NaN for no value) are in `tenants.py`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from simsched.config.scenario import Scenario
from simsched.results.frames import admitted
from simsched.results.percentiles import nearest_rank as percentile
from simsched.results.tenants import ALL


def nearest_rank(values: Any, p: float) -> float:
    """The reference's percentile: nearest-rank, rounded to 2 decimals, 0.0 for no values."""
    return percentile(values, p, digits=2, empty=0.0)


def summarize(frame: pd.DataFrame) -> dict[str, Any]:
    """The reference's `summarize_outcomes`, over one variant's rows in decision order."""
    ok = admitted(frame)
    interactive = frame["priority_class"].to_numpy() == "interactive"
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
    return ((str(tid), rows) for tid, rows in frame.groupby("tenant_id", sort=False))


def _tenant_summary(rows: pd.DataFrame) -> dict[str, Any]:
    ok = admitted(rows)
    ttft = rows["ttft_ms"].to_numpy()[ok]
    return {
        "submitted": len(rows),
        "admitted": int(ok.sum()),
        "shed_429": int((~ok).sum()),
        "admitted_service_tokens": int(rows["service_tokens"].to_numpy()[ok].sum()),
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
    used = timeline["kv_blocks_used"].clip(upper=timeline["kv_blocks_total"])
    per_instant = used.groupby(timeline["time_ms"]).sum()
    totals = timeline.groupby("time_ms")["kv_blocks_total"].sum()
    ratio = (per_instant / totals).to_numpy()
    return {
        "peak_kv_held_ratio": round(min(1.0, kv_peak_ratio), 4),
        "kv_over_capacity": bool(kv_peak_ratio > 1),
        "mean_kv_utilisation": round(float(ratio.mean()), 4) if len(ratio) else 0.0,
        "output_tokens_per_s": overall["output_tokens_per_s"],
        "goodput_rps": overall["goodput_rps"],
    }


def _interactive_starved(frame: pd.DataFrame) -> bool:
    """Interactive requests were sent and none admitted: the reference's p99 of no values
    reads 0.0, which must not pass for a met target."""
    interactive = frame["priority_class"].to_numpy() == "interactive"
    return bool(interactive.any() and not (interactive & admitted(frame)).any())
