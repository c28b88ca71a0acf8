"""Autoscaling per pool of `cluster.pools`: each pool's controller reads and resizes only its
own replicas; a cold replica takes no request and no transfer; a draining decode replica lands
the transfer already reserved on it; GPU-hours per pool are the integral of its replica count.

Every expected number is worked out by hand from the settings: a linear latency model, requests
arriving on a fixed period, and the HPA formula of docs/autoscaling.md.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simsched.sim.engine as engine
from simsched.config.loading import validate
from simsched.errors import InputError
from simsched.results.simulate import simulate
from simsched.sim.cluster.autoscaler import ScaleDecision
from simsched.sim.cluster.pd_replicas import DecodeReplica
from simsched.sim.cluster.pools import PooledCluster
from simsched.sim.cluster.registry import SERVICE_MODELS
from simsched.sim.cluster.replica_group import SERVING
from tests.sim.cluster.test_autoscaling import TWO_SEAT_REPLICA

QUEUE = {"min": 1, "max": 3, "metric": "queue_depth", "target": 1.0, "interval_s": 1.0}
MS_PER_HOUR = 3_600_000


def pool(name: str, role: str = "mixed", **settings: Any) -> dict[str, Any]:
    return {"name": name, "role": role, **TWO_SEAT_REPLICA, **settings}


def two_pools(
    autoscale: dict[str, Any], fast_forward: bool = True, interval_ms=None, flood: int = 3000
):
    """Pool `a` serves the heavy tenant alone, pool `b` the light one: a light tenant (one
    request every 100 ms for 20 s) on `b` and, from 4050 ms, a flood on `a` (one request a
    millisecond, `flood` of them), which one replica of two seats cannot keep up with (a request
    takes 2 + 9 x ~1.2 ms, so two seats serve ~150 requests a second)."""
    light = {"kind": "periodic", "start_ms": 0.5, "interval_ms": 100, "count": 200}
    flood_arrivals = {"kind": "periodic", "start_ms": 4050, "interval_ms": 1, "count": flood}
    tenants = [
        {"id": "light", "arrivals": light, "prefill_tokens": 100, "decode_tokens": 10,
         "pools": ["b"]},
        {"id": "heavy", "arrivals": flood_arrivals, "prefill_tokens": 100, "decode_tokens": 10,
         "pools": ["a"]},
    ]  # fmt: skip
    pools = [pool(name, autoscale=autoscale, fast_forward=fast_forward) for name in ("a", "b")]
    raw: dict[str, Any] = {
        "tenants": tenants,
        "cluster": {"pools": pools},
        "admission": {"enabled": False},
    }
    if interval_ms is not None:
        raw["timeline"] = {"interval_ms": interval_ms}
    return validate(raw, "two_pools.yaml")


STEP = {**QUEUE, "scale_up_delay_s": 2.0, "scale_down_cooldown_s": 1000.0}


def test_a_step_on_one_pool_scales_that_pool_after_interval_plus_delay() -> None:
    # Both controllers tick at 0.5 + k s (the first arrival is the light tenant's at 0.5 ms).
    # Pool a's ticks see an empty queue until the flood starts at 4050 ms; the tick at
    # 5000.5 ms finds hundreds of the heavy tenant's requests waiting for one replica:
    # ceil(1 x hundreds / 1) clamps to max 3, so two replicas warm from 5000.5 ms and serve
    # from 7000.5 ms = that tick + the 2 s delay. Pool b's queue holds at most the light
    # tenant's one request at a time (served in ~13 ms of every 100): the proposal clamps to
    # min = 1, the count it has, and it never changes.
    result = simulate(two_pools(STEP))
    pools = result.provisioned["base"]["pools"]
    a, b = pools["a"]["replicas_over_time"], pools["b"]["replicas_over_time"]
    assert a[:3] == [[0.5, 1, 1, 0], [5000.5, 3, 1, 2], [7000.5, 3, 3, 0]]
    assert b == [[0.5, 1, 1, 0]]
    requests = result.requests
    # pool a's slots are 0..4 (2 max - min = 5), pool b's 5..9; only slot 5 of b ever serves
    heavy = requests[requests["tenant_id"] == "heavy"]
    on_new = heavy[heavy["replica"].isin([1, 2])]
    assert on_new["dispatch_ms"].min() == 7000.5  # the queue moves onto them as they warm
    assert (heavy[heavy["dispatch_ms"] < 7000.5]["replica"] == 0).all()
    assert (requests[requests["tenant_id"] == "light"]["replica"] == 5).all()


def test_per_pool_gpu_hours_are_the_integral_of_its_replica_count() -> None:
    # No scale-down (a 1000 s window): pool a has one replica over [first arrival, end] and
    # two more from the tick that scaled up (5000.5 ms) to the end; pool b one replica.
    result = simulate(two_pools(STEP, interval_ms=5.0))
    block = result.provisioned["base"]
    start, end = block["window_ms"]
    a, b = block["pools"]["a"], block["pools"]["b"]
    assert start == 0.5
    assert a["gpu_hours"] == pytest.approx(((end - start) + 2 * (end - 5000.5)) / MS_PER_HOUR,
                                           abs=1e-6)  # fmt: skip
    assert b["gpu_hours"] == pytest.approx((end - start) / MS_PER_HOUR, abs=1e-6)
    assert block["total"]["gpu_hours"] == pytest.approx(a["gpu_hours"] + b["gpu_hours"])
    # the utilisation block's per-pool cost figures are over the same provisioned time
    usage = result.utilisation["base"]["pools"]
    assert usage["a"]["gpu_hours"] == a["gpu_hours"]
    assert usage["b"]["gpu_hours"] == b["gpu_hours"]
    # independently, from the timeline: each sample's provisioned slots of the pool, held
    # until the next sample; a change between two samples errs by at most one gap per slot,
    # and GPU-hours are rounded to 1e-6 h (1.8 ms either way)
    for name, figures in (("a", a), ("b", b)):
        replica_ms, most_error = _timeline_integral(result.timeline, name, end)
        rounding = 0.5e-6 * MS_PER_HOUR
        assert figures["gpu_hours"] * MS_PER_HOUR == pytest.approx(
            replica_ms, abs=most_error + rounding
        )


def _timeline_integral(timeline, pool_name: str, end: float) -> tuple[float, float]:
    mine = timeline[timeline["pool"] == pool_name]
    up = mine[mine["state"] != "off"].groupby("time_ms").size()
    times = np.sort(mine["time_ms"].unique())
    counts = up.reindex(times, fill_value=0).to_numpy()
    gaps = np.diff(np.append(times, end))
    changes = np.abs(np.diff(counts)).sum()
    return float((counts * gaps).sum()), float(changes * gaps.max() + 1e-6)


def _guard_placements(monkeypatch: pytest.MonkeyPatch) -> list[PooledCluster]:
    """Every replica checks, as a request is placed on it or a transfer books it, that its
    slot is serving (warm and not draining)."""
    built: list[PooledCluster] = []

    class Guarded(PooledCluster):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            built.append(self)
            for each in self.pools:
                for replica in each.replicas:
                    _guard(replica, each.group)

    monkeypatch.setitem(SERVICE_MODELS, "pools", Guarded)
    return built


def _guard(replica: Any, group: Any) -> None:
    def state() -> str:
        states = group.states()
        return SERVING if states is None else states[replica.index]

    submit = replica.submit

    def checked_submit(request: Any) -> None:
        assert state() == SERVING, f"a request was placed on a {state()} replica"
        submit(request)

    replica.submit = checked_submit
    if isinstance(replica, DecodeReplica):
        offer = replica.offer

        def checked_offer(*args: Any) -> None:
            assert state() == SERVING, f"a transfer went to a {state()} decode replica"
            offer(*args)

        replica.offer = checked_offer


AUTOSCALE = st.fixed_dictionaries(
    {
        "min": st.just(1),
        "max": st.integers(1, 3),
        "metric": st.sampled_from(["queue_depth", "running", "kv_utilization"]),
        "target": st.sampled_from([0.05, 0.5, 2.0]),
        "interval_s": st.sampled_from([0.1, 0.25]),
        "scale_up_delay_s": st.sampled_from([0.0, 0.05, 0.3]),
        "scale_down_cooldown_s": st.sampled_from([0.0, 0.2]),
    }
)


@st.composite
def layouts(draw: st.DrawFn, decode_autoscaled: bool = True) -> list[dict[str, Any]]:
    """A P/D pair, and perhaps a mixed pool; each pool autoscaled or not (the decode pool always,
    unless `decode_autoscaled` is False), tiny caches, one-seat replicas among them."""

    def drawn(name: str, role: str) -> dict[str, Any]:
        spec = pool(
            name,
            role,
            num_gpu_blocks=draw(st.sampled_from([40, 400])),
            max_num_seqs=draw(st.sampled_from([1, 2, 4])),
            router=draw(st.sampled_from(["round_robin", "least_outstanding", "least_kv"])),
        )
        if draw(st.booleans()) or (role == "decode" and decode_autoscaled):
            spec["autoscale"] = draw(AUTOSCALE)
        return spec

    mixed = [drawn("m", "mixed")] if draw(st.booleans()) else []
    return [*mixed, drawn("p", "prefill"), drawn("d", "decode")]


def pd_scenario(pools: list[dict[str, Any]], fast_forward: bool, count: int, gap_ms: float):
    pools = [p | {"fast_forward": fast_forward} for p in pools]
    arrivals = {"kind": "periodic", "start_ms": 0.5, "interval_ms": gap_ms, "count": count}
    tenants = [{"id": "t", "arrivals": arrivals, "prefill_tokens": 200, "decode_tokens": 30}]
    raw = {"tenants": tenants, "cluster": {"pools": pools}, "admission": {"enabled": False}}
    return validate(raw, "random_pd.yaml")


def assert_same_runs(on: Any, off: Any) -> None:
    """Every request's instants, every timeline row and the provisioned GPU-hours agree."""
    assert on.requests.equals(off.requests)
    assert on.timeline.equals(off.timeline)
    assert on.provisioned == off.provisioned


