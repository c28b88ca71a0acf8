"""A tenant's requests read from its trace file (`tenants[i].trace`)."""

from __future__ import annotations

import numpy as np

from simsched.config.classes import CLASS_INDEX
from simsched.config.trace_specs import TenantTrace
from simsched.workload.formats import read_trace
from simsched.workload.generators import request_ids
from simsched.workload.table import RequestTable


def tenant_trace_table(
    trace: TenantTrace, tenant, index: int, prefix_rows: bool = False
) -> RequestTable:
    """The tenant's requests from its trace: its id prefix, its index, its priority class.
    `prefix_rows`: the prefix source will read the trace's prefix ids (`read_trace`)."""
    columns = read_trace(trace.path, trace.format, prefix_rows=prefix_rows, **trace.options())
    count = len(columns)
    return RequestTable(
        request_id=request_ids(tenant.id, count),
        tenant=np.full(count, index, dtype=np.int64),
        lane=np.full(count, CLASS_INDEX[tenant.priority], dtype=np.int64),
        arrival_ms=columns.arrival_ms,
        prefill_tokens=columns.prefill_tokens,
        decode_tokens=columns.decode_tokens,
    )
