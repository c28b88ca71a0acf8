"""The Mooncake FAST'25 trace: JSON lines with `timestamp` (ms), `input_length`, `output_length`.

`hash_ids` (prefix blocks) are read apart, for prefix caching (`workload/prefix_sources.py`);
other keys are ignored. Blank lines are skipped but still counted.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from simsched.errors import InputError
from simsched.workload.formats.checks import fail, numbers
from simsched.workload.formats.checks import times as checked_times

MOONCAKE_KEYS = ("timestamp", "input_length", "output_length")


def read_mooncake(text: str, label: str, filters: dict):
    """Times (ms), prefill and decode tokens in file order; Mooncake has nothing to filter on."""
    lines = text.splitlines()
    rows = [(number, line) for number, line in enumerate(lines, start=1) if line.strip()]
    if not rows:
        raise InputError(label, "", "holds no requests")
    values = np.array([_row(line, number, label) for number, line in rows], dtype=object)
    index = pd.Index([number for number, _ in rows])
    times, prefill, decode = (pd.Series(values[:, i], index=index) for i in range(3))
    return (
        checked_times(times, "timestamp", label),
        numbers(prefill, "input_length", label, integer=True),
        numbers(decode, "output_length", label, integer=True),
    )


def _row(line: str, number: int, label: str) -> tuple:
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
