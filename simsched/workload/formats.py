"""Readers for public request traces, returning plain numpy columns.

Formats (`format=`):

- `csv`: the project's own trace CSV (`trace_csv.py`); only `arrival_ms`, `prefill_tokens` and
  `decode_tokens` are used here, so any other columns are ignored.
- `azure2023`: the Azure LLM inference trace 2023 (`TIMESTAMP` wall-clock string with up to 7
  fractional digits, `ContextTokens`, `GeneratedTokens`).
- `mooncake`: the Mooncake FAST'25 JSON lines (`timestamp` in ms, `input_length`,
  `output_length`; `hash_ids` is ignored).
- `burstgpt`: BurstGPT CSV (`Timestamp` in s, `Request tokens`, `Response tokens`), optionally
  filtered on its `Model` and `Log Type` columns.

Rows are ordered by time (stably, so ties keep file order); "the first row" is the earliest one.
Filters apply before windows, so a window is measured on the filtered stream. Every problem is an
`InputError` naming the file and the line (`FILE line N`, as an editor counts) or the header.
"""

from __future__ import annotations

import functools
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simsched.errors import InputError

FORMATS = ("csv", "azure2023", "mooncake", "burstgpt")
AZURE_TIME_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S")  # a whole second may omit .f


@dataclass(frozen=True)
class TraceColumns:
    arrival_ms: np.ndarray  # float64, the first row at 0
    prefill_tokens: np.ndarray  # int64
    decode_tokens: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.arrival_ms)


@dataclass(frozen=True)
class _Layout:
    """Where a CSV-based format keeps its three columns, and how its time column reads."""

    time: str
    prefill: str
    decode: str
    time_to_ms: float  # 0 marks a wall-clock string (azure2023)


LAYOUTS = {
    "csv": _Layout("arrival_ms", "prefill_tokens", "decode_tokens", 1.0),
    "azure2023": _Layout("TIMESTAMP", "ContextTokens", "GeneratedTokens", 0.0),
    "burstgpt": _Layout("Timestamp", "Request tokens", "Response tokens", 1000.0),
}
MOONCAKE_KEYS = ("timestamp", "input_length", "output_length")
FILTERS = {"model": "Model", "log_type": "Log Type"}  # burstgpt only
MAX_TOKENS = 2**31 - 1  # as trace_csv: far beyond any request, keeps token sums inside int64


def read_trace(
    path: str | Path,
    format: str,
    *,
    time_scale: float = 1.0,
    start_s: float | None = None,
    duration_s: float | None = None,
    max_requests: int | None = None,
    model: str | None = None,
    log_type: str | None = None,
) -> TraceColumns:
    """The rows of a trace in a window, times relative to the first kept row, then scaled.

    `start_s`/`duration_s` keep rows whose time since the trace's first row lies in
    [start_s, start_s + duration_s); `max_requests` then keeps the first N; `time_scale`
    multiplies every time (0.5 halves every gap, doubling the rate).
    """
    label = str(path)
    filters = {"model": model, "log_type": log_type}
    _check_options(label, format, time_scale, start_s, duration_s, max_requests, filters)
    columns = _read_columns(Path(path), format, label, filters)
    kept = _window(columns, label, start_s, duration_s, max_requests)
    return TraceColumns(kept.arrival_ms * time_scale, kept.prefill_tokens, kept.decode_tokens)


def read_length_pairs(path: str | Path, format: str) -> tuple[np.ndarray, np.ndarray]:
    """Every row's (prefill, decode) tokens, read once per file: tenants and variants share it."""
    if format not in FORMATS:
        raise _unknown_format(str(path), format)
    path = Path(path).resolve()
    try:
        stat = path.stat()
        version = (stat.st_mtime_ns, stat.st_size)  # an edited file is read afresh
    except OSError:
        version = None  # _read_columns reports the problem
    return _cached_pairs(path, format, version)


@functools.lru_cache(maxsize=16)
def _cached_pairs(path: Path, format: str, version: tuple | None) -> tuple[np.ndarray, np.ndarray]:
    columns = _read_columns(path, format, str(path), {})
    for array in (columns.prefill_tokens, columns.decode_tokens):
        array.flags.writeable = False  # shared by every caller of the cache
    return columns.prefill_tokens, columns.decode_tokens


def _check_options(label, format, time_scale, start_s, duration_s, max_requests, filters) -> None:
    if format not in FORMATS:
        raise _unknown_format(label, format)
    bad = [
        (not 0 < time_scale < math.inf, f"time_scale must be greater than 0, not {time_scale}"),
        (start_s is not None and not start_s >= 0, f"start_s must be >= 0, not {start_s}"),
        (
            duration_s is not None and not duration_s > 0,
            f"duration_s must be > 0, not {duration_s}",
        ),
        (max_requests is not None and max_requests < 1, "max_requests must be at least 1"),
    ]
    bad += [
        (value is not None and format != "burstgpt", f"{key} applies only to the burstgpt format")
        for key, value in filters.items()
    ]
    for failed, message in bad:
        if failed:
            raise InputError(label, "", message)


