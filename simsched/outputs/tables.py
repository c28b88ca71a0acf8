"""Plain-text tables for the terminal: the variants side by side, overall and per tenant."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from simsched.config.classes import BATCH, INTERACTIVE
from simsched.outputs.chargeback_rows import chargeback_rows
from simsched.outputs.cluster_table import cluster_rows, table_notes
from simsched.outputs.fairness_rows import dispersion_rows
from simsched.outputs.provisioned_table import provisioned_rows
from simsched.results.flow_shed import REASON_LABELS as FLOW_REASON_LABELS
from simsched.results.frames import SimulationResult
from simsched.sim.recorder import SHED_REASONS

REASON_LABELS = {
    "shed_kv_watermark": "shed: KV watermark",
    "shed_queue_wait_slo": "shed: queue-wait SLO",
    "shed_tenant_token_quota": "shed: token quota",
}


def comparison_table(result: SimulationResult) -> str:
    variants = result.variants
    rows: list[tuple[str, list[str]]] = [("", variants)]
    rows.append(("all tenants", [""] * len(variants)))
    rows += _overall_rows(result)
    rows += cluster_rows(result)
    rows += provisioned_rows(result)  # where some variant autoscales
    tenants = result.tenants
    for tenant in result.scenario.tenants:
        header = f"{tenant.id} ({tenant.priority}, weight {tenant.weight:g})"
        rows.append((header, [""] * len(variants)))
        per_variant = [
            tenants[(tenants.variant == v) & (tenants.tenant_id == tenant.id)].iloc[0].to_dict()
            for v in variants
        ]
        timed = [result.facts[v].per_token_timing for v in variants]
        rows += _tenant_rows(per_variant, timed)
        rows += _tenant_turn_rows(per_variant)
        rows += _tenant_hit_rows(result, per_variant)
    notes = "".join(f"\nnote: {note}" for note in table_notes(result))
    return _render(rows, title=_title(result)) + notes


def _title(result: SimulationResult) -> str:
    scenario = result.scenario
    return f"{scenario.name}: {scenario.description}" if scenario.description else scenario.name


def _overall_rows(result: SimulationResult) -> list[tuple[str, list[str]]]:
    summaries = [result.summaries[v] for v in result.variants]
    slo = [result.slo[v] for v in result.variants]
    fairness = [result.fairness[v] for v in result.variants]
    capacity = [result.capacity[v] for v in result.variants]
    limit = result.scenario.slo.interactive_ttft_ms
    rows = [
        ("  submitted", [str(s["total_requests"]) for s in summaries]),
        ("  admitted", [str(s["admitted_requests"]) for s in summaries]),
    ]
    for reason in SHED_REASONS:
        rows.append(
            (
                f"  {REASON_LABELS[reason]}",
                [str(s["shed_reasons"].get(reason, 0)) for s in summaries],
            )
        )
    for reason, label in FLOW_REASON_LABELS.items():  # flow control's, where a run has them
        if any(reason in s["shed_reasons"] for s in summaries):
            rows.append((f"  {label}", [str(s["shed_reasons"].get(reason, 0)) for s in summaries]))
    rows += [
        ("  p50 TTFT ms, interactive", _class_ms(result, "interactive_p50_ttft_ms", INTERACTIVE)),
        ("  p99 TTFT ms, interactive", _class_ms(result, "interactive_p99_ttft_ms", INTERACTIVE)),
        ("  p99 TTFT ms, batch", _class_ms(result, "batch_p99_ttft_ms", BATCH)),
        (
            "  admitted service tokens",
            [
                str(sum(t["admitted_service_tokens"] for t in s["tenants"].values()))
                for s in summaries
            ],
        ),
        (
            "  peak KV occupancy at decisions",
            [f"{s['peak_kv_occupancy_ratio']:.4f}" for s in summaries],
        ),
        ("  peak KV held (fullest replica)", [_held(c) for c in capacity]),
        *_hit_rows(result),
        *_turn_rows(result),
        (f"  interactive p99 TTFT <= {limit:g} ms", [_verdict(v["met"]) for v in slo]),
        *_targets_row(result.scenario.slo, slo),
        (
            "  Jain index, admitted work / weight",
            [_index(f["jain_index_admitted"]) for f in fairness],
        ),
        (
            "  Jain index, share of demand admitted",
            [_index(f["jain_index_demand"]) for f in fairness],
        ),
        (
            "  max backlogged service gap",
            [f"{f['max_backlogged_service_gap']:.0f}" for f in fairness],
        ),
        *dispersion_rows(result),
        *chargeback_rows(result),
    ]
    return rows


def _tenant_rows(
    per_variant: list[dict[str, Any]], timed: list[bool]
) -> list[tuple[str, list[str]]]:
    def column(key: str, fmt=str) -> list[str]:
        return [fmt(row[key]) for row in per_variant]

    def per_token(key: str, fmt) -> list[str]:
        """n/a where the service model has no per-token timing (the token server): its finish
        is a stand-in, so TPOT, and goodput judged with it, would be numbers about nothing."""
        return [fmt(row[key]) if t else "n/a" for row, t in zip(per_variant, timed, strict=True)]

    rows = [
        ("  submitted", column("submitted")),
        ("  admitted", column("admitted")),
    ]
    for reason in SHED_REASONS:
        rows.append((f"  {REASON_LABELS[reason]}", column(reason)))
    for reason, label in FLOW_REASON_LABELS.items():  # flow control's, where a run has them
        if any(row.get(reason, 0) for row in per_variant):
            rows.append((f"  {label}", column(reason)))
    rows += [
        ("  p50 TTFT ms", column("p50_ttft_ms", _ms)),
        ("  p99 TTFT ms", column("p99_ttft_ms", _ms)),
        ("  p99 TPOT ms", per_token("p99_tpot_ms", _ms)),
        ("  goodput, requests/s within SLO", per_token("goodput_rps", lambda v: f"{v:.2f}")),
        ("  admitted service tokens", column("admitted_service_tokens")),
        (
            "  service share (weight share)",
            [f"{r['service_share']:.3f} ({r['weight_share']:.3f})" for r in per_variant],
        ),
        (
            "  peak KV occupancy at decisions",
            column("peak_dispatch_kv_occupancy_ratio", lambda v: f"{v:.4f}"),
        ),
        ("  class SLO (p99)", column("slo_met", _verdict)),
    ]
    return rows


def _hit_rows(result: SimulationResult) -> list[tuple[str, list[str]]]:
    """Cached prompt tokens over prompt tokens (re-hits after preemption excluded), only when
    some variant caches prefixes; "off" for a variant that does not."""
    caches = result.prefix_cache
    if not caches:
        return []
    return [
        (
            "  prefix hit rate",
            [f"{caches[v]['hit_rate']:.4f}" if v in caches else "off" for v in result.variants],
        )
    ]


def _turn_rows(result: SimulationResult) -> list[tuple[str, list[str]]]:
    """Over every session tenant, only when some variant has them ("-": a variant without)."""
    if not result.sessions:
        return []
    overall = [result.sessions.get(v, {}).get("all") for v in result.variants]
    return _turn_cells(overall, " (sessions)")


def _tenant_turn_rows(per_variant: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """A session tenant's turns: the shed rate counts requests (a retry is one more), these
    count what its users asked and got."""
    rows = [None if pd.isna(row.get("turns_planned")) else row for row in per_variant]
    return _turn_cells(rows, "") if any(rows) else []


def _turn_cells(rows: list[dict[str, Any] | None], suffix: str) -> list[tuple[str, list[str]]]:
    def column(key: str, fmt=str) -> list[str]:
        return ["-" if row is None else fmt(row[key]) for row in rows]

    return [
        (f"  turns planned{suffix}", column("turns_planned")),
        (f"  turns answered{suffix}", column("turns_answered")),
        (f"  sessions cut short{suffix}", column("sessions_cut_short")),
        (f"  turn loss rate{suffix}", column("turn_loss_rate", lambda v: f"{v:.4f}")),
    ]


def _tenant_hit_rows(
    result: SimulationResult, per_variant: list[dict[str, Any]]
) -> list[tuple[str, list[str]]]:
    caches = result.prefix_cache
    if not caches:
        return []
    cells = [
        f"{row['prefix_hit_rate']:.4f}" if v in caches else "off"
        for v, row in zip(result.variants, per_variant, strict=True)
    ]
    return [("  prefix hit rate", cells)]


def _class_ms(result: SimulationResult, key: str, lane: int) -> list[str]:
    """A class's percentile from the reference summary, or "-" when that class had no admitted
    request (the reference's summary reads 0.0 there, which is no latency at all). Whether it
    had one is the variant's per-class count, counted once (`VariantFacts`), not a row scan."""
    return [
        _ms(result.summaries[v][key]) if result.facts[v].admitted_by_class[lane] else "-"
        for v in result.variants
    ]


def _ms(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2f}"  # "-": no admitted request to measure


def _held(capacity: dict[str, Any]) -> str:
    # token_server does not enforce its capacity: say when its accounting passed it
    over = " (over capacity)" if capacity["kv_over_capacity"] else ""
    return f"{capacity['peak_kv_held_ratio']:.4f}{over}"


def _index(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"  # "-": nothing admitted, no figure


def _targets_row(targets: Any, slo: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """With a TPOT target, the row above (the reference study's question, TTFT alone) does not
    say whether the run met its targets: each tenant's verdict against its class's TTFT and
    TPOT targets does (`tenants[].slo_met`), naming the tenants that missed."""
    if targets.interactive_tpot_ms is None and targets.batch_tpot_ms is None:
        return []
    cells = []
    for verdict in slo:
        missed = [tenant for tenant, met in verdict["tenants"].items() if not met]
        if not missed:
            cells.append("met")
        else:
            cells.append(
                f"MISSED: {missed[0]}" if len(missed) == 1 else f"MISSED: {len(missed)} tenants"
            )
    return [("  every tenant within its TTFT and TPOT targets", cells)]


def _verdict(met: bool | None) -> str:
    return "n/a" if met is None else ("met" if met else "MISSED")


def _render(rows: list[tuple[str, list[str]]], title: str) -> str:
    label_width = max(len(label) for label, _ in rows)
    widths = [max(len(cells[i]) for _, cells in rows) for i in range(len(rows[0][1]))]
    lines = [title, ""]
    for label, cells in rows:
        padded = "  ".join(cell.rjust(width) for cell, width in zip(cells, widths, strict=True))
        lines.append(f"{label.ljust(label_width)}  {padded}".rstrip())
    return "\n".join(lines)
