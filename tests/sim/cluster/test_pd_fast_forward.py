"""A transfer offered at the very instant a decode iteration ends, with fast_forward on and off.

The rule (kernel.py, `HANDOFF`): at an instant, every iteration that ends then is over and its
replica has picked its next batch before a prefill replica's handoff is offered, so a booking
offered at a decode boundary t waits for the next boundary, whichever of the two iterations
started first and whether the decode replica steps or jumps. Before, a stepping decode replica
booked at t when the prefill iteration had started first (its end event was queued first) and a
jumping one at the next boundary, so on and off differed.

Every instant below is worked out by hand from a linear latency model with exact binary
fractions, and a link whose time is exact too:
- llama-3-8b's KV: 2 x 32 layers x 8 heads x 128 x 2 bytes = 131,072 bytes a token, so a link
  of 16.777216 Gb/s with 1 ms latency carries P tokens in P x 131,072 x 8 / 16,777,216 + 1
  = P / 16 + 1 ms;
- a prefill iteration of P tokens takes base + P / 16 ms; a decode iteration takes `base`
  whatever its batch (decode_ms_per_seq = 0).
"""

from __future__ import annotations

from typing import Any

import pytest

from simsched.config.loading import validate
from simsched.results.simulate import simulate
from simsched.sim.cluster.pools import PooledCluster
from simsched.sim.cluster.registry import SERVICE_MODELS

LINK = {"gbps": 16.777216, "latency_ms": 1.0}


def linear(base_ms: float) -> dict[str, Any]:
    return {"kind": "linear", "base_ms": base_ms, "prefill_ms_per_token": 0.0625,
            "decode_ms_per_seq": 0.0}  # fmt: skip


def pd_pair(decode_base_ms: float, fast_forward: bool, seats: int = 2) -> list[dict[str, Any]]:
    common = {"replicas": 1, "num_gpu_blocks": 400, "block_size": 16, "schedule_step_ms": 0.0,
              "block_watermark": 0.0, "fast_forward": fast_forward}  # fmt: skip
    return [
        {"name": "p", "role": "prefill", "latency_model": linear(1.0), "max_num_seqs": 2, **common},
        {"name": "d", "role": "decode", "latency_model": linear(decode_base_ms),
         "max_num_seqs": seats, **common},
    ]  # fmt: skip


def one_shot(name: str, at_ms: float, prompt: int, answer: int) -> dict[str, Any]:
    arrivals = {"kind": "periodic", "start_ms": at_ms, "interval_ms": 1000, "count": 1}
    return {"id": name, "arrivals": arrivals, "prefill_tokens": prompt, "decode_tokens": answer}


def run(tenants: list[dict[str, Any]], pools: list[dict[str, Any]]):
    """The requests' frame (by tenant) and the handoff's log (booking instants and requests)."""
    built: list[PooledCluster] = []

    class Watched(PooledCluster):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            built.append(self)

    raw = {"tenants": tenants, "cluster": {"pools": pools, "kv_transfer": LINK},
           "admission": {"enabled": False}}  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(SERVICE_MODELS, "pools", Watched)
        result = simulate(validate(raw, "pd_tie.yaml"))
    (cluster,) = built
    frame = result.requests.set_index("tenant_id")
    return frame, cluster.transfers()


