"""Per-tenant metrics of one variant: the one definition behind tenants.csv, sweeps and plans.

`simsched plan --slo tenant_chat_pro.p99_ttft_ms<=500` judges the same number that `simsched sweep`
puts in the `p99_ttft_ms` column and tenants.csv holds: `metrics_rows` are the result's tenant
rows, keyed by `tenant` instead of `tenant_id`. A metric with no value, a latency percentile of
no served request, is NaN, never 0 (which would pass any latency target).

A row per declared tenant (declaration order) and optionally an `all` row. Counts cover every
request; latency percentiles (nearest-rank, 2 decimals) cover admitted requests. A request is
*good* when it was admitted and meets its class's TTFT target and, where set, its TPOT target;
goodput and output tokens per second are over the variant's span, first arrival to last finish,
so the tenants' rates add up to the `all` row's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from simsched.config.classes import CLASS_NAMES
from simsched.config.loading import resolve_variants
from simsched.results.chargeback import COLUMNS as CHARGEBACK_COLUMNS
from simsched.results.flow_shed import with_flow_shed_columns
from simsched.results.frames import SimulationResult, TenantRows, admitted, class_rows
from simsched.results.percentiles import nearest_rank
from simsched.sim.recorder import SHED_REASONS, STATUS_OK
from simsched.workload.build import tenant_rng
from simsched.workload.session_plans import planned_turns

ALL = "all"
# Turn-level columns: present when some variant has `sessions` tenants, empty for other tenants
SESSION_COUNTS = ["turns_planned", "turns_answered", "sessions_cut_short"]
SESSION_METRICS = [*SESSION_COUNTS, "turn_loss_rate"]
# metrics that are shares of a whole (0 to 1): a margin on them reads in percentage points,
# since as a share of a target such as shed_rate <= 0.001 it would read -25229.6%
SHARE_METRICS = frozenset(
    {
        "shed_rate",
        "turn_loss_rate",
        "service_share",
        "weight_share",
        "slo_attainment",
        "peak_dispatch_kv_occupancy_ratio",
    }
)
LATENCIES = ("ttft_ms", "tpot_ms", "e2e_ms", "queue_wait_ms")
PERCENTILES = (50, 90, 99)


def tenant_metric_rows(
    variant: str, scenario, frame: pd.DataFrame, *, include_all: bool = False
) -> list[dict[str, Any]]:
    planned = planned_turns(scenario, tenant_rng)
    good = good_requests(frame, scenario.slo)
    span_s = _span_ms(frame) / 1000.0
    admitted_tokens = _admitted_tokens(frame)
    total_weight = sum(t.weight for t in scenario.tenants)
    tenant_rows = TenantRows(frame)
    columns = row_columns(frame)
    rows = []
    for tenant in scenario.tenants:
        mine = tenant_rows.of(tenant.id)
        row = _row(variant, tenant.id, _part(columns, mine), good[mine], span_s)
        row |= {"priority": tenant.priority, "weight": tenant.weight}
        row["service_share"] = _share(row["admitted_service_tokens"], admitted_tokens)
        row["weight_share"] = _share(tenant.weight, total_weight)
        row["slo_met"] = _slo_met(row, tenant.priority, scenario.slo)
        row |= _tenant_turns(frame, mine, planned, tenant.id)
        rows.append(row)
    if include_all:
        overall = _row(variant, ALL, columns, good, span_s)
        overall |= turn_metrics(frame, planned, scenario.tenant_ids())
        overall |= {"priority": "", "weight": total_weight, "service_share": 1.0}
        overall |= {"weight_share": 1.0, "slo_met": all(r["slo_met"] for r in rows)}
        rows.append(overall)
    return with_flow_shed_columns([_ordered(row) for row in rows], frame, scenario)


def good_requests(frame: pd.DataFrame, slo) -> np.ndarray:
    """Admitted requests within their class's TTFT (and TPOT, where set) targets."""
    interactive = class_rows(frame, "interactive")
    ok = admitted(frame)
    ttft_limit = np.where(interactive, slo.interactive_ttft_ms, slo.batch_ttft_ms)
    good = ok & (frame["ttft_ms"].to_numpy() <= ttft_limit)
    tpot_limit = np.where(interactive, _or_inf(slo.interactive_tpot_ms), _or_inf(slo.batch_tpot_ms))
    tpot = frame["tpot_ms"].to_numpy()
    return good & (np.isnan(tpot) | (tpot <= tpot_limit))  # one-token answers have no TPOT


# The columns a tenant row reads, as arrays: a row filters these, not the whole frame (a
# DataFrame filter per tenant was most of a small run's per-tenant cost).
ROW_COLUMNS = (
    "status_code",
    "reason",
    "service_tokens",
    "decode_tokens",
    *LATENCIES,
    "kv_occupancy_ratio",
)
Columns = dict[str, np.ndarray]


