"""Autoscaling a replica group: when it scales, what it pays for, where requests go.

Every expected number is worked out by hand from the settings: a linear latency model, requests
arriving on a fixed period, and the HPA formula of docs/autoscaling.md.
"""

from __future__ import annotations

import math
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simsched.config.autoscale import AutoscaleSpec
from simsched.config.loading import validate
from simsched.config.prices import GPU_PRICES_PER_HOUR
from simsched.results.simulate import simulate
from simsched.sim.cluster.autoscaler import ScaleDecision
from simsched.sim.cluster.continuous_batching import ContinuousBatching
from simsched.sim.cluster.replica_group import SERVING, AutoscaledGroup
from simsched.sim.kernel import SimEnvironment

# every iteration: 1 ms + 0.01 ms per prefill token + 0.1 ms per decoding sequence
LINEAR = {"kind": "linear", "base_ms": 1.0, "prefill_ms_per_token": 0.01, "decode_ms_per_seq": 0.1}
STEP_MS = 4050.0  # the heavy tenant's first request, between two ticks
# one replica of two seats, each iteration as LINEAR and started at once (test_pool_autoscaling.py
# builds its pools of the same replicas)
TWO_SEAT_REPLICA = {
    "replicas": 1,
    "latency_model": LINEAR,
    "num_gpu_blocks": 400,
    "block_size": 16,
    "max_num_seqs": 2,
    "schedule_step_ms": 0.0,
    "block_watermark": 0.0,
    "router": "least_outstanding",
}


def scenario(
    autoscale: dict,
    fast_forward: bool = True,
    heavy: int = 3000,
    decode: int = 10,
    step_ms: float = STEP_MS,
):
    """A light tenant (one request every 100 ms for 20 s) and, from `step_ms`, a heavy one (one
    request a millisecond): a step in load that one replica of two seats cannot keep up with
    (a request takes 2 + 9 x ~1.2 ms, so two seats serve ~150 requests a second)."""
    light = {"kind": "periodic", "start_ms": 0.5, "interval_ms": 100, "count": 200}
    step = {"kind": "periodic", "start_ms": step_ms, "interval_ms": 1, "count": heavy}
    tenants = [
        {"id": "light", "arrivals": light, "prefill_tokens": 100, "decode_tokens": decode},
        {"id": "heavy", "arrivals": step, "prefill_tokens": 100, "decode_tokens": decode},
    ]
    cluster = {
        "service_model": "continuous_batching",
        **TWO_SEAT_REPLICA,
        "fast_forward": fast_forward,
        "autoscale": autoscale,
    }
    raw = {"tenants": tenants, "cluster": cluster, "admission": {"enabled": False}}
    return validate(raw, "autoscale.yaml")


QUEUE = {"min": 1, "max": 3, "metric": "queue_depth", "target": 1.0, "interval_s": 1.0}


def _first_scale_up(result) -> tuple[list, list]:
    steps = result.provisioned["base"]["pools"]["cluster"]["replicas_over_time"]
    return steps[1], steps[2]


def _placed_on_new_replicas_from(result, warm: float) -> None:
    requests = result.requests
    on_new = requests[requests["replica"] > 0]
    assert on_new["dispatch_ms"].min() == warm  # the queue moves onto them the instant they warm
    assert (requests[requests["dispatch_ms"] < warm]["replica"] == 0).all()


def test_a_step_in_load_scales_up_after_exactly_interval_plus_delay() -> None:
    # The load steps from nothing to a flood at the first arrival (0): the controller's clock
    # starts there, its first tick at 1 s finds ~850 requests waiting for one replica:
    # ceil(1 x 850 / 1) clamps to max 3, so two replicas warm from 1 s = interval and serve
    # from 3 s = interval + the 2 s delay.
    spec = {**QUEUE, "scale_up_delay_s": 2.0, "scale_down_cooldown_s": 1000.0}
    raw = scenario(spec, step_ms=0.0).model_dump(mode="python", exclude_unset=True)
    raw["tenants"] = raw["tenants"][1:]  # the flood alone
    result = simulate(validate(raw, "step.yaml"))
    up, warm = _first_scale_up(result)
    assert (up, warm) == ([1000.0, 3, 1, 2], [3000.0, 3, 3, 0])
    _placed_on_new_replicas_from(result, 3000.0)


