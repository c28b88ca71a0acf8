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


def write_scenario(folder: Path) -> Path:
    """A light tenant for 20 s and a 1.5 s flood from 4 s, on replicas of two seats."""
    light = {"kind": "periodic", "start_ms": 0.5, "interval_ms": 100, "count": 200}
    flood = {"kind": "periodic", "start_ms": 4050, "interval_ms": 1, "count": 1500}
    raw = {
        "name": "tiny_day",
        "tenants": [
            {"id": "light", "arrivals": light, "prefill_tokens": 100, "decode_tokens": 10},
            {"id": "flood", "arrivals": flood, "prefill_tokens": 100, "decode_tokens": 10},
        ],
        "admission": {"enabled": False},
        "cluster": {
            "service_model": "continuous_batching", "replicas": 1, "latency_model": LINEAR,
            "num_gpu_blocks": 400, "max_num_seqs": 2, "schedule_step_ms": 0.0,
            "router": "least_outstanding",
            "autoscale": {"min": 1, "max": 3, "metric": "queue_depth", "target": 1.0,
                          "interval_s": 1.0, "scale_up_delay_s": 0.5,
                          "scale_down_cooldown_s": 2.0},
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
