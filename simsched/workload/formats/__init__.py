"""Readers for public request traces, returning plain numpy columns.

Formats (`format=`), one reader each in `READERS`:

- `csv`: the project's own trace CSV (`trace_csv.py`); only `arrival_ms`, `prefill_tokens` and
  `decode_tokens` are used here, so any other columns are ignored.
- `azure2023`: the Azure LLM inference trace 2023 (`TIMESTAMP` wall-clock string with up to 7
  fractional digits, `ContextTokens`, `GeneratedTokens`).
- `mooncake`: the Mooncake FAST'25 JSON lines (`timestamp` in ms, `input_length`,
  `output_length`; its `hash_ids` are read apart, for prefix caching: `prefix_sources.py`).
- `burstgpt`: BurstGPT CSV (`Timestamp` in s, `Request tokens`, `Response tokens`), optionally
  filtered on its `Model` and `Log Type` columns.

Rows are ordered by time (stably, so ties keep file order); "the first row" is the earliest one.
Filters apply before windows, so a window is measured on the filtered stream. Every problem is an
`InputError` naming the file and the line (`FILE line N`, as an editor counts) or the header.
The CSV-based formats live in `tabular.py`, Mooncake in `mooncake.py`; this module sorts,
windows and caches whatever a reader returns.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simsched.config.yaml_io import read_text
from simsched.errors import InputError, display_path
from simsched.workload.formats.mooncake import read_mooncake, read_mooncake_keeping_rows
from simsched.workload.formats.tabular import LAYOUTS
from simsched.workload.formats.window import TraceColumns, check_window, window


@dataclass(frozen=True)
class Reader:
    """`read(text, label, filters)` -> times, prefill and decode tokens, in file order."""

    read: Callable[[str, str, dict], tuple[np.ndarray, np.ndarray, np.ndarray]]
    units_per_ms: float = 1.0  # what a millisecond is in the times `read` returns


READERS = {
    "csv": Reader(LAYOUTS["csv"].read),
    "azure2023": Reader(LAYOUTS["azure2023"].read, units_per_ms=1e6),  # wall clock, in ns
    "mooncake": Reader(read_mooncake),
    "burstgpt": Reader(LAYOUTS["burstgpt"].read),
}
FORMATS = tuple(READERS)
# readers that also keep their parsed rows for the prefix source (`read_trace(prefix_rows=True)`)
ROW_KEEPING_READERS = {"mooncake": Reader(read_mooncake_keeping_rows)}


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
    prefix_rows: bool = False,
) -> TraceColumns:
    """The rows of a trace in a window, times relative to the first kept row, then scaled.

    `start_s`/`duration_s` keep rows whose time since the trace's first row lies in
    [start_s, start_s + duration_s); `max_requests` then keeps the first N; `time_scale`
    multiplies every time (0.5 halves every gap, doubling the rate). `prefix_rows`: a reader
    that can (Mooncake) keeps its parsed rows for the prefix source, which then parses nothing.
    """
    label = display_path(path)
    filters = {"model": model, "log_type": log_type}
    if format not in FORMATS:
        raise _unknown_format(label, format)
    check_window(label, time_scale, start_s, duration_s, max_requests)
    _check_filters(label, format, filters)
    reader = ROW_KEEPING_READERS.get(format) if prefix_rows else None
    columns = _read_columns(Path(path), format, label, filters, reader)
    kept = window(columns, label, start_s, duration_s, max_requests)
    return TraceColumns(kept.arrival_ms * time_scale, kept.prefill_tokens, kept.decode_tokens)


def read_length_pairs(path: str | Path, format: str) -> tuple[np.ndarray, np.ndarray]:
    """Every row's (prefill, decode) tokens, read once per file: tenants and variants share it."""
    if format not in FORMATS:
        raise _unknown_format(display_path(path), format)
    try:
        path = Path(path).resolve()
    except (OSError, RuntimeError):  # a symlink loop: read_text names it
        path = Path(os.path.abspath(path))
    try:
        stat = path.stat()
        version = (stat.st_mtime_ns, stat.st_size)  # an edited file is read afresh
    except OSError:
        version = None  # _read_columns reports the problem
    return _cached_pairs(path, format, version)


@functools.lru_cache(maxsize=16)
def _cached_pairs(path: Path, format: str, version: tuple | None) -> tuple[np.ndarray, np.ndarray]:
    columns = _read_columns(path, format, display_path(path), {})
    for array in (columns.prefill_tokens, columns.decode_tokens):
        array.flags.writeable = False  # shared by every caller of the cache
    return columns.prefill_tokens, columns.decode_tokens


def _check_filters(label: str, format: str, filters: dict) -> None:
    for key, value in filters.items():
        if value is not None and format != "burstgpt":
            raise InputError(label, "", f"{key} applies only to the burstgpt format")


def _unknown_format(label: str, format: str) -> InputError:
    return InputError(
        label, "format", f"unknown trace format {format!r} (known: {', '.join(FORMATS)})"
    )


def _trace_text(path: Path, format: str) -> str:
    """A trace's text; a missing public trace says where the public traces come from."""
    try:
        return read_text(path, "trace file")
    except InputError as exc:
        if format == "csv" or path.exists():
            raise
        hint = (
            "; the public traces are not in the project: run `make traces`, or download them as "
            "scenarios/README.md (Trace files) says"
        )
        raise InputError(display_path(path), exc.where, exc.message + hint) from None


def _read_columns(
    path: Path, format: str, label: str, filters: dict, reader: Reader | None = None
) -> TraceColumns:
    """All rows, sorted by time, times in ms since the first row (by `reader`, else the
    format's own)."""
    reader = READERS[format] if reader is None else reader
    times, prefill, decode = reader.read(_trace_text(path, format), label, filters)
    order = np.argsort(times, kind="stable")
    times = times[order]
    # subtract first: int64 ns stay exact until here; dividing by 1.0 changes no float
    arrival_ms = (times - times[0]).astype(np.float64) / reader.units_per_ms
    return TraceColumns(arrival_ms, prefill[order], decode[order])
