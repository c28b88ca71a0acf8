"""Exact event traces through the whole simulation: band selection, TTL expiry at its instant,
no endpoints, saturation holding dispatch with stale metrics. Every expected instant is worked
out by hand from helpers.py's arithmetic (each request takes 100 ms on the token server)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from helpers import BLOCK_TOKENS, dispatch_times, outcomes, scenario, tenant  # noqa: E402

TWO = [tenant("hi", 6), tenant("lo", 6)]
BANDS = {"hi": 1, "lo": 0}


def test_strict_bands_serve_the_low_band_only_when_the_high_one_is_empty() -> None:
    s = scenario(TWO, {"priorities": BANDS})
    assert dispatch_times(s, "hi") == [0, 100, 200, 300, 400, 500]
    assert dispatch_times(s, "lo") == [600, 700, 800, 900, 1000, 1100]


def test_cross_band_wfq_serves_bands_in_proportion_to_their_weights() -> None:
    # weights 3:1, 100 service tokens each: counts (hi/3, lo/1) go
    # t=0 tie -> hi (33.3); 100 lo (100); 200 hi (66.7); 300 hi (100); 400 tie -> hi (133.3);
    # 500 lo (200); 600 hi (166.7); 700 hi (200); then only lo is left: 800..1100.
    flow = {"priorities": BANDS, "band_selection": {"policy": "wfq", "weights": {1: 3, 0: 1}}}
    s = scenario(TWO, flow)
    assert dispatch_times(s, "hi") == [0, 200, 300, 400, 600, 700]
    assert dispatch_times(s, "lo") == [100, 500, 800, 900, 1000, 1100]


def test_wfq_below_its_activation_saturation_stays_strict() -> None:
    flow = {
        "priorities": BANDS,
        "band_selection": {"policy": "wfq", "weights": {1: 3, 0: 1}, "activate_at": 0.5},
    }
    s = scenario(TWO, flow)  # no detector: saturation reads 0
    assert dispatch_times(s, "lo") == [600, 700, 800, 900, 1000, 1100]


def test_a_request_expires_exactly_at_arrival_plus_ttl_with_a_429() -> None:
    # r0 at 0 runs 0-100; r1 (arrived 1) runs 100-200; r2 (arrived 2) would start at 200 but
    # its 150 ms TTL runs out at 152.
    got = outcomes(scenario([tenant("t", 3)], {"request_ttl_ms": 150}))
    assert got["t-000001"][:2] == ("admitted", 100.0)
    assert got["t-000002"] == ("shed_queue_ttl", got["t-000002"][1], 150.0, 429)


def test_a_ttl_running_out_at_a_dispatch_instant_expires_first() -> None:
    # r2's TTL of 198 ms ends at 200, the instant the server frees: it is not dispatched
    got = outcomes(scenario([tenant("t", 3)], {"request_ttl_ms": 198}))
    assert got["t-000002"][0] == "shed_queue_ttl"
    assert got["t-000002"][2] == 198.0


def test_with_no_endpoints_the_ttl_is_the_no_endpoint_one_and_answers_503() -> None:
    flow = {"request_ttl_ms": 5000, "no_endpoint_request_ttl_ms": 300, "pool_empty_until_ms": 1000}
    tenants = [tenant("early", 2), tenant("late", 1, start_ms=900)]
    got = outcomes(scenario(tenants, flow))
    assert got["early-000000"] == ("shed_queue_ttl_no_endpoints", got["early-000000"][1], 300, 503)
    assert got["early-000001"][2:] == (300.0, 503)
    # queued at 900 with the no-endpoint TTL (1200), the pool has endpoints from 1000
    assert got["late-000000"][:3] == ("admitted", 1000.0, 100.0)


def test_saturation_holds_dispatch_until_a_look_sees_room() -> None:
    # tokens mode: one request's KV (7 blocks, 112 tokens) is the whole capacity, so a held
    # request reads as saturation 1.0 and gates every band (static ceiling 1.0). KV is held
    # 3 x 100 ms: r0's until 300. Held dispatch looks again every 50 ms: 100, 150, 200, 250
    # (held), 300 (released just before: r1 goes); r1's KV until 600: r2 at 600.
    flow = {"saturation": CONCURRENCY | {"refresh_ms": 50}}
    s = scenario([tenant("t", 3)], flow, hold_factor=3.0)
    assert dispatch_times(s, "t") == [0, 300, 600]


CONCURRENCY = {"detector": "concurrency", "mode": "tokens", "max_token_concurrency": BLOCK_TOKENS}
# utilization of a 7-block pool with kv_cache_util_threshold 1: one request held reads 1.0
UTILIZATION = {"detector": "utilization", "kv_cache_util_threshold": 1.0, "refresh_ms": 150}


def test_stale_utilization_metrics_let_a_request_through_a_saturated_pool() -> None:
    # scraped at 0 (empty): r0 at 0; at 100 the last scrape (0) is under 150 ms old, so the
    # gateway still sees an empty pool and sends r1 although r0 holds its KV to 300. Scrape at
    # 200: both held (2.0), hold to 350: r1 still held (1.0), hold to 500: free, r2 at 500.
    s = scenario([tenant("t", 3)], {"saturation": UTILIZATION}, hold_factor=3.0, kv_blocks=7)
    assert dispatch_times(s, "t") == [0, 100, 500]


def test_the_concurrency_detector_is_never_stale() -> None:
    # the same pool read at once: at 100 r0 is held, look again at 250 (held), 400 (free): r1;
    # r1 holds to 700: looks at 500, 650 (held), 800: r2
    flow = {"saturation": CONCURRENCY | {"refresh_ms": 150}}
    s = scenario([tenant("t", 3)], flow, hold_factor=3.0)
    assert dispatch_times(s, "t") == [0, 400, 800]


def test_sheddable_traffic_is_rejected_while_saturated() -> None:
    flow = {
        "priorities": {"bulk": "sheddable"},
        "saturation": CONCURRENCY,
    }
    # t's r0 is dispatched at 0 and holds its KV to 300; bulk arrives at 120 (scrape: 1.0)
    tenants = [tenant("t", 1), tenant("bulk", 1, start_ms=120)]
    got = outcomes(scenario(tenants, flow, hold_factor=3.0))
    assert got["bulk-000000"][0] == "shed_sheddable_saturated"
    assert got["bulk-000000"][3] == 429


def test_guardrails_reject_over_the_queue_limits() -> None:
    # all 5 arrive in 0-4 ms while r0 runs: r0 leaves the queue at 0, r1 and r2 fill it
    got = outcomes(scenario([tenant("t", 5)], {"max_requests": 2}))
    reasons = [got[f"t-00000{i}"][0] for i in range(5)]
    assert reasons == ["admitted", "admitted", "admitted", "shed_queue_capacity"] + [
        "shed_queue_capacity"
    ]


def test_a_band_byte_limit_rejects_only_its_band() -> None:
    # 96 prompt tokens x 4 bytes = 384 bytes a request; band 0 holds at most 2 queued
    flow = {"priorities": BANDS, "bands": [{"priority": 0, "max_bytes": 768}]}
    got = outcomes(scenario([tenant("hi", 4), tenant("lo", 4)], flow))
    lo = [got[f"lo-00000{i}"][0] for i in range(4)]
    hi = [got[f"hi-00000{i}"][0] for i in range(4)]
    assert hi == ["admitted"] * 4
    assert lo == ["admitted", "admitted", "shed_band_capacity", "shed_band_capacity"]


def periodic(name: str, start_ms: float, interval_ms: float, count: int) -> dict:
    return tenant(name, count) | {
        "arrivals": {
            "kind": "periodic",
            "start_ms": start_ms,
            "interval_ms": interval_ms,
            "count": count,
        }
    }


LAS_TENANTS = [periodic("a", 0, 125, 3), periodic("b", 150, 100, 2)]


def test_las_decay_decides_who_goes_first_after_a_gap() -> None:
    # A request costs LAS 96 + 2 x 1 = 98. a0 runs 0-100 (S_a = 98 at 0); a1 at 125:
    # S_a = 98 x 2^-1.25 + 98 = 139.20; b0 (arrived 150) at 225: S_b = 98. a2 and b1 arrive at
    # 250 and wait for 325: S_a = 139.20 x 2^-2 = 34.80 < S_b = 98 x 2^-1 = 49, so a2 goes first.
    flow = {"fairness": "las", "las": {"half_life_ms": 100}}
    s = scenario(LAS_TENANTS, flow)
    assert dispatch_times(s, "a") == [0, 125, 325]
    assert dispatch_times(s, "b") == [225, 425]


def test_las_without_decay_serves_the_tenant_with_less_service_first() -> None:
    # no decay: at 325 S_a = 196 > S_b = 98, so b1 goes first
    flow = {"fairness": "las", "las": {"half_life_ms": 0}}
    s = scenario(LAS_TENANTS, flow)
    assert dispatch_times(s, "a") == [0, 125, 425]
    assert dispatch_times(s, "b") == [225, 325]


# Hysteresis: a 14-block pool, one request's KV is 7 blocks, so the utilization detector
# (kv_cache_util_threshold 1) reads 0.5 per request holding KV (3 x 100 ms from its dispatch).
# The static ceiling 1.0 gates dispatch at 2 held; with hysteresis 0.6 the band opens again only
# below 1.0 - 0.6 = 0.4, that is with none held. A release at an instant precedes a look then.
HYSTERESIS = UTILIZATION | {"refresh_ms": 50, "hysteresis": 0.6}


def hysteresis_run(saturation: dict) -> list[float]:
    s = scenario([tenant("t", 5)], {"saturation": saturation}, hold_factor=3.0, kv_blocks=14)
    return dispatch_times(s, "t")


def test_hysteresis_holds_dispatch_until_the_pool_drains_below_the_margin() -> None:
    # 0: r0 (KV to 300). 100: scrape 0.5, open: r1 (to 400). 200: scrape 1.0, gated; looks at
    # 250 (1.0), 300 (r0 released: 0.5, still >= 0.4: held), 350 (0.5), 400 (r1 released: 0):
    # r2 (to 700). 500: 0.5 and no longer gated: r3 (to 800). 600: 1.0, gated; 650 (1.0),
    # 700 (0.5), 750 (0.5), 800 (0): r4.
    assert hysteresis_run(HYSTERESIS) == [0, 100, 400, 500, 800]


def test_without_hysteresis_dispatch_resumes_as_soon_as_saturation_drops_below_the_ceiling() -> (
    None
):
    # the same pool: at 300 r0's release leaves 0.5 < 1.0: r2 (to 600); 400: 0.5, r3 (to 700);
    # 500: 1.0, gated; 550 (1.0), 600 (r2 released: 0.5): r4
    assert hysteresis_run(HYSTERESIS | {"hysteresis": 0.0}) == [0, 100, 300, 400, 600]


def test_hysteresis_with_stale_metrics() -> None:
    # refresh 150: 0 scrape 0: r0 (to 300). 100: the scrape at 0 is current: 0 read, r1 (to
    # 400). 200: scrape 1.0, gated, next look 350: scrape 0.5 (r0 gone), held; 500: scrape 0:
    # r2 (to 800). 600: the scrape at 500 is current (0): r3 (to 900). 700: scrape 1.0, gated;
    # 850: 0.5 (r2 gone), held; 1000: 0: r4.
    assert hysteresis_run(HYSTERESIS | {"refresh_ms": 150}) == [0, 100, 500, 600, 1000]


def test_stale_metrics_without_hysteresis() -> None:
    # 350: 0.5 < 1.0: r2 (to 650). 450: the scrape at 350 is current (0.5): r3 (to 750).
    # 550: scrape 1.0, gated; 700: 0.5 (r2 gone at 650): r4
    saturation = HYSTERESIS | {"refresh_ms": 150, "hysteresis": 0.0}
    assert hysteresis_run(saturation) == [0, 100, 350, 450, 700]