def test_a_step_between_ticks_waits_for_the_next_tick_then_the_delay() -> None:
    # Ticks at 0.5 + k s (the first arrival is the light tenant's at 0.5 ms) see the light
    # tenant's empty queue (ratio 0: the proposal clamps to min = 1, the count it has). The
    # flood starts at 4050 ms; the tick at 5000.5 ms finds hundreds waiting: two replicas warm
    # from then and serve 2 s later.
    spec = {**QUEUE, "scale_up_delay_s": 2.0, "scale_down_cooldown_s": 1000.0}
    result = simulate(scenario(spec))
    up, warm = _first_scale_up(result)
    assert (up, warm) == ([5000.5, 3, 1, 2], [7000.5, 3, 3, 0])
    _placed_on_new_replicas_from(result, 7000.5)


def test_gpu_hours_are_the_integral_of_the_replica_count() -> None:
    # No scale-down (a 1000 s window): one replica over [first arrival, end], two more from
    # the tick that scaled up (5000.5 ms, as above) to the end.
    spec = {**QUEUE, "scale_up_delay_s": 2.0, "scale_down_cooldown_s": 1000.0}
    block = simulate(scenario(spec)).provisioned["base"]
    start, end = block["window_ms"]
    pool = block["pools"]["cluster"]
    hand = (end - start) + 2 * (end - 5000.5)
    assert start == 0.5
    assert pool["gpu_hours"] == pytest.approx(hand / 3_600_000, abs=1e-6)
    price = GPU_PRICES_PER_HOUR["h100-80gb"]  # the default GPU's list price
    assert pool["cost_usd"] == pytest.approx(pool["gpu_hours"] * price, abs=1e-4)
    assert pool["mean_replicas"] == pytest.approx(hand / (end - start), abs=1e-4)


def test_gpu_hours_match_the_step_function_when_replicas_leave() -> None:
    # A short window scales down after the step: the spans (what each slot was paid for) and
    # the step function of the provisioned count, integrated separately, must agree.
    spec = {**QUEUE, "scale_up_delay_s": 0.5, "scale_down_cooldown_s": 2.0}
    block = simulate(scenario(spec)).provisioned["base"]
    start, end = block["window_ms"]
    pool = block["pools"]["cluster"]
    steps = pool["replicas_over_time"]
    assert any(b[1] < a[1] for a, b in zip(steps, steps[1:], strict=False))  # it did scale down
    edges = [row[0] for row in steps] + [end]
    integral = sum(row[1] * (hi - lo) for row, lo, hi in zip(steps, edges, edges[1:], strict=False))
    assert pool["gpu_hours"] == pytest.approx(integral / 3_600_000, abs=2e-6)


TARGETS = [("queue_depth", 2.0), ("running", 1.5), ("kv_utilization", 0.01), ("ttft_p90_ms", 50.0)]


@pytest.mark.parametrize("metric,target", TARGETS)
def test_fast_forward_on_and_off_agree_while_replicas_join_and_leave(metric, target) -> None:
    # 40-token answers leave decode-only stretches that fast-forward jumps over; replicas warm
    # and drain in the middle of them.
    spec = {**QUEUE, "metric": metric, "target": target, "scale_up_delay_s": 0.7,
            "scale_down_cooldown_s": 1.5}  # fmt: skip
    on = simulate(scenario(spec, fast_forward=True, heavy=1500, decode=40))
    off = simulate(scenario(spec, fast_forward=False, heavy=1500, decode=40))
    assert on.provisioned == off.provisioned
    assert on.requests.equals(off.requests)
    assert on.timeline.equals(off.timeline)
    steps = on.provisioned["base"]["pools"]["cluster"]["replicas_over_time"]
    assert len(steps) > 2  # it scaled


def _guarded_start(cluster: ContinuousBatching, request) -> None:
    """ContinuousBatching.start, checking the replica it places on is serving."""
    replica = cluster.router.pick(request)
    group = cluster.group
    assert group.state[replica.index] == SERVING, f"placed on a {group.state[replica.index]} slot"
    cluster.recorder.placed(request, replica.index)
    replica.submit(request)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    metric=st.sampled_from(["queue_depth", "running", "kv_utilization", "ttft_p90_ms"]),
    target=st.sampled_from([0.02, 0.5, 1.0, 3.0, 40.0]),
    interval_s=st.sampled_from([0.25, 0.5, 1.0]),
    delay_s=st.sampled_from([0.0, 0.3, 1.7]),
    cooldown_s=st.sampled_from([0.0, 0.5, 3.0]),
    maximum=st.integers(1, 4),
    router=st.sampled_from(["least_outstanding", "round_robin", "least_kv", "llm_d"]),
)
def test_no_request_is_placed_on_a_cold_or_draining_replica(
    metric, target, interval_s, delay_s, cooldown_s, maximum, router
) -> None:
    spec = {"min": 1, "max": maximum, "metric": metric, "target": target,
            "interval_s": interval_s, "scale_up_delay_s": delay_s,
            "scale_down_cooldown_s": cooldown_s}  # fmt: skip
    raw = scenario(spec, heavy=500).model_dump(mode="python", exclude_unset=True)
    raw["cluster"]["router"] = router
    with patch.object(ContinuousBatching, "start", _guarded_start):
        result = simulate(validate(raw, "autoscale.yaml"))
    assert (result.requests["status_code"] == 200).all()  # every request was served


