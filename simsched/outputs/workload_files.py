"""Workloads as files: a generated workload frozen as a trace CSV, an imported scenario as YAML."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from simsched.config.classes import CLASS_NAMES
from simsched.outputs.atomic import write_text_atomic
from simsched.workload.table import RequestTable
from simsched.workload.trace_csv import COLUMNS as TRACE_COLUMNS


def write_trace_csv(table: RequestTable, tenant_ids: list[str], path: str | Path) -> Path:
    """The workload in the project's trace CSV format; `read_trace_csv` reads it back exactly."""
    frame = pd.DataFrame(
        {
            "request_id": table.request_id,
            "tenant_id": np.asarray(tenant_ids, dtype=object)[table.tenant],
            "arrival_ms": table.arrival_ms,
            "prefill_tokens": table.prefill_tokens,
            "decode_tokens": table.decode_tokens,
            "priority_class": np.asarray(CLASS_NAMES, dtype=object)[table.lane],
        },
        columns=list(TRACE_COLUMNS),
    )
    # repr-style floats (pandas' default) are the shortest text that parses to the same double
    return write_text_atomic(Path(path), frame.to_csv(index=False, lineterminator="\n"))


def write_scenario_yaml(mapping: dict, out_path: str | Path) -> Path:
    """Write the mapping as YAML, atomically: a reader never sees half a file."""
    text = yaml.safe_dump(mapping, sort_keys=False, default_flow_style=None, width=100)
    return write_text_atomic(Path(out_path), text)
