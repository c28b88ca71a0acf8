"""The engine mechanisms, each on a hand-computed case: the API server's FIFO queue, multi-step
amortisation and overlap of the CPU time, and TensorRT-LLM's guaranteed-no-evict admission."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from simsched.config.frontend import FrontendSpec
from simsched.config.loading import validate
from simsched.results.simulate import simulate
from simsched.sim.cluster.capacity import GuaranteedNoEvict
from simsched.sim.cluster.cpu_time import CpuShared, build_engine_latency
from simsched.sim.cluster.frontend import ApiServer
from simsched.sim.cluster.latency import build_latency
from simsched.sim.cluster.sequences import Seq
from simsched.sim.engine import run_variant
from simsched.sim.kernel import SimEnvironment
from simsched.sim.requests import Request
from simsched.workload.build import build_workload

FLAT = {"kind": "linear", "base_ms": 4.0, "prefill_ms_per_token": 0.0, "decode_ms_per_seq": 0.0}


def request(seq: int, prefill: int, decode: int) -> Any:
    fake = Request.__new__(Request)
    for name, value in (("seq", seq), ("prefill_tokens", prefill), ("decode_tokens", decode)):
        object.__setattr__(fake, name, value)
    return fake


# --- the API server: FIFO over `processes` servers --------------------------------------------


def test_api_server_queue_is_fifo_over_its_processes() -> None:
    env = SimEnvironment()
    spec = FrontendSpec(
        processes=2, per_request_ms=10.0, per_input_token_us=100.0, per_output_token_us=1000.0
    )
    server = ApiServer(env, spec)
    delivered: list[tuple[int, float]] = []
    for seq in range(3):  # three 50-token prompts at once: 10 + 50 * 0.1 = 15 ms each
        server.accept(request(seq, 50, 2), lambda r: delivered.append((r.seq, env.now)))
    assert server.entering == 3
    env.run()
    # two processes take the first two at 0 (both done at 15); the third waits for one: 15-30
    assert delivered == [(0, 15.0), (1, 15.0), (2, 30.0)]
    assert server.entering == 0
    # outbound jobs of 2 output tokens (2 ms) at 20: one process is free at 15, the other at 30
    assert server.respond(request(0, 50, 2), 20.0) == 22.0
    assert server.respond(request(1, 50, 2), 20.0) == 24.0  # behind the first on that process
    # and the third on that process again (free at 24), before the other is free (at 30)
    assert server.respond(request(2, 50, 2), 20.0) == 26.0


def burst(count: int, frontend: dict[str, Any] | None, **cluster: Any) -> Any:
    settings = {
        "service_model": "continuous_batching",
        "latency_model": FLAT,
        "num_gpu_blocks": 10000,
        "max_waiting_per_replica": 100000,
        "fast_forward": False,
        **cluster,
    }
    if frontend is not None:
        settings["frontend"] = frontend
    raw = {
        "name": "burst",
        "seed": 1,
        "tenants": [
            {
                "id": "a",
                "arrivals": {"kind": "periodic", "interval_ms": 0.0001, "count": count},
                "prefill_tokens": 128,
                "decode_tokens": 1,
            }
        ],
        "cluster": settings,
        "admission": {"enabled": False},
    }
    return validate(raw, "burst")


@pytest.mark.parametrize("processes", [1, 2])
def test_short_requests_sent_at_once_saturate_the_api_server(processes: int) -> None:
    # 40 requests of one output token through processes each taking 25 ms a request: the engine
    # (4 ms an iteration, all at once) is not the limit; the front end admits processes / 25 ms
    frontend = {"processes": processes, "per_request_ms": 25.0}
    scenario = burst(40, frontend)
    recorder = run_variant(scenario, build_workload(scenario)).recorder
    arrivals = build_workload(scenario).arrival_ms
    # the i-th request (0-based) leaves the API server at (floor(i / processes) + 1) * 25 ms after
    # the first arrival (they all arrive within 0.004 ms; a process takes the next at once), so
    # the last (i = 39) at 40 / processes * 25
    last_delivery = (40 // processes) * 25.0
    assert max(recorder.finish_ms) - float(arrivals.min()) == pytest.approx(
        last_delivery + 0.5 + 4.0, abs=0.01
    )  # + the wake-up step and one iteration for the last request, its only token
    rate = 40 / (max(recorder.finish_ms) / 1000)
    assert rate == pytest.approx(processes / 0.025, rel=0.12)


def test_a_lone_request_pays_the_front_end_before_and_after() -> None:
    frontend = {"per_request_ms": 7.0, "per_input_token_us": 50.0, "per_output_token_us": 200.0}
    scenario = burst(1, frontend)
    recorder = run_variant(scenario, build_workload(scenario)).recorder
    inbound = 7.0 + 128 * 0.05
    assert recorder.first_token_ms[0] == pytest.approx(inbound + 0.5 + 4.0)
    assert recorder.finish_ms[0] == pytest.approx(inbound + 0.5 + 4.0 + 1 * 0.2)


def test_a_front_end_that_costs_nothing_is_no_delay() -> None:
    with_zero = burst(5, {"per_request_ms": 0.0})
    without = burst(5, None, latency_model=FLAT)
    frames = [simulate(s).requests for s in (with_zero, without)]
    pd.testing.assert_frame_equal(frames[0], frames[1], check_exact=True)


# --- CPU time: serial, amortised over k steps, overlapped -------------------------------------


class FixedGpu:
    before_ms = after_ms = 0.0

    def __init__(self, gpu_ms: float) -> None:
        self.gpu_ms = gpu_ms

    def iteration_ms(self, p, pairs, ctx, decodes, dctx, maximum=max) -> Any:
        return self.gpu_ms + 0 * dctx  # an array stays an array


@pytest.mark.parametrize(
    ("gpu_ms", "mode", "steps", "expected"),
    [
        (10.0, "serial", 1, 14.0),  # 10 + (2 + 0.5 * 4)
        (10.0, "multi_step", 4, 11.0),  # 10 + 4 / 4
        (10.0, "multi_step", 1, 14.0),  # one step: serial
        (10.0, "overlap", 1, 10.0),  # max(10, 4): the CPU hides under the GPU
        (3.0, "overlap", 1, 4.0),  # max(3, 4): the GPU waits for the CPU
    ],
)
def test_cpu_time_combines_with_the_gpu_as_the_engine_does(gpu_ms, mode, steps, expected) -> None:
    latency = CpuShared(FixedGpu(gpu_ms), 2.0, 0.5, mode, steps)
    assert latency.iteration_ms(0, 0, 0, 4, 100) == expected
    run = latency.iteration_ms(0, 0, 0, 4, np.array([100, 104]), np.maximum)
    assert run.tolist() == [expected, expected]  # the fast-forward path agrees


def roofline_cluster(**settings: Any) -> Any:
    raw = {
        "name": "one",
        "tenants": [
            {
                "id": "a",
                "arrivals": {"kind": "periodic", "interval_ms": 1, "count": 1},
                "prefill_tokens": 1,
                "decode_tokens": 1,
            }
        ],
        "cluster": {"service_model": "continuous_batching", **settings},
    }
    return validate(raw, "one").cluster


def test_multi_step_pays_the_cpu_once_per_k_steps_on_the_roofline() -> None:
    config = roofline_cluster(engine="vllm-0.6", num_scheduler_steps=10)
    engine = build_engine_latency(config)
    roofline = config.latency_model
    no_cpu = roofline_cluster(
        latency_model={"kind": "roofline", "overhead_ms": 0.0, "per_seq_ms": 0.0}
    )
    gpu = build_latency(no_cpu).iteration_ms(0, 0, 0, 8, 4000)
    cpu = roofline.overhead_ms + roofline.per_seq_ms * 8
    assert engine.iteration_ms(0, 0, 0, 8, 4000) == gpu + cpu / 10
    serial = build_latency(config).iteration_ms(0, 0, 0, 8, 4000)
    assert serial == pytest.approx(gpu + cpu)  # the serial roofline: the sum, as before


def test_overlap_hides_the_cpu_under_a_long_gpu_step() -> None:
    # SGLang keeps the roofline's CPU costs (TensorRT-LLM's are 0, which would hide nothing)
    config = roofline_cluster(engine="sglang")
    assert config.latency_model.overhead_ms > 0
    engine = build_engine_latency(config)
    gpu = build_engine_latency(
        roofline_cluster(
            cpu_time="serial",
            latency_model={"kind": "roofline", "overhead_ms": 0.0, "per_seq_ms": 0.0},
        )
    )
    step = gpu.iteration_ms(4096, 4096 * 4097 // 2, 0, 0, 0)
    assert step > config.latency_model.overhead_ms  # a prefill chunk outlasts the CPU work
    # hidden but for the part the overlap leaves exposed (test_overlap_exposed.py)
    exposed = config.overlap_exposed_ms
    assert engine.iteration_ms(4096, 4096 * 4097 // 2, 0, 0, 0) == step + exposed


# --- TensorRT-LLM's guaranteed-no-evict admission ---------------------------------------------


def seq(prefill: int, decode: int) -> Seq:
    return Seq(request(0, prefill, decode))


def test_no_evict_reserves_the_whole_isl_plus_osl() -> None:
    rule = GuaranteedNoEvict(block_size=16, capacity=10, watermark=0)
    first, second, third = seq(40, 40), seq(40, 40), seq(40, 40)
    assert rule.reservation(first) == 5  # ceil(80 / 16)
    assert rule.admits(first, 0, 0, 3, 10, running=False)
    rule.started(first)
    assert rule.admits(second, 0, 3, 3, 10, running=True)  # 5 + 5 <= 10
    rule.started(second)
    assert not rule.admits(third, 0, 6, 3, 10, running=True)  # 10 + 5 > 10, though 6 + 3 fit
    rule.released(first)
    assert rule.admits(third, 0, 3, 3, 10, running=True)
    assert not rule.admits(seq(40, 40), 0, 0, 11, 10, running=False)  # the blocks of now count


def three_long_requests(capacity_scheduler: str) -> Any:
    rows = [(f"r{i}", "a", 100.0, 40, 40) for i in range(3)]
    return rows, {
        "service_model": "continuous_batching",
        "latency_model": FLAT,
        "num_gpu_blocks": 10,
        "block_size": 16,
        "fast_forward": False,
        "capacity_scheduler": capacity_scheduler,
    }


def test_no_evict_never_preempts_where_admit_then_preempt_thrashes(make_scenario) -> None:
    # three 40 + 40 requests on 10 blocks of 16: their prompts (3 blocks each) all fit at once,
    # but together they peak at 3 * 79 tokens = 15 blocks, so vLLM's rule must preempt; no-evict
    # starts two (2 * 5 reserved = 10) and the third when the first finishes
    outcomes = {}
    for rule in ("admit_then_preempt", "guaranteed_no_evict"):
        rows, cluster = three_long_requests(rule)
        scenario = make_scenario(rows, [{"id": "a"}], cluster=cluster, admission={"enabled": False})
        outcomes[rule] = run_variant(scenario, build_workload(scenario)).recorder
    assert sum(outcomes["admit_then_preempt"].preemptions) > 0
    recorder = outcomes["guaranteed_no_evict"]
    assert sum(recorder.preemptions) == 0
    # every iteration is 4 ms: the first two prefill at 100.5 and finish 40 iterations later;
    # the third starts in the iteration after they finish
    first_two_done = 100.5 + 40 * 4.0
    assert sorted(recorder.finish_ms)[:2] == [first_two_done, first_two_done]
    assert sorted(recorder.first_token_ms)[2] == first_two_done + 4.0


def test_a_response_without_outbound_work_does_not_wait_for_the_inbound_queue() -> None:
    # 40 one-token requests through one process at 25 ms each, no per-output-token cost: request
    # i reaches the engine at (i + 1) * 25 and its only token ends 0.5 + 4 ms later; its response
    # is complete then, not after the 40 inbound jobs queued at once (1000 ms)
    scenario = burst(40, {"processes": 1, "per_request_ms": 25.0})
    recorder = run_variant(scenario, build_workload(scenario)).recorder
    arrival = float(build_workload(scenario).arrival_ms.min())
    assert list(recorder.finish_ms) == list(recorder.first_token_ms)
    assert min(recorder.finish_ms) - arrival == pytest.approx(25.0 + 0.5 + 4.0, abs=0.01)
