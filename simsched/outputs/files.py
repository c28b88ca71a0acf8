"""Writing a result to a folder, all or nothing (`simsched.outputs.atomic`).

Files go to a temporary folder beside the target and are moved into place only once every one
of them is written, so a failed or interrupted run never leaves a half-written output.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from simsched.outputs.atomic import (
    cannot_write,
    output_folder,
    publish_folder,
    refuse_overwriting_inputs,
    staging_folder,
)
from simsched.outputs.cluster_table import table_notes
from simsched.results.frames import SimulationResult

REQUESTS_FILE = "requests.csv"
TENANTS_FILE = "tenants.csv"
SUMMARY_FILE = "summary.json"
TIMELINE_FILE = "timeline.csv"
RESULT_FILES = (REQUESTS_FILE, TENANTS_FILE, SUMMARY_FILE, TIMELINE_FILE)
QUOTED = '[",\n\r]'  # a text cell holding one of these is written quoted


def write_result(
    result: SimulationResult, out_dir: str | Path, inputs: Iterable[Path] = ()
) -> list[Path]:
    """Write the result files into `out_dir` (created if needed); the written paths, sorted.

    None of them may be one of the run's `inputs` (checked again just before the move, as the
    command checked before the run: the one rule of `outputs.atomic`)."""
    target = output_folder(out_dir)
    try:
        with staging_folder(target) as staging:
            _write_files(result, staging)
            refuse_overwriting_inputs([target / name for name in RESULT_FILES], inputs, "--out")
            return publish_folder(staging, target)
    except OSError as exc:  # a full disk halfway through is an input error, as at the start
        raise cannot_write(target, "--out", exc) from None


def _write_files(result: SimulationResult, folder: Path) -> None:
    requests = result.requests.copy()
    for column in ("dispatch_ms", "first_token_ms", "finish_ms"):
        requests[column] = requests[column].round(4)
    write_csv(requests, folder / REQUESTS_FILE)
    write_csv(result.tenants, folder / TENANTS_FILE)
    timeline = result.timeline.copy()
    timeline["time_ms"] = timeline["time_ms"].round(4)
    write_csv(timeline, folder / TIMELINE_FILE)
    with open(folder / SUMMARY_FILE, "w", encoding="utf-8") as f:
        json.dump(json_safe(summary_document(result)), f, indent=2, allow_nan=False)
        f.write("\n")


def summary_document(result: SimulationResult) -> dict[str, Any]:
    """The result as `--format json` prints it and summary.json holds it: the figures, each
    tenant's (`tenants`, as tenants.csv), then the table's plain-words notes (`notes`, only when
    there are any), so that a script reading the JSON learns what the figures leave out
    (admitted requests only, a model's stated error, a front end that set the pace) as a reader
    of the table does."""
    document = result.to_json_dict()
    # the reference's `met` judges the interactive p99 TTFT alone; every tenant's TTFT and TPOT
    # targets, as the table's row beside it (a copy: the result keeps its own)
    document["slo"] = {
        variant: {**verdict, "every_tenant_met": all(verdict["tenants"].values())}
        for variant, verdict in document["slo"].items()
    }
    document["tenants"] = tenant_figures(result)
    notes = table_notes(result) + _stand_in_notes(result)
    if notes:
        document["notes"] = notes
    return document


def _stand_in_notes(result: SimulationResult) -> list[str]:
    """Where the table prints TPOT and goodput n/a, the JSON has figures (tenants.csv's, and the
    reference-shaped `capacity`): say what they are."""
    untimed = [v for v in result.variants if not result.facts[v].per_token_timing]
    if not untimed:
        return []
    some = len(untimed) < len(result.variants)  # else every variant: no need to name them
    who = f"variant {', '.join(untimed)}: " if some else ""
    return [
        f"{who}the token server times no tokens: TPOT, goodput and SLO attainment here "
        "(tenants, capacity) come from a stand-in finish, the end of each request's KV hold "
        "(the table prints TPOT and goodput n/a)"
    ]


def tenant_figures(result: SimulationResult) -> dict[str, dict[str, dict[str, Any]]]:
    """tenants.csv's figures by variant and tenant (`all` included): latency percentiles (TPOT
    among them), goodput, shares and each tenant's SLO verdict, which the reference-shaped
    `comparison` block does not carry (as tenants.csv, the token server's per-token figures are
    stand-ins, which a note says: `_stand_in_notes`)."""
    frame = result.tenants
    figures: dict[str, dict[str, dict[str, Any]]] = {}
    for variant in result.variants:
        rows = frame[frame["variant"] == variant].drop(columns="variant")
        figures[variant] = {}
        for row in rows.to_dict("records"):
            row = {key: _python(value) for key, value in row.items()}
            figures[variant][row.pop("tenant_id")] = row
    return figures


def _python(value: Any) -> Any:
    """A NumPy scalar as the Python number JSON writes (pandas' records keep NumPy's)."""
    return value.item() if hasattr(value, "item") else value


def json_safe(value: Any) -> Any:
    """`value` with every NaN or infinite float as None (null): JSON has no such numbers, and
    Python's `NaN` and `Infinity` make a file other JSON readers refuse."""
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """A frame as CSV through Arrow's writer (ten times pandas' on a million rows).

    Text is written bare, as people expect to read it, unless some cell needs quoting (a comma,
    a quote or a line break in a request id, say); then every text cell is quoted. Numbers
    look the same either way.
    """
    table = pa.Table.from_pandas(frame, preserve_index=False)  # NaN becomes an empty cell
    style = "needed" if _needs_quoting(table) else "none"
    pacsv.write_csv(
        table, path, write_options=pacsv.WriteOptions(quoting_style=style, quoting_header=style)
    )


def _needs_quoting(table: pa.Table) -> bool:
    """Whether a text cell or a column name holds a comma, a quote or a line break (Arrow's
    own string kernels: a Python pass over a million request ids costs a second)."""
    text = [
        c for c in table.columns if pa.types.is_string(c.type) or pa.types.is_large_string(c.type)
    ]
    return any(pc.any(pc.match_substring_regex(c, QUOTED)).as_py() for c in text) or any(
        any(ch in str(name) for ch in ',"\n\r') for name in table.column_names
    )
