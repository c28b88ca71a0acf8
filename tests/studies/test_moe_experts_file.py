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


def test_the_area_medians_the_notes_state_are_what_calibrate_no_fit_computes() -> None:
    # `simsched calibrate calibration/moe_experts.yaml --no-fit` with the shipped values: the
    # MoE throughput cases' and the MTP-depth cases' median absolute errors, rounded to the
    # constants' three decimals, are the figures a plan's notes and tie margins state (the
    # MTP median is (1.41% + 2.10%) / 2 = 1.75%, which a percent to one decimal shows as 1.8%)
    from simsched.outputs.moe_notes import MOE_MEDIAN_SHARE, SPEC_MEDIAN_SHARE
    from simsched.studies.calibration.fit import Evaluator, error, run_case, summary
    from simsched.studies.calibration.spec import load_calibration

    path = ROOT / "calibration" / "moe_experts.yaml"
    spec, measured, _ = load_calibration(path)
    jobs = Evaluator(path, spec, 1).jobs(None)
    runs = zip(spec.cases, jobs, measured, strict=True)
    errors = {case.name: error(run_case(job), value) for case, job, value in runs}
    moe = [e for name, e in errors.items() if name.startswith("moe_")]
    mtp = [e for name, e in errors.items() if name.startswith("sd_t3_")]
    assert (len(moe), len(mtp)) == (14, 6)
    assert round(summary(moe)[0], 3) == MOE_MEDIAN_SHARE
    assert round(summary(mtp)[0], 3) == SPEC_MEDIAN_SHARE
