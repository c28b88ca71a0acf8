"""The answer's utilisation is read from its probe's run at the scenario's seed, not run again."""

from __future__ import annotations

from pathlib import Path

import pytest

from simsched.config.loading import load_scenario
from simsched.results.simulate import simulate
from simsched.studies import plan_usage, runners
from simsched.studies.plan import plan

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "fleet_planning.yaml"
SHORT = [f"tenants.{t}.arrivals.duration_s=10" for t in ("chat", "ide", "batch")]


@pytest.mark.parametrize("seeds", [1, 2])
def test_the_answer_utilisation_is_its_probe_run_at_the_scenario_seed(monkeypatch, seeds) -> None:
    runs: list[int] = []
    counted = lambda *args, **kwargs: runs.append(1) or simulate(*args, **kwargs)  # noqa: E731
    monkeypatch.setattr(runners, "simulate", counted)
    monkeypatch.setattr(plan_usage, "simulate", counted)
    result = plan(SCENARIO, "cluster.replicas", "1:4", ["interactive.p99_ttft_ms<=800"],
                  overrides=SHORT, seeds=seeds, headroom=False)  # fmt: skip
    assert len(runs) == len(result.probes) * seeds  # no run beyond the search's
    # the same figures as a run of the answer at the scenario's own seed, made here
    answer = load_scenario(SCENARIO, [*SHORT, f"cluster.replicas={result.answer}"])
    assert answer.seed == 7
    assert result.utilisation == simulate(answer).utilisation["base"]
    assert any(note.startswith("utilisation at the answer (seed 7,") for note in result.notes)