# Case "prefill first": decode iterations of 1 ms. A (16 tokens at 0) prefills 0 -> 2, is booked
# on the idle decode replica at 2, travels 16/16 + 1 = 2 ms, joins at 4; its first decode step
# 4 -> 5 is the client's first token; its 29 remaining tokens end at 4 + 29 = 33. B (16 tokens
# at 6) prefills 6 -> 8: its iteration started at 6, before the decode one that ends at 8 (7 -> 8),
# and it is offered at 8. Booked at the next boundary, 9; it travels 2 ms to 11, joins at the
# boundary 12 (the decode iteration ending at 11 had already picked its batch); first token at 13,
# its 3 decode steps (tokens 2..4) end at 15.
PREFILL_FIRST = (
    1.0,
    [one_shot("a", 0.0, 16, 30), one_shot("b", 6.0, 16, 4)],
    {"booked": [2.0, 9.0], "first": {"a": 5.0, "b": 13.0}, "finish": {"a": 33.0, "b": 15.0}},
)
# Case "decode first": decode iterations of 2 ms. A prefills 0 -> 2, is booked at 2, arrives at 4,
# first token at 6, its 29 remaining steps end at 4 + 58 = 62. B (8 tokens at 8.5) prefills
# 8.5 -> 10 (1 + 8/16 ms): the decode iteration ending at 10 (8 -> 10) started first. Offered at 10,
# booked at the next boundary 12, travels 8/16 + 1 = 1.5 ms to 13.5, joins at 14, first token at
# 16, its 3 decode steps end at 20.
DECODE_FIRST = (
    2.0,
    [one_shot("a", 0.0, 16, 30), one_shot("b", 8.5, 8, 4)],
    {"booked": [2.0, 12.0], "first": {"a": 6.0, "b": 16.0}, "finish": {"a": 62.0, "b": 20.0}},
)


CASES = {"prefill_first": PREFILL_FIRST, "decode_first": DECODE_FIRST}


@pytest.mark.parametrize("fast_forward", [False, True])
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_an_offer_at_a_decode_boundary_is_booked_at_the_next_one(case, fast_forward) -> None:
    decode_base_ms, tenants, expected = case
    frame, log = run(tenants, pd_pair(decode_base_ms, fast_forward))
    assert log.start_ms == expected["booked"]
    assert frame["first_token_ms"].to_dict() == expected["first"]
    assert frame["finish_ms"].to_dict() == expected["finish"]


def test_one_seat_decode_replica_agrees_on_and_off() -> None:
    """One seat: B's booking waits for A to finish (at 4 + 9 = 13, an instant B's handoff also
    falls on: B at 11 prefills 16 tokens 11 -> 13). A's finishing iteration frees the seat before
    B is offered, so B is booked at once on the replica A left idle, in both modes: at 13, then
    it travels to 15, joins there, and its 3 decode steps end at 16 (first token), 17 and 18."""
    tenants = [one_shot("a", 0.0, 16, 10), one_shot("b", 11.0, 16, 4)]
    for fast_forward in (False, True):
        frame, log = run(tenants, pd_pair(1.0, fast_forward, seats=1))
        assert log.start_ms == [2.0, 13.0]
        assert frame["first_token_ms"].to_dict() == {"a": 5.0, "b": 16.0}
        assert frame["finish_ms"].to_dict() == {"a": 13.0, "b": 18.0}


def test_handoffs_of_one_instant_are_offered_in_request_order() -> None:
    """Two prefill replicas (round robin) hand off at 4, the later request's iteration queued
    first; the decode pool's round robin then deals them in request order, whichever ends first.

    X (seq 0, 16 tokens at 0) prefills 0 -> 2 on p0; Y (seq 1, 8 tokens at 0) 0 -> 1.5 on p1;
    A (seq 2, 16 tokens at 0.25) waits on p0 and prefills 2 -> 4; B (seq 3, 24 tokens at 0.5)
    waits on p1 and prefills 1.5 -> 4 (1 + 24/16 ms), queued at 1.5, before A's at 2.
    Decode round robin: Y -> d0, booked at 1.5 (idle), travels 8/16 + 1 = 1.5 ms, joins at 3,
    steps 3 -> 4; X -> d1 at 2, travels 2 ms, arrives at 4. At 4: A -> d0, mid-step at its
    boundary 4 (already started its next step), booked at 5; B -> d1, still idle (X's arrival
    at 4 comes after the handoffs), booked at 4. Offered B first, A would go to d1 at 4."""
    tenants = [
        one_shot("x", 0.0, 16, 4),
        one_shot("y", 0.0, 8, 4),
        one_shot("a", 0.25, 16, 4),
        one_shot("b", 0.5, 24, 4),
    ]
    for fast_forward in (False, True):
        pools = pd_pair(1.0, fast_forward)
        for spec in pools:
            spec |= {"replicas": 2, "router": "round_robin"}
        _, log = run(tenants, pools)
        assert log.seqs == [1, 0, 3, 2]
        assert log.start_ms == [1.5, 2.0, 4.0, 5.0]
