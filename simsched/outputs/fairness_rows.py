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
            ("  CV of normalised service", [_value(f, "normalised_service_cv") for f in fairness]),
            (
                "  max/min normalised service",
                [_value(f, "normalised_service_max_min", "a tenant got none") for f in fairness],
            ),
        ]
    blast = [result.blast_radius.get(v) for v in result.variants]
    if any(blast):
        rows += [
            ("  noisiest tenant (by demand)", [b["noisiest_tenant"] if b else "" for b in blast]),
            ("  max p99 TTFT inflation ms by it", [_worst(b) for b in blast]),
        ]
    return rows


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
