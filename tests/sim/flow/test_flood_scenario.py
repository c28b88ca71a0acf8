"""scenarios/llm_d_flow_control.yaml shows llm-d's documented behaviours on a flood, each
asserted here: strict bands starve the low band, cross-band WFQ bounds its wait, a queue TTL
answers 429, a saturation detector holds dispatch at the gateway, an empty pool answers 503."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simsched

FLOOD = Path(__file__).resolve().parents[3] / "scenarios" / "llm_d_flow_control.yaml"


@pytest.fixture(scope="module")
def result():
    return simsched.simulate(FLOOD)


def rows(result, variant: str) -> pd.DataFrame:
    frame = result.requests
    return frame[frame.variant == variant]


def dispatched_while_queued(frame: pd.DataFrame, low: str, high: str) -> int:
    """How many of `low`'s dispatches happened while a request of `high` was queued."""
    ok = frame[frame.reason == "admitted"]
    high_rows = ok[ok.tenant_id == high]
    arrivals, dispatches = high_rows.arrival_ms.to_numpy(), high_rows.dispatch_ms.to_numpy()
    return sum(
        int(np.any((arrivals < d) & (dispatches > d)))
        for d in ok[ok.tenant_id == low].dispatch_ms.to_numpy()
    )


def test_strict_bands_never_serve_the_low_band_while_a_higher_one_waits(result) -> None:
    strict = rows(result, "strict_bands")
    assert dispatched_while_queued(strict, "batch", "chat") == 0
    assert dispatched_while_queued(strict, "batch", "agent") == 0
    assert dispatched_while_queued(strict, "agent", "chat") == 0
    # and the flood makes it wait: the batch band's longest wait is most of the flood's 8 s
    assert strict[strict.tenant_id == "batch"].queue_wait_ms.max() > 5000


def test_cross_band_wfq_serves_the_low_band_during_the_flood_and_bounds_its_wait(result) -> None:
    strict, wfq = rows(result, "strict_bands"), rows(result, "cross_band_wfq")
    assert dispatched_while_queued(wfq, "batch", "chat") > 0
    strict_wait = strict[strict.tenant_id == "batch"].queue_wait_ms.max()
    wfq_wait = wfq[wfq.tenant_id == "batch"].queue_wait_ms.max()
    assert wfq_wait < strict_wait / 4
    # the same requests are all served either way: WFQ reorders, it does not shed
    assert (wfq.reason == "admitted").all()


def test_a_queue_ttl_evicts_with_429_at_exactly_the_ttl(result) -> None:
    ttl = rows(result, "request_ttl")
    shed = ttl[ttl.reason != "admitted"]
    assert len(shed) > 0
    assert set(shed.reason) == {"shed_queue_ttl"}
    assert set(shed.status_code) == {429}
    assert set(shed.queue_wait_ms) == {3000.0}
    assert ttl[ttl.reason == "admitted"].queue_wait_ms.max() < 3000.0


def test_the_concurrency_detector_holds_dispatch_at_the_gateway(result) -> None:
    timeline = result.timeline
    held = timeline[timeline.variant == "concurrency_detector"]
    free = timeline[timeline.variant == "no_saturation_detector"]
    # without it, everything goes to the replicas' deep queues at once and the gateway's
    # queue stays empty; with it, requests wait at the gateway and the replicas' queues stay
    # short (in flight at most 36 a replica: 32 running + 4 waiting, a sample's view)
    assert (free.interactive_queued + free.batch_queued).max() == 0
    assert (held.interactive_queued + held.batch_queued).max() > 0
    assert free.waiting.max() > 4 * held.waiting.max()


def test_an_empty_pool_answers_503_after_the_no_endpoint_ttl(result) -> None:
    empty = rows(result, "no_endpoints")
    assert empty[empty.reason == "admitted"].dispatch_ms.min() >= 3000.0
    early = empty[empty.arrival_ms < 2000.0]  # their 1 s TTL runs out while the pool is empty
    assert set(early.reason) == {"shed_queue_ttl_no_endpoints"}
    assert set(early.status_code) == {503}
    assert set(early.queue_wait_ms) == {1000.0}


def test_the_tables_name_each_flow_shed_reason(result) -> None:
    tenants = result.tenants
    ttl = tenants[(tenants.variant == "request_ttl") & (tenants.tenant_id == "all")].iloc[0]
    assert ttl["shed_queue_ttl"] == ttl["shed"]
    empty = tenants[(tenants.variant == "no_endpoints") & (tenants.tenant_id == "all")].iloc[0]
    assert empty["shed_queue_ttl_no_endpoints"] + empty["shed_queue_ttl"] == empty["shed"]


@pytest.mark.parametrize("variant", ["concurrency_detector", "utilization_detector"])
def test_fast_forward_changes_nothing(variant: str) -> None:
    runs = [
        simsched.simulate(simsched.load_scenario(FLOOD, [f"cluster.fast_forward={on}"]), [variant])
        for on in ("true", "false")
    ]
    pd.testing.assert_frame_equal(runs[0].requests, runs[1].requests)
