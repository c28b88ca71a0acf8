"""A sweep's table: the points' outcomes as one typed frame (its file is `outputs.sweep_table`)."""

from __future__ import annotations

import pandas as pd

from simsched.outputs.sweep_table import FIXED_COLUMNS, OPTIONAL_METRICS
from simsched.results.tenants import COUNT_METRICS
from simsched.studies.grid import Point, show
from simsched.studies.runners import Outcome


def build_frame(points: list[Point], outcomes: list[Outcome], params: list[str]) -> pd.DataFrame:
    records = []
    for point, (rows, error, _) in zip(points, outcomes, strict=True):
        head = {"point": point.index, "seed": point.seed}
        head |= {name: point.params[name] for name in params}
        records += [head | row | {"error": None} for row in rows]
        if error is not None:
            records.append(head | {"variant": None, "tenant": None, "error": error})
    present = {key for rows, *_ in outcomes for row in rows for key in row}
    charged = [c for c in OPTIONAL_METRICS if c in present]  # a scenario that charges back
    columns = ["point", "seed", *params, *FIXED_COLUMNS[2:], *charged]
    frame = pd.DataFrame.from_records(records, columns=columns)
    return _typed(frame, params)


def _typed(frame: pd.DataFrame, params: list[str]) -> pd.DataFrame:
    """Stable dtypes whether or not some point failed (a failed point has no metrics)."""
    for column in ["point", "seed", *COUNT_METRICS]:
        frame[column] = frame[column].astype("Int64")
    frame["slo_met"] = frame["slo_met"].astype("boolean")
    for column in ("variant", "tenant", "error"):
        frame[column] = frame[column].astype("string")
    for name in params:  # mixed kinds (1 and "auto") cannot share a parquet column
        if any(not isinstance(v, (int, float)) for v in frame[name]):
            frame[name] = frame[name].map(show).astype("string")
    return frame
