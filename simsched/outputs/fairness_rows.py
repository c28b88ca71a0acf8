"""The terminal table's dispersion and blast-radius rows, shown only where a variant asked for
them (`fairness.dispersion`, `fairness.blast_radius`): other tables stay as they were."""

from __future__ import annotations

import math
from typing import Any


def dispersion_rows(result: Any) -> list[tuple[str, list[str]]]:
    fairness = [result.fairness[v] for v in result.variants]
    rows: list[tuple[str, list[str]]] = []
    if any("normalised_service_cv" in f for f in fairness):
        rows += [
            (
                "  CV of normalised service, whole run",
                [_value(f, "normalised_service_cv") for f in fairness],
            ),
            (
                "  max/min normalised service, whole run",
                [_value(f, "normalised_service_max_min", "a tenant got none") for f in fairness],
            ),
            *backlog_rows(fairness),
        ]
    blast = [result.blast_radius.get(v) for v in result.variants]
    if any(blast):
        rows += [
            ("  noisiest tenant (by demand)", [b["noisiest_tenant"] if b else "" for b in blast]),
            ("  max p99 TTFT inflation ms by it", [_worst(b) for b in blast]),
        ]
    return rows


def backlog_rows(fairness: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """The spread read only while >= 2 tenants stayed backlogged (results/backlog_dispersion.py):
    the windows it read say how much of the run it covers."""
    if not any("backlogged_service_cv" in f for f in fairness):
        return []
    window = next(f["backlog_window_ms"] for f in fairness if "backlog_window_ms" in f)
    return [
        (
            f"  windows of {window:g} ms with >=2 tenants backlogged",
            [str(f.get("backlogged_windows", "")) for f in fairness],
        ),
        (
            "  CV of service in those windows (mean)",
            [_value(f, "backlogged_service_cv", "no such window") for f in fairness],
        ),
        (
            "  backlogged tenant-windows served nothing",
            [_value(f, "backlogged_starved_share", "no such window") for f in fairness],
        ),
    ]


def _value(figures: dict[str, Any], key: str, none: str = "n/a") -> str:
    if key not in figures:
        return ""  # a variant that did not ask
    value = figures[key]
    return none if value is None else f"{value:.4f}"


def _worst(block: dict[str, Any] | None) -> str:
    if not block:
        return ""
    values = [v for v in block["p99_ttft_inflation_ms"].values() if not math.isnan(v)]
    return f"{max(values):.2f}" if values else "n/a"
