"""calibration/moe_experts.yaml fits the MoE grouped-GEMM shares and the per-layer kernel time
on the MoE throughput and MTP-depth cases of published.yaml: its cases must be those cases as
written there, and its starts the shipped defaults, so that rerunning it reproduces the shipped
values' errors (docs/moe.md)."""

from __future__ import annotations

from pathlib import Path

import yaml

from simsched.config.moe_serving import MoeServingSpec

ROOT = Path(__file__).resolve().parents[2]


def load(name: str) -> dict:
    return yaml.safe_load((ROOT / "calibration" / name).read_text())


def test_its_cases_are_the_moe_cases_of_the_published_file() -> None:
    published = {case["name"]: case for case in load("published.yaml")["cases"]}
    moe = [name for name in published if name.startswith(("moe_", "sd_t3_"))]
    cases = load("moe_experts.yaml")["cases"]
    assert [case["name"] for case in cases] == moe
    for case in cases:
        assert case == published[case["name"]]


def test_its_starts_are_the_shipped_defaults() -> None:
    shipped = MoeServingSpec()
    settings = load("moe_experts.yaml")["settings"]
    starts = {s["path"].rsplit(".", 1)[1]: s["start"] for s in settings}
    assert starts == {
        "expert_compute_efficiency": shipped.expert_compute_efficiency,
        "expert_memory_efficiency": shipped.expert_memory_efficiency,
        "layer_us": shipped.layer_us,
    }
    moe = [case["name"] for case in load("moe_experts.yaml")["cases"]]
    assert all(s["cases"] == moe for s in settings)


def test_the_published_file_fits_the_same_shares_from_the_same_starts() -> None:
    ours = load("moe_experts.yaml")["settings"]
    published = load("published.yaml")["settings"]
    theirs = [s for s in published if s["path"].startswith("cluster.moe_serving.")]
    keys = ("path", "low", "high", "start", "cases")
    assert [{k: s[k] for k in keys} for s in theirs] == [{k: s[k] for k in keys} for s in ours]
