"""The CSV-based formats: a time column and two token columns, named per format (`LAYOUTS`).

- `csv`: the project's own trace CSV (`trace_csv.py`); only `arrival_ms`, `prefill_tokens` and
  `decode_tokens` are read, so any other columns are ignored.
- `azure2023`: `TIMESTAMP`, a wall-clock string with up to 7 fractional digits (read as int64 ns,
  exact until the first row is subtracted), `ContextTokens`, `GeneratedTokens`.
- `burstgpt`: `Timestamp` in s, `Request tokens`, `Response tokens`, optionally filtered on its
  `Model` and `Log Type` columns (`FILTERS`).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simsched.errors import InputError
from simsched.workload.formats.checks import check_shape, fail, numbers, universal_newlines
from simsched.workload.formats.checks import times as checked_times

AZURE_TIME_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S")  # a whole second may omit .f
FILTERS = {"model": "Model", "log_type": "Log Type"}  # burstgpt only
FIRST_YEAR, LAST_YEAR = 1678, 2261  # whole years of int64 nanoseconds since 1970


@dataclass(frozen=True)
class Layout:
    """Where a CSV-based format keeps its three columns, and how its time column reads."""

    time: str
    prefill: str
    decode: str
    time_to_ms: float  # 0 marks a wall-clock string (azure2023), read in ns

    def read(self, text: str, label: str, filters: dict):
        """Times, prefill and decode tokens in file order, after the filters."""
        wanted = [self.time, self.prefill, self.decode]
        wanted += [FILTERS[key] for key, value in filters.items() if value is not None]
        frame = _read_csv(text, wanted, label)
        for key, value in filters.items():
            if value is not None:
                frame = _filter(frame, FILTERS[key], value, label)
        if self.time_to_ms:
            times = checked_times(frame[self.time], self.time, label, self.time_to_ms)
            times = times * self.time_to_ms
        else:
            times = _wall_clock_ns(frame[self.time], self.time, label)
        prefill = numbers(frame[self.prefill], self.prefill, label, integer=True)
        decode = numbers(frame[self.decode], self.decode, label, integer=True)
        return times, prefill, decode


LAYOUTS = {
    "csv": Layout("arrival_ms", "prefill_tokens", "decode_tokens", 1.0),
    "azure2023": Layout("TIMESTAMP", "ContextTokens", "GeneratedTokens", 0.0),
    "burstgpt": Layout("Timestamp", "Request tokens", "Response tokens", 1000.0),
}


def _read_csv(text: str, wanted: list[str], label: str) -> pd.DataFrame:
    text = universal_newlines(text)
    check_shape(text, label)
    try:
        frame = pd.read_csv(
            io.StringIO(text),
            dtype=str,
            keep_default_na=False,
            usecols=lambda name: str(name).strip() in wanted,  # skip columns never used
            skip_blank_lines=False,  # keeps index + 2 equal to the line in the file
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(label, "", f"not a readable CSV: {str(exc).strip()}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in wanted if c not in frame.columns]
    if missing:
        raise InputError(label, "header", f"missing column(s): {', '.join(missing)}")
    frame.index = frame.index + 2
    frame = frame[~(frame[wanted].apply(lambda c: c.str.strip()) == "").all(axis=1)]
    if frame.empty:
        raise InputError(label, "", "holds no requests")
    return frame


def _check_years(stripped: pd.Series, lines: pd.Index, column: str, label: str) -> None:
    """Times as int64 ns reach from 1677-09-21 to 2262-04-11: refuse years outside, by line
    (pandas would raise, or call the time unreadable)."""
    years = pd.to_numeric(stripped.str.slice(0, 4), errors="coerce").to_numpy()
    outside = (years < FIRST_YEAR) | (years > LAST_YEAR)
    if outside.any():
        position = int(np.argmax(outside))
        message = (
            f"{column} {stripped.iloc[position]!r} is outside the years {FIRST_YEAR}-{LAST_YEAR} "
            "a nanosecond clock holds"
        )
        raise fail(label, int(lines[position]), message)


def _filter(frame: pd.DataFrame, column: str, value: str, label: str) -> pd.DataFrame:
    kept = frame[frame[column].str.strip() == value]
    if kept.empty:
        found = ", ".join(repr(v) for v in sorted(frame[column].str.strip().unique())[:10])
        raise InputError(label, column, f"no rows with {column} {value!r} (found: {found})")
    return kept


def _wall_clock_ns(text: pd.Series, column: str, label: str) -> np.ndarray:
    stripped = text.str.strip()
    _check_years(stripped, text.index, column, label)
    stamps = pd.to_datetime(stripped, format=AZURE_TIME_FORMATS[0], errors="coerce")
    missing = stamps.isna()
    if missing.any():
        fallback = pd.to_datetime(stripped[missing], format=AZURE_TIME_FORMATS[1], errors="coerce")
        stamps = stamps.where(~missing, fallback)
    bad = stamps.isna().to_numpy()
    if bad.any():
        position = int(np.argmax(bad))
        shown = stripped.iloc[position]
        message = f"{column} {shown!r} is not a time like 2023-11-16 18:15:46.6805900"
        raise fail(label, int(text.index[position]), message)
    return stamps.to_numpy(dtype="datetime64[ns]").astype(np.int64)
