"""A sweep over policies with chargeback on: the table carries each tenant's cost (only then),
and the sweep report draws cost per tenant across the swept settings."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from simsched.outputs.report import report
from simsched.outputs.report.sweep_cost import FILE, mean_cost
from simsched.outputs.report.sweep_plots import sweep_parameters
from simsched.outputs.sweep_table import read_table, write_table
from simsched.results.chargeback import COLUMNS
from simsched.results.tenants import ALL
from simsched.studies.sweep import sweep

REPO = Path(__file__).resolve().parents[2]
POLICIES = {"scheduler.policy": ["fcfs", "vtc"]}


def small_tournament(folder: Path, chargeback: bool) -> Path:
    """The policy tournament cut to 2 s, its fairness handed to `scheduler.policy`."""
    raw = yaml.safe_load((REPO / "scenarios" / "flow_policy_tournament.yaml").read_text())
    raw.pop("variants")
    for tenant in raw["tenants"]:
        tenant["arrivals"]["duration_s"] = 2
    raw["flow_control"]["fairness"] = "scheduler"
    if chargeback:
        raw["chargeback"] = {}
    path = folder / ("charged.yaml" if chargeback else "plain.yaml")
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.fixture(scope="module")
def charged(tmp_path_factory) -> pd.DataFrame:
    folder = tmp_path_factory.mktemp("sweep_cost")
    return sweep(small_tournament(folder, True), POLICIES, jobs=1, progress=False)


def test_the_table_carries_cost_per_tenant_that_adds_up(charged: pd.DataFrame) -> None:
    assert set(COLUMNS) <= set(charged.columns)
    tenants = charged[charged["dollars_by_usage"].notna() & (charged["tenant"] != ALL)]
    for point, rows in tenants.groupby("point"):
        everyone = charged[(charged["point"] == point) & (charged["tenant"] == ALL)]
        # busy plus idle by usage over the tenants is the provisioned cost (the `all` row)
        total = float(everyone["dollars_by_usage"].iloc[0])
        assert rows["dollars_by_usage"].sum() == pytest.approx(total, rel=1e-6)


def test_cost_columns_are_metrics_not_swept_settings(charged, tmp_path: Path) -> None:
    path = write_table(charged, tmp_path / "table.csv")
    assert sweep_parameters(read_table(path)) == ["scheduler.policy"]


def test_without_chargeback_the_table_has_no_cost_columns(tmp_path: Path) -> None:
    plain = sweep(small_tournament(tmp_path, False), {"scheduler.policy": ["fcfs"]}, jobs=1)
    assert not set(COLUMNS) & set(plain.columns)


def test_the_sweep_report_draws_cost_per_tenant(charged, tmp_path: Path) -> None:
    path = write_table(charged, tmp_path / "table.csv")
    folder = report(path, tmp_path / "report")
    assert (folder / FILE).is_file()
    assert "Cost per tenant, across the swept settings" in (folder / "index.html").read_text()


def test_mean_cost_averages_the_seeds_per_setting_and_tenant() -> None:
    # two seeds of one setting: busy 1 and 3 -> 2; idle 0.5 and 0.1 -> 0.3; class rows and the
    # `all` row (no cost of their own here) are left out
    rows = [
        (seed, tenant, busy, idle)
        for seed, busy, idle in [(1, 1.0, 0.5), (2, 3.0, 0.1)]
        for tenant in ["a"]
    ]
    table = pd.DataFrame(
        [
            {
                "seed": seed,
                "policy": "vtc",
                "variant": "base",
                "tenant": tenant,
                "busy_dollars": busy,
                "idle_dollars_by_usage": idle,
                "dollars_by_weight": busy + 1.0,
                "dollars_by_usage": busy + idle,
            }
            for seed, tenant, busy, idle in rows
        ]
        + [{"seed": 1, "policy": "vtc", "variant": "base", "tenant": "interactive"}]
    )
    got = mean_cost(table, ["policy", "seed"])
    assert got.to_dict("records") == [
        {
            "setting": "policy=vtc",
            "tenant": "a",
            "busy_dollars": 2.0,
            "idle_dollars_by_usage": pytest.approx(0.3),
            "dollars_by_weight": 3.0,
        }
    ]
