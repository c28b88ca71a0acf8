"""Which tenants a sweep panel is about: the rows the SLO targets name (or, with no target on a
tenant, the tenants that have an SLO), drawn in colour; the other tenants drawn behind them, in
thin grey, under one legend entry, so that a sweep of twenty tenants does not bury the one the
question is about. The `all` row keeps its own style (black, dashed).

With no focus (every tenant named, or no tenant has an SLO) every tenant is drawn in colour, as
before.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from simsched.outputs.report.targets import Target
from simsched.results.tenants import ALL

BACKGROUND = {"color": "0.7", "linewidth": 0.8, "alpha": 0.8, "zorder": 0}
BACKGROUND_LABEL = "other tenants"
NO_LEGEND = "_nolegend_"


def focus_rows(table: pd.DataFrame, targets: Sequence[Target]) -> set[str] | None:
    """The rows drawn in colour, or None to draw every row so."""
    rows = {str(r) for r in table["tenant"].dropna()} - {ALL}
    named = {t.row for t in targets if t.row != ALL}
    if not named and "slo_met" in table:
        has_slo = table.groupby("tenant", sort=False)["slo_met"].apply(lambda s: s.notna().any())
        named = {str(r) for r, judged in has_slo.items() if judged} - {ALL}
    focus = named & rows
    return focus if focus and focus != rows else None


def tenant_style(tenant: str, focus: set[str] | None, style: dict, first_behind: bool) -> tuple:
    """(style, legend label) of a tenant's line: its own in focus, grey behind it otherwise
    (one legend entry for them all: the first carries it)."""
    if focus is None or tenant == ALL or tenant in focus:
        return style, tenant
    return BACKGROUND, BACKGROUND_LABEL if first_behind else NO_LEGEND


def in_focus_first(keys: list[str], focus: set[str] | None) -> list[str]:
    """The focus rows (and `all`) first in the legend, the grey ones after them."""
    if focus is None:
        return keys
    return [k for k in keys if k in focus or k == ALL] + [
        k for k in keys if not (k in focus or k == ALL)
    ]
