"""`cluster.autoscale`: a bad setting is one line naming the file and the field, exit 2."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from simsched.cli.app import main

REPO = Path(__file__).resolve().parents[2]
DAY = REPO / "scenarios" / "autoscaled_day.yaml"
BASE = "min: 1, max: 4, metric: running, target: 2"

BAD = [
    ("{min: 3, max: 2, metric: running, target: 2}", "cluster.autoscale", "must not exceed"),
    ("{min: 1, max: 2, metric: gpu_busy, target: 1}", "cluster.autoscale.metric", "queue_depth"),
    ("{min: 2, max: 3, metric: running, target: 1}", "cluster.autoscale", "[min, max]"),
    (f"{{{BASE}, scale_up_delay_s: 3, cold_start: auto}}", "cluster.autoscale", "not both"),
    (f"{{{BASE}, target: -1}}".replace("target: 2, ", ""), "cluster.autoscale.target", "greater"),
    (f"{{{BASE}, cold_start: {{load_gbps: 0}}}}", "cold_start.load_gbps", "greater than 0"),
    (f"{{{BASE}, cold_start: fast}}", "cluster.autoscale.cold_start", "auto or a mapping"),
    (f"{{{BASE}, interval_s: 0}}", "cluster.autoscale.interval_s", "greater than 0"),
    (f"{{{BASE}, tolerance: 1.5}}", "cluster.autoscale.tolerance", "less than 1"),
    (f"{{{BASE}, cooldown: 3}}", "cluster.autoscale", "unknown key"),
]


@pytest.mark.parametrize("setting,field,words", BAD)
def test_a_bad_autoscale_setting_is_one_line(monkeypatch, capsys, setting, field, words) -> None:
    argv = ["simsched", "validate", str(DAY), "--set", "cluster.replicas=1",
            "--set", f"cluster.autoscale={setting}"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exit_info:
        main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert str(DAY) in err and field in err and words in err


def test_an_autoscaler_beyond_the_replica_limit_is_refused_before_it_builds_slots() -> None:
    # max 3000, min 1: 2 x 3000 - 1 = 5999 slots, over the default limit of 4096 replicas
    from simsched.config.loading import load_scenario
    from simsched.errors import InputError

    spec = "{min: 1, max: 3000, metric: running, target: 20, interval_s: 15, scale_up_delay_s: 5}"
    with pytest.raises(InputError, match=r"needs 5,999 replica slots, more than limits"):
        load_scenario(
            REPO / "scenarios" / "noisy_neighbor_batching.yaml", [f"cluster.autoscale={spec}"]
        )
