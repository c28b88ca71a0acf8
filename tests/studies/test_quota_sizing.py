"""Quota sizing: `plan --maximize tenants.X.quota.sustained_service_tokens_per_sec` against a
brute-force sweep of the same grid, with one seed and with two (every seed must meet)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import simsched
from simsched.config.loading import load_scenario
from simsched.studies.plan import plan
from simsched.studies.plan_inputs import shed_guards
from simsched.studies.quota_sizing import quota_tenant
from simsched.studies.slo import parse_slo

KNOB = "tenants.tier_x.quota.sustained_service_tokens_per_sec"
# premium's p99 TTFT grows as tier_x is let in (fcfs: tier_x's long prompts queue ahead of it)
SCENARIO = {
    "name": "quota_sizing",
    "seed": 3,
    "tenants": [
        {
            "id": "premium",
            "arrivals": {"kind": "poisson", "rate_per_s": 20, "duration_s": 6},
            "prefill_tokens": 300,
            "decode_tokens": 60,
        },
        {
            "id": "tier_x",
            "priority": "batch",  # quotas bind batch traffic
            "quota": {"burst_service_tokens": 20000, "sustained_service_tokens_per_sec": 10000},
            "arrivals": {"kind": "poisson", "rate_per_s": 8, "duration_s": 6},
            "prefill_tokens": 2000,
            "decode_tokens": 200,
        },
    ],
    "scheduler": {"policy": "fcfs"},
}
SLO = "premium.p99_ttft_ms<=150"
GRID = list(range(2000, 40001, 2000))


@pytest.fixture(scope="module")
def scenario_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("quota") / "quota.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    return path


def brute_force(path: Path, seeds: list[int]) -> float | None:
    """The largest grid value at or below which every value meets the SLO and premium's shed
    guard in every seed, by simulating each one (no bisection)."""
    base = load_scenario(path)
    best = None
    for value in GRID:
        met = True
        for seed in seeds:
            scenario = base.with_overrides({KNOB: value, "seed": seed})
            row = simsched.simulate(scenario).tenants.set_index("tenant_id").loc["premium"]
            met &= bool(row["p99_ttft_ms"] <= 150 and row["shed_rate"] <= 0.001)
        if not met:
            break
        best = value
    return best


@pytest.mark.parametrize(("seeds", "rule"), [(1, "interval"), (2, "every")])
def test_plan_answer_matches_brute_force(scenario_file: Path, seeds: int, rule: str) -> None:
    fleet = plan(
        scenario_file,
        KNOB,
        (GRID[0], GRID[-1]),
        [SLO],
        step=GRID[1] - GRID[0],
        maximize=True,
        seeds=seeds,
        rule=rule,
        headroom=False,
    )
    expected = brute_force(scenario_file, [3 + i for i in range(seeds)])
    assert expected is not None and GRID[0] < expected < GRID[-1]  # a boundary inside the grid
    assert fleet.best.answer == expected
    assert any("tier_x's quota" in note for note in fleet.notes)


def test_the_sized_tenant_gets_no_shed_guard(scenario_file: Path) -> None:
    resolved = load_scenario(scenario_file)
    assert quota_tenant(KNOB, resolved) == "tier_x"
    assert quota_tenant("tenants.1.quota.burst_service_tokens", resolved) == "tier_x"
    assert quota_tenant("tenants.tier_x.weight", resolved) is None
    assert quota_tenant("cluster.replicas", resolved) is None
    slos = [parse_slo(SLO, "x")]
    assert shed_guards(slos, resolved) == ["all.shed_rate<=0.001"]
    assert shed_guards(slos, resolved, "tier_x") == ["premium.shed_rate<=0.001"]