def assert_conserved(result: Any, cluster: PooledCluster) -> None:
    """Conservation with slots coming and going: a request placed on a prefill replica is
    transferred exactly once (each answers 30 tokens), one on a mixed replica never; every block
    comes back, on slots that went off too; no slot held more blocks than it had."""
    frame = result.requests
    assert (frame["status_code"] == 200).all()
    roles = [each.role for each in cluster.pools for _ in each.replicas]
    prefilled = [seq for seq, slot in enumerate(frame["replica"]) if roles[int(slot)] == "prefill"]
    assert Counter(cluster.transfers().seqs) == Counter(prefilled)
    assert all(replica.kv.level == 0 for replica in cluster.replicas)
    timeline = result.timeline
    assert (timeline["kv_blocks_used"] <= timeline["kv_blocks_total"]).all()
    # a slot that is off or warming runs nothing and holds nothing (at every sample)
    cold = timeline[timeline["state"].isin(["off", "warming"])]
    assert (cold[["running", "waiting", "kv_blocks_used"]] == 0).all().all()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout=layouts(), count=st.integers(50, 300), gap_ms=st.sampled_from([0.5, 2.0, 5.0]))
def test_no_request_or_transfer_goes_to_a_cold_replica(layout, count, gap_ms) -> None:
    # the guard and conservation in both modes, and both modes agree (transfers offered at the
    # instant a decode iteration ends: pools.Handoff, kernel.HANDOFF)
    runs = []
    for fast_forward in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            built = _guard_placements(patch)
            runs.append(simulate(pd_scenario(layout, fast_forward, count, gap_ms)))
        (cluster,) = built  # the guarded cluster ran
        assert_conserved(runs[-1], cluster)
    assert_same_runs(*runs)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    layout=layouts(decode_autoscaled=False),
    count=st.integers(50, 300),
    gap_ms=st.sampled_from([0.5, 2.0, 5.0]),
)
def test_fast_forward_on_and_off_agree_on_p_d_layouts(layout, count, gap_ms) -> None:
    # fixed P/D fleets among the drawn layouts too, one-seat decode replicas included
    on, off = (simulate(pd_scenario(layout, ff, count, gap_ms)) for ff in (True, False))
    assert_same_runs(on, off)


