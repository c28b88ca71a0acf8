"""A sweep's replicates summarised: per point (its swept values), variant and tenant, each
metric's mean across seeds and its 95% Student-t interval (`simsched.results.confidence`).

Columns: the swept parameters, `variant`, `tenant`, `seeds` (the replicates that ran), then
`<metric>_mean`, `<metric>_ci_low`, `<metric>_ci_high` for every numeric metric. A metric with
no value in some seed (a latency of no admitted request) has none here either.
"""

from __future__ import annotations

import pandas as pd

from simsched.outputs.sweep_table import FIXED_COLUMNS
from simsched.results.confidence import estimate
from simsched.results.tenants import METRIC_COLUMNS


def seed_summary(table: pd.DataFrame) -> pd.DataFrame:
    ok = table[table["error"].isna()] if "error" in table else table
    params = [c for c in table.columns if c not in FIXED_COLUMNS]
    keys = [*params, "variant", "tenant"]
    records = []
    for values, part in ok.groupby(keys, sort=False, dropna=False):
        record = dict(zip(keys, values, strict=True)) | {"seeds": len(part)}
        for metric in METRIC_COLUMNS:
            column = part[metric].astype("Float64").astype("float64").tolist()
            found = estimate(column)
            record |= {f"{metric}_mean": found.mean, f"{metric}_ci_low": found.low}
            record[f"{metric}_ci_high"] = found.high
        records.append(record)
    return pd.DataFrame.from_records(records)
