"""Shared test helpers: small scenarios built in Python around a trace CSV, and their decisions.

The helpers are fixtures (pytest's way of sharing code between test modules). They are
session-scoped so that hypothesis tests may use them: hypothesis reruns a test body many times
inside one function-scoped fixture instance, which it rightly refuses.
"""

from __future__ import annotations

import csv
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from simsched.config.loading import validate
from simsched.config.scenario import Scenario
from simsched.results.rounding import reference_decisions
from simsched.sim.engine import run_variant
from simsched.workload.build import build_workload

TRACE_HEADER = (
    "request_id",
    "tenant_id",
    "arrival_ms",
    "prefill_tokens",
    "decode_tokens",
    "priority_class",
)

# (request_id, tenant_id, arrival_ms, prefill_tokens, decode_tokens[, priority_class])
TraceRow = Sequence[Any]


class Decision(NamedTuple):
    """One recorded outcome, as the engine records it; `dispatch_ms` is None for a shed."""

    request_id: str
    status_code: int
    reason: str
    dispatch_ms: float | None
    queue_wait_ms: float
    ttft_ms: float
    kv_occupancy_ratio: float


def write_trace(path: Path, rows: Iterable[TraceRow]) -> Path:
    """Write a trace CSV; floats are written with `repr` so they read back bit for bit."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(TRACE_HEADER)
        for row in rows:
            cells = [repr(v) if isinstance(v, float) else v for v in row]
            writer.writerow(cells + [""] * (len(TRACE_HEADER) - len(cells)))
    return path


@pytest.fixture(scope="session")
def make_scenario(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Scenario]:
    """`make_scenario(rows, tenants, **sections)`: a validated scenario replaying `rows`.

    `tenants` are raw tenant mappings (`{"id": "a", "priority": "batch", ...}`); `sections` are
    raw top-level sections (`cluster={...}`, `scheduler={...}`, `admission={...}`).
    """
    folder = tmp_path_factory.mktemp("traces")
    counter = itertools.count()

    def make(rows: Iterable[TraceRow], tenants: list[dict[str, Any]], **sections: Any) -> Scenario:
        path = write_trace(folder / f"trace-{next(counter)}.csv", rows)
        raw = {"name": "test", "tenants": tenants, "trace": {"path": str(path)}, **sections}
        return validate(raw, "test")

    return make


def decisions_of(scenario: Scenario) -> list[Decision]:
    """Run the scenario's base variant and return its outcomes in decision order."""
    table = build_workload(scenario)
    recorder = run_variant(scenario, table).recorder
    # The recorder keeps each field at the request's seq and the decision order in `order`;
    # its times and ratios are raw, rounded as the reference records them by the results.
    rounded = reference_decisions(
        recorder.ttft_ms, recorder.queue_wait_ms, recorder.kv_occupancy_ratio
    )
    return [
        Decision(
            request_id=str(table.request_id[seq]),
            status_code=recorder.status_code[seq],
            reason=recorder.reason[seq],
            dispatch_ms=_none_if_nan(recorder.dispatch_ms[seq]),
            queue_wait_ms=float(rounded["queue_wait_ms"][seq]),
            ttft_ms=float(rounded["ttft_ms"][seq]),
            kv_occupancy_ratio=float(rounded["kv_occupancy_ratio"][seq]),
        )
        for seq in recorder.order
    ]


def _none_if_nan(value: float) -> float | None:
    # NaN never equals itself, so whole-list comparisons need a comparable "no dispatch".
    return None if math.isnan(value) else value


@pytest.fixture(scope="session")
def decisions() -> Callable[[Scenario], list[Decision]]:
    return decisions_of