@pytest.mark.parametrize(
    "metric,target",
    [("queue_depth", 1.0), ("running", 1.5), ("kv_utilization", 0.01), ("ttft_p90_ms", 50.0)],
)
def test_fast_forward_on_and_off_agree_on_two_autoscaled_mixed_pools(metric, target) -> None:
    spec = {**QUEUE, "metric": metric, "target": target, "scale_up_delay_s": 0.7,
            "scale_down_cooldown_s": 1.5}  # fmt: skip
    # a one-second flood is enough: the tick at 5000.5 ms finds it waiting and the pool scales
    # as it does under the 3-second one (the same count of replica changes for each metric);
    # the longer flood only added iterations to both modes
    on, off = (simulate(two_pools(spec, fast_forward=ff, flood=1000)) for ff in (True, False))
    assert on.provisioned == off.provisioned
    assert on.requests.equals(off.requests)
    assert on.timeline.equals(off.timeline)
    assert len(on.provisioned["base"]["pools"]["a"]["replicas_over_time"]) > 2  # it scaled


# --- a draining decode replica lands the transfer reserved on it --------------------------
# llama-3-8b: 32 layers, 8 KV heads of 128, BF16: 2 (K and V) x 32 x 8 x 128 x 2 bytes a token
KV_BYTES_PER_TOKEN = 2 * 32 * 8 * 128 * 2
PROMPT = 1000
# 100 Gb/s Ethernet: 1000 tokens' KV = 131,072,000 bytes x 8 / 1e11 s = 10.48576 ms + 0.05 ms
TRANSFER_MS = PROMPT * KV_BYTES_PER_TOKEN * 8 / 100e6 + 0.05
SCALE_DOWN_MS = 15.0


