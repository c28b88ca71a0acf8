"""A sweep's table: the points' outcomes as one typed frame, and its .parquet or .csv file."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from simsched.errors import InputError
from simsched.outputs.atomic import cannot_write, staging_file
from simsched.outputs.files import write_csv
from simsched.results.metrics import COUNT_METRICS, METRIC_COLUMNS
from simsched.studies.grid import Point, show
from simsched.studies.runners import Outcome

FIXED_COLUMNS = ["point", "seed", "variant", "tenant", *METRIC_COLUMNS, "error"]
TABLE_SUFFIXES = (".parquet", ".csv")


def build_frame(points: list[Point], outcomes: list[Outcome], params: list[str]) -> pd.DataFrame:
    records = []
    for point, (rows, error) in zip(points, outcomes, strict=True):
        head = {"point": point.index, "seed": point.seed}
        head |= {name: point.params[name] for name in params}
        records += [head | row | {"error": None} for row in rows]
        if error is not None:
            records.append(head | {"variant": None, "tenant": None, "error": error})
    columns = ["point", "seed", *params, *FIXED_COLUMNS[2:]]
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


def check_table_path(out: str | Path) -> Path:
    out = Path(out)
    if out.suffix.lower() not in TABLE_SUFFIXES:
        raise InputError(str(out), "--out", "must end in .parquet or .csv")
    if out.is_dir():
        raise InputError(str(out), "--out", "is a folder, not a file")
    return out


def write_table(frame: pd.DataFrame, out: str | Path) -> Path:
    """Write the table (.parquet or .csv) to `out`, all or nothing (`simsched.outputs.atomic`)."""
    out = check_table_path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with staging_file(out, "--out") as staging:
            if out.suffix.lower() == ".parquet":
                frame.to_parquet(staging, index=False)
            else:
                write_csv(frame, staging)  # the same CSV dialect as `simsched scenario --out`
    except OSError as exc:
        raise cannot_write(out, "--out", exc) from None
    return out


def read_table(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    if path.suffix.lower() not in TABLE_SUFFIXES:
        raise InputError(str(path), "", "a sweep table ends in .parquet or .csv")
    if not path.is_file():
        raise InputError(str(path), "", "no such file")
    try:
        if path.suffix.lower() == ".parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path)
    except Exception as exc:  # any reader error is the file's fault, not ours
        raise InputError(str(path), "", f"cannot read the table: {exc}") from None
