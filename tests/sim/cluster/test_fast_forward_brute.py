"""Fast-forward on and off, brute force: random small continuous-batching runs, every figure equal.

A jump stands for the decode-only iterations it covers, and it ends where stepping would change
the batch: at a completion, at the blocks' end, or cut short by a request placed on its replica.
The runs here are drawn so that those ends are frequent and coincide with other events (short
and equal answers finish together, small block sizes, small caches that preempt, requests
dispatched while replicas jump, timeline samples every few milliseconds), and each is simulated
both ways: every recorded outcome, timeline row, utilisation sum and the KV peak must be the
same, to the bit. The counts at the end check that the runs did end jumps at completions and
cut them, so the comparison covers those paths (and would cover a jump that runs past a
completion: its readers must see what stepping shows at every instant).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pandas as pd
import pytest

from simsched.config.loading import validate
from simsched.sim.cluster.replica import Replica
from simsched.sim.engine import run_variant
from simsched.sim.recorder import OUTCOME_ARRAYS
from simsched.workload.build import build_workload

# the default router half the time: it reads every replica's running count and KV on its own
ROUTERS = ("round_robin", "least_outstanding", "least_kv", "llm_d", "llm_d", "llm_d")
LINEAR = {
    "kind": "linear",
    "base_ms": 2.0,
    "prefill_ms_per_token": 0.004,
    "decode_ms_per_seq": 0.05,
    "attention_ms_per_1k_context": 0.03,
}
STEADY = {"kind": "linear", "base_ms": 4.0, "prefill_ms_per_token": 0.0, "decode_ms_per_seq": 0.0}


def random_tenant(rng: random.Random, name: str) -> dict[str, Any]:
    """Arrivals dense enough that requests reach replicas mid-jump; answers short and often
    equal, so that sequences finish inside the stretches a replica would jump over."""
    low = rng.randint(1, 20)
    decode = rng.choice([low, {"dist": "uniform", "low": low, "high": low + rng.randint(1, 60)}])
    arrivals = rng.choice(
        [
            {"kind": "poisson", "rate_per_s": rng.choice([20, 60, 150]), "count": 60},
            {"kind": "periodic", "interval_ms": rng.choice([4, 8, 20]), "count": 60},
        ]
    )
    prefill = {"dist": "uniform", "low": 1, "high": rng.choice([40, 300, 1500])}
    return {"id": name, "arrivals": arrivals, "prefill_tokens": prefill, "decode_tokens": decode}


def random_scenario(seed: int) -> Any:
    rng = random.Random(seed)
    cluster: dict[str, Any] = {
        "service_model": "continuous_batching",
        "replicas": rng.randint(1, 4),
        "block_size": rng.choice([1, 2, 16]),
        "max_num_seqs": rng.choice([4, 16, 256]),
        "max_num_batched_tokens": rng.choice([256, 2048]),
        "router": rng.choice(ROUTERS),
    }
    if rng.random() < 0.5:
        cluster["num_gpu_blocks"] = rng.choice([300, 1000, 5000])  # small: preemptions
    if rng.random() < 0.25:
        # every iteration 4 ms with STEADY: its ends meet arrivals, dispatches and samples
        cluster["latency_model"] = rng.choice([LINEAR, STEADY])
    tenants = [random_tenant(rng, name) for name in ("a", "b")[: rng.randint(1, 2)]]
    raw = {
        "seed": seed,
        "tenants": tenants,
        "cluster": cluster,
        "admission": {"enabled": rng.random() < 0.5},
        "timeline": {"interval_ms": rng.choice([1.0, 2.0, 7.0])},
    }
    return validate(raw, "brute.yaml")


def figures(run: Any) -> tuple:
    """Everything a run reports that fast-forward could change."""
    outcomes = tuple(getattr(run.recorder, name).tobytes() for name in OUTCOME_ARRAYS)
    return outcomes, run.kv_peak_ratio, tuple(run.utilisation)


@pytest.fixture
def jump_ends(monkeypatch) -> Counter[str]:
    """How jumps ended over the test: at a completion, cut short, or otherwise."""
    ends: Counter[str] = Counter()
    end_jump, cut_jump = Replica._end_jump, Replica._cut_jump

    def counted_end(self) -> None:
        if self.jump.last in self.decoding.by_finish:
            ends["completion"] += 1
        ends["jumps"] += 1
        end_jump(self)

    def counted_cut(self) -> None:
        ends["cut"] += 1
        cut_jump(self)

    monkeypatch.setattr(Replica, "_end_jump", counted_end)
    monkeypatch.setattr(Replica, "_cut_jump", counted_cut)
    return ends


def test_random_runs_are_the_same_with_fast_forward_on_and_off(jump_ends) -> None:
    for seed in range(30):
        scenario = random_scenario(seed)
        table = build_workload(scenario)
        runs = []
        for fast_forward in (True, False):
            cluster = scenario.cluster.model_copy(update={"fast_forward": fast_forward})
            runs.append(run_variant(scenario.model_copy(update={"cluster": cluster}), table))
        on, off = runs
        assert figures(on) == figures(off), f"seed {seed}"
        pd.testing.assert_frame_equal(on.timeline, off.timeline, check_exact=True)
    # the runs did exercise the jumps' ends that matter
    assert jump_ends["completion"] >= 100, jump_ends
    assert jump_ends["cut"] >= 100, jump_ends
