"""A flat metrics row per variant and tenant (plus an `all` row) from a `SimulationResult`.

Sweeps, capacity plans and reports share these rows, so a metric has one name and one definition
everywhere: `simsched plan --slo tenant_chat_pro.p99_ttft_ms<=500` judges the same number that
`simsched sweep` puts in the `p99_ttft_ms` column. Percentiles are nearest-rank, as everywhere in
simsched; latency percentiles cover admitted requests only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from simsched.loading import resolve_variants
from simsched.recorder import SHED_REASONS, STATUS_OK
from simsched.results import SimulationResult, nearest_rank
from simsched.scenario import Scenario

ALL = "all"  # the `tenant` of the row that covers every tenant of a variant

COUNT_METRICS = ["submitted", "admitted", "shed", *SHED_REASONS, "admitted_service_tokens"]
# (column, request column, percentile) over admitted requests
PERCENTILES = [
    ("p50_ttft_ms", "ttft_ms", 50),
    ("p90_ttft_ms", "ttft_ms", 90),
    ("p99_ttft_ms", "ttft_ms", 99),
    ("p50_queue_wait_ms", "queue_wait_ms", 50),
    ("p99_queue_wait_ms", "queue_wait_ms", 99),
    ("p50_tpot_ms", "tpot_ms", 50),
    ("p99_tpot_ms", "tpot_ms", 99),
    ("p50_e2e_ms", "e2e_ms", 50),
    ("p99_e2e_ms", "e2e_ms", 99),
]
RATIO_METRICS = [
    "shed_rate",
    "service_share",
    "weight_share",
    "peak_kv_occupancy_ratio",
    "slo_attainment",
    "goodput_rps",
]
METRIC_COLUMNS = [*COUNT_METRICS, *RATIO_METRICS, *(name for name, _, _ in PERCENTILES), "slo_met"]
ROW_KEYS = ["variant", "tenant", *METRIC_COLUMNS]


def metrics_rows(result: SimulationResult) -> list[dict[str, Any]]:
    """Per variant: a row per declared tenant (declaration order), then the `all` row."""
    resolved = dict(resolve_variants(result.scenario))
    rows = []
    for variant in result.variants:
        frame = result.requests[result.requests["variant"] == variant]
        tenants = result.tenants[result.tenants["variant"] == variant]
        rows += _variant_rows(variant, resolved[variant], frame, tenants, result.slo[variant])
    return rows


def metrics_frame(result: SimulationResult) -> pd.DataFrame:
    return pd.DataFrame(metrics_rows(result), columns=ROW_KEYS)


def _variant_rows(
    variant: str, scenario: Scenario, frame: pd.DataFrame, tenants: pd.DataFrame, slo: dict
) -> list[dict[str, Any]]:
    span_s = _span_ms(frame) / 1000.0
    within_slo = _within_slo(frame, scenario)
    total_tokens = int(frame["service_tokens"].to_numpy()[_admitted(frame)].sum())
    total_weight = float(tenants["weight"].sum())
    rows = []
    for tenant in tenants.itertuples(index=False):
        part = frame["tenant_id"].to_numpy() == tenant.tenant_id
        row = _row(variant, tenant.tenant_id, frame[part], within_slo[part], span_s)
        row["service_share"] = _share(row["admitted_service_tokens"], total_tokens)
        row["weight_share"] = _share(tenant.weight, total_weight)
        row["slo_met"] = slo["tenants"].get(tenant.tenant_id)
        rows.append(row)
    overall = _row(variant, ALL, frame, within_slo, span_s)
    overall |= {"service_share": 1.0 if total_tokens else 0.0, "weight_share": 1.0}
    overall["slo_met"] = bool(slo["met"])
    return rows + [overall]


def _row(
    variant: str, tenant: str, part: pd.DataFrame, within_slo: np.ndarray, span_s: float
) -> dict[str, Any]:
    ok = _admitted(part)
    reasons = part["reason"].to_numpy()
    submitted = len(part)
    row: dict[str, Any] = {"variant": variant, "tenant": tenant, "submitted": submitted}
    row |= {"admitted": int(ok.sum()), "shed": int((~ok).sum())}
    row |= {reason: int((reasons == reason).sum()) for reason in SHED_REASONS}
    row["admitted_service_tokens"] = int(part["service_tokens"].to_numpy()[ok].sum())
    row["shed_rate"] = round(row["shed"] / submitted, 6) if submitted else 0.0
    kv = part["kv_occupancy_ratio"].to_numpy()
    row["peak_kv_occupancy_ratio"] = round(float(np.nanmax(kv)), 4) if len(kv) else 0.0
    # with nothing submitted nothing missed its SLO, as tenants.csv's slo_met has it
    row["slo_attainment"] = round(float(within_slo.mean()), 6) if submitted else 1.0
    row["goodput_rps"] = round(int(within_slo.sum()) / span_s, 4) if span_s > 0 else 0.0
    for name, column, p in PERCENTILES:
        row[name] = _percentile(part, column, ok, p)
    return row


def _admitted(frame: pd.DataFrame) -> np.ndarray:
    return frame["status_code"].to_numpy() == STATUS_OK


def _percentile(part: pd.DataFrame, column: str, ok: np.ndarray, p: float) -> float:
    if column not in part:  # a result from a service model without this lifecycle field
        return float("nan")
    values = part[column].to_numpy(dtype=np.float64)[ok]
    return nearest_rank(values[~np.isnan(values)], p)


def _within_slo(frame: pd.DataFrame, scenario: Scenario) -> np.ndarray:
    """Admitted requests whose TTFT meets their class's SLO (shed ones never do)."""
    interactive = frame["priority_class"].to_numpy() == "interactive"
    limit = np.where(interactive, scenario.slo.interactive_ttft_ms, scenario.slo.batch_ttft_ms)
    return _admitted(frame) & (frame["ttft_ms"].to_numpy() <= limit)


def _span_ms(frame: pd.DataFrame) -> float:
    """The run's span, first arrival to last finish; one span per variant, so that the tenants'
    goodputs add up to the `all` row's."""
    if not len(frame):
        return 0.0
    ends = np.concatenate([frame["arrival_ms"].to_numpy(), frame["finish_ms"].to_numpy()])
    return float(np.nanmax(ends) - frame["arrival_ms"].min())


def _share(part: float, whole: float) -> float:
    return round(part / whole, 4) if whole else 0.0
