"""Trace cells to checked numbers, every problem named by file and line as an editor counts it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from simsched.errors import InputError
from simsched.workload.trace_csv import MAX_TOKENS


def fail(label: str, line: int, message: str) -> InputError:
    return InputError(f"{label} line {line}", "", message)


def numbers(text: pd.Series, column: str, label: str, *, integer: bool) -> np.ndarray:
    """The cells as float64, or int64 token counts; the series' index is each cell's line."""
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    checks = [(~np.isfinite(values), "is not a number")]
    if integer:
        checks += [
            (values < 0, "is negative"),
            (values != np.floor(values), "is not a whole number"),
            (values > MAX_TOKENS, "is too large"),
        ]
    for mask, what in checks:  # NaN fails the first check, so later ones never see it
        if mask.any():
            position = int(np.argmax(mask))
            shown = str(text.iloc[position]).strip()
            message = f"{column} is empty" if not shown else f"{column} {shown!r} {what}"
            raise fail(label, int(text.index[position]), message)
    return values.astype(np.int64) if integer else values
