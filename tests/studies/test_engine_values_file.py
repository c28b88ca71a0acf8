"""calibration/engine_values.yaml reproduces the engine profiles' searched values: its cases must
be those cases as written in published.yaml, its starts the shipped profile values, and each
setting restricted to the one figure its search used (docs/engines.md, "What a profile sets")."""

from __future__ import annotations

from pathlib import Path

import yaml

from simsched.config.engines import OVERLAP_EXPOSED_MS, SGLANG_FRONTEND, TRTLLM_FRONTEND

ROOT = Path(__file__).resolve().parents[2]


def load(name: str) -> dict:
    return yaml.safe_load((ROOT / "calibration" / name).read_text())


def test_its_cases_are_copies_of_the_published_ones() -> None:
    published = {case["name"]: case for case in load("published.yaml")["cases"]}
    for case in load("engine_values.yaml")["cases"]:
        assert case == published[case["name"]]


def test_each_setting_starts_at_the_shipped_value_on_its_engines_figure() -> None:
    cases = {case["name"]: case for case in load("engine_values.yaml")["cases"]}
    shipped = {
        ("sglang", "cluster.overlap_exposed_ms"): OVERLAP_EXPOSED_MS["sglang"],
        ("sglang", "cluster.frontend.per_request_ms"): SGLANG_FRONTEND["per_request_ms"],
        ("trtllm", "cluster.overlap_exposed_ms"): OVERLAP_EXPOSED_MS["trtllm"],
        ("trtllm", "cluster.frontend.per_request_ms"): TRTLLM_FRONTEND["per_request_ms"],
    }
    # the exposed step time was searched on the TPOT figure, the API-server cost on the TTFT one
    metric_of = {
        "cluster.overlap_exposed_ms": "p50_tpot_ms",
        "cluster.frontend.per_request_ms": "p50_ttft_ms",
    }
    seen = {}
    for setting in load("engine_values.yaml")["settings"]:
        (name,) = setting["cases"]
        case = cases[name]
        engine = next(s.split("=", 1)[1] for s in case["set"] if s.startswith("cluster.engine="))
        assert case["metric"] == metric_of[setting["path"]]
        seen[(engine, setting["path"])] = setting["start"]
    assert seen == shipped
