"""The project's own trace format: a CSV of requests.

Columns: `request_id,tenant_id,arrival_ms,prefill_tokens,decode_tokens` and optionally
`priority_class` (interactive | batch; empty means the tenant's class). `request_id` is a string;
`arrival_ms` may be fractional; token counts are non-negative integers. Every problem is reported
as `FILE line N: ...`, the line as a text editor counts it (the header is line 1).
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from simsched.config.classes import CLASS_INDEX
from simsched.config.yaml_io import read_text  # the same file checks as for scenarios
from simsched.errors import InputError, display_path
from simsched.workload.formats.checks import (
    check_shape,
    csv_rows,
    fail,
    numbers,
    universal_newlines,
)
from simsched.workload.formats.checks import times as checked_times
from simsched.workload.table import RequestTable

REQUIRED = ("request_id", "tenant_id", "arrival_ms", "prefill_tokens", "decode_tokens")
OPTIONAL = ("priority_class",)
COLUMNS = REQUIRED + OPTIONAL
TEXT_COLUMNS = ("request_id", "tenant_id", "priority_class")


def read_trace_csv(path: str | Path, tenants: list, *, label: str | None = None) -> RequestTable:
    """Requests of `path`; `tenants` are the scenario's (for ids and default classes)."""
    label = label or display_path(path)
    frame = _read_frame(Path(path), label)
    _check_columns(frame, label)
    frame = frame[~_blank_rows(frame)]
    if frame.empty:
        raise InputError(label, "", "holds no requests")
    index = {t.id: i for i, t in enumerate(tenants)}
    tenant = _tenant_indices(frame, index, label)
    return RequestTable(
        request_id=_request_ids(frame, label),
        tenant=tenant,
        lane=_lanes(frame, tenant, tenants, label),
        arrival_ms=checked_times(frame["arrival_ms"], "arrival_ms", label),
        prefill_tokens=numbers(frame["prefill_tokens"], "prefill_tokens", label, integer=True),
        decode_tokens=numbers(frame["decode_tokens"], "decode_tokens", label, integer=True),
    )


def _read_frame(path: Path, label: str) -> pd.DataFrame:
    try:
        text = universal_newlines(read_text(path, "trace file"))
    except InputError as exc:  # name the trace as every other trace message does
        raise InputError(label, exc.where, exc.message) from None
    check_shape(text, label)
    text_columns = {name: str for name in TEXT_COLUMNS}
    try:
        with warnings.catch_warnings():
            # with index_col=False pandas only warns, and drops data, when a row is too long
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(
                io.StringIO(text),
                dtype=text_columns,
                index_col=False,  # never take a surplus first field for a row label
                keep_default_na=False,
                na_values={c: [""] for c in REQUIRED if c not in text_columns},
                skip_blank_lines=False,
                skipinitialspace=True,
            )
    except (pd.errors.ParserError, pd.errors.ParserWarning) as exc:
        raise _too_long_row(text, label) or _unreadable(label, exc) from None
    except pd.errors.EmptyDataError as exc:
        raise _unreadable(label, exc) from None
    frame.columns = [str(c).strip() for c in frame.columns]
    frame.index = frame.index + 2  # the line each row came from
    return frame


def _too_long_row(text: str, label: str) -> InputError | None:
    """The first row with more fields than the header (pandas' own message is vaguer)."""
    rows = csv_rows(text, label)
    width = len(next(rows, (1, []))[1])
    for line, row in rows:
        if len(row) > width:
            message = f"{len(row)} fields, but the header names {width}"
            return fail(label, line, message)
    return None


def _unreadable(label: str, exc: Exception) -> InputError:
    return InputError(label, "", f"not a readable CSV: {str(exc).strip()}")


def _check_columns(frame: pd.DataFrame, label: str) -> None:
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise InputError(label, "header", f"missing column(s): {', '.join(missing)}")
    unknown = [c for c in frame.columns if c not in COLUMNS]
    if unknown:
        raise InputError(label, "header", f"unknown column(s): {', '.join(unknown)}")


def _blank_rows(frame: pd.DataFrame) -> np.ndarray:
    blank = np.ones(len(frame), dtype=bool)
    for name in frame.columns:
        if not blank.any():  # a row is blank only if every cell is: no column can bring it back
            break
        column = frame[name]
        empty = column.isna().to_numpy()
        if name in TEXT_COLUMNS or column.dtype == object:
            # an empty string; as `astype(str) == ""` (only "" reads as ""), without the copy
            empty = empty | (column.to_numpy(dtype=object) == "")
        blank &= empty
    return blank


def _request_ids(frame: pd.DataFrame, label: str) -> np.ndarray:
    ids = frame["request_id"]
    empty = ids == ""
    if empty.any():
        raise fail(label, int(ids.index[empty.argmax()]), "request_id is empty")
    duplicated = ids.duplicated()
    if duplicated.any():
        line = int(ids.index[duplicated.argmax()])
        raise fail(label, line, f"duplicate request_id {ids[line]!r}")
    return ids.to_numpy(dtype=object)


def _tenant_indices(frame: pd.DataFrame, index: dict[str, int], label: str) -> np.ndarray:
    # factorize finds the few distinct ids in one hashing pass; each is looked up once
    codes, ids = pd.factorize(frame["tenant_id"])
    known = np.array([index.get(tenant, -1) for tenant in ids], dtype=np.int64)
    tenant = np.where(codes >= 0, known[codes], -1)  # a missing id (code -1) is no tenant
    unknown = tenant < 0
    if unknown.any():
        line = int(frame.index[unknown.argmax()])
        raise fail(label, line, f"tenant {frame['tenant_id'][line]!r} is not declared")
    return tenant


def _lanes(frame: pd.DataFrame, tenant: np.ndarray, tenants: list, label: str) -> np.ndarray:
    defaults = np.array([CLASS_INDEX[t.priority] for t in tenants], dtype=np.int64)[tenant]
    if "priority_class" not in frame.columns:
        return defaults
    given = frame["priority_class"]
    codes = given.map(CLASS_INDEX)
    bad = codes.isna() & (given != "")
    if bad.any():
        line = int(given.index[bad.argmax()])
        raise fail(label, line, f"priority_class {given[line]!r} is not interactive or batch")
    return np.where(given == "", defaults, codes.fillna(0).to_numpy()).astype(np.int64)
