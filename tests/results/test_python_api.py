"""The Python API a notebook uses: overrides validated like --set, a Scenario wherever a path
goes, a model_copy'd scenario checked before it runs, a short repr, and a parallel sweep whose
workers cannot start raises an error that says what to do."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import simsched
from simsched.errors import InputError

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "noisy_neighbor.yaml"


def test_with_overrides_is_validated_like_set() -> None:
    scenario = simsched.load_scenario(SCENARIO)
    changed = scenario.with_overrides({"cluster.total_kv_blocks": 3200})
    assert changed.cluster.total_kv_blocks == 3200 and scenario.cluster.total_kv_blocks == 1600
    with pytest.raises(InputError, match="total_kv_blocks: Input should be greater than 0"):
        scenario.with_overrides({"cluster.total_kv_blocks": -1})
    with pytest.raises(InputError, match="cluster.nope"):
        scenario.with_overrides(["cluster.nope=1"])


def test_model_copy_with_a_bad_value_raises_instead_of_running() -> None:
    scenario = simsched.load_scenario(REPO / "scenarios" / "noisy_neighbor_batching.yaml")
    bad = scenario.model_copy(
        update={"cluster": scenario.cluster.model_copy(update={"replicas": -5})}
    )  # noqa: E501
    with pytest.raises(InputError, match="replicas"):
        simsched.simulate(bad)


def test_a_scenario_object_wherever_a_path_goes() -> None:
    scenario = simsched.load_scenario(SCENARIO).with_overrides({"cluster.total_kv_blocks": 2400})
    by_path = simsched.simulate(SCENARIO)
    assert by_path.tenants.equals(
        simsched.simulate(load := simsched.load_scenario(SCENARIO)).tenants
    )
    assert load.name == "noisy_neighbor"
    table = simsched.sweep(scenario, {"admission.batch_kv_watermark": [0.5, 0.6]}, jobs=1,
                           progress=False)  # fmt: skip
    file_table = simsched.sweep(
        SCENARIO,
        {"admission.batch_kv_watermark": [0.5, 0.6]},
        jobs=1,
        overrides=["cluster.total_kv_blocks=2400"],
        progress=False,
    )
    assert table.drop(columns=["error"]).equals(file_table.drop(columns=["error"]))
    result = simsched.plan(scenario, "cluster.total_kv_blocks", "1600:8000", ["all.shed<=20"],
                           step=1600, headroom=False)  # fmt: skip
    assert result.answer is not None


def test_repr_is_a_short_summary() -> None:
    text = repr(simsched.simulate(SCENARIO))
    assert text.startswith("SimulationResult 'noisy_neighbor', 2 variant(s):")
    assert len(text.splitlines()) == 3 and "% shed" in text


@pytest.mark.slow  # a real script whose worker processes fail to start
def test_a_sweep_without_a_main_guard_raises_what_to_do(tmp_path: Path) -> None:
    script = tmp_path / "unguarded.py"
    script.write_text(
        textwrap.dedent(f"""
        import simsched
        simsched.sweep({str(SCENARIO)!r}, {{"cluster.total_kv_blocks": [1600, 3200]}},
                       jobs=2, progress=False)
    """)
    )
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)  # fmt: skip
    assert run.returncode != 0
    assert "WorkersDidNotStart" in run.stderr and '__name__ == "__main__"' in run.stderr
