"""`plan --minimize cost` prices an autoscaled fleet by what it provisioned, not its maximum."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simsched.config.loading import load_scenario
from simsched.config.prices import GPU_PRICES_PER_HOUR
from simsched.results.simulate import simulate
from simsched.studies.plan import plan

# every iteration: 1 ms + 0.01 ms per prefill token + 0.1 ms per decoding sequence
LINEAR = {"kind": "linear", "base_ms": 1.0, "prefill_ms_per_token": 0.01, "decode_ms_per_seq": 0.1}
AUTOSCALE = {"min": 1, "max": 3, "metric": "queue_depth", "target": 1.0, "interval_s": 1.0,
             "scale_up_delay_s": 0.5, "scale_down_cooldown_s": 2.0}  # fmt: skip


def day(flood_interval_ms: int, flood_count: int) -> list[dict]:
    """A light tenant for 20 s and, from 4050 ms, a flood of `flood_count` requests."""
    light = {"kind": "periodic", "start_ms": 0.5, "interval_ms": 100, "count": 200}
    flood = {"kind": "periodic", "start_ms": 4050, "interval_ms": flood_interval_ms,
             "count": flood_count}  # fmt: skip
    return [
        {"id": "light", "arrivals": light, "prefill_tokens": 100, "decode_tokens": 10},
        {"id": "flood", "arrivals": flood, "prefill_tokens": 100, "decode_tokens": 10},
    ]


def write_scenario(folder: Path) -> Path:
    """A light tenant for 20 s and a 1.5 s flood from 4 s, on replicas of two seats."""
    raw = {
        "name": "tiny_day",
        "tenants": day(1, 1500),
        "admission": {"enabled": False},
        "cluster": {
            "service_model": "continuous_batching", "replicas": 1, "latency_model": LINEAR,
            "num_gpu_blocks": 400, "max_num_seqs": 2, "schedule_step_ms": 0.0,
            "router": "least_outstanding", "autoscale": AUTOSCALE,
        },
    }  # fmt: skip
    path = folder / "tiny_day.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_cost_is_the_provisioned_gpu_hours_per_hour_of_the_run(tmp_path: Path) -> None:
    path = write_scenario(tmp_path)
    # p99 TTFT is ~9.5 s with one replica, ~4.6 s with two: the SLO needs max = 2 at least.
    # A longer scale-down window keeps the flood's replicas longer at the same latency.
    over = {"cluster.autoscale.scale_down_cooldown_s": [6.0, 1.0]}
    result = plan(path, "cluster.autoscale.max", "1:3", ["all.p99_ttft_ms<=5000"], over=over,
                  minimize="cost", headroom=False)  # fmt: skip
    best = result.best
    assert best is not None and best.answer == 2
    assert dict(best.combo) == {"cluster.autoscale.scale_down_cooldown_s": 1.0}
    # the same run, by hand: GPU-hours over the window's hours at the H100's list price
    overrides = [f"{setting}={value}" for setting, value in best.combo]
    overrides.append(f"cluster.autoscale.max={best.answer}")
    block = simulate(load_scenario(path, overrides)).provisioned["base"]
    start, end = block["window_ms"]
    per_hour = block["total"]["gpu_hours"] / ((end - start) / 3_600_000)
    price = GPU_PRICES_PER_HOUR["h100-80gb"]
    assert best.cost_per_hour == pytest.approx(per_hour * price, abs=1e-3)
    # below a fixed pool of the same maximum, which pays for every replica all the time
    assert best.cost_per_hour < best.answer * price
    for other in result.plans:
        assert other.cost_per_hour is None or best.cost_per_hour <= other.cost_per_hour
    # and the plan says how it priced it
    assert any("GPU-hours provisioned" in note for note in result.notes)
    # slots that never served count no request: that is no router skew
    assert not any("load is skewed" in note for note in result.notes)


def write_pooled(folder: Path) -> Path:
    """The same day on P/D pools: a fixed prefill pool, an autoscaled decode pool of one-seat
    replicas (a request holds its seat for 10 decode steps)."""
    pool = {"latency_model": LINEAR, "num_gpu_blocks": 400, "schedule_step_ms": 0.0,
            "router": "least_outstanding", "max_num_seqs": 2}  # fmt: skip
    raw = {
        "name": "tiny_pd_day",
        "tenants": day(2, 750),
        "admission": {"enabled": False},
        "cluster": {"pools": [
            {"name": "prefill", "role": "prefill", "replicas": 2, **pool},
            {"name": "decode", "role": "decode", "replicas": 1, **pool, "autoscale": AUTOSCALE},
        ]},
    }  # fmt: skip
    path = folder / "tiny_pd_day.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_pooled_cost_is_each_pools_provisioned_gpu_hours_at_its_price(tmp_path: Path) -> None:
    path = write_pooled(tmp_path)
    # One decode replica leaves the flood's requests waiting (p99 TTFT ~3.1 s); a second one,
    # added at the tick that sees the flood, brings it to ~1.5 s: the answer is max = 2, and
    # the decode pool's count changes over the run, so its cost is not a fixed pool's.
    result = plan(path, "cluster.pools[decode].autoscale.max", "1:3", ["all.p99_ttft_ms<=2000"],
                  minimize="cost", headroom=False)  # fmt: skip
    best = result.best
    assert best is not None and best.answer == 2
    # by hand: each pool's GPU-hours from the integral of its provisioned replica count (the
    # replicas_over_time steps), at the H100's list price, over the window's hours
    block = simulate(load_scenario(path, ["cluster.pools[decode].autoscale.max=2"]))
    block = block.provisioned["base"]
    assert len(block["pools"]["decode"]["replicas_over_time"]) > 1  # it scaled
    start, end = block["window_ms"]
    replica_ms = 0.0
    for figures in block["pools"].values():
        steps = figures["replicas_over_time"]
        edges = [row[0] for row in steps] + [end]
        replica_ms += sum(row[1] * (hi - lo) for row, lo, hi in zip(steps, edges, edges[1:],
                                                                     strict=False))  # fmt: skip
    price = GPU_PRICES_PER_HOUR["h100-80gb"]
    per_hour = replica_ms / (end - start) * price  # GPU-hours / hours x price, tp 1
    assert best.cost_per_hour == pytest.approx(per_hour, abs=1e-3)
    assert any("GPU-hours provisioned" in note for note in result.notes)
