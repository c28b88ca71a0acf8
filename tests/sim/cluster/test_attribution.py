"""The iteration observer and per-tenant attribution: a hand-computed iteration, a jump walked
iteration by iteration, and fast-forward on and off giving the same ledger."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from simsched.config.scenario import Scenario
from simsched.sim.cluster.attribution import (
    BusiestUnitPower,
    LinearSplit,
    RooflineSplit,
    TenantAttribution,
    TenantDecodeSet,
)
from simsched.sim.cluster.latency import LinearLatency, RooflineLatency
from simsched.sim.cluster.sequences import Seq
from simsched.sim.engine import run_variant
from simsched.sim.requests import Request
from simsched.workload.build import build_workload


def roofline(**terms: float) -> RooflineLatency:
    """A roofline with chosen coefficients (ms per unit), bypassing the GPU arithmetic."""
    latency = RooflineLatency.__new__(RooflineLatency)
    for name, value in terms.items():
        setattr(latency, name, value)
    return latency


TERMS = {
    "token_ms": 0.01,
    "head_ms": 0.002,
    "weights_ms": 5.0,
    "pair_ms": 0.0001,
    "window_pair_ms": 0.0,  # no sliding-window layers
    "window": 0,
    "kv_ms": 0.0005,
    "comm_ms": 0.0,
    "seq_ms": 0.05,
    "fixed_ms": 1.0,
}


def seq(tenant: int, prefill: int = 10, decode: int = 5) -> Seq:
    return Seq(Request(0, tenant, 0, 0.0, prefill, decode, 0, 0, None))


def test_one_roofline_iteration_by_hand() -> None:
    latency = roofline(**TERMS)
    power = BusiestUnitPower(idle_watts=80.0, max_watts=700.0)
    attribution = TenantAttribution(2, RooflineSplit(latency), power, gpus=2)
    decoding = attribution.decode_set(16)
    # tenant 1 decodes two sequences; at iteration 10 they hold 10 + 90 and 10 + 190 tokens
    decoding.add(seq(1), 90, 50)
    decoding.add(seq(1), 190, 50)
    chunk = [(seq(0, prefill=100), 100, 7)]  # tenant 0: a first chunk of 100 prompt tokens
    span = latency.iteration_ms(100, 5050, 0, 2, 300)
    # gemm = max(0.01 * 102 + 0.002 * 2, 5) = 5; pairs 5050 * 1e-4 = 0.505;
    # fixed 1 + 0.05 * 2 = 1.1; KV 0.0005 * (100 + 300) = 0.2
    assert span == pytest.approx(6.805)
    attribution.stepped(0, 0.0, span, chunk, decoding, 10)
    # own: tenant 0 0.505 + 0.05 = 0.555, tenant 1 0.15 + 0.1 = 0.25; shared 6.805 - 0.805 = 6,
    # split by GEMM FLOPs 1.0 : 0.024
    assert attribution.ledger().prefill_ms == pytest.approx([0.555 + 6 * 1 / 1.024, 0.0])
    assert attribution.ledger().decode_ms == pytest.approx([0.0, 0.25 + 6 * 0.024 / 1.024])
    # compute 1.024 + 0.505 ms, memory 5 + 0.2 ms: memory is the busier unit
    watts = 80 + 620 * (5.2 / 6.805)
    joules = 2 * watts * 6.805 / 1000
    assert attribution.ledger().busy_energy_j == pytest.approx(joules)
    assert attribution.ledger().energy_j == pytest.approx(
        [joules * 6.414375 / 6.805, joules * 0.390625 / 6.805]
    )


def test_a_jump_is_walked_iteration_by_iteration() -> None:
    latency = LinearLatency.__new__(LinearLatency)
    latency.base, latency.prefill, latency.decode, latency.attention = 2.0, 0.0, 0.5, 1.0
    attribution = TenantAttribution(2, LinearSplit(latency), BusiestUnitPower(10, 110), 1)
    decoding = attribution.decode_set(16)
    decoding.add(seq(0), 0, 99)  # tenant 0: 3 tokens at iteration 3, 4 at iteration 4
    decoding.add(seq(1), 7, 99)  # tenant 1: 10 tokens at iteration 3, 11 at 4
    attribution.jumped(0, 0.0, [3.0, 7.0], decoding, 3)
    # own = 0.5 + context / 1000; the base 2 ms split by tokens (1 : 1); the spans 3 and 4 ms
    # are the replica's, whatever the model says, so the shared part takes the rest
    first = [0.5 + 3 / 1000, 0.5 + 10 / 1000]
    second = [0.5 + 4 / 1000, 0.5 + 11 / 1000]
    shared = (3.0 - sum(first), 4.0 - sum(second))
    assert attribution.ledger().decode_ms == pytest.approx(
        [first[t] + shared[0] / 2 + second[t] + shared[1] / 2 for t in (0, 1)]
    )
    assert attribution.ledger().busy_ms == 7.0
    assert attribution.ledger().busy_energy_j == pytest.approx(
        110 * 7.0 / 1000
    )  # linear: full power


def test_tenant_decode_set_keeps_per_tenant_sums() -> None:
    decoding = TenantDecodeSet(4, 2)
    a, b, c = seq(0), seq(1), seq(1)
    decoding.add(a, 5, 8)
    decoding.add(b, 6, 9)
    decoding.add(c, 1, 8)
    decoding.remove(b)
    assert (decoding.tenant_count, decoding.tenant_off) == ([1, 1], [5, 1])
    decoding.pop_finishing(8)
    assert (decoding.tenant_count, decoding.tenant_off) == ([0, 0], [0, 0])
    assert decoding.count == 0 and decoding.sum_off == 0


def _ledger(make_scenario: Callable[..., Scenario], fast_forward: bool):
    rows = [(f"r{i}", f"t{i % 2}", 2.0 * i, 50 + 30 * i, 40 + 7 * i) for i in range(12)]
    tenants = [{"id": "t0"}, {"id": "t1", "weight": 2.0}]
    cluster = {
        "service_model": "continuous_batching",
        "replicas": 2,
        "tp": 2,
        "max_num_batched_tokens": 128,
        "fast_forward": fast_forward,
    }
    scenario = make_scenario(rows, tenants, cluster=cluster, chargeback={})
    return run_variant(scenario, build_workload(scenario))


def test_fast_forward_on_and_off_give_the_same_ledger(make_scenario) -> None:
    on, off = _ledger(make_scenario, True), _ledger(make_scenario, False)
    assert on.chargeback == off.chargeback
    busy = sum(u.busy_ms for u in on.utilisation)
    assert on.chargeback.busy_ms == pytest.approx(busy, rel=1e-12)
    ledger = on.chargeback
    assert sum(ledger.prefill_ms) + sum(ledger.decode_ms) == pytest.approx(busy, rel=1e-9)
    assert ledger.gpus_per_replica == 2


def test_sliding_window_layers_charge_their_windowed_pairs_to_the_chunk() -> None:
    # the chargeback's split of a model with sliding layers: pair_ms covers the full layers,
    # window_pair_ms the sliding ones, at most `window` keys a query. A 100-token chunk after
    # 10,000 cached tokens attends 100 x 10,000 + 100 x 101 / 2 = 1,005,050 pairs in a full
    # layer and 128 x 100 = 12,800 in a sliding one
    latency = roofline(**{**TERMS, "window_pair_ms": 0.00005, "window": 128})
    split = RooflineSplit(latency)
    pairs = 100 * 10_000 + 100 * 101 // 2
    attention = 0.0001 * pairs + 0.00005 * 12_800
    assert split.prefill_own(100, pairs, 10_000) == pytest.approx(
        attention + 0.0005 * (10_000 + 100)
    )
    # with 500 decodes beside it the window still bounds the 100 prefill tokens only
    compute, _ = split.utilisation(600, pairs, 10_100, 500, 1000.0)
    assert compute == pytest.approx((0.01 * 600 + 0.002 * 500 + attention) / 1000.0)
