"""Dispersion and blast radius: hand-computed spreads, Jain's identity, and the counterfactual
checked against a scenario built without the noisiest tenant's requests."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import simsched
from simsched.cli.app import main
from simsched.results.dispersion import (
    coefficient_of_variation,
    dispersion_summary,
    max_min_ratio,
)
from simsched.results.fairness import jain_index

REPO = Path(__file__).resolve().parents[2]


def test_spread_by_hand() -> None:
    # mean 2, population standard deviation 1
    assert coefficient_of_variation(np.array([1.0, 3.0])) == 0.5
    assert max_min_ratio(np.array([1.0, 3.0])) == 3.0
    # one tenant got everything: CV sqrt(n - 1), no finite max/min
    assert coefficient_of_variation(np.array([0.0, 0.0, 0.0, 7.0])) == round(math.sqrt(3), 4)
    assert max_min_ratio(np.array([0.0, 7.0])) is None
    assert coefficient_of_variation(np.array([0.0, 0.0])) is None  # nothing served
    assert coefficient_of_variation(np.array([4.0, 4.0, 4.0])) == 0.0


@given(st.lists(st.floats(0.01, 1e6), min_size=1, max_size=8))
def test_jain_is_one_over_one_plus_cv_squared(values: list[float]) -> None:
    x = np.array(values)
    cv = float(np.std(x) / np.mean(x))
    assert jain_index(x) == pytest.approx(1 / (1 + cv**2), rel=1e-9)


def test_summary_counts_admitted_service_over_weight() -> None:
    frame = pd.DataFrame(
        {
            "tenant_id": ["a", "a", "b", "c"],
            "service_tokens": [100, 50, 300, 10],
            "status_code": [200, 429, 200, 429],
        }
    )
    # a: 100 / 1, b: 300 / 3, c asked and got 0: CV of [100, 100, 0] = sqrt(2) / 2 * 3 / 2
    summary = dispersion_summary(frame, {"a": 1.0, "b": 3.0, "c": 1.0})
    assert summary["normalised_service_cv"] == round(math.sqrt(2), 4) * 0 + round(
        float(np.std([1, 1, 0]) / np.mean([1, 1, 0])), 4
    )
    assert summary["normalised_service_cv"] == pytest.approx(math.sqrt(2 / 9) / (2 / 3), abs=1e-4)
    assert summary["normalised_service_max_min"] is None


ROWS = [
    ("q1", "quiet", 0.0, 100, 20),
    ("n1", "noisy", 1.0, 3000, 300),
    ("n2", "noisy", 2.0, 3000, 300),
    ("q2", "quiet", 5.0, 100, 20),
    ("o1", "other", 6.0, 200, 10),
    ("q3", "quiet", 30.0, 100, 20),
]
TENANTS = [{"id": "quiet"}, {"id": "noisy", "priority": "batch"}, {"id": "other"}]
CLUSTER = {"service_model": "continuous_batching", "replicas": 1, "max_num_batched_tokens": 512}


def test_blast_radius_matches_a_run_without_the_tenant(make_scenario) -> None:
    fairness = {"blast_radius": True, "dispersion": True}
    result = simsched.simulate(make_scenario(ROWS, TENANTS, cluster=CLUSTER, fairness=fairness))
    block = result.blast_radius["base"]
    assert block["noisiest_tenant"] == "noisy"  # 2 x (3000 + 4 x 300) service tokens
    rest = [row for row in ROWS if row[1] != "noisy"]
    alone = simsched.simulate(make_scenario(rest, TENANTS, cluster=CLUSTER)).tenants
    p99_alone = alone.set_index("tenant_id")["p99_ttft_ms"]
    rows = result.tenants.set_index("tenant_id")
    for tenant in ("quiet", "other"):
        assert rows.loc[tenant, "p99_ttft_ms_without_noisiest"] == p99_alone[tenant]
        expected = round(rows.loc[tenant, "p99_ttft_ms"] - p99_alone[tenant], 4)
        assert block["p99_ttft_inflation_ms"][tenant] == expected
        assert expected > 0  # the noisy prompts ran first and slowed the quiet ones
    assert math.isnan(rows.loc["noisy", "p99_ttft_inflation_ms"])
    assert "normalised_service_cv" in result.fairness["base"]


def test_nothing_asked_nothing_added(make_scenario) -> None:
    result = simsched.simulate(make_scenario(ROWS, TENANTS, cluster=CLUSTER))
    assert "p99_ttft_inflation_ms" not in result.tenants
    assert "normalised_service_cv" not in result.fairness["base"]
    assert "blast_radius" not in result.to_json_dict()


def test_sessions_refuse_a_blast_radius(monkeypatch, capsys, tmp_path) -> None:
    scenario = str(REPO / "scenarios" / "chat_sessions.yaml")
    monkeypatch.setattr(
        sys, "argv", ["simsched", "scenario", scenario, "--set", "fairness={blast_radius: true}"]
    )
    with pytest.raises(SystemExit) as exit_info:
        main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert len(err.strip().splitlines()) == 1 and "fairness.blast_radius" in err
    assert "chat_sessions.yaml" in err


def test_a_backlog_window_without_dispersion_is_refused(monkeypatch, capsys) -> None:
    # the window is read only by the backlogged dispersion: alone it would do nothing
    scenario = str(REPO / "scenarios" / "noisy_neighbor.yaml")
    setting = "fairness={backlog_window_ms: 500}"
    monkeypatch.setattr(sys, "argv", ["simsched", "scenario", scenario, "--set", setting])
    with pytest.raises(SystemExit) as exit_info:
        main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert len(err.strip().splitlines()) == 1 and "backlog_window_ms" in err
    assert "noisy_neighbor.yaml" in err
