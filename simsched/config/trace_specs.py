"""`tenants[i].trace`: one tenant's requests replayed from a public trace file.

Every row of the (windowed) file belongs to that tenant, so one trace can be given to several
tenants, each with its own window or `time_scale`, to build a multi-tenant mix from one file.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from simsched.config.specs import TraceFormat
from simsched.sim.requests import CLASS_INDEX
from simsched.workload.formats import read_trace
from simsched.workload.generators import request_ids
from simsched.workload.table import RequestTable

PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class TenantTrace(BaseModel):
    """A trace file and the part of it to replay; `path` is relative to the scenario file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: Annotated[str, Field(min_length=1)]
    format: TraceFormat = "csv"
    time_scale: PositiveFloat = 1.0
    start_s: NonNegativeFloat | None = None
    duration_s: PositiveFloat | None = None
    max_requests: Annotated[int, Field(ge=1)] | None = None
    model: Annotated[str, Field(min_length=1)] | None = None
    log_type: Annotated[str, Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _filters_need_burstgpt(self) -> TenantTrace:
        for key in ("model", "log_type"):
            if getattr(self, key) is not None and self.format != "burstgpt":
                raise ValueError(f"{key} applies only to format burstgpt")
        return self

    def options(self) -> dict:
        """The keyword arguments of `read_trace`."""
        return self.model_dump(exclude={"path", "format"})


def tenant_trace_table(trace: TenantTrace, tenant, index: int) -> RequestTable:
    """The tenant's requests from its trace: its id prefix, its index, its priority class."""
    columns = read_trace(trace.path, trace.format, **trace.options())
    count = len(columns)
    return RequestTable(
        request_id=request_ids(tenant.id, count),
        tenant=np.full(count, index, dtype=np.int64),
        lane=np.full(count, CLASS_INDEX[tenant.priority], dtype=np.int64),
        arrival_ms=columns.arrival_ms,
        prefill_tokens=columns.prefill_tokens,
        decode_tokens=columns.decode_tokens,
    )
