"""Conservation on random continuous-batching runs: every policy, every router, tiny KV caches,
both admission timings, admission on and off.

Every request has exactly one outcome; every admitted request gets its first token and finishes,
in order (arrival <= dispatch <= first token <= finish); a shed request has neither; no replica
ever holds more KV blocks than it has (the pool refuses to, so a violation fails the run); and
fast-forwarding through decode-only stretches changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import simsched
from simsched.config.names import POLICY_NAMES
from simsched.config.router import ROUTER_NAMES, SCORER_NAMES
from simsched.config.scenario import Scenario

# every named router, and a weighted mix of every scorer
ROUTERS = [*ROUTER_NAMES, {"scorers": [{"name": name, "weight": 1} for name in SCORER_NAMES]}]
LINEAR = {"kind": "linear", "base_ms": 2.0, "prefill_ms_per_token": 0.02, "decode_ms_per_seq": 0.1}


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[tuple], list[dict], dict[str, Any]]:
    tenant_count = draw(st.integers(1, 3))
    tenants = [
        {
            "id": f"t{i}",
            "weight": draw(st.sampled_from([0.5, 1.0, 2.0])),
            "priority": draw(st.sampled_from(["interactive", "batch"])),
        }
        | ({"prefix": {"tokens": draw(st.sampled_from([8, 40]))}} if draw(st.booleans()) else {})
        for i in range(tenant_count)
    ]
    clock, rows = 0.0, []
    for index in range(draw(st.integers(1, 30))):
        clock += draw(st.sampled_from([0.0, 0.0, 1e-6, 0.5, 3.0, 20.0]))
        rows.append(
            (
                f"r{index:03d}",
                f"t{draw(st.integers(0, tenant_count - 1))}",
                clock,
                draw(st.integers(1, 300)),
                draw(st.integers(1, 120)),
            )
        )
    block_size = draw(st.sampled_from([1, 4, 16]))
    budget = draw(st.sampled_from([16, 64, 512]))
    cluster = {
        "service_model": "continuous_batching",
        "replicas": draw(st.integers(1, 3)),
        "block_size": block_size,
        "num_gpu_blocks": draw(st.sampled_from([8, 24, 64, 400])),
        "max_num_batched_tokens": budget,
        "max_num_seqs": draw(st.sampled_from([s for s in (1, 4, 16) if s <= budget])),
        "max_waiting_per_replica": draw(st.sampled_from([1, 4])),
        "router": draw(st.sampled_from(ROUTERS)),
        "latency_model": draw(st.sampled_from([LINEAR, {"kind": "roofline"}])),
        "prefix_caching": draw(st.booleans()),
        "schedule_step_ms": draw(st.sampled_from([0.0, 0.5, 4.0])),
        "block_watermark": draw(st.sampled_from([0.0, 0.01, 0.3])),
    }
    if cluster["router"] == ROUTERS[-1] and not cluster["prefix_caching"]:  # reads the caches
        cluster["router"] = {"scorers": [{"name": "prefix_cache_approx", "weight": 1}]}
    sections = {
        "cluster": cluster,
        "scheduler": {"policy": draw(st.sampled_from(POLICY_NAMES))},
        "admission": {
            "enabled": draw(st.booleans()),
            "evaluate_at": draw(st.sampled_from(["scheduler_tick", "arrival"])),
        },
    }
    return rows, tenants, sections


def run(make_scenario: Callable[..., Scenario], case, fast_forward: bool) -> pd.DataFrame:
    rows, tenants, sections = case
    cluster = sections["cluster"] | {"fast_forward": fast_forward}
    scenario = make_scenario(rows, tenants, **(sections | {"cluster": cluster}))
    result = simsched.simulate(scenario)
    timeline = result.timeline
    assert (timeline["kv_blocks_used"] <= timeline["kv_blocks_total"]).all()
    return result.requests


@settings(max_examples=12, deadline=None)  # each example runs a cluster; 12 fit the suite
@given(case=cases())
def test_conservation(make_scenario: Callable[..., Scenario], case) -> None:
    frame = run(make_scenario, case, fast_forward=True)
    assert sorted(frame["request_id"]) == sorted(row[0] for row in case[0])
    served = frame[frame["status_code"] == 200]
    shed = frame[frame["status_code"] != 200]
    for column in ("dispatch_ms", "first_token_ms", "finish_ms"):
        assert np.isfinite(served[column]).all(), column
    assert (served["dispatch_ms"] >= served["arrival_ms"]).all()
    assert (served["first_token_ms"] >= served["dispatch_ms"]).all()
    assert (served["finish_ms"] >= served["first_token_ms"]).all()
    assert shed["finish_ms"].isna().all() and shed["first_token_ms"].isna().all()
    pd.testing.assert_frame_equal(frame, run(make_scenario, case, fast_forward=False))
