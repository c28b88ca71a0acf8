"""A scenario report's per-tenant table, turned on its side: a row per metric and a column per
variant and tenant (variants above their tenants). Thirty metrics across would not fit a page;
a few tenants across do, and the metric names read down the left."""

from __future__ import annotations

import pandas as pd

HIDDEN = ("priority",)  # the tenant's class shows in the tables of the console
MAX_COLUMNS = 8  # value columns per table: what a 1400-pixel page shows at 0.85em


def per_tenant_tables(tenants: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(heading, table) pairs: whole variants per table, at most MAX_COLUMNS tenant columns
    each (a variant with more tenants than that gets a table of its own, wider)."""
    variants = list(dict.fromkeys(tenants["variant"].astype(str)))
    groups: list[list[str]] = [[]]
    width = 0
    for variant in variants:
        count = int((tenants["variant"].astype(str) == variant).sum())
        if groups[-1] and width + count > MAX_COLUMNS:
            groups.append([])
            width = 0
        groups[-1].append(variant)
        width += count
    tables = []
    for index, group in enumerate(groups):
        part = tenants[tenants["variant"].astype(str).isin(group)]
        part_of = f", part {index + 1} of {len(groups)}" if len(groups) > 1 else ""
        heading = f"Per tenant (a column per variant and tenant{part_of})"
        tables.append((heading, per_tenant_table(part)))
    return tables


def per_tenant_table(tenants: pd.DataFrame) -> pd.DataFrame:
    rows = tenants.drop(columns=list(HIDDEN), errors="ignore")
    values = rows.drop(columns=["variant", "tenant_id"])
    heads = [("", "metric")]  # unnamed levels: a named one would print as a column of its own
    heads += list(zip(rows["variant"].astype(str), rows["tenant_id"].astype(str), strict=True))
    cells = [[name, *row] for name, row in zip(values.columns, values.to_numpy(dtype=object).T,
                                               strict=True)]  # fmt: skip
    return pd.DataFrame(cells, columns=pd.MultiIndex.from_tuples(heads))
