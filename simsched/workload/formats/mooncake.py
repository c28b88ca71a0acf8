"""The Mooncake FAST'25 trace: JSON lines with `timestamp` (ms), `input_length`, `output_length`.

`hash_ids` (prefix blocks) are checked and chained apart, for prefix caching
(`workload/prefix_sources.py`), from the rows this reader has parsed when asked to keep them
(`read_trace(prefix_rows=True)`, then `take_rows`), so the JSON is parsed once; other keys
are ignored. Blank lines are skipped but still counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simsched.errors import InputError
from simsched.workload.formats.checks import fail, numbers
from simsched.workload.formats.checks import times as checked_times

MOONCAKE_KEYS = ("timestamp", "input_length", "output_length")


def read_mooncake(text: str, label: str, filters: dict, keep_rows: bool = False):
    """Times (ms), prefill and decode tokens in file order; Mooncake has nothing to filter on.
    `keep_rows`: keep the rows' raw values for the prefix source (`take_rows`)."""
    lines = text.splitlines()
    rows = [(number, line) for number, line in enumerate(lines, start=1) if line.strip()]
    if not rows:
        raise InputError(label, "", "holds no requests")
    raw: list[tuple] | None = [] if keep_rows else None
    values = np.array([_row(line, number, label, raw) for number, line in rows], dtype=object)
    index = pd.Index([number for number, _ in rows])
    times, prefill, decode = (pd.Series(values[:, i], index=index) for i in range(3))
    columns = (
        checked_times(times, "timestamp", label),
        numbers(prefill, "input_length", label, integer=True),
        numbers(decode, "output_length", label, integer=True),
    )
    _kept.clear()
    if raw is not None:
        _kept.append(ParsedRows(text, index.tolist(), raw))  # every row checked above
    return columns


def read_mooncake_keeping_rows(text: str, label: str, filters: dict):
    """`read_mooncake` for a workload whose prefix cache reads the file's `hash_ids`."""
    return read_mooncake(text, label, filters, keep_rows=True)


@dataclass(frozen=True)
class ParsedRows:
    """A file's rows as the reader parsed them: each row's line and its raw
    `(timestamp, input_length, hash_ids)` values (`hash_ids` None where absent)."""

    text: str
    lines: list[int]
    raw: list[tuple]


# the last file read keeping its rows, until the prefix source takes it
_kept: list[ParsedRows] = []


def prefix_values(record: dict) -> tuple:
    """A row's raw values the prefix source reads: `(timestamp, input_length, hash_ids)`,
    `hash_ids` None where absent."""
    return record["timestamp"], record["input_length"], record.get("hash_ids")


def take_rows(text: str) -> ParsedRows | None:
    """The rows of `text` if it is the file read last (then forgotten: one file's values are
    held only between reading a tenant's trace and building its prefixes), else None."""
    parsed = _kept.pop() if _kept else None
    return parsed if parsed is not None and parsed.text == text else None


def drop_rows() -> None:
    """Forget the kept rows (a second tenant replaying a file whose ids are already chained)."""
    _kept.clear()


def _row(line: str, number: int, label: str, raw: list[tuple] | None) -> tuple:
    try:
        record = json.loads(line, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise fail(label, number, f"not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise fail(label, number, "JSON nested too deeply") from None
    except _RepeatedKey as exc:
        raise fail(label, number, f"key {exc.args[0]!r} is given twice") from None
    except ValueError as exc:  # an integer of thousands of digits, beyond Python's limit
        raise fail(label, number, f"not a readable JSON value: {exc}") from None
    if not isinstance(record, dict):
        raise fail(label, number, "is not a JSON object")
    missing = [key for key in MOONCAKE_KEYS if key not in record]
    if missing:
        raise fail(label, number, f"missing key(s): {', '.join(missing)}")
    # numbers pass through; anything else becomes text so `numbers` reports it with its line
    if raw is not None:  # as the prefix source reads them (`prefix_sources._read_hash_ids`)
        raw.append(prefix_values(record))
    return tuple(_plain(record[key], key, number, label) for key in MOONCAKE_KEYS)


def _plain(value, key: str, number: int, label: str) -> float | str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:  # an integer beyond any float (hundreds of digits)
            raise fail(label, number, f"{key} is far too large to be a number") from None
    return "" if value is None else str(value)


class _RepeatedKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    # json keeps the last of two equal keys; a record that says two things says neither
    record: dict = {}
    for key, value in pairs:
        if key in record:
            raise _RepeatedKey(key)
        record[key] = value
    return record