def row_columns(frame: pd.DataFrame) -> Columns:
    return {column: frame[column].to_numpy() for column in ROW_COLUMNS}


def _part(columns: Columns, mask: np.ndarray) -> Columns:
    return {column: values[mask] for column, values in columns.items()}


def _tenant_turns(
    frame: pd.DataFrame, mine: np.ndarray, planned: dict[str, np.ndarray], tenant: str
) -> dict[str, Any]:
    if tenant not in planned:  # sends no turns: no need to filter the frame
        return dict.fromkeys(SESSION_METRICS)
    return turn_metrics(frame[mine], planned, [tenant])


def _row(variant: str, tenant: str, part: Columns, good: np.ndarray, span_s: float) -> dict:
    submitted = len(part["status_code"])
    ok = part["status_code"] == STATUS_OK
    reasons = part["reason"]
    row: dict[str, Any] = {"variant": variant, "tenant_id": tenant, "submitted": submitted}
    row |= {"admitted": int(ok.sum()), "shed": int((~ok).sum())}
    row |= {reason: int((reasons == reason).sum()) for reason in SHED_REASONS}
    row["shed_rate"] = round(row["shed"] / submitted, 6) if submitted else 0.0
    row["admitted_service_tokens"] = int(part["service_tokens"][ok].sum())
    output_tokens = int(part["decode_tokens"][ok].sum())
    row["output_tokens_per_s"] = round(output_tokens / span_s, 3) if span_s > 0 else 0.0
    row["goodput_rps"] = round(int(good.sum()) / span_s, 4) if span_s > 0 else 0.0
    row["slo_attainment"] = round(float(good.mean()), 6) if submitted else 1.0
    for column in LATENCIES:
        values = part[column].astype(np.float64)[ok]
        values = values[~np.isnan(values)]
        for p in PERCENTILES:
            # no admitted request, no value: NaN never meets an SLO (0.0 would always)
            row[f"p{p}_{column}"] = nearest_rank(values, p, digits=2)
    kv = part["kv_occupancy_ratio"]
    # the reference's figure: occupancy as each decision computed it (not blocks held)
    row["peak_dispatch_kv_occupancy_ratio"] = round(float(np.nanmax(kv)), 4) if len(kv) else 0.0
    return row


def turn_metrics(
    part: pd.DataFrame, planned: dict[str, np.ndarray], tenants: list[str]
) -> dict[str, Any]:
    """Turn-level figures over the session tenants among `tenants` (None for the rest: they
    send no turns). A shed turn's retry is a new request, so the shed rate counts requests;
    these count turns: each session's planned turns against the turns answered, a turn never
    sent (its session ended at a 429) counting as lost."""
    sessions = [tenant for tenant in tenants if tenant in planned]
    if not sessions:
        return dict.fromkeys(SESSION_METRICS)
    ok = admitted(part)
    tenant_ids, numbers = part["tenant_id"].to_numpy(), part["session"].to_numpy()
    total = answered_total = cut_short = 0
    for tenant in sessions:
        turns = planned[tenant]
        mine = numbers[ok & (tenant_ids == tenant)].astype(np.int64)
        answered = np.bincount(mine, minlength=len(turns))
        total += int(turns.sum())
        answered_total += int(answered.sum())
        cut_short += int((answered < turns).sum())
    return {
        "turns_planned": total,
        "turns_answered": answered_total,
        "sessions_cut_short": cut_short,
        "turn_loss_rate": round(1.0 - answered_total / total, 6) if total else 0.0,
    }


def _slo_met(row: dict[str, Any], priority: str, slo) -> bool:
    """The tenant's p99 TTFT (and p99 TPOT, where a target is set) within its class's targets."""
    ttft, tpot = (
        (slo.interactive_ttft_ms, slo.interactive_tpot_ms)
        if priority == "interactive"
        else (slo.batch_ttft_ms, slo.batch_tpot_ms)
    )
    if not row["submitted"]:
        return True  # asked nothing, refused nothing
    if not row["admitted"]:
        return False  # shedding everything meets no latency target
    return bool(row["p99_ttft_ms"] <= ttft and (tpot is None or row["p99_tpot_ms"] <= tpot))


COLUMNS = [
    "variant",
    "tenant_id",
    "priority",
    "weight",
    "submitted",
    "admitted",
    "shed",
    *SHED_REASONS,
    "shed_rate",
    *SESSION_METRICS,
    "admitted_service_tokens",
    "service_share",
    "weight_share",
    "output_tokens_per_s",
    "goodput_rps",
    "slo_attainment",
    *(f"p{p}_{column}" for column in LATENCIES for p in PERCENTILES),
    "peak_dispatch_kv_occupancy_ratio",
    "slo_met",
]


def _ordered(row: dict[str, Any]) -> dict[str, Any]:
    return {key: row[key] for key in COLUMNS}


