"""`load_scale`: every tenant's arrival rate times one factor; traces time-scaled."""

from __future__ import annotations

import numpy as np
import pytest

from simsched.config.loading import validate
from simsched.errors import InputError
from simsched.workload.build import build_workload

PERIODIC = {"kind": "periodic", "interval_ms": 100, "count": 10}


def scenario(arrivals: dict, **raw):
    tenant = {"id": "a", "arrivals": arrivals, "prefill_tokens": 10, "decode_tokens": 5}
    return validate({"tenants": [tenant], **raw}, "s.yaml")


def test_a_periodic_tenant_comes_twice_as_often() -> None:
    # interval 100 ms / 2 = 50 ms, the count kept: 0, 50, ..., 450
    table = build_workload(scenario(PERIODIC, load_scale=2))
    assert np.array_equal(table.arrival_ms, np.arange(10) * 50.0)


def test_a_poisson_tenant_sends_about_scale_times_the_requests_in_the_same_window() -> None:
    poisson = {"kind": "poisson", "rate_per_s": 50, "duration_s": 40}
    one, three = (len(build_workload(scenario(poisson, load_scale=s))) for s in (1, 3))
    # 2,000 and 6,000 expected; Poisson counts are within 5 standard deviations of those
    assert abs(one - 2000) < 5 * 2000**0.5 and abs(three - 6000) < 5 * 6000**0.5
    last = build_workload(scenario(poisson, load_scale=3)).arrival_ms.max()
    assert 39_000 < last <= 40_000  # the window stays 40 s


def test_a_rate_schedule_scales_its_rates_and_keeps_its_times() -> None:
    curve = {"kind": "rate_schedule", "points": [[0, 0], [10, 40]], "duration_s": 20, "cv": 1e-6}
    table = build_workload(scenario(curve, load_scale=0.5))
    assert table.arrival_ms.min() >= 10_000  # nothing before the curve's own step at 10 s
    assert abs(len(table) - 10 * 40 * 0.5) <= 2  # 20/s over 10 s, near-periodic


def test_a_trace_replay_is_time_scaled(tmp_path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(
        "request_id,tenant_id,arrival_ms,prefill_tokens,decode_tokens\n"
        "r0,a,0,10,5\nr1,a,1000,10,5\nr2,a,3000,10,5\n"
    )
    raw = {"tenants": [{"id": "a"}], "trace": {"path": str(trace)}, "load_scale": 4}
    table = build_workload(validate(raw, str(tmp_path / "s.yaml")))
    assert list(table.arrival_ms) == [0.0, 250.0, 750.0]


def test_closed_loop_clients_refuse_a_scale_in_one_line() -> None:
    loop = {"kind": "closed_loop", "concurrency": 2, "count": 10}
    assert scenario(loop).load_scale == 1  # as written: fine
    with pytest.raises(InputError) as caught:
        scenario(loop, load_scale=1.5)
    assert "load_scale 1.5 cannot apply to tenant 'a'" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_scaled_scenario_keeps_its_rates_as_written() -> None:
    # saved and reloaded, it is not scaled twice: the factor applies when generating only
    loaded = scenario(PERIODIC, load_scale=2)
    assert loaded.tenants[0].arrivals.interval_ms == 100
    assert validate(loaded.model_dump(mode="json"), "again.yaml").tenants[0].arrivals == (
        loaded.tenants[0].arrivals
    )
