"""The lean event loop (sim/kernel.py) gives exactly SimPy's results: every recorded figure
and every timeline row, on runs full of ties (arrivals, service ends, KV releases and timeline
samples at the same instants), for every policy, with admission on and off."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from simsched.sim import engine
from simsched.sim.engine import run_variant
from simsched.sim.kernel import RELEASE, SCHEDULER, At, AtInstant, LeanEnvironment, SimEnvironment
from simsched.sim.policies import POLICIES
from simsched.workload.build import build_workload

TENANTS = [
    {"id": "a", "priority": "interactive", "weight": 2.0},
    {"id": "b", "priority": "interactive"},
    {
        "id": "c",
        "priority": "batch",
        "quota": {"burst_service_tokens": 400, "sustained_service_tokens_per_sec": 20_000},
    },
]
# 10 service tokens per ms and sizes in tens: every service time, KV hold (factor 2) and arrival
# is a whole millisecond, as is every timeline sample, so events share instants all the time.
CLUSTER = {
    "total_kv_blocks": 60,
    "kv_block_tokens": 10,
    "service_tokens_per_ms": 10.0,
    "prefill_tokens_per_ms": 10.0,
    "min_prefill_ms": 3.0,
    "kv_hold_factor": 2.0,
}
RECORDED = (
    "order",
    "status_code",
    "ttft_ms",
    "queue_wait_ms",
    "kv_occupancy_ratio",
    "dispatch_ms",
    "first_token_ms",
    "finish_ms",
)


def rows(seed: int) -> list[tuple]:
    rng = random.Random(seed)
    return [
        (
            f"r{i}",
            rng.choice("abc"),
            float(rng.randrange(0, 120, 2)),
            10 * rng.randrange(1, 6),
            10 * rng.randrange(0, 4),
        )
        for i in range(80)
    ]


def run_on(kernel, scenario, monkeypatch):
    monkeypatch.setattr(engine, "_kernel", lambda *_: kernel())
    return run_variant(scenario, build_workload(scenario))


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("admission", [True, False])
def test_lean_and_simpy_kernels_agree(make_scenario, monkeypatch, policy, admission) -> None:
    scenario = make_scenario(
        rows(len(policy) + admission),
        TENANTS,
        cluster=CLUSTER,
        scheduler={"policy": policy},
        admission={"enabled": admission, "interactive_kv_watermark": 0.8, "max_batch_wait_ms": 30},
        timeline={"enabled": True, "interval_ms": 1.0},
    )
    simpy_run = run_on(SimEnvironment, scenario, monkeypatch)
    lean_run = run_on(LeanEnvironment, scenario, monkeypatch)
    for name in RECORDED:
        simpy_values = np.asarray(getattr(simpy_run.recorder, name))
        lean_values = np.asarray(getattr(lean_run.recorder, name))
        assert np.array_equal(simpy_values, lean_values, equal_nan=True), name
    assert simpy_run.recorder.reason == lean_run.recorder.reason
    assert len(simpy_run.timeline) > 100  # the sampler ran through the ties
    pd.testing.assert_frame_equal(simpy_run.timeline, lean_run.timeline)
    assert simpy_run.kv_peak_ratio == lean_run.kv_peak_ratio


def test_the_token_server_behind_a_tick_gateway_runs_on_the_lean_kernel() -> None:
    token_server = engine.SERVICE_MODELS["token_server"]
    batching = engine.SERVICE_MODELS["continuous_batching"]
    assert isinstance(engine._kernel(token_server, engine.TickGateway, False), LeanEnvironment)
    assert isinstance(engine._kernel(token_server, engine.ArrivalGateway, False), SimEnvironment)
    assert isinstance(engine._kernel(token_server, engine.TickGateway, True), SimEnvironment)
    assert isinstance(engine._kernel(batching, engine.TickGateway, False), SimEnvironment)


def test_alarms_take_their_place_among_events_and_failures_still_crash() -> None:
    # an alarm is queued like the event it stands for: (time, priority, insertion), so at one
    # instant and priority it fires between the events queued before and after it
    env = SimEnvironment()
    fired: list[str] = []
    AtInstant(env, 5.0, SCHEDULER).callbacks.append(lambda _e: fired.append("event 1"))
    env.alarm_at(5.0, SCHEDULER, lambda _a: fired.append("alarm"))
    At(env, 5.0, SCHEDULER).callbacks.append(lambda _e: fired.append("event 2"))
    env.alarm_at(5.0, RELEASE, lambda _a: fired.append("release first"))
    env.alarm_after(1.0, SCHEDULER, lambda _a: fired.append("after 1"))
    env.run_bounded(4.0)
    assert fired == ["after 1"]
    env.run_bounded(5.0)
    assert fired == ["after 1", "release first", "event 1", "alarm", "event 2"]
    failing = env.event()
    failing.fail(ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        env.run_bounded(5.0)
