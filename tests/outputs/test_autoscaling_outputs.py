"""What an autoscaled run shows: the console rows and note, summary.json's block, the timeline's
state column, and the report's replicas-over-time figure and provisioned table, from a result
and from its folder alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simsched.config.loading import load_scenario
from simsched.outputs.files import write_result
from simsched.outputs.report import report, write_report
from simsched.outputs.tables import comparison_table
from simsched.results.simulate import simulate

REPO = Path(__file__).resolve().parents[2]
DAY = REPO / "scenarios" / "autoscaled_day.yaml"
# the day cut to its first 160 s: the ramp and one scale-up (at 135 s, serving 20 s later)
SHORT = [f"tenants.{t}.arrivals.duration_s=160" for t in ("chat", "batch")]


@pytest.fixture(scope="module")
def result():
    return simulate(load_scenario(DAY, SHORT), ["fixed_peak_pool", "autoscaled_prewarmed"])


def test_the_console_shows_provisioned_rows_and_the_slot_note(result) -> None:
    text = comparison_table(result)
    assert "  GPU-hours" in text and "TTFT misses while a replica warmed" in text
    assert "autoscaled: its per-replica figures are over replica slots" in text
    assert "load is skewed" not in text.split("autoscaled_prewarmed: autoscaled")[-1]


def test_summary_timeline_and_report_from_a_folder(result, tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_result(result, out)
    summary = json.loads((out / "summary.json").read_text())
    fixed = summary["provisioned"]["fixed_peak_pool"]["pools"]["cluster"]
    scaled = summary["provisioned"]["autoscaled_prewarmed"]["pools"]["cluster"]
    assert fixed["mean_replicas"] == 4 and scaled["warmup_s"] == 20.0
    assert scaled["gpu_hours"] < fixed["gpu_hours"]
    header = (out / "timeline.csv").read_text().splitlines()[0]
    assert header.endswith(",state")
    folder = report(out, tmp_path / "from_folder")
    memory = write_report(result, tmp_path / "from_memory")
    for built in (folder, memory):
        assert (built / "replicas_over_time.png").stat().st_size > 0  # low DPI in tests
        html = (built / "index.html").read_text()
        assert "Replicas over time against the request rate" in html
        assert "Provisioned fleet" in html