def _entering_only_on_provisioned_slots(cluster: ContinuousBatching) -> None:
    """Every replica checks, as a request leaves its API server, that its slot is still up."""
    group = cluster.group
    for replica in cluster.replicas:
        deliver = replica._enter

        def checked(request, replica=replica, deliver=deliver) -> None:
            state = group.state[replica.index]
            assert state in ("serving", "draining"), f"a request reached an {state} replica"
            deliver(request)

        replica._enter = checked


def test_a_draining_replica_waits_for_requests_still_in_its_api_server() -> None:
    # With `cluster.frontend`, a routed request spends a while in the replica's API server
    # before the engine sees it (the replica is not yet busy). Scaling down must drain that
    # replica, not turn it off: the request would run on a slot no longer paid for.
    spec = {**QUEUE, "target": 2.0, "interval_s": 0.25, "scale_up_delay_s": 0.3,
            "scale_down_cooldown_s": 0.0}  # fmt: skip
    raw = scenario(spec, heavy=1500, decode=40).model_dump(mode="python", exclude_unset=True)
    raw["cluster"]["frontend"] = {"processes": 1, "per_request_ms": 2.0,
                                  "per_input_token_us": 20}  # fmt: skip
    original = ContinuousBatching.__init__

    def init(self, *args, **kwargs) -> None:
        original(self, *args, **kwargs)
        _entering_only_on_provisioned_slots(self)

    with patch.object(ContinuousBatching, "__init__", init):
        result = simulate(validate(raw, "frontend.yaml"))
    assert (result.requests["status_code"] == 200).all()


def test_the_hpa_formula_with_its_tolerance_and_bounds() -> None:
    spec = AutoscaleSpec(min=2, max=10, metric="running", target=4.0, tolerance=0.1)
    decision = ScaleDecision(spec)
    assert decision.proposal(serving=3, current=3, metric=4.36) == 3  # ratio 1.09: within 0.1
    assert decision.proposal(serving=3, current=3, metric=4.5) == math.ceil(3 * 4.5 / 4)  # 4
    assert decision.proposal(serving=3, current=3, metric=0.0) == 2  # clamped to min
    assert decision.proposal(serving=3, current=3, metric=100.0) == 10  # clamped to max
    assert decision.proposal(serving=3, current=5, metric=None) == 5  # no reading: no change


def test_scale_down_takes_the_largest_proposal_of_the_window() -> None:
    # The HPA's scale-down stabilisation (its KEP's example, one proposal a minute, a
    # 600 s window): proposals 10, 9, 8, 9, 9, 8, 9, 8, 9, 8 keep 10; a minute later the 10
    # has left the window and a 7 comes: the largest left is 9.
    spec = AutoscaleSpec(min=1, max=20, metric="running", target=1.0, tolerance=0.0,
                         scale_down_cooldown_s=600 - 1)  # fmt: skip
    decision = ScaleDecision(spec)
    current = 10
    for minute, proposal in enumerate([10, 9, 8, 9, 9, 8, 9, 8, 9, 8]):
        current = decision.decide(minute * 60_000.0, current, current, float(proposal) / current)
        assert current == 10
    assert decision.decide(10 * 60_000.0, 10, 10, 7 / 10) == 9


def test_scale_up_is_not_held_back_by_the_window() -> None:
    spec = AutoscaleSpec(min=1, max=20, metric="running", target=1.0)
    decision = ScaleDecision(spec)
    assert decision.decide(0.0, 2, 2, 1.0) == 2
    assert decision.decide(1000.0, 2, 2, 3.0) == 6


