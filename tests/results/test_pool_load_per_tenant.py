"""A pool's `request_rate_per_s` counts the arrivals of the tenants that may use it
(config/pool_eligibility.py), not every arrival at the gateway: a flood pinned to another pool is
not the load this pool's replica count met."""

from __future__ import annotations

from simsched.config.pool_eligibility import eligible_pools, tenants_of_pool
from simsched.results.simulate import simulate
from tests.sim.cluster.test_pool_autoscaling import STEP, two_pools


def test_a_pools_request_rate_counts_only_its_own_tenants():
    scenario = two_pools(STEP)  # light (200 requests) pinned to b, heavy (3000) to a
    result = simulate(scenario)
    (variant,) = result.variants
    block = result.provisioned[variant]
    start, end = block["window_ms"]
    light_pool = block["pools"]["b"]
    assert len(light_pool["replicas_over_time"]) == 1  # b never scales: one interval, the run
    # 200 light arrivals over the window, not the 3,200 of both tenants
    assert light_pool["request_rate_per_s"] == [round(200 / ((end - start) / 1000), 3)]


def test_eligibility_follows_the_model_pins_and_decode_fallback():
    from types import SimpleNamespace as NS

    def spec(name, role, model="m"):
        return NS(name=name, role=role, model=NS(name=model))

    pools = [
        spec("p", "prefill"),
        spec("d1", "decode"),
        spec("d2", "decode"),
        spec("x", "mixed", "n"),
    ]
    tenants = [
        NS(id="any", model=None, pools=None),  # the first pool's model: p, and both decoders
        NS(id="pinned", model="m", pools=["p", "d2"]),
        NS(id="entry_only", model="m", pools=["p"]),  # names no decoder: every one of its model
        NS(id="other", model="n", pools=None),
    ]
    assert eligible_pools(tenants, pools) == [
        (["p"], ["d1", "d2"]),
        (["p"], ["d2"]),
        (["p"], ["d1", "d2"]),
        (["x"], []),
    ]
    assert tenants_of_pool(tenants, pools, "d2") == ["any", "pinned", "entry_only"]
    assert tenants_of_pool(tenants, pools, "d1") == ["any", "entry_only"]
