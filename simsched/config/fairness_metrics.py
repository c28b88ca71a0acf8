"""The `fairness` section: fairness measures beyond Jain's index, opt-in (no SimPy here).

- `dispersion: true`: the coefficient of variation and the max/min ratio of weight-normalised
  service across tenants, beside the Jain indices in summary.json's `fairness` block, and the
  same spread read only while tenants were backlogged, window by window of `backlog_window_ms`
  (results/backlog_dispersion.py);
- `blast_radius: true`: each variant is run a second time without its noisiest tenant (the one
  that asked for the most service tokens) on the same requests otherwise, and each other
  tenant's p99 TTFT inflation is reported (results/blast_radius.py; docs/chargeback.md).

Without the section (or with both false) nothing changes in any output.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from simsched.config.arrival_kinds import REACTIVE_KINDS


class FairnessMetrics(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    dispersion: bool = False
    # Long enough to hold many dispatches at a busy gateway (service counts whole, at dispatch),
    # short enough that a burst's backlog spans several windows: a reading choice, not physics.
    backlog_window_ms: Annotated[float, Field(gt=0, le=1e9, allow_inf_nan=False)] = 1000.0
    blast_radius: bool = False

    @model_validator(mode="after")
    def _window_needs_dispersion(self) -> FairnessMetrics:
        # by value, not by fields set: a checked copy re-validates every field from a dump
        default = type(self).model_fields["backlog_window_ms"].default
        if not self.dispersion and self.backlog_window_ms != default:
            raise ValueError(
                "backlog_window_ms is read only with dispersion: true: it would do nothing"
            )
        return self


def reactive_tenant(tenant: Any) -> bool:
    """Whether the tenant's requests depend on what it is served (sessions, closed loop)."""
    return getattr(tenant.arrivals, "kind", None) in REACTIVE_KINDS
