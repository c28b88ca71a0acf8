"""Conservation over random pool layouts: mixed pools beside P/D pairs, tiny KV caches.

Every admitted request is prefilled once (one first token), handed off once when it starts on a
prefill pool and answers more than one token, never when it starts on a mixed pool, and finished
once; no replica holds more KV blocks than it has on either side of a transfer (the pools refuse
to, so a violation fails the run, and the timeline never shows one), every block comes back,
and fast-forwarding changes nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simsched
from simsched.config.scenario import Scenario
from simsched.sim.cluster.pools import PooledCluster
from simsched.sim.cluster.registry import SERVICE_MODELS

LINEAR = {"kind": "linear", "base_ms": 2.0, "prefill_ms_per_token": 0.02, "decode_ms_per_seq": 0.1}
ROUTERS = ["round_robin", "least_outstanding", "least_kv", "llm_d"]


@st.composite
def layouts(draw: st.DrawFn) -> list[dict[str, Any]]:
    def pool(name: str, role: str) -> dict[str, Any]:
        budget = draw(st.sampled_from([16, 64, 512]))
        return {
            "name": name,
            "role": role,
            "replicas": draw(st.integers(1, 2)),
            "num_gpu_blocks": draw(st.sampled_from([24, 40, 400])),
            "max_num_batched_tokens": budget,
            "max_num_seqs": draw(st.sampled_from([s for s in (1, 4, 16) if s <= budget])),
            "max_waiting_per_replica": draw(st.sampled_from([1, 4])),
            "router": draw(st.sampled_from(ROUTERS)),
            "latency_model": draw(st.sampled_from([LINEAR, {"kind": "roofline"}])),
            "prefix_caching": role != "decode" and draw(st.booleans()),
            "schedule_step_ms": draw(st.sampled_from([0.0, 0.5])),
            "block_watermark": draw(st.sampled_from([0.0, 0.3])),
        }

    mixed = [pool(f"m{i}", "mixed") for i in range(draw(st.integers(0, 2)))]
    pd_pairs = draw(st.booleans()) or not mixed
    prefill = [pool(f"p{i}", "prefill") for i in range(draw(st.integers(1, 2)))] if pd_pairs else []
    decode = [pool(f"d{i}", "decode") for i in range(draw(st.integers(1, 2)))] if pd_pairs else []
    return mixed + prefill + decode


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[tuple], list[dict], dict[str, Any]]:
    pools = draw(layouts())
    entry = [p["name"] for p in pools if p["role"] != "decode"]
    tenants = []
    for i in range(draw(st.integers(1, 3))):
        tenant: dict[str, Any] = {"id": f"t{i}", "priority": "interactive"}
        if draw(st.booleans()):
            tenant["pools"] = draw(st.lists(st.sampled_from(entry), min_size=1, unique=True))
        tenants.append(tenant)
    clock, rows = 0.0, []
    for index in range(draw(st.integers(1, 30))):
        clock += draw(st.sampled_from([0.0, 0.0, 0.5, 3.0, 20.0]))
        rows.append(
            (
                f"r{index:03d}",
                f"t{draw(st.integers(0, len(tenants) - 1))}",
                clock,
                draw(st.integers(1, 250)),
                draw(st.integers(1, 100)),
            )
        )
    cluster = {"pools": pools, "kv_transfer": draw(st.sampled_from(["nvlink", "ethernet_100g"]))}
    sections = {"cluster": cluster, "admission": {"enabled": draw(st.booleans())}}
    return rows, tenants, sections


class Counting:
    """The recorder as the replicas see it, counting first tokens and finishes per request."""

    def __init__(self, recorder: Any) -> None:
        self._recorder = recorder
        self.firsts: Counter[int] = Counter()
        self.finishes: Counter[int] = Counter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._recorder, name)

    def first_token(self, request: Any, now: float) -> None:
        self.firsts[request.seq] += 1
        self._recorder.first_token(request, now)

    def finished(self, request: Any, now: float) -> None:
        self.finishes[request.seq] += 1
        self._recorder.finished(request, now)


def run(make_scenario: Callable[..., Scenario], case, fast_forward: bool):
    rows, tenants, sections = case
    pools = [p | {"fast_forward": fast_forward} for p in sections["cluster"]["pools"]]
    cluster = sections["cluster"] | {"pools": pools}
    scenario = make_scenario(rows, tenants, **(sections | {"cluster": cluster}))
    built: list[tuple[PooledCluster, Counting]] = []

    class Watched(PooledCluster):
        def __init__(self, env: Any, config: Any, recorder: Any, **kwargs: Any) -> None:
            counting = Counting(recorder)
            super().__init__(env, config, counting, **kwargs)
            built.append((self, counting))

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(SERVICE_MODELS, "pools", Watched)
        result = simsched.simulate(scenario)
    timeline = result.timeline
    assert (timeline["kv_blocks_used"] <= timeline["kv_blocks_total"]).all()
    ((model, counting),) = built
    return result.requests, model, counting


@settings(max_examples=12, deadline=None)  # each example runs the cluster twice
@given(case=cases())
def test_pool_conservation(make_scenario, case) -> None:
    frame, model, counting = run(make_scenario, case, True)
    assert sorted(frame["request_id"]) == sorted(row[0] for row in case[0])
    served = frame[frame["status_code"] == 200]
    for column in ("dispatch_ms", "first_token_ms", "finish_ms"):
        assert np.isfinite(served[column]).all(), column
    assert (served["first_token_ms"] >= served["dispatch_ms"]).all()
    bad = served[served["finish_ms"] < served["first_token_ms"]]
    assert bad.empty, bad.T.to_string()
    # a request's seq is its place in arrival order, which the frame keeps
    order = {rid: seq for seq, rid in enumerate(sorted_ids(case[0]))}
    admitted = {order[rid] for rid in served["request_id"]}
    assert set(counting.firsts) == admitted and set(counting.firsts.values()) <= {1}
    assert set(counting.finishes) == admitted and set(counting.finishes.values()) <= {1}
    # handed off once exactly when placed on a prefill pool with an answer of 2 tokens or more
    roles = [pool.role for pool in model.pools for _ in pool.replicas]
    decode_tokens = {row[0]: row[4] for row in case[0]}
    expected = {
        order[rid]
        for rid, replica in zip(served["request_id"], served["replica"], strict=True)
        if roles[int(replica)] == "prefill" and decode_tokens[rid] > 1
    }
    log = model.transfers()
    assert Counter(log.seqs) == Counter(expected)
    assert all(r.kv.level == 0 for r in model.replicas)
    again, _, _ = run(make_scenario, case, False)
    pd.testing.assert_frame_equal(frame, again)


def sorted_ids(rows: list[tuple]) -> list[str]:
    """Request ids in arrival order, ties by id: the order requests get their seq in."""
    return [row[0] for row in sorted(rows, key=lambda row: (row[2], row[0]))]