def drain_scenario():
    """Two requests at 0 ms and 1 ms on two prefill replicas (round robin: one each), each
    prefilled in one 1 + 0.01 x 1000 = 11 ms iteration and handed to a decode replica (round
    robin again: the first to decode slot 0, the second to slot 1). A third request at 100 ms.
    The decode pool's controller never ticks before the end (a 1000 s interval): the test
    scales it down by hand at 15 ms, while the second transfer is still on the link."""
    first = {"kind": "periodic", "start_ms": 0.0, "interval_ms": 1.0, "count": 2}
    later = {"kind": "periodic", "start_ms": 100.0, "interval_ms": 1.0, "count": 1}
    tenants = [
        {"id": "pair", "arrivals": first, "prefill_tokens": PROMPT, "decode_tokens": 40},
        {"id": "late", "arrivals": later, "prefill_tokens": PROMPT, "decode_tokens": 5},
    ]
    autoscale = {"min": 1, "max": 2, "metric": "running", "target": 1000.0,
                 "interval_s": 1000.0, "scale_up_delay_s": 0.0}  # fmt: skip
    pools = [
        pool("p", "prefill", replicas=2, router="round_robin"),
        pool("d", "decode", replicas=2, router="round_robin", autoscale=autoscale),
    ]
    raw = {
        "tenants": tenants,
        "cluster": {"pools": pools, "kv_transfer": "ethernet_100g"},
        "admission": {"enabled": False},
    }
    return validate(raw, "drain.yaml")


def test_a_draining_decode_replica_lands_its_reserved_transfer(monkeypatch) -> None:
    offers: list[tuple[float, int, int]] = []  # (offer instant, decode slot, request's seq)
    states: list[str] = []
    built = _guard_placements(monkeypatch)

    def scale_down_by_hand(env, config, cluster, lanes, feed) -> None:
        for replica in cluster.pools[1].replicas:
            offer = replica.offer

            def spy(seq, *rest, replica=replica, offer=offer) -> None:
                offers.append((env.now, replica.index, seq.request.seq))
                offer(seq, *rest)

            replica.offer = spy

        def at_15_ms():
            yield env.timeout(SCALE_DOWN_MS)
            group = cluster.pools[1].group
            group.scale_to(1)
            states.extend(group.states())

        env.process(at_15_ms())

    monkeypatch.setattr(engine, "start_autoscaler", scale_down_by_hand)
    result = simulate(drain_scenario())
    assert built
    requests = result.requests  # in arrival order: row i is the request of seq i
    assert (requests["status_code"] == 200).all()
    (second_at, second_slot, second) = offers[1]
    assert [slot for _, slot, _ in offers] == [0, 1, 0]  # the late one skips draining slot 1
    # the transfer was reserved (booked) before the scale-down and was still on the link
    assert second_at < SCALE_DOWN_MS < second_at + TRANSFER_MS
    assert states[:2] == [SERVING, "draining"]
    # slot 1 stays up until the request it took in finishes there, then goes off
    block = result.provisioned["base"]
    steps = block["pools"]["d"]["replicas_over_time"]
    finish = float(requests["finish_ms"].iloc[second])
    assert steps[1] == [SCALE_DOWN_MS, 2, 1, 0]
    assert steps[2][0] == pytest.approx(finish, abs=0.01) and steps[2][1:] == [1, 1, 0]
    start, end = block["window_ms"]
    hand = (end - start) + (finish - start)
    # GPU-hours are rounded to 1e-6 h, coarse for a run this short: the mean count is finer
    assert block["pools"]["d"]["gpu_hours"] == pytest.approx(hand / MS_PER_HOUR, abs=0.5e-6)
    assert block["pools"]["d"]["mean_replicas"] == pytest.approx(hand / (end - start), abs=1e-4)


