"""The API-server note: a replica whose requests waited for a free API-server process says the
front end bounds the run (docs/engines.md, "The API server"); the waits are replayed from the
recorded dispatch instants, as the simulation queued them."""

from __future__ import annotations

from pathlib import Path

import pytest

from simsched.config.loading import load_scenario
from simsched.outputs.api_server_notes import ceiling_per_s
from simsched.outputs.cluster_table import table_notes
from simsched.results.simulate import simulate

ROOT = Path(__file__).resolve().parents[2]
BURST = ROOT / "calibration" / "scenarios" / "fixed_burst.yaml"
SHORT = ["tenants[0].prefill_tokens=128", "tenants[0].decode_tokens=4"]
# 2 processes at 25 ms + 100 us x 128 tokens = 37.8 ms a request
TWO_SLOW = "cluster.frontend={processes: 2, per_request_ms: 25, per_input_token_us: 100}"


def notes_of(*sets: str, count: int = 200) -> list[str]:
    scenario = load_scenario(BURST, [*SHORT, f"tenants[0].arrivals.count={count}", *sets])
    return [n for n in table_notes(simulate(scenario)) if "API server queued" in n]


def test_the_ceiling_is_processes_over_the_inbound_time() -> None:
    class Spec:
        processes, per_request_ms, per_input_token_us = 2, 25.0, 100.0

    assert ceiling_per_s(Spec, 128) == pytest.approx(2000 / 37.8)
    Spec.per_request_ms, Spec.per_input_token_us = 0.0, 0.0
    assert ceiling_per_s(Spec, 128) is None  # no cost, no ceiling


def test_a_burst_waits_as_the_fifo_processes_serve_it() -> None:
    # 200 requests at once (0.1 us apart) on 2 processes of 37.8 ms: request i starts after
    # floor(i / 2) jobs of its process, so the mean wait is 37.8 x mean(floor(i / 2)) = 37.8 x
    # 49.5 = 1,871.1 ms (less 0.1 us x i, below the rounding)
    (note,) = notes_of(TWO_SLOW)
    assert "longest, 1,871 ms on average for a free process" in note
    assert "with 2 processes at 37.8 ms a request busy 100% of the time" in note
    assert "(a ceiling of 52.9 requests/s a replica)" in note
    assert "bound by the front end" in note and "cluster.frontend.processes" in note
    # one process: 37.8 x mean(i) = 37.8 x 99.5 = 3,761.1 ms
    (one,) = notes_of(TWO_SLOW.replace("processes: 2", "processes: 1"))
    assert "longest, 3,761 ms on average" in one


def test_served_profiles_say_what_the_published_runs_say_of_their_value() -> None:
    (vllm,) = notes_of("cluster.engine=vllm")
    assert "with 1 process at 26.9 ms a request" in vllm
    assert "reached 184 requests/s (gpt-oss-20b, one A100) and 239" in vllm
    (four,) = notes_of("cluster.engine=vllm", "cluster.frontend.processes=4")
    assert "reached 184 requests/s" in four  # still the profile's time a request
    (written,) = notes_of("cluster.engine=vllm", "cluster.frontend.per_request_ms=30")
    assert "184 requests/s" not in written  # the user's own value: no word on the profile's
    (sglang,) = notes_of("cluster.engine=sglang")
    assert "with 1 process at 15.0 ms a request" in sglang and "reached 156 requests/s" in sglang
    (trtllm,) = notes_of("cluster.engine=trtllm")
    assert "no published run of short requests at once checks it" in trtllm


def test_no_note_when_requests_seldom_queue_or_nothing_is_queued() -> None:
    # 40 requests 100 ms apart against a 26.9 ms process: none waits; fixed delays (no front end
    # section) and an offline engine (no HTTP server) queue nothing
    spread = "tenants[0].arrivals={kind: periodic, interval_ms: 100, count: 40}"
    assert notes_of("cluster.engine=vllm", spread) == []
    assert notes_of() == []
    assert notes_of("cluster.engine={name: vllm, offline: true}") == []


def test_below_its_ceiling_the_front_end_adds_latency_but_caps_nothing() -> None:
    # Poisson arrivals at 15 a second against one 26.9 ms process (a ceiling of 37.2): busy
    # about 15 x 26.9 ms = 40% of the time, the M/D/1 wait rho / (2 (1 - rho)) x 26.9 ms, about
    # 9 ms, a large share of a short request's TTFT: a word, but not "bound"
    poisson = "tenants[0].arrivals={kind: poisson, rate_per_s: 15, count: 600}"
    (note,) = notes_of("cluster.engine=vllm", poisson)
    assert "which adds to TTFT but does not cap throughput" in note
    busy = int(note.split(" busy ")[1].split("%")[0])
    assert 30 <= busy <= 50  # 40% give or take the draw


