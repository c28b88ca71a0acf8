"""A sweep's table file: .parquet or .csv, written all or nothing, and read back (checked) for
reports."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
from pandas.api.types import is_numeric_dtype

from simsched.errors import InputError
from simsched.outputs.atomic import cannot_write, staging_file
from simsched.outputs.files import write_csv
from simsched.outputs.preflight import check_output_file
from simsched.results.chargeback import COLUMNS as CHARGEBACK_COLUMNS
from simsched.results.tenants import METRIC_COLUMNS

FIXED_COLUMNS = ["point", "seed", "variant", "tenant", *METRIC_COLUMNS, "error"]
# After "error", only where the scenario charges back: other sweeps' tables stay as they were.
OPTIONAL_METRICS = list(CHARGEBACK_COLUMNS)
TABLE_SUFFIXES = (".parquet", ".csv")


def check_table_path(out: str | Path, inputs: Iterable[Path] = ()) -> Path:
    out = Path(out)
    if out.suffix.lower() not in TABLE_SUFFIXES:
        raise InputError(str(out), "--out", "must end in .parquet or .csv")
    # a folder, a folder under a file, unwritable, or a file the sweep reads
    return check_output_file(out, "--out", inputs)


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
    csv_file = path.suffix.lower() == ".csv"
    try:
        header = first_csv_row(path) if csv_file else []
        frame = pd.read_csv(path) if csv_file else pd.read_parquet(path)
    except Exception as exc:  # any reader error is the file's fault, not ours
        raise InputError(str(path), "", f"cannot read the table: {exc}") from None
    # pandas renames a repeated CSV column (`shed.1`): the header itself tells
    names = [name.strip() for name in header] if csv_file else [str(c) for c in frame.columns]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InputError(str(path), "header", f"column {repeated[0]!r} is named twice")
    return numeric_metrics(frame, path, csv_file)


def first_csv_row(path: Path) -> list[str]:
    with open(path, encoding="utf-8", newline="") as handle:
        return next(csv.reader(handle), [])


def numeric_metrics(frame: pd.DataFrame, path: Path, csv_file: bool) -> pd.DataFrame:
    """Every metric column as numbers (empty cells stay missing): a text cell in one would end
    in a plotting library's traceback, so it is refused, named by its line (or parquet row)."""
    for column in [*METRIC_COLUMNS, *OPTIONAL_METRICS]:
        if column == "slo_met" or column not in frame or is_numeric_dtype(frame[column]):
            continue  # slo_met is a yes/no column, read as pandas reads it
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = (values.isna() & frame[column].notna()).to_numpy()
        if bad.any():
            row = int(bad.argmax())
            where = f"line {row + 2}" if csv_file else f"row {row + 1}"
            message = f"{column} {frame[column].iloc[row]!r} is not a number"
            raise InputError(str(path), where, message)
        frame[column] = values
    return frame
