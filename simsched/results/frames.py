"""Simulation results: per-request and per-tenant frames, and per-variant summaries.

`summary` has exactly the reference's `summarize_outcomes` shape (the golden test compares it
key by key); SLO verdicts and other additions live beside it, in `slo`. Percentiles are
nearest-rank: the value at index `ceil(p/100 * n) - 1` of the sorted values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simsched.config.classes import CLASS_NAMES
from simsched.config.scenario import Scenario
from simsched.results.rounding import reference_decisions
from simsched.sim.recorder import STATUS_OK, Recorder
from simsched.workload.table import RequestTable

REQUEST_COLUMNS = [
    "variant",
    "request_id",
    "tenant_id",
    "priority_class",
    "status_code",
    "reason",
    "service_tokens",
    "prefill_tokens",
    "decode_tokens",
    "kv_blocks",
    "arrival_ms",
    "dispatch_ms",
    "ttft_ms",
    "queue_wait_ms",
    "kv_occupancy_ratio",
    "first_token_ms",
    "finish_ms",
    "tpot_ms",
    "e2e_ms",
    "preemptions",
    "replica",
]


@dataclass(frozen=True)
class VariantFacts:
    """Per-variant aggregates the terminal table needs beyond the summaries, counted once as
    the variant's frame is built, so that no table rescans the request rows."""

    admitted_by_class: tuple[int, ...]  # admitted requests per priority class (CLASS_NAMES order)
    per_token_timing: bool  # the service model times each output token (TPOT means something)


@dataclass
class SimulationResult:
    scenario: Scenario
    variants: list[str]
    requests: pd.DataFrame
    tenants: pd.DataFrame
    summaries: dict[str, dict[str, Any]]
    slo: dict[str, dict[str, Any]] = field(default_factory=dict)
    timeline: pd.DataFrame = field(default_factory=pd.DataFrame)
    fairness: dict[str, dict[str, float]] = field(default_factory=dict)
    capacity: dict[str, dict[str, float]] = field(default_factory=dict)
    prefix_cache: dict[str, dict[str, Any]] = field(default_factory=dict)  # variants caching
    # variants with `sessions` tenants: turn figures per session tenant and `all` over them
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    utilisation: dict[str, dict[str, Any]] = field(default_factory=dict)  # variants with replicas
    # GPU-hours, cost and busy share over provisioned time, where some variant autoscales
    provisioned: dict[str, dict[str, Any]] = field(default_factory=dict)
    facts: dict[str, VariantFacts] = field(default_factory=dict)
    # variants with a `chargeback` section: fleet cost and energy (results/chargeback.py)
    chargeback: dict[str, dict[str, Any]] = field(default_factory=dict)
    # variants with `fairness.blast_radius`: the noisiest tenant and the others' p99 TTFT inflation
    blast_radius: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __repr__(self) -> str:  # a notebook shows this: one line per variant, not the frames
        lines = [f"SimulationResult {self.scenario.name!r}, {len(self.variants)} variant(s):"]
        overall = self.tenants[self.tenants["tenant_id"] == "all"].set_index("variant")
        for variant in self.variants[:8]:
            row = overall.loc[variant]
            verdict = self.slo.get(variant, {})
            p99 = verdict.get("interactive_p99_ttft_ms")
            met = "met" if verdict.get("met") else "missed"
            lines.append(
                f"  {variant}: {row['submitted']} requests, {row['shed_rate']:.1%} shed, "
                f"interactive p99 TTFT {p99} ms ({met})"
            )
        if len(self.variants) > 8:
            lines.append(f"  ... and {len(self.variants) - 8} more")
        return "\n".join(lines)

    def to_json_dict(self) -> dict[str, Any]:
        out = {
            "scenario": self.scenario.name,
            "comparison": self.summaries,
            "slo": self.slo,
            "fairness": self.fairness,
            "capacity": self.capacity,
        }
        if self.prefix_cache:
            out["prefix_cache"] = self.prefix_cache
        if self.sessions:
            out["sessions"] = self.sessions
        if self.utilisation:
            out["utilisation"] = self.utilisation
        if self.chargeback:
            out["chargeback"] = self.chargeback
        if self.blast_radius:
            out["blast_radius"] = self.blast_radius
        if self.provisioned:
            out["provisioned"] = self.provisioned
        return out


