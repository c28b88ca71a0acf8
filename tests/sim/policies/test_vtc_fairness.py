"""VTC's fairness bound (Sheng et al., OSDI 2024, Theorem 4.4, weighted form).

Two continuously backlogged tenants, one sending small requests and one large ones: at every
point of the pick sequence the weight-normalised service they have received,
`W_i / w_i` (summed service tokens of their picked requests over their weight), differs by at
most `2 * max_i(L_i / w_i)`, `L_i` being tenant i's largest request. With unit weights that is
twice the largest request's service tokens; with weights below 1 one request can legitimately
count for more than its own size, hence the normalisation. Request-count round-robin has no such
bound: it gives both tenants the same number of requests whatever their sizes.
"""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.config.classes import BATCH, INTERACTIVE
from simsched.config.scenario import Scheduler
from simsched.sim.lanes import Lanes
from simsched.sim.policies import POLICIES
from simsched.sim.policies.base import PolicyContext
from simsched.sim.requests import Request

PICKS = 150


def normalised_gaps(
    name: str, weights: tuple[float, float], sizes: tuple[list[int], list[int]], lanes_of: list[int]
) -> Iterator[float]:
    """|W0/w0 - W1/w1| after each pick; each tenant's next request arrives as one is picked,
    so both always have work queued (two each, so lane choice within a tenant matters too)."""
    policy = POLICIES[name](PolicyContext(weights, Scheduler(), (500.0, 10_000.0)))
    lanes = Lanes(2)
    sent = [0, 0]
    seq = 0

    def send(tenant: int) -> None:
        nonlocal seq
        tokens = sizes[tenant][sent[tenant] % len(sizes[tenant])]
        lane = lanes_of[seq % len(lanes_of)]
        lanes.push(Request(seq, tenant, lane, float(seq), tokens, 0, tokens, 1))
        sent[tenant] += 1
        seq += 1

    for tenant in (0, 1, 0, 1):
        send(tenant)
    served = [0.0, 0.0]
    for _ in range(PICKS):
        pick = policy.select(lanes)
        request = lanes.pop(pick.lane, pick.tenant)
        served[request.tenant] += request.service_tokens
        send(request.tenant)
        yield abs(served[0] / weights[0] - served[1] / weights[1])


def bound(weights: tuple[float, float], sizes: tuple[list[int], list[int]]) -> float:
    return 2 * max(max(s) / w for s, w in zip(sizes, weights, strict=True))


weights_st = st.tuples(st.floats(0.25, 8.0), st.floats(0.25, 8.0))
sizes_st = st.tuples(
    st.lists(st.integers(50, 150), min_size=1, max_size=8),  # around 100 service tokens
    st.lists(st.integers(3000, 5000), min_size=1, max_size=8),  # around 4000
)
lanes_st = st.lists(st.sampled_from((INTERACTIVE, BATCH)), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)  # 60 draws keep this under a second or two
@given(weights=weights_st, sizes=sizes_st, lanes_of=lanes_st, swap=st.booleans())
def test_vtc_keeps_normalised_service_within_the_bound(
    weights: tuple[float, float],
    sizes: tuple[list[int], list[int]],
    lanes_of: list[int],
    swap: bool,
) -> None:
    if swap:  # the large sender declared first, too
        sizes = (sizes[1], sizes[0])
    limit = bound(weights, sizes)
    for step, gap in enumerate(normalised_gaps("vtc", weights, sizes, lanes_of)):
        assert gap <= limit + 1e-6, f"pick {step}: gap {gap:.1f} over the bound {limit:.1f}"


def test_request_count_fifo_breaks_the_bound() -> None:
    weights, sizes = (1.0, 1.0), ([100], [4000])
    limit = bound(weights, sizes)  # 8000
    gaps = list(normalised_gaps("request_count_fifo", weights, sizes, [INTERACTIVE]))
    # one request each per round: the gap grows by 3900 a round, past 8000 after three rounds
    assert gaps[5] == 3 * 3900.0
    assert max(gaps) > limit
    vtc_gaps = list(normalised_gaps("vtc", weights, sizes, [INTERACTIVE]))
    assert max(vtc_gaps) <= limit
