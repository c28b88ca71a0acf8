"""Simulation results: per-request and per-tenant frames, and per-variant summaries.

`summary` has exactly the reference's `summarize_outcomes` shape (the golden test compares it
key by key); SLO verdicts and other additions live beside it, in `slo`. Percentiles are
nearest-rank: the value at index `ceil(p/100 * n) - 1` of the sorted values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simsched.config.scenario import Scenario
from simsched.results.percentiles import nearest_rank as percentile
from simsched.results.tenants import ALL
from simsched.sim.recorder import STATUS_OK, Recorder
from simsched.sim.requests import CLASS_NAMES
from simsched.workload.table import RequestTable

REQUEST_COLUMNS = [
    "variant",
    "request_id",
    "tenant_id",
    "priority_class",
    "status_code",
    "reason",
    "service_tokens",
    "prefill_tokens",
    "decode_tokens",
    "kv_blocks",
    "arrival_ms",
    "dispatch_ms",
    "ttft_ms",
    "queue_wait_ms",
    "kv_occupancy_ratio",
    "first_token_ms",
    "finish_ms",
    "tpot_ms",
    "e2e_ms",
    "preemptions",
    "replica",
]


def nearest_rank(values: Any, p: float) -> float:
    """The reference's percentile: nearest-rank, rounded to 2 decimals, 0.0 for no values."""
    return percentile(values, p, digits=2, empty=0.0)


@dataclass
class SimulationResult:
    scenario: Scenario
    variants: list[str]
    requests: pd.DataFrame
    tenants: pd.DataFrame
    summaries: dict[str, dict[str, Any]]
    slo: dict[str, dict[str, Any]] = field(default_factory=dict)
    timeline: pd.DataFrame = field(default_factory=pd.DataFrame)
    fairness: dict[str, dict[str, float]] = field(default_factory=dict)
    capacity: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario.name,
            "comparison": self.summaries,
            "slo": self.slo,
            "fairness": self.fairness,
            "capacity": self.capacity,
        }


def variant_frame(
    variant: str, scenario: Scenario, table: RequestTable, costs: tuple, recorder: Recorder
) -> pd.DataFrame:
    """One row per request, in decision order."""
    seq = np.asarray(recorder.order, dtype=np.int64)
    service_tokens, kv_blocks = costs
    tenant_ids = np.array([t.id for t in scenario.tenants], dtype=object)

    def column(values: list, dtype=np.float64) -> np.ndarray:
        return np.asarray(values, dtype=dtype)[seq]

    frame = pd.DataFrame(
        {
            "variant": variant,
            "request_id": table.request_id[seq],
            "tenant_id": tenant_ids[table.tenant[seq]],
            "priority_class": np.array(CLASS_NAMES, dtype=object)[table.lane[seq]],
            "status_code": column(recorder.status_code, np.int64),
            "reason": column(recorder.reason, object),
            "service_tokens": service_tokens[seq],
            "prefill_tokens": table.prefill_tokens[seq],
            "decode_tokens": table.decode_tokens[seq],
            "kv_blocks": kv_blocks[seq],
            "arrival_ms": table.arrival_ms[seq],
            "dispatch_ms": column(recorder.dispatch_ms),
            "ttft_ms": column(recorder.ttft_ms),
            "queue_wait_ms": column(recorder.queue_wait_ms),
            "kv_occupancy_ratio": column(recorder.kv_occupancy_ratio),
            "first_token_ms": column(recorder.first_token_ms),
            "finish_ms": column(recorder.finish_ms),
            "preemptions": column(recorder.preemptions, np.int64),
            "replica": column(recorder.replica, np.int64),
            "_seq": seq,
        }
    )
    return _add_latencies(frame)


def _add_latencies(frame: pd.DataFrame) -> pd.DataFrame:
    """TPOT (mean time per output token after the first) and end-to-end latency."""
    after_first = frame["decode_tokens"].to_numpy() - 1
    decode_ms = frame["finish_ms"].to_numpy() - frame["first_token_ms"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        tpot = np.where(after_first > 0, decode_ms / np.maximum(after_first, 1), np.nan)
    frame["tpot_ms"] = np.round(tpot, 3)
    frame["e2e_ms"] = np.round(frame["finish_ms"].to_numpy() - frame["arrival_ms"].to_numpy(), 2)
    return frame


def summarize(frame: pd.DataFrame) -> dict[str, Any]:
    """The reference's `summarize_outcomes`, over one variant's rows in decision order."""
    ok = frame["status_code"].to_numpy() == STATUS_OK
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
    ok = rows["status_code"].to_numpy() == STATUS_OK
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


def capacity_summary(timeline: pd.DataFrame, overall: dict[str, Any]) -> dict[str, float]:
    """How hard the cluster worked: KV utilisation over the sampled timeline, and the variant's
    output-token rate and goodput (from its `all` tenant row)."""
    used = timeline.groupby("time_ms")[["kv_blocks_used", "kv_blocks_total"]].sum()
    ratio = (used["kv_blocks_used"] / used["kv_blocks_total"]).to_numpy()
    return {
        "mean_kv_utilisation": round(float(ratio.mean()), 4) if len(ratio) else 0.0,
        "peak_kv_utilisation": round(float(ratio.max()), 4) if len(ratio) else 0.0,
        "output_tokens_per_s": overall["output_tokens_per_s"],
        "goodput_rps": overall["goodput_rps"],
    }


def _interactive_starved(frame: pd.DataFrame) -> bool:
    """Interactive requests were sent and none admitted: the reference's p99 of no values
    reads 0.0, which must not pass for a met target."""
    interactive = frame["priority_class"].to_numpy() == "interactive"
    admitted = frame["status_code"].to_numpy() == STATUS_OK
    return bool(interactive.any() and not (interactive & admitted).any())
