"""`simsched scenario` on a P/D fleet with an autoscaled decode pool, through the installed
entry point: the outputs carry the replicas over time per pool, and a bad pool autoscale
setting is exit status 2 with one line naming the file and the field, and no output folder."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.test_cli import installed_script

LINEAR = {"kind": "linear", "base_ms": 1.0, "prefill_ms_per_token": 0.01, "decode_ms_per_seq": 0.1}


def write(folder: Path, decode_autoscale: dict[str, Any], replicas: int = 1) -> Path:
    arrivals = {"kind": "periodic", "start_ms": 0.5, "interval_ms": 1.0, "count": 600}
    decode = {"name": "decode", "role": "decode", "replicas": replicas, "latency_model": LINEAR,
              "max_num_seqs": 4, "autoscale": decode_autoscale}  # fmt: skip
    raw = {
        "name": "cli_pd",
        "tenants": [{"id": "t", "arrivals": arrivals, "prefill_tokens": 100, "decode_tokens": 40}],
        "admission": {"enabled": False},
        "cluster": {
            "pools": [
                {"name": "prefill", "role": "prefill", "replicas": 1, "latency_model": LINEAR},
                decode,
            ]
        },
    }
    path = folder / "cli_pd.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [installed_script(), *args], capture_output=True, text=True, timeout=300, check=False
    )


SPEC = {"min": 1, "max": 3, "metric": "running", "target": 2, "interval_s": 0.05,
        "scale_up_delay_s": 0.02, "scale_down_cooldown_s": 0.1}  # fmt: skip


@pytest.mark.slow  # the installed script in a real process
def test_an_autoscaled_decode_pool_through_the_entry_point(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run("scenario", str(write(tmp_path, SPEC)), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "pool decode: replicas: mean" in done.stdout
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    pools = summary["provisioned"]["base"]["pools"]
    steps = pools["decode"]["replicas_over_time"]
    assert max(row[1] for row in steps) > 1  # it scaled up
    assert pools["prefill"]["replicas_over_time"][1:] == []  # the fixed pool stayed put
    with (out / "timeline.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    # per sample, the decode pool's serving slots are the count in force at that instant
    assert {row["pool"] for row in rows} == {"prefill", "decode"}
    edges = [row[0] for row in steps]
    for row in rows[:: max(1, len(rows) // 50)]:
        if row["pool"] != "decode":
            continue
        now = float(row["time_ms"])
        same = [r for r in rows if r["time_ms"] == row["time_ms"] and r["pool"] == "decode"]
        serving = sum(1 for r in same if r["state"] == "serving")
        before = [s for s, edge in zip(steps, edges, strict=True) if edge <= now]
        assert serving == before[-1][2]


@pytest.mark.slow
def test_a_bad_pool_autoscale_is_exit_2_naming_the_field(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC, replicas=4)  # more than max: 3
    out = tmp_path / "out"
    done = run("scenario", str(path), "--out", str(out))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"{path}: cluster.pools[1].autoscale.max: replicas (4)")
    assert not out.exists()


def test_a_bad_pool_autoscale_through_the_app_is_exit_2(tmp_path: Path, simsched_cli) -> None:
    """The same refusal through the entry point's main(), in the default test run."""
    path = write(tmp_path, dict(SPEC, min=3, max=2), replicas=2)
    code, out, err = simsched_cli("scenario", str(path), "--out", str(tmp_path / "out"))
    assert code == 2
    assert err == f"{path}: cluster.pools[1].autoscale.min: min (3) must not exceed max (2)\n"
    assert not (tmp_path / "out").exists()