# --- bad input ------------------------------------------------------------------------------
def _pd_raw(decode: dict[str, Any]) -> dict[str, Any]:
    return {
        "tenants": [{"id": "t"}],
        "cluster": {"pools": [pool("p", "prefill"), pool("d", "decode", **decode)]},
    }


@pytest.mark.parametrize(
    ("decode", "where"),
    [
        ({"replicas": 1, "autoscale": {"min": 2, "max": 3, "metric": "running", "target": 4}},
         "cluster.pools[1].autoscale.min: replicas (1)"),
        ({"replicas": 4, "autoscale": {"min": 1, "max": 3, "metric": "running", "target": 4}},
         "cluster.pools[1].autoscale.max: replicas (4)"),
        ({"autoscale": {"min": 3, "max": 2, "metric": "running", "target": 4}},
         "cluster.pools[1].autoscale.min: min (3) must not exceed max (2)"),
        ({"autoscale": {"min": 1, "max": 2, "metric": "ttft_p90_ms", "target": 400}},
         "cluster.pools[1].autoscale.metric: ttft_p90_ms does not measure a decode pool"),
        ({"autoscale": {"min": 1, "max": 2, "metric": "running", "target": 4,
                        "scale_up_delay_s": 1, "cold_start": "auto"}},
         "cluster.pools[1].autoscale.cold_start: give scale_up_delay_s or cold_start"),
    ],
)  # fmt: skip
def test_bad_pool_autoscale_names_the_pool_and_the_field(decode, where) -> None:
    with pytest.raises(InputError) as error:
        validate(_pd_raw(decode), "bad.yaml")
    assert where in str(error.value)


def test_a_prefill_pool_scales_on_its_prefill_side_ttft(monkeypatch) -> None:
    # The prefill pool's controller reads the p90 (nearest rank) of the TTFTs its replicas
    # computed in the last interval (the prefill side's, before the transfer and the decode
    # replica's first step); checked against the requests' prefill_ttft_ms column, grouped
    # by the interval their prefill-side first token fell in.
    autoscale = {"min": 1, "max": 2, "metric": "ttft_p90_ms", "target": 5.0, "interval_s": 0.2,
                 "scale_up_delay_s": 0.1, "scale_down_cooldown_s": 0.0}  # fmt: skip
    pools = [pool("p", "prefill", autoscale=autoscale), pool("d", "decode", replicas=2)]
    arrivals = {"kind": "periodic", "start_ms": 0.0, "interval_ms": 2.0, "count": 400}
    tenants = [{"id": "t", "arrivals": arrivals, "prefill_tokens": 300, "decode_tokens": 4}]
    raw = {"tenants": tenants, "cluster": {"pools": pools}, "admission": {"enabled": False}}
    read: list[tuple[float, float | None]] = []
    decide = ScaleDecision.decide

    def spy(self, now, serving, current, metric):
        read.append((now, metric))
        return decide(self, now, serving, current, metric)

    monkeypatch.setattr(ScaleDecision, "decide", spy)
    result = simulate(validate(raw, "prefill_ttft.yaml"))
    frame = result.requests
    at = (frame["arrival_ms"] + frame["prefill_ttft_ms"]).to_numpy()
    ttft = frame["prefill_ttft_ms"].to_numpy()
    assert read and any(value is not None for _, value in read)
    for now, value in read:
        window = np.sort(ttft[(at > now - 200.0 + 0.01) & (at <= now - 0.01)])
        if value is None:
            assert len(window) == 0
            continue
        rank = math.ceil(0.9 * len(window)) - 1
        assert value == pytest.approx(window[rank], abs=0.01)
    # the prefill side's TTFT, not the client's (which adds the transfer and a decode step)
    assert (frame["ttft_ms"] > frame["prefill_ttft_ms"]).all()


def test_pool_slots_stay_within_the_replica_limit() -> None:
    # 2 x max - min slots for the autoscaled decode pool, 1 for the prefill pool
    raw = _pd_raw({"autoscale": {"min": 1, "max": 3000, "metric": "running", "target": 4}})
    arrivals = {"kind": "periodic", "interval_ms": 1, "count": 1}
    raw["tenants"] = [{"id": "t", "arrivals": arrivals, "prefill_tokens": 8, "decode_tokens": 8}]
    with pytest.raises(InputError) as error:
        validate(raw, "big.yaml")
    assert "cluster.pools need 6,000 replica slots" in str(error.value)