def _unknown_format(label: str, format: str) -> InputError:
    return InputError(
        label, "format", f"unknown trace format {format!r} (known: {', '.join(FORMATS)})"
    )


def _read_columns(path: Path, format: str, label: str, filters: dict) -> TraceColumns:
    """All rows, sorted by time, times in ms since the first row."""
    from simsched.loading import read_text  # local: loading imports the scenario models

    text = read_text(path, "trace file")
    if format == "mooncake":
        times, prefill, decode = _mooncake(text, label)
    else:
        times, prefill, decode = _csv_columns(text, LAYOUTS[format], label, filters)
    order = np.argsort(times, kind="stable")
    times = times[order]
    arrival_ms = (times - times[0]).astype(np.float64)  # int64 ns stay exact until here
    if format == "azure2023":
        arrival_ms /= 1e6
    return TraceColumns(arrival_ms, prefill[order], decode[order])


def _csv_columns(text: str, layout: _Layout, label: str, filters: dict):
    wanted = [layout.time, layout.prefill, layout.decode]
    wanted += [FILTERS[key] for key, value in filters.items() if value is not None]
    frame = _read_csv(text, wanted, label)
    for key, value in filters.items():
        if value is not None:
            frame = _filter(frame, FILTERS[key], value, label)
    if layout.time_to_ms:
        times = _numbers(frame[layout.time], layout.time, label, integer=False)
        times = times * layout.time_to_ms
    else:
        times = _wall_clock_ns(frame[layout.time], layout.time, label)
    prefill = _numbers(frame[layout.prefill], layout.prefill, label, integer=True)
    decode = _numbers(frame[layout.decode], layout.decode, label, integer=True)
    return times, prefill, decode


def _read_csv(text: str, wanted: list[str], label: str) -> pd.DataFrame:
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


def _filter(frame: pd.DataFrame, column: str, value: str, label: str) -> pd.DataFrame:
    kept = frame[frame[column].str.strip() == value]
    if kept.empty:
        found = ", ".join(repr(v) for v in sorted(frame[column].str.strip().unique())[:10])
        raise InputError(label, column, f"no rows with {column} {value!r} (found: {found})")
    return kept


def _fail(label: str, line: int, message: str) -> InputError:
    return InputError(f"{label} line {line}", "", message)


def _numbers(text: pd.Series, column: str, label: str, *, integer: bool) -> np.ndarray:
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
            raise _fail(label, int(text.index[position]), message)
    return values.astype(np.int64) if integer else values


def _wall_clock_ns(text: pd.Series, column: str, label: str) -> np.ndarray:
    stripped = text.str.strip()
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
        raise _fail(label, int(text.index[position]), message)
    return stamps.to_numpy(dtype="datetime64[ns]").astype(np.int64)


def _mooncake(text: str, label: str):
    lines = text.splitlines()
    rows = [(number, line) for number, line in enumerate(lines, start=1) if line.strip()]
    if not rows:
        raise InputError(label, "", "holds no requests")
    values = np.array([_mooncake_row(line, number, label) for number, line in rows], dtype=object)
    index = pd.Index([number for number, _ in rows])
    times, prefill, decode = (pd.Series(values[:, i], index=index) for i in range(3))
    return (
        _numbers(times, "timestamp", label, integer=False),
        _numbers(prefill, "input_length", label, integer=True),
        _numbers(decode, "output_length", label, integer=True),
    )


def _mooncake_row(line: str, number: int, label: str) -> tuple:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise _fail(label, number, f"not valid JSON: {exc.msg}") from None
    if not isinstance(record, dict):
        raise _fail(label, number, "is not a JSON object")
    missing = [key for key in MOONCAKE_KEYS if key not in record]
    if missing:
        raise _fail(label, number, f"missing key(s): {', '.join(missing)}")
    # numbers pass through; anything else becomes text so _numbers reports it with its line
    return tuple(_plain(record[key]) for key in MOONCAKE_KEYS)


def _plain(value) -> float | str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return "" if value is None else str(value)


def _window(columns: TraceColumns, label: str, start_s, duration_s, max_requests) -> TraceColumns:
    times = columns.arrival_ms
    span_s = float(times[-1]) / 1000.0
    start_ms = 1000.0 * (start_s or 0.0)
    if start_s is not None and start_s > span_s:
        raise InputError(
            label, "", f"start_s {start_s:g} is past the end of the trace ({span_s:.1f} s)"
        )
    end_ms = np.inf if duration_s is None else start_ms + 1000.0 * duration_s
    keep = np.flatnonzero((times >= start_ms) & (times < end_ms))[:max_requests]
    if not len(keep):  # only a bounded window can miss every row: the last row is >= start
        where = f"[{start_ms / 1000:g} s, {end_ms / 1000:g} s)"
        raise InputError(label, "", f"the window {where} selects no requests")
    # Rounding to 1 ns (finer than any trace's clock) drops the subtraction's last-bit noise,
    # so that 29898.966 is written as such rather than as 29898.965999999957.
    kept = np.round(times[keep] - times[keep[0]], 6)
    return TraceColumns(kept, columns.prefill_tokens[keep], columns.decode_tokens[keep])