def test_cold_start_auto_is_weight_bytes_over_bandwidth_plus_engine_start() -> None:
    # llama-3-8b: 8.03e9 parameters in 2-byte BF16 = 16.06 GB; 16.06 / 0.14 GB/s + 39 s
    spec = AutoscaleSpec(min=1, max=2, metric="running", target=1.0, cold_start="auto")
    assert spec.warmup_s(16_060_000_000) == pytest.approx(16.06 / 0.14 + 39.0)
    own = AutoscaleSpec(min=1, max=2, metric="running", target=1.0,
                        cold_start={"load_gbps": 2.0, "engine_start_s": 10.0})  # fmt: skip
    assert own.warmup_s(16_000_000_000) == pytest.approx(8.0 + 10.0)
    fixed = AutoscaleSpec(min=1, max=2, metric="running", target=1.0, scale_up_delay_s=7.5)
    assert fixed.warmup_s(16_000_000_000) == 7.5


def test_a_run_without_autoscaling_reports_no_provisioned_block() -> None:
    raw = scenario(QUEUE).model_dump(mode="python", exclude_unset=True)
    del raw["cluster"]["autoscale"]
    result = simulate(validate(raw, "fixed.yaml"))
    assert result.provisioned == {} and "provisioned" not in result.to_json_dict()
    assert "state" not in result.timeline.columns


class FakeReplica:
    """What the group reads of a replica: its index, blocks, whether it holds work."""

    def __init__(self, index: int) -> None:
        self.index, self.capacity, self.busy = index, 10, False
        self.on_idle = lambda: None

    def holds_work(self) -> bool:
        return self.busy

    def fresh_memory(self) -> None:
        assert not self.busy

    def snapshot(self) -> tuple[int, int, int, int, int]:
        return (0, 0, 0, self.capacity, 0)


def test_slots_cycle_through_warming_serving_draining_and_off() -> None:
    env = SimEnvironment()
    replicas = [FakeReplica(i) for i in range(3)]  # min 1, max 2: 2 x 2 - 1 slots
    rooms: list[float] = []
    group = AutoscaledGroup(env, replicas, 1, 5.0, lambda: rooms.append(env.now))
    group.scale_to(2)
    assert group.states() == ["serving", "warming", "off"] and group.kv_blocks_total == 10
    env.run(until=5.0)
    env.run(until=5.5)  # the warm-up timer fires at 5.0
    assert group.states() == ["serving", "serving", "off"] and rooms == [5.0]
    replicas[1].busy = True  # it holds a request: scaling down drains it
    group.scale_to(1)
    assert group.states() == ["serving", "draining", "off"] and group.kv_blocks_total == 20
    group.scale_to(2)
    env.run(until=11.0)
    replicas[2].busy = True
    group.scale_to(1)  # the newest serving one drains: slot 2
    assert group.states() == ["serving", "draining", "draining"]
    group.scale_to(2)  # no slot is off: the first draining one serves again, at once
    assert group.states() == ["serving", "serving", "draining"] and rooms[-1] == 11.0
    replicas[2].busy = False
    replicas[2].on_idle()  # its last request finished: off, and paid for until now
    assert group.states() == ["serving", "serving", "off"]
    spans = {(s.replica, s.start_ms, s.end_ms) for s in group.spans()}
    assert spans == {(0, None, None), (1, 0.0, None), (2, 5.5, 11.0)}


def test_the_request_rate_beside_each_replica_count_accounts_for_every_arrival() -> None:
    # rate x duration summed over the steps' intervals counts every request once (the rates
    # are rounded to 3 decimals: within a request in all)
    spec = {**QUEUE, "scale_up_delay_s": 0.5, "scale_down_cooldown_s": 2.0}
    result = simulate(scenario(spec))
    block = result.provisioned["base"]
    pool = block["pools"]["cluster"]
    edges = [row[0] for row in pool["replicas_over_time"]] + [block["window_ms"][1]]
    rates = pool["request_rate_per_s"]
    assert len(rates) == len(pool["replicas_over_time"])
    total = sum(r * (hi - lo) / 1000 for r, lo, hi in zip(rates, edges, edges[1:], strict=False))
    assert total == pytest.approx(len(result.requests), abs=1.0)
    # up to the scale-up at 5000.5 ms: 50 light requests (0.5, 100.5, ..., 4900.5) and 951 of
    # the flood (4050, 4051, ..., 5000), over 5 s
    assert rates[0] == pytest.approx((50 + 951) / 5.0, abs=1e-3)
