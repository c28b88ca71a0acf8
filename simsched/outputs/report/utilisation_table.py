"""The report's utilisation section: per variant, each replica's row and the cluster's, from
summary.json's `utilisation` block (`results.utilisation` defines the figures)."""

from __future__ import annotations

from typing import Any

import pandas as pd

HEADING = "Utilisation per replica (busy share: time in iterations over the run)"
FIGURES = ["requests", "busy_share", "token_budget_share", "mean_running", "kv_held_share"]


def utilisation_tables(usage: Any) -> list[tuple[str, pd.DataFrame]]:
    """One table, a row per variant and replica and a `cluster` row per variant; none without
    replicas. A block that is not one simsched wrote (a hand-edited summary.json) is skipped:
    the report shows what it can read."""
    if not isinstance(usage, dict):
        return []
    rows = []
    for variant, block in usage.items():
        if not isinstance(block, dict) or not isinstance(block.get("replicas"), dict):
            continue
        for replica, figures in [*block["replicas"].items(), ("cluster", block.get("total"))]:
            rows.append({"variant": variant, "replica": replica} | _figures(figures))
        rows[-1]["requests max/mean"] = block.get("request_skew")
    return [(HEADING, pd.DataFrame(rows))] if rows else []


def _figures(figures: Any) -> dict[str, Any]:
    figures = figures if isinstance(figures, dict) else {}
    return {key: figures.get(key) for key in FIGURES}
