"""Every scenario in scenarios/ validates, and the small ones run end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

import simsched
from simsched.workload import build_workload

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((REPO / "scenarios").glob("*.yaml"))
NEEDS_TRACES = {"azure_replay.yaml"}  # reads files users download into scenarios/data/


def available(path: Path) -> bool:
    return path.name not in NEEDS_TRACES or (REPO / "scenarios" / "data").is_dir()


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_scenario_validates_and_builds(path: Path) -> None:
    if not available(path):
        pytest.skip("trace files not in scenarios/data/ (see scenarios/README.md)")
    scenario = simsched.load_scenario(path)
    assert len(build_workload(scenario)) > 0


@pytest.mark.parametrize("name", ["noisy_neighbor", "policy_comparison", "bursty_flood"])
def test_small_scenarios_run_with_one_outcome_per_request(name: str) -> None:
    scenario = simsched.load_scenario(REPO / "scenarios" / f"{name}.yaml")
    result = simsched.simulate(scenario)
    submitted = len(build_workload(scenario))
    counts = result.requests.groupby("variant").size()
    assert set(counts) == {submitted}
    assert list(counts.index.sort_values()) == sorted(result.variants)
