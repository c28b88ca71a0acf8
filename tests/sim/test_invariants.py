"""Properties that hold for every small workload, policy and admission setting.

Hypothesis draws traces (1-3 tenants, ties and fractional arrival times, mixed classes) and
parameters (both policies, admission on and off, both `evaluate_at` values, KV sizes that make
the watermarks bite), runs them through `simsched.simulate` and checks invariants of the
outcome rather than exact numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import simsched
from simsched.config.scenario import Scenario

CLASSES = ("interactive", "batch")
POLICY_NAMES = ("request_count_fifo", "service_token_drr")
# Multiples of 0.05: a recorded ratio (rounded to 4 decimals) can then be compared with the
# watermark itself, with no rounding slack.
WATERMARKS = [round(0.05 * k, 2) for k in range(2, 21)]
# 20 examples a property: three properties share the draws strategy, so each run of the suite
# checks 60 fresh workloads in all, in a few seconds (60 each took a quarter of the suite).
PROPERTY_SETTINGS = settings(max_examples=20, deadline=None)

Case = tuple[list[tuple], list[dict[str, Any]], dict[str, Any]]


@st.composite
def tenant_specs(draw: st.DrawFn, count: int) -> list[dict[str, Any]]:
    tenants = []
    for index in range(count):
        tenant: dict[str, Any] = {
            "id": f"t{index}",
            "weight": draw(st.sampled_from([0.5, 1.0, 1.5, 3.0])),
            "priority": draw(st.sampled_from(CLASSES)),
        }
        if draw(st.booleans()):
            tenant["quota"] = {
                "burst_service_tokens": draw(st.integers(500, 20_000)),
                "sustained_service_tokens_per_sec": draw(st.integers(1_000, 100_000)),
            }
        tenants.append(tenant)
    return tenants


@st.composite
def trace_rows(draw: st.DrawFn, tenant_count: int) -> list[tuple]:
    count = draw(st.integers(1, 25))
    # Small requests pass the KV watermark and reach the later rules; large ones fill KV.
    max_prefill = draw(st.sampled_from([200, 1000, 3000]))
    fractional = draw(st.booleans())
    gap = (
        st.floats(0, 40, allow_nan=False, allow_infinity=False)
        if fractional
        else st.sampled_from([0, 0, 1, 3, 10, 50])  # zeros make ties on arrival_ms
    )
    clock: float = 0
    rows = []
    for index in range(count):
        clock += draw(gap)
        rows.append(
            (
                # Ids do not follow arrival order, so ties are broken by id, not by position.
                f"r{draw(st.integers(0, 99)):02d}-{index}",
                f"t{draw(st.integers(0, tenant_count - 1))}",
                clock,
                draw(st.integers(0, max_prefill)),
                draw(st.integers(0, max_prefill // 6)),
                draw(st.sampled_from(("", *CLASSES))),  # "" = the tenant's own class
            )
        )
    return rows


@st.composite
def sections(draw: st.DrawFn) -> dict[str, Any]:
    interactive = draw(st.sampled_from(WATERMARKS))
    batch = draw(st.sampled_from([w for w in WATERMARKS if w <= interactive]))
    return {
        "cluster": {
            "total_kv_blocks": draw(st.sampled_from([60, 200, 800, 1600])),
            "service_tokens_per_ms": draw(st.sampled_from([7.5, 20.0, 45.0])),
            "kv_hold_factor": draw(st.sampled_from([1.0, 2.5, 5.5])),
        },
        "scheduler": {
            "policy": draw(st.sampled_from(POLICY_NAMES)),
            "decode_weight": draw(st.integers(1, 4)),
            "base_quantum_tokens": draw(st.sampled_from([100, 1200, 5000])),
        },
        "admission": {
            "enabled": draw(st.booleans()),
            "evaluate_at": draw(st.sampled_from(("scheduler_tick", "arrival"))),
            "interactive_kv_watermark": interactive,
            "batch_kv_watermark": batch,
            "max_interactive_wait_ms": draw(st.sampled_from([20.0, 420.0, 5000.0])),
            "max_batch_wait_ms": draw(st.sampled_from([100.0, 3500.0])),
        },
    }


@st.composite
def cases(draw: st.DrawFn) -> Case:
    tenant_count = draw(st.integers(1, 3))
    return (
        draw(trace_rows(tenant_count)),
        draw(tenant_specs(tenant_count)),
        draw(sections()),
    )


def simulate(make_scenario: Callable[..., Scenario], case: Case) -> tuple[Scenario, pd.DataFrame]:
    rows, tenants, raw_sections = case
    scenario = make_scenario(rows, tenants, **raw_sections)
    return scenario, simsched.simulate(scenario).requests


@PROPERTY_SETTINGS
@given(case=cases())
def test_outcome_invariants(make_scenario: Callable[..., Scenario], case: Case) -> None:
    scenario, frame = simulate(make_scenario, case)
    rows = case[0]

    # Exactly one outcome per request.
    assert sorted(frame["request_id"]) == sorted(row[0] for row in rows)
    assert set(frame["status_code"]) <= {200, 429}

    assert (frame["queue_wait_ms"] >= 0).all()
    ok = frame["status_code"] == 200
    admitted, shed = frame[ok], frame[~ok]
    assert (admitted["reason"] == "admitted").all()
    assert (admitted["ttft_ms"] >= admitted["queue_wait_ms"]).all()
    assert (admitted["dispatch_ms"] >= admitted["arrival_ms"]).all()
    assert shed["dispatch_ms"].isna().all()
    # nothing served, no latency: empty, never 0 (issue 10)
    assert shed[["ttft_ms", "tpot_ms", "e2e_ms", "first_token_ms", "finish_ms"]].isna().all().all()
    assert set(shed["reason"]) <= {
        "shed_kv_watermark",
        "shed_queue_wait_slo",
        "shed_tenant_token_quota",
    }

    if not scenario.admission.enabled:
        assert shed.empty, "nothing is shed without admission control"
    else:
        limits = admitted_watermarks(scenario, admitted)
        assert (admitted["kv_occupancy_ratio"] <= limits).all()
        assert (admitted["kv_occupancy_ratio"] <= 1.0).all()


def admitted_watermarks(scenario: Scenario, admitted: pd.DataFrame) -> np.ndarray:
    """Each admitted request's dispatch watermark: its class's, or interactive for FIFO."""
    admission = scenario.admission
    if scenario.scheduler.policy == "request_count_fifo":
        return np.full(len(admitted), admission.interactive_kv_watermark)
    return np.where(
        admitted["priority_class"] == "interactive",
        admission.interactive_kv_watermark,
        admission.batch_kv_watermark,
    )


@PROPERTY_SETTINGS
@given(case=cases())
def test_one_request_at_a_time_on_the_token_server(
    make_scenario: Callable[..., Scenario], case: Case
) -> None:
    # The token server is one logical server: each admitted request runs to completion
    # (service_tokens / service_tokens_per_ms) before the next one is dispatched.
    scenario, frame = simulate(make_scenario, case)
    # zero-length services at the same instant as a longer one may go first or after it
    admitted = frame[frame["status_code"] == 200].sort_values(
        ["dispatch_ms", "service_tokens"], kind="stable"
    )
    starts = admitted["dispatch_ms"].to_numpy()
    ends = starts + admitted["service_tokens"].to_numpy() / scenario.cluster.service_tokens_per_ms
    assert (starts[1:] >= ends[:-1] - 1e-9).all()


@PROPERTY_SETTINGS
@given(case=cases())
def test_evaluation_time_only_matters_for_screened_arrivals(
    make_scenario: Callable[..., Scenario], case: Case
) -> None:
    # Without arrival rules (admission off, or the FIFO baseline that has none) there is
    # nothing to judge at the arrival instant, so both evaluation times give the same run.
    rows, tenants, raw_sections = case
    admission = raw_sections["admission"]
    if raw_sections["scheduler"]["policy"] == "service_token_drr":
        admission = {**admission, "enabled": False}
    frames = [
        simulate(make_scenario, (rows, tenants, {**raw_sections, "admission": at_when}))[1]
        for at_when in (
            {**admission, "evaluate_at": "scheduler_tick"},
            {**admission, "evaluate_at": "arrival"},
        )
    ]
    pd.testing.assert_frame_equal(frames[0], frames[1])