def _admitted_tokens(frame: pd.DataFrame) -> int:
    ok = admitted(frame)
    return int(frame["service_tokens"].to_numpy()[ok].sum())


def _span_ms(frame: pd.DataFrame) -> float:
    if not len(frame):
        return 0.0
    ends = np.concatenate([frame["arrival_ms"].to_numpy(), frame["finish_ms"].to_numpy()])
    return float(np.nanmax(ends) - frame["arrival_ms"].min())


def _share(part: float, whole: float) -> float:
    return round(part / whole, 4) if whole else 0.0


def _or_inf(limit: float | None) -> float:
    return np.inf if limit is None else limit


# --- the same rows for sweeps, plans and reports: keyed by `tenant`, metrics only ------------
# Counts stay integers in sweep tables; everything else is a float or a verdict.
COUNT_METRICS = [
    "submitted",
    "admitted",
    "shed",
    *SHED_REASONS,
    *SESSION_COUNTS,
    "admitted_service_tokens",
]
DESCRIPTIVE = ("variant", "tenant_id", "priority", "weight")
METRIC_COLUMNS = [column for column in COLUMNS if column not in DESCRIPTIVE]


def metrics_rows(result: SimulationResult, classes: bool = False) -> list[dict[str, Any]]:
    """Per variant: a row per declared tenant (declaration order), then the `all` row; with
    `classes`, then a row per priority class that has requests (`interactive`, `batch`), unless a
    tenant has the class's name (its row is the one under that name, as in SLOs)."""
    rows = result.tenants.to_dict("records")
    if classes:  # each variant's class rows right after its own rows
        named = {(r["variant"], r["tenant_id"]) for r in rows}  # a tenant named like a class wins
        pooled = [
            r for r in class_metric_rows(result) if (r["variant"], r["tenant_id"]) not in named
        ]
        order = {v: i for i, v in enumerate(dict.fromkeys(r["variant"] for r in rows))}
        rows = sorted(rows + pooled, key=lambda r: order.get(r["variant"], len(order)))
    return [{"variant": r["variant"], "tenant": r["tenant_id"]} | _metrics(r) for r in rows]


def class_metric_rows(result: SimulationResult) -> list[dict[str, Any]]:
    """A row per variant and priority class, pooling the class's requests (each request counts
    in the class it was sent in), by the same `_row` as the tenants' rows, over the same span."""
    resolved = dict(resolve_variants(result.scenario))
    rows = []
    for variant, frame in result.requests.groupby("variant", sort=False):
        scenario = resolved[variant]
        good = good_requests(frame, scenario.slo)
        span_s = _span_ms(frame) / 1000.0
        admitted_tokens = _admitted_tokens(frame)
        total_weight = sum(t.weight for t in scenario.tenants)
        classes = frame["priority_class"].to_numpy()
        columns = row_columns(frame)
        planned = planned_turns(scenario, tenant_rng)
        for name in CLASS_NAMES:
            mine = classes == name
            if not mine.any():
                continue
            row = _row(str(variant), name, _part(columns, mine), good[mine], span_s)
            weight = sum(t.weight for t in scenario.tenants if t.priority == name)
            row |= {"priority": name, "weight": weight}
            row["service_share"] = _share(row["admitted_service_tokens"], admitted_tokens)
            row["weight_share"] = _share(weight, total_weight)
            row["slo_met"] = _slo_met(row, name, scenario.slo)
            members = [t.id for t in scenario.tenants if t.priority == name]
            row |= turn_metrics(frame[mine], planned, members)
            rows.append(_ordered(row))
    return rows


def _metrics(row: dict[str, Any]) -> dict[str, Any]:
    # a result without sessions has no turn columns: their metrics have no value
    metrics = {column: row.get(column) for column in METRIC_COLUMNS}
    # where the run charged back, its columns ride along (a sweep's cost per tenant)
    return metrics | {column: row[column] for column in CHARGEBACK_COLUMNS if column in row}


def tenant_frame(rows: list[dict[str, Any]], sessions: bool) -> pd.DataFrame:
    """The result's tenant rows as a frame; the turn columns only when some variant has
    sessions (other results' files stay as they were), their counts whole numbers with blanks
    for tenants that send no turns."""
    if not sessions:  # the columns chosen at construction: a drop afterwards costs a copy
        keys = dict.fromkeys(key for row in rows for key in row)  # every row's, first seen first
        return pd.DataFrame(rows, columns=[key for key in keys if key not in SESSION_METRICS])
    frame = pd.DataFrame(rows)
    for column in SESSION_COUNTS:
        frame[column] = frame[column].astype("Int64")
    frame["turn_loss_rate"] = frame["turn_loss_rate"].astype("float64")
    return frame


def session_summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """summary.json's turn figures of one variant: per session tenant, and `all` over them."""
    return {
        row["tenant_id"]: {column: row[column] for column in SESSION_METRICS}
        for row in rows
        if row["turns_planned"] is not None
    }
