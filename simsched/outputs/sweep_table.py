"""A sweep's table file: .parquet or .csv, written all or nothing, and read back for reports."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from simsched.errors import InputError
from simsched.outputs.atomic import cannot_write, staging_file
from simsched.outputs.files import write_csv
from simsched.outputs.preflight import check_output_file
from simsched.results.tenants import METRIC_COLUMNS

FIXED_COLUMNS = ["point", "seed", "variant", "tenant", *METRIC_COLUMNS, "error"]
TABLE_SUFFIXES = (".parquet", ".csv")


def check_table_path(out: str | Path) -> Path:
    out = Path(out)
    if out.suffix.lower() not in TABLE_SUFFIXES:
        raise InputError(str(out), "--out", "must end in .parquet or .csv")
    return check_output_file(out, "--out")  # a folder, a folder under a file, unwritable


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
