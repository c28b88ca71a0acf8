"""Trace cells to checked numbers, every problem named by file and line as an editor counts it."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

import numpy as np
import pandas as pd

from simsched.errors import InputError
from simsched.workload.limits import MAX_TIME_MS

MAX_TOKENS = 2**31 - 1  # far beyond any real request; keeps token arithmetic inside int64


def fail(label: str, line: int, message: str) -> InputError:
    return InputError(f"{label} line {line}", "", message)


def numbers(
    text: pd.Series, column: str, label: str, *, integer: bool, non_negative: bool | None = None
) -> np.ndarray:
    """The cells as float64, or int64 token counts; the series' index is each cell's line.

    Token counts are always non-negative; times are when `non_negative` says so.
    """
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    checks = [(~np.isfinite(values), "is not a number")]
    if integer if non_negative is None else non_negative:
        checks.append((values < 0, "is negative"))
    if integer:
        checks.append((values != np.floor(values), "is not a whole number"))
        checks.append((values > MAX_TOKENS, f"is above {MAX_TOKENS}"))
    for mask, what in checks:  # NaN fails the first check, so later ones never see it
        if mask.any():
            position = int(np.argmax(mask))
            shown = text.iloc[position]
            shown = "" if pd.isna(shown) else str(shown).strip()
            message = f"{column} is empty" if not shown else f"{column} {shown!r} {what}"
            raise fail(label, int(text.index[position]), message)
    return values.astype(np.int64) if integer else values


def times(text: pd.Series, column: str, label: str, ms_per_unit: float = 1.0) -> np.ndarray:
    """A time column (in its own unit) as float64: numbers, not negative, and none beyond the
    `MAX_TIME_MS` a simulation clock resolves, each problem named by its line.

    Bounded cell by cell, before any arithmetic: BurstGPT seconds of 1e306 would overflow to
    infinity once made milliseconds, and one such row among small ones would be dropped
    silently by the window."""
    values = numbers(text, column, label, integer=False, non_negative=True)
    most = MAX_TIME_MS / ms_per_unit  # compared in the column's own unit: no overflow
    beyond = values > most
    if beyond.any():
        position = int(np.argmax(beyond))
        shown = str(text.iloc[position]).strip()
        raise fail(
            label,
            int(text.index[position]),
            f"{column} {shown!r} is beyond {most:g} ({MAX_TIME_MS:g} ms, about 31,700 years), "
            "more than a simulation clock resolves",
        )
    return values


def universal_newlines(text: str) -> str:
    """`\r\n` and a lone `\r` as `\n`, as a text editor breaks lines (and Python's text mode
    reads them): an old Mac export or a stray carriage return is a line break, not a character
    the CSV readers choke on, and line numbers in messages match the editor's."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def csv_rows(text: str, label: str) -> Iterator[tuple[int, list[str]]]:
    """(line, fields) of each CSV record; a malformed one is an InputError naming its line."""
    reader = csv.reader(io.StringIO(universal_newlines(text)))
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise fail(label, reader.line_num, f"not a readable CSV row: {exc}") from None
        yield reader.line_num, row


def check_shape(text: str, label: str) -> None:
    """Every row has as many fields as the header, and no column is named twice.

    pandas would fill a short row with empty cells (or drop it, when the cells it reads are
    all empty), read a long row's surplus under no column, and rename a repeated column; each
    hides a damaged file. Blank lines are allowed.

    A file without quotes (nearly every trace) is checked in one vectorised pass over its
    bytes: there a row's fields are its commas plus one. Only rows whose count differs from
    the header's are looked at one by one (to tell a blank line from a damaged row). A file
    with quotes or NUL characters, or a line longer than the csv module's field limit, takes
    the csv module's pass, whose rules (and messages) are the definition.
    """
    data, ends = _line_ends(text)
    if '"' in text or "\0" in text or _longest_line(ends) > csv.field_size_limit():
        _check_shape_by_rows(text, label)
        return
    first = text.split("\n", 1)[0]
    width = len(_header_names(first.split(",") if first else [], label))
    for line, row in _rows_of_other_widths(data, ends, width):
        if any(cell.strip() for cell in row):
            raise fail(label, line, _width_message(len(row), width))


def _header_names(cells: list[str], label: str) -> list[str]:
    header = [name.strip() for name in cells]
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise InputError(label, "header", f"column {name!r} is named twice")
        seen.add(name)
    return header


def _width_message(fields: int, width: int) -> str:
    return f"{fields} field{'s' if fields != 1 else ''}, but the header names {width}"


def _line_ends(text: str) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of `text` (UTF-8: a comma or a line break is never part of another
    character) and the offset where each line ends."""
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    ends = np.flatnonzero(data == ord("\n"))
    if len(data) and data[-1] != ord("\n"):
        ends = np.append(ends, len(data))  # a last line without a line break
    return data, ends


def _longest_line(ends: np.ndarray) -> int:
    """The longest line's length in bytes (at least its length in characters)."""
    return int(np.diff(ends, prepend=-1).max()) - 1 if len(ends) else 0


def _rows_of_other_widths(
    data: np.ndarray, ends: np.ndarray, width: int
) -> Iterator[tuple[int, list[str]]]:
    """(line, fields) of each row after the header whose comma count + 1 is not `width`."""
    commas = np.flatnonzero(data == ord(","))
    fields = np.diff(np.searchsorted(commas, ends), prepend=0) + 1
    starts = np.concatenate(([0], ends[:-1] + 1))
    for index in (np.flatnonzero(fields[1:] != width) + 1).tolist():
        row = data[starts[index] : ends[index]].tobytes().decode("utf-8")
        yield index + 1, row.split(",")


def _check_shape_by_rows(text: str, label: str) -> None:
    rows = csv_rows(text, label)
    width = len(_header_names(next(rows, (1, []))[1], label))
    for line, row in rows:
        if len(row) != width and any(cell.strip() for cell in row):
            raise fail(label, line, _width_message(len(row), width))
