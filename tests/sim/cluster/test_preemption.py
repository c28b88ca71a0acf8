"""Recompute preemption, timed by hand: a preempted decode recomputes its prompt and the tokens
it has emitted, then decodes on from the next one (replica.py; vLLM V1's
`Scheduler._preempt_request` keeps the output and sets `num_computed_tokens = 0`).

The case: two requests of a 4-token prompt and 10 output tokens on one replica of 5 KV blocks of
4 tokens, with a linear latency of 10 ms + 0.5 ms per prefill token + 1 ms per decoding sequence
(no attention term, so every instant is a sum of exact binary fractions).
"""

from __future__ import annotations

from typing import Any

import pytest

from simsched.config.loading import validate
from simsched.sim.engine import run_variant
from simsched.workload.build import build_workload

BASE, PER_PREFILL_TOKEN, PER_DECODE = 10.0, 0.5, 1.0
PROMPT, OUTPUT, BLOCK = 4, 10, 4


def scenario(fast_forward: bool) -> Any:
    raw = {
        "name": "preempt",
        "seed": 1,
        "tenants": [
            {
                "id": "a",
                # both arrive before the idle replica picks its first batch (0.5 ms)
                "arrivals": {"kind": "periodic", "interval_ms": 0.25, "count": 2},
                "prefill_tokens": PROMPT,
                "decode_tokens": OUTPUT,
            }
        ],
        "cluster": {
            "service_model": "continuous_batching",
            "latency_model": {
                "kind": "linear",
                "base_ms": BASE,
                "prefill_ms_per_token": PER_PREFILL_TOKEN,
                "decode_ms_per_seq": PER_DECODE,
                "attention_ms_per_1k_context": 0.0,
            },
            "block_size": BLOCK,
            "num_gpu_blocks": 5,
            "max_waiting_per_replica": 1000,
            "fast_forward": fast_forward,
        },
        "admission": {"enabled": False},
    }
    return validate(raw, "preempt")


def hand_timeline() -> dict[str, float]:
    """The instants, worked out step by step.

    A sequence decoding its j-th token after the prefill holds PROMPT + j tokens, so
    ceil((4 + j) / 4) blocks: a second block at j = 1, a third at j = 5, a fourth at j = 9.
    """
    start = 0.5  # the schedule step after the first arrival
    t = start + BASE + PER_PREFILL_TOKEN * 2 * PROMPT  # both prompts in one iteration: token 1
    first_token = t
    t += 4 * (BASE + 2 * PER_DECODE)  # j = 1..4 for both: 2 + 2 blocks held, tokens 2..5
    # j = 5: both need a third block, 1 is free: the newer (b) is preempted having emitted 5
    # tokens; it must recompute 4 + 5 = 9 tokens, 3 blocks, while a holds 3 of the 5: b waits
    t += 5 * (BASE + PER_DECODE)  # a alone, j = 5..9: its tokens 6..10
    a_finish = t
    t += BASE + PER_PREFILL_TOKEN * (PROMPT + 5)  # b's recompute prefill yields its token 6
    t += (OUTPUT - 6) * (BASE + PER_DECODE)  # b decodes tokens 7..10 alone
    return {"first": first_token, "a": a_finish, "b": t}


@pytest.mark.parametrize("fast_forward", [False, True])
def test_a_preempted_decode_resumes_after_its_recompute_at_the_hand_computed_instant(
    fast_forward: bool,
) -> None:
    case = scenario(fast_forward)
    recorder = run_variant(case, build_workload(case)).recorder
    hand = hand_timeline()
    assert hand == {"first": 14.5, "a": 117.5, "b": 176.0}  # the sums above
    assert list(recorder.first_token_ms) == [hand["first"], hand["first"]]
    assert list(recorder.preemptions) == [0, 1]
    assert list(recorder.finish_ms) == [hand["a"], hand["b"]]
