"""Every scenario in scenarios/ validates, and the small ones run end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

import simsched
from simsched.workload.build import build_workload

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((REPO / "scenarios").glob("*.yaml"))
# scenarios that read files users download into scenarios/data/
NEEDS_TRACES = {
    "azure_replay.yaml": ["azure_llm_2023_conv.csv", "azure_llm_2023_code.csv"],
    "prefix_routing.yaml": ["mooncake_fast25_conversation.jsonl"],
}


def available(path: Path) -> bool:
    data = REPO / "scenarios" / "data"
    return all((data / name).is_file() for name in NEEDS_TRACES.get(path.name, []))


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_scenario_validates_and_builds(path: Path) -> None:
    if not available(path):
        pytest.skip("trace files not in scenarios/data/ (see scenarios/README.md)")
    scenario = simsched.load_scenario(path)
    assert len(build_workload(scenario)) > 0


def test_chat_sessions_run_and_caching_pays() -> None:
    scenario = simsched.load_scenario(REPO / "scenarios" / "chat_sessions.yaml")
    scenario = scenario.model_copy(update={"variants": scenario.variants})
    result = simsched.simulate(scenario, variants=["no_cache", "cache_prefix_aware"])
    rates = result.to_json_dict()["prefix_cache"]["cache_prefix_aware"]
    assert rates["hit_rate"] > 0.5
    p99 = {v: result.summaries[v]["interactive_p99_ttft_ms"] for v in result.variants}
    assert p99["cache_prefix_aware"] < p99["no_cache"]
    assert result.requests["session"].notna().any()


@pytest.mark.parametrize("name", ["noisy_neighbor", "policy_comparison", "bursty_flood"])
def test_small_scenarios_run_with_one_outcome_per_request(name: str) -> None:
    scenario = simsched.load_scenario(REPO / "scenarios" / f"{name}.yaml")
    result = simsched.simulate(scenario)
    submitted = len(build_workload(scenario))
    counts = result.requests.groupby("variant").size()
    assert set(counts) == {submitted}
    assert list(counts.index.sort_values()) == sorted(result.variants)
