"""When a replica starts requests: what arrives within one scheduling step of an idle replica is
batched together, and a waiting request starts only above vLLM's free-block watermark.

Timings use the linear latency model, so every expected instant is worked out by hand below.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from simsched.config.scenario import Scenario
from simsched.errors import InputError
from simsched.results.simulate import simulate
from simsched.sim.cluster.continuous_batching import ContinuousBatching
from simsched.sim.cluster.registry import SERVICE_MODELS
from simsched.sim.cluster.replica import NoObserver

LINEAR = {"kind": "linear", "base_ms": 4.0, "prefill_ms_per_token": 0.02, "decode_ms_per_seq": 0.1}


def cluster(**settings: Any) -> dict[str, Any]:
    return {
        "service_model": "continuous_batching",
        "latency_model": LINEAR,
        "fast_forward": False,
        "num_gpu_blocks": 1000,
        **settings,
    }


def burst(make_scenario: Callable[..., Scenario], gap_ms: float, **settings: Any) -> Scenario:
    """Eight requests of ONE tenant, `gap_ms` apart from t=100, on one idle replica."""
    rows = [(f"r{i}", "a", 100.0 + i * gap_ms, 50 + i, 3) for i in range(8)]
    return make_scenario(
        rows, [{"id": "a"}], cluster=cluster(**settings), admission={"enabled": False}
    )


@pytest.mark.parametrize("fast_forward", [False, True])
def test_a_burst_of_one_tenant_shares_the_first_iteration(make_scenario, fast_forward) -> None:
    scenario = burst(make_scenario, 1e-6, fast_forward=fast_forward)
    step = scenario.cluster.schedule_step_ms
    assert step == 0.5  # the documented default
    first = simulate(scenario).requests["first_token_ms"]
    prompts = sum(50 + i for i in range(8))  # 428 tokens, one chunk
    # one iteration from the step's end computes all eight prompts, so all get their first
    # token at its end: 100 + 0.5 + 4 + 0.02 * 428 = 113.06
    assert list(first) == [round(100.0 + step + 4.0 + 0.02 * prompts, 2)] * 8


def test_without_a_scheduling_step_the_burst_is_split(make_scenario) -> None:
    # what happened before the step existed: the first request runs alone
    first = simulate(burst(make_scenario, 1e-6, schedule_step_ms=0.0)).requests["first_token_ms"]
    assert first.iloc[0] == round(100.0 + 4.0 + 0.02 * 50, 2)
    assert first.iloc[1] > first.iloc[0]


def test_a_request_placed_after_the_step_waits_for_the_next_iteration(make_scenario) -> None:
    # 0.3 ms apart with a 1 ms step: r0..r3 (at 100, 100.3, 100.6, 100.9) are placed before the
    # batch is picked at 101; r4 (101.2) onwards join a later iteration
    scenario = burst(make_scenario, 0.3, schedule_step_ms=1.0)
    first = simulate(scenario).requests["first_token_ms"]
    batch = sum(50 + i for i in range(4))
    assert list(first.iloc[:4]) == [round(101.0 + 4.0 + 0.02 * batch, 2)] * 4
    assert (first.iloc[4:] > first.iloc[0]).all()


# --- the free-block watermark --------------------------------------------------------------


def pair(make_scenario, second_prompt: int, blocks: int, watermark: float) -> Scenario:
    """A (2560 tokens: 160 blocks of 16) then B, placed together on one idle replica."""
    rows = [("A", "a", 100.0, 2560, 2), ("B", "a", 100.0 + 1e-6, second_prompt, 2)]
    settings = {"num_gpu_blocks": blocks, "block_watermark": watermark}
    settings |= {"max_num_batched_tokens": 4096}
    return make_scenario(
        rows, [{"id": "a"}], cluster=cluster(**settings), admission={"enabled": False}
    )


def starts_with_a(monkeypatch, make_scenario, prompt: int, blocks: int, watermark: float) -> bool:
    """Whether B starts in A's iteration: the first iteration's prefill tokens, as the replica's
    observer sees them."""
    prefills: list[int] = []

    class Watcher(NoObserver):
        def iteration(self, *args: Any) -> None:
            prefills.append(args[3])

    def model(*args: Any, **kwargs: Any) -> ContinuousBatching:
        return ContinuousBatching(*args, observer=Watcher(), **kwargs)

    monkeypatch.setitem(SERVICE_MODELS, "continuous_batching", model)
    requests = simulate(pair(make_scenario, prompt, blocks, watermark)).requests
    assert requests["finish_ms"].notna().all()
    chunk = min(prompt, 4096 - 2560)
    assert prefills[0] in (2560, 2560 + chunk)
    return prefills[0] == 2560 + chunk


@pytest.mark.parametrize(
    ("prompt", "watermark", "starts"),
    [
        # 200 blocks, watermark floor(0.054 * 200) = 10 blocks. A takes 160 (it runs alone, so
        # it is exempt); B may leave no fewer than 10 free: 200 - 160 - 30 = 10, it starts...
        (480, 0.054, True),
        # ...but 481 tokens are 31 blocks: 9 would be left, B waits
        (481, 0.054, False),
        # without the watermark B may take the last 40 blocks (640 tokens), not 41
        (481, 0.0, True),
        (640, 0.0, True),
        (641, 0.0, False),
    ],
)
def test_watermark_boundary(monkeypatch, make_scenario, prompt, watermark, starts) -> None:
    assert starts_with_a(monkeypatch, make_scenario, prompt, 200, watermark) is starts


def test_the_whole_prompt_counts_not_the_first_chunk(monkeypatch, make_scenario) -> None:
    # 300 blocks, no watermark. B's 2400 tokens get a first chunk of 4096 - 2560 = 1536 tokens
    # (96 blocks, which are free), but its whole prompt needs 150 blocks and only 140 are free:
    # as vLLM's can_allocate, which counts every token, B waits
    assert not starts_with_a(monkeypatch, make_scenario, 2400, 300, 0.0)
    # 2240 tokens are 140 blocks: exactly what is free
    assert starts_with_a(monkeypatch, make_scenario, 2240, 300, 0.0)


def thrash(make_scenario, watermark: float) -> int:
    """FIFO traffic with long prompts into a cache that holds a few dozen of them at once."""
    rows = [
        (f"r{i:03d}", f"t{i % 3}", 3.0 * i, 1500 + 37 * (i % 11), 150 + 23 * (i % 7))
        for i in range(300)
    ]
    tenants = [{"id": f"t{i}"} for i in range(3)]
    settings = {"num_gpu_blocks": 5000, "max_num_batched_tokens": 8192, "max_num_seqs": 2048}
    settings |= {"block_watermark": watermark, "max_waiting_per_replica": 256}
    scenario = make_scenario(
        rows,
        tenants,
        cluster=cluster(**settings),
        scheduler={"policy": "request_count_fifo"},
        admission={"enabled": False},
    )
    requests = simulate(scenario).requests
    assert (requests["status_code"] == 200).all()
    assert requests["finish_ms"].notna().all()  # every request finished: nothing lost
    return int(requests["preemptions"].sum())


def test_the_watermark_stops_recompute_thrash(make_scenario) -> None:
    without = thrash(make_scenario, 0.0)
    with_default = thrash(make_scenario, 0.01)  # vLLM's default: 50 of the 5000 blocks
    assert without >= 20  # the case thrashes without the watermark
    assert with_default * 4 <= without


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"schedule_step_ms": -1.0}, "cluster.schedule_step_ms: Input should be greater than"),
        ({"schedule_step_ms": float("inf")}, "cluster.schedule_step_ms: Input should be a finite"),
        ({"block_watermark": 1.0}, "cluster.block_watermark: Input should be less than 1"),
        ({"block_watermark": float("nan")}, "cluster.block_watermark: Input should be a finite"),
        ({"block_watermark": -0.01}, "cluster.block_watermark: Input should be greater than"),
    ],
)
def test_bad_settings_name_the_field(make_scenario, setting, message) -> None:
    with pytest.raises(InputError, match=message):
        burst(make_scenario, 1e-6, **setting)
