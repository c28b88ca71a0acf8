"""A P/D run says how far its kind of figure is from the one published P/D run it is checked
on (the llm-d P/D guide, calibration/published.yaml area 3): on the console, in a report made
later from its results folder, and with the ratio the calibration case gives."""

from __future__ import annotations

from pathlib import Path

import yaml

from simsched.config.loading import load_scenario
from simsched.outputs.cluster_table import (
    PD_FIDELITY_NOTE,
    PD_PUBLISHED_TTFT_RATIO,
    table_notes,
)
from simsched.outputs.report.folder_notes import folder_notes
from simsched.results.simulate import simulate

ROOT = Path(__file__).resolve().parents[2]
SMALL_PD = {
    "name": "pd",
    "seed": 1,
    "tenants": [
        {
            "id": "t",
            "arrivals": {"kind": "periodic", "interval_ms": 50, "count": 20},
            "prefill_tokens": 256,
            "decode_tokens": 16,
        }
    ],
    "cluster": {
        "pools": [
            {"name": "p", "role": "prefill", "replicas": 1, "gpu": "h100-80gb",
             "model": "llama-3-8b"},
            {"name": "d", "role": "decode", "replicas": 1, "gpu": "h100-80gb",
             "model": "llama-3-8b"},
        ],
        "kv_transfer": "roce_400g",
    },
    "admission": {"enabled": False},
}  # fmt: skip


def test_a_pd_run_and_its_folder_report_carry_the_fidelity_note(tmp_path: Path) -> None:
    path = tmp_path / "pd.yaml"
    path.write_text(yaml.safe_dump(SMALL_PD))
    result = simulate(load_scenario(path, []))
    assert PD_FIDELITY_NOTE in table_notes(result)
    notes = folder_notes(list(result.variants), result.requests, result.utilisation, None)
    assert PD_FIDELITY_NOTE in notes


def test_a_colocated_run_has_no_pd_fidelity_note(tmp_path: Path) -> None:
    raw = dict(
        SMALL_PD,
        cluster={
            "service_model": "continuous_batching",
            "replicas": 1,
            "gpu": "h100-80gb",
            "model": "llama-3-8b",
        },
    )
    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert PD_FIDELITY_NOTE not in table_notes(simulate(load_scenario(path, [])))


def test_the_notes_ratio_is_the_calibration_cases() -> None:
    from simsched.studies.calibration.fit import run_case

    cases = yaml.safe_load((ROOT / "calibration" / "published.yaml").read_text())["cases"]
    case = next(c for c in cases if c["name"] == "pd_l1_llmd_pd_mean_ttft")
    scenario = ROOT / "calibration" / case["scenario"]
    simulated = run_case((str(scenario), tuple(case.get("set") or ()), case["metric"]))
    assert round(simulated / case["measured"], 1) == PD_PUBLISHED_TTFT_RATIO
