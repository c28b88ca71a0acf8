"""`tenants[i].trace`: one tenant's requests replayed from a public trace file.

Every row of the (windowed) file belongs to that tenant, so one trace can be given to several
tenants, each with its own window or `time_scale`, to build a multi-tenant mix from one file.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from simsched.config.length_specs import TraceFormat
from simsched.config.spec_base import NonNegativeFloat, PositiveFloat


class TenantTrace(BaseModel):
    """A trace file and the part of it to replay; `path` is relative to the scenario file."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    path: Annotated[str, Field(min_length=1)]
    format: TraceFormat = "csv"
    time_scale: PositiveFloat = 1.0
    start_s: NonNegativeFloat | None = None
    duration_s: PositiveFloat | None = None
    max_requests: Annotated[int, Field(ge=1)] | None = None
    model: Annotated[str, Field(min_length=1)] | None = None
    log_type: Annotated[str, Field(min_length=1)] | None = None
    # salts the file's prefix ids (as vLLM's cache_salt): tenants replaying one file with
    # different salts share no cached blocks; equal salts (or none) share them
    cache_salt: Annotated[str, Field(min_length=1, max_length=256)] | None = None

    @model_validator(mode="after")
    def _filters_need_burstgpt(self) -> TenantTrace:
        for key in ("model", "log_type"):
            if getattr(self, key) is not None and self.format != "burstgpt":
                raise ValueError(f"{key} applies only to format burstgpt")
        if self.cache_salt is not None and self.format != "mooncake":
            raise ValueError("cache_salt applies only to format mooncake (its hash_ids)")
        return self

    def options(self) -> dict:
        """The keyword arguments of `read_trace`."""
        return self.model_dump(exclude={"path", "format", "cache_salt"})