def variant_frame(
    variant: str, scenario: Scenario, table: RequestTable, costs: tuple, recorder: Recorder
) -> pd.DataFrame:
    """One row per request, in decision order."""
    seq = np.asarray(recorder.order, dtype=np.int64)
    service_tokens, kv_blocks = costs
    tenant_ids = np.array([t.id for t in scenario.tenants], dtype=object)
    decisions = reference_decisions(
        recorder.ttft_ms, recorder.queue_wait_ms, recorder.kv_occupancy_ratio
    )

    def column(values: list, dtype=np.float64) -> np.ndarray:
        return np.asarray(values, dtype=dtype)[seq]

    columns = {
        "variant": variant,
        "request_id": table.request_id[seq],
        "tenant_id": tenant_ids[table.tenant[seq]],
        "priority_class": np.array(CLASS_NAMES, dtype=object)[table.lane[seq]],
        "status_code": column(recorder.status_code, np.int64),
        "reason": column(recorder.reason, object),
        "service_tokens": service_tokens[seq],
        "prefill_tokens": table.prefill_tokens[seq],
        "decode_tokens": table.decode_tokens[seq],
        "kv_blocks": kv_blocks[seq],
        "arrival_ms": table.arrival_ms[seq],
        "dispatch_ms": column(recorder.dispatch_ms),
        "ttft_ms": _served_only(decisions["ttft_ms"][seq], column(recorder.status_code)),
        "queue_wait_ms": decisions["queue_wait_ms"][seq],
        "kv_occupancy_ratio": decisions["kv_occupancy_ratio"][seq],
        "first_token_ms": column(recorder.first_token_ms),
        "finish_ms": column(recorder.finish_ms),
        "preemptions": column(recorder.preemptions, np.int64),
        "replica": column(recorder.replica, np.int64),
        "cached_tokens": column(recorder.cached_tokens, np.int64),
        "preempted_cached_tokens": column(recorder.preempted_cached_tokens, np.int64),
        "_seq": seq,
    }
    # in the constructor, not set on the built frame: a column set afterwards costs a copy
    return pd.DataFrame(columns | _latencies(columns))


def variant_facts(frame: pd.DataFrame, lanes: np.ndarray, per_token_timing: bool) -> VariantFacts:
    """`frame`'s aggregates for the table; `lanes` is each request's class by seq."""
    served = lanes[frame["_seq"].to_numpy()[admitted(frame)]]
    counts = np.bincount(served, minlength=len(CLASS_NAMES))
    return VariantFacts(tuple(int(n) for n in counts), per_token_timing)


def _served_only(ttft: np.ndarray, status: np.ndarray) -> np.ndarray:
    """The recorder keeps the reference's decision record, where a shed request's TTFT reads 0;
    a request that was not served has no latency, so the frame (and every output) leaves it
    empty (NaN), and a mean or median over a tenant's rows is over what it was served."""
    return np.where(status == STATUS_OK, ttft, np.nan)


def _latencies(columns: dict[str, Any]) -> dict[str, np.ndarray]:
    """TPOT (mean time per output token after the first) and end-to-end latency."""
    after_first = columns["decode_tokens"] - 1
    decode_ms = columns["finish_ms"] - columns["first_token_ms"]
    with np.errstate(divide="ignore", invalid="ignore"):
        tpot = np.where(after_first > 0, decode_ms / np.maximum(after_first, 1), np.nan)
    e2e = np.round(columns["finish_ms"] - columns["arrival_ms"], 2)
    return {"tpot_ms": np.round(tpot, 3), "e2e_ms": e2e}


def class_rows(frame: pd.DataFrame, name: str) -> np.ndarray:
    """Which rows are of priority class `name`, compared in the column's own strings (Arrow's
    kernel): `to_numpy()` first made an object array of every row's text, 25 ms a call on a
    500k-row run, and the results asked four times."""
    return (frame["priority_class"] == name).to_numpy(dtype=bool)


class TenantRows:
    """Each tenant's rows of a frame as masks, from one factorisation of `tenant_id` rather
    than an object array of every row's text compared once per tenant (the same masks)."""

    def __init__(self, frame: pd.DataFrame) -> None:
        codes, names = pd.factorize(frame["tenant_id"])
        self.codes = codes
        self.names = [str(name) for name in names]  # in order of first appearance, as pd.unique
        self._code = {name: code for code, name in enumerate(self.names)}

    def code(self, tenant: str) -> int:
        """`tenant`'s code; -2 for a tenant the frame does not hold (-1 is a missing id's)."""
        return self._code.get(tenant, -2)

    def of(self, tenant: str) -> np.ndarray:
        """The rows of `tenant` (none for a tenant the frame does not hold)."""
        return self.codes == self.code(tenant)


def admitted(rows: pd.DataFrame) -> np.ndarray:
    """Which rows were admitted (served): the one test of a request's outcome."""
    return rows["status_code"].to_numpy() == STATUS_OK