def test_a_trickle_then_a_burst_is_found() -> None:
    # 300 requests 1 s apart, then 300 at once: averaged over the run's 300 s the request rate
    # (2 a second) is far below the 37-a-second ceiling, but the burst's requests queue for
    # seconds, most of the run's mean TTFT
    trickle = "{kind: periodic, interval_ms: 1000, count: 300}"
    burst = "{kind: periodic, start_ms: 300000, interval_ms: 0.0001, count: 300}"
    tenants = (
        f"tenants=[{{id: trickle, arrivals: {trickle}, prefill_tokens: 128, decode_tokens: 4}},"
        f" {{id: burst, arrivals: {burst}, prefill_tokens: 128, decode_tokens: 4}}]"
    )
    result = simulate(load_scenario(BURST, ["cluster.engine=vllm", tenants]))
    (note,) = [n for n in table_notes(result) if "API server queued" in n]
    assert "26.9 ms a request" in note
    # busy about 5% of the replica's 300 s, but the burst's waits are many services long
    assert "bound by the front end" in note


def gpu_backlog_case(*before: str) -> tuple[str, float]:
    """400 requests of 64 + 2 tokens at once on 16 processes of 26.9 ms (after `before`'s
    tenants, if any): the note and, by hand, the GPU's queueing of the burst. Request i of the
    burst (dispatch order) leaves the front end at (floor(i / 16) + 1) x 26.9 ms after the
    burst's first dispatch; its GPU part runs from there to its first token."""
    tenants = [*before, "{id: burst, arrivals: {kind: periodic, start_ms: START, interval_ms: "
               "0.0001, count: 400}, prefill_tokens: 64, decode_tokens: 2}"]  # fmt: skip
    start = 300_000 if before else 0
    listed = ", ".join(t.replace("START", str(start)) for t in tenants)
    sets = ["cluster.engine=vllm", "cluster.frontend.processes=16", f"tenants=[{listed}]"]
    result = simulate(load_scenario(BURST, sets))
    (note,) = [n for n in table_notes(result) if "API server queued" in n]
    frame = result.requests
    burst = frame[frame["tenant_id"] == "burst"].sort_values(["dispatch_ms", "request_id"])
    first = float(burst["dispatch_ms"].iloc[0])
    ends = [first + (i // 16 + 1) * 26.9 for i in range(len(burst))]
    part = (burst["arrival_ms"] + burst["ttft_ms"]).to_numpy() - ends
    return note, float(part.max() - part.min())


def test_a_front_end_that_clears_its_queue_before_the_gpu_does_caps_nothing() -> None:
    # the front end clears the burst in ceil(400 / 16) = 25 rounds, 25 x 26.9 = 672.5 ms, while
    # the GPU queues its requests for over a quarter of that and over four services: the waits
    # are real, but more processes would only move them into the GPU's queue
    note, lag = gpu_backlog_case()
    assert lag >= 0.25 * 672.5 and lag >= 4 * 26.9
    said = float(note.split("busiest stretch up to ")[1].split(" ms")[0].replace(",", ""))
    assert abs(said - lag) <= 1  # the note's figure, by hand (the ends to within 0.1 us x 400)
    # 672.5 ms and the 16th process's first dispatch, 15 x 0.1 us later: 673 when rounded
    assert "of that stretch's 673 ms)" in note
    assert "but the GPU seems to set the pace" in note and "bound by the front end" not in note
    assert "may only move this wait into the GPU's queue" in note


def test_a_trickle_around_the_burst_does_not_hide_the_gpus_backlog() -> None:
    # 300 requests 1 s apart, before the burst and past it: the front end idles between them,
    # so its busiest stretch (the most waiting) is the burst's 673 ms, judged alone
    trickle = ("{id: trickle, arrivals: {kind: periodic, interval_ms: 1000, count: 600}, "
               "prefill_tokens: 64, decode_tokens: 2}")  # fmt: skip
    note, lag = gpu_backlog_case(trickle)
    assert lag >= 0.25 * 672.5 and "but the GPU seems to set the pace" in note
    # the trickle's request at 300 s joins the burst: its 26.9 ms more at most
    window = int(note.split("of that stretch's ")[1].split(" ms")[0])
    assert 673 <= window <= 673 + 27


def test_a_front_end_the_gpu_keeps_up_with_bounds_the_run_though_the_gpu_never_idles() -> None:
    # 1,000 requests of 128 + 4 tokens on 2 processes of 26.9 ms: one reaches the GPU every
    # 13.45 ms and the GPU, iterating on its few sequences all the while, gives each first token
    # soon after: the front end sets the pace (a busy GPU is not a saturated one)
    (note,) = notes_of("cluster.engine=vllm", "cluster.frontend.processes=2", count=1000)
    assert "bound by the front end" in note and "the GPU seems" not in note
    # six of 512 tokens on one process: each reaches the GPU 26.9 ms after the last, which
    # serves it in less; its own time is not a backlog
    few = ("cluster.engine=vllm", "tenants[0].prefill_tokens=512")
    (small,) = notes_of(*few, count=6)
    assert "bound by the front end" in small


def test_outbound_jobs_make_the_replayed_waits_a_lower_bound() -> None:
    # outbound jobs delay first tokens too, unreplayed: the front end and the GPU look alike
    (note,) = notes_of(TWO_SLOW.replace("}", ", per_output_token_us: 100}"))
    assert "so these waits are a lower bound" in note
    assert "bound by the front end or by the GPU (its outbound jobs, not replayed" in note
    (without,) = notes_of(TWO_SLOW)
    assert "lower bound" not in without
