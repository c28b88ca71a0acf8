"""`simsched calibrate`: recovers settings from measurements simsched itself made; bad files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from simsched.studies.calibration.fit import calibrate, finite_jacobian, run_case

SCENARIO = """name: burst
seed: 1
tenants:
  - id: bench
    arrivals: {kind: periodic, interval_ms: 0.001, count: 1}
    prefill_tokens: 10
    decode_tokens: 10
cluster:
  service_model: continuous_batching
  max_waiting_per_replica: 1000
  latency_model: {kind: roofline, frontend_before_ms: 0, frontend_after_ms: 0}
admission: {enabled: false}
"""
LM = "cluster.latency_model."
TRUE = {LM + "compute_efficiency": 0.37, LM + "memory_efficiency": 0.58, LM + "overhead_ms": 1.7}
# (name, lengths and count, metric): a prefill-bound run, a lone decode, a long-context batch
CASES = [
    ("prefill", ["tenants[0].prefill_tokens=4000", "tenants[0].arrivals.count=8",
                 "tenants[0].decode_tokens=1"], "span_ms"),
    ("lone_decode", ["tenants[0].decode_tokens=200"], "mean_tpot_ms"),
    ("batch_decode", ["tenants[0].prefill_tokens=6000", "tenants[0].arrivals.count=32",
                      "tenants[0].decode_tokens=100"], "p50_tpot_ms"),
]  # fmt: skip


def calibration_file(folder: Path, measured: dict[str, float] | None = None) -> Path:
    (folder / "burst.yaml").write_text(SCENARIO, encoding="utf-8")
    if measured is None:  # simsched's own figures at the true settings
        truth = [f"{k}={v}" for k, v in TRUE.items()]
        scenario = str(folder / "burst.yaml")
        measured = {n: run_case((scenario, tuple(truth + s), m)) for n, s, m in CASES}
    spec = {
        "settings": [
            {"path": LM + "compute_efficiency", "low": 0.2, "high": 0.9},
            {"path": LM + "memory_efficiency", "low": 0.3, "high": 0.9},
            {"path": LM + "overhead_ms", "low": 0.0, "high": 5.0},
        ],
        "cases": [
            {"name": n, "scenario": "burst.yaml", "set": s, "metric": m, "measured": measured[n]}
            for n, s, m in CASES
        ],
    }
    path = folder / "cal.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


# slow: a real least-squares fit over three cases, some 10 s; `make test-slow` runs it.
@pytest.mark.slow
def test_recovers_known_settings_within_one_percent(tmp_path: Path) -> None:
    result = calibrate(calibration_file(tmp_path), jobs=1)
    for value, truth in zip(result.fitted, TRUE.values(), strict=True):
        assert value == pytest.approx(truth, rel=0.01)
    assert max(abs(a / m - 1) for a, m in zip(result.after, result.measured, strict=True)) < 0.01


def test_a_fit_is_deterministic_in_parallel_too(tmp_path: Path) -> None:
    # A tiny fit (one setting, the one cheap case) shows it: a second full fit costs a minute.
    path = calibration_file(tmp_path, {"prefill": 900.0, "lone_decode": 8.0, "batch_decode": 20.0})
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    spec["settings"] = [s for s in spec["settings"] if s["path"] == LM + "overhead_ms"]
    spec["cases"] = [c for c in spec["cases"] if c["name"] == "lone_decode"]
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    serial, parallel = calibrate(path, jobs=1), calibrate(path, jobs=2)
    assert serial.fitted == parallel.fitted
    assert serial.fitted != [2.5]  # it moved from the middle of the bounds: a fit, not a no-op


def test_command_prints_the_table_and_writes_the_fragment(tmp_path: Path, simsched_cli) -> None:
    path = calibration_file(tmp_path, {"prefill": 900.0, "lone_decode": 8.0, "batch_decode": 20.0})
    code, out, _ = simsched_cli(
        "calibrate", str(path), "--no-fit", "--out", str(tmp_path / "fit.yaml")
    )
    assert code in (0, None)
    assert "lone_decode" in out and "median absolute error" in out
    assert f"{LM}overhead_ms=2.5" in out  # the middle of the bounds, unfitted
    # the columns say what they are: the scenario as written, then the unfitted start values
    assert "as written" in out.splitlines()[0] and "start err" in out.splitlines()[0]
    assert "fitted settings (--set)" not in out and "start settings (--set):" in out
    assert "start values: median absolute error" in out
    fragment = yaml.safe_load((tmp_path / "fit.yaml").read_text(encoding="utf-8"))
    assert fragment["cluster"]["latency_model"]["overhead_ms"] == 2.5


def test_reads_a_vllm_bench_result(tmp_path: Path) -> None:
    path = calibration_file(tmp_path, {"prefill": 900.0, "lone_decode": 8.0, "batch_decode": 20.0})
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    (tmp_path / "run.json").write_text(json.dumps({"mean_tpot_ms": 7.25}), encoding="utf-8")
    spec["cases"][1] = {k: v for k, v in spec["cases"][1].items() if k != "measured"}
    spec["cases"][1]["vllm_result"] = "run.json"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    assert calibrate(path, fit=False).measured[1] == 7.25


def mutate(spec: dict, change: str) -> None:
    if change == "unknown_key":
        spec["settings"][0]["bound"] = 1
    elif change == "misspelt_key":
        spec["settings"][0]["hihg"] = 1
    elif change == "bounds":
        spec["settings"][0]["low"] = 2.0
    elif change == "metric":
        spec["cases"][0]["metric"] = "p42_ttft_ms"
    elif change == "scenario":
        spec["cases"][0]["scenario"] = "missing.yaml"
    elif change == "negative":
        spec["cases"][0]["measured"] = -3
    elif change == "case_filter":
        spec["settings"][0]["cases"] = ["nope"]
    elif change == "bad_set":
        spec["cases"][0]["set"] = ["cluster.tp=-1"]
    elif change == "vllm_json":
        del spec["cases"][0]["measured"]
        spec["cases"][0]["vllm_result"] = "broken.json"
    elif change == "area_typo":
        spec["areas"] = {"decode": ["lone_*", "batch_decod"]}
    elif change == "area_overlap":
        spec["areas"] = {"decode": ["*decode"], "batch": ["batch_*"]}
    elif change == "area_empty":
        spec["areas"] = {"decode": []}
    elif change == "area_list":
        spec["areas"] = [{"decode": ["*_decode"]}]
    elif change == "area_number":
        spec["areas"] = {"decode": [200]}
    elif change == "area_key":
        spec["areas"] = {"decode": {"cases": ["*_decode"], "target": 12}}
    elif change == "area_target":
        spec["areas"] = {"decode": {"cases": ["*_decode"], "median_target": 0}}
    elif change == "whole_target":
        spec["median_target"] = "8%"
    elif change == "zero_target":
        spec["median_target"] = 0
    elif change == "area_no_cases":
        spec["areas"] = {"decode": {"median_target": 12}}
    elif change == "shared_path":  # a second compute share whose cases meet the first's
        spec["settings"][0]["cases"] = ["prefill", "lone_decode"]
        spec["settings"].append({**spec["settings"][0], "cases": ["batch_decode", "lone_decode"]})
    elif change == "inside_path":  # the whole latency model, where the overhead is already set
        spec["settings"].append({"path": "cluster.latency_model", "low": 0.0, "high": 1.0})


@pytest.mark.parametrize(
    ("change", "starts"),
    [
        # the calibration file's own format is named, and the key it takes there suggested
        ("unknown_key", "cal.yaml: settings[0].bound: unknown key (not part of the calibration"),
        (
            "misspelt_key",
            "cal.yaml: settings[0].hihg: unknown key (not part of the calibration "
            "file format); did you mean high?",
        ),
        ("bounds", "cal.yaml: settings[0]"),
        ("metric", "cal.yaml: cases[0]"),
        ("scenario", "cal.yaml: cases[0].scenario"),
        ("negative", "cal.yaml: cases[0].measured"),
        ("case_filter", "cal.yaml: settings[0].cases"),
        ("bad_set", "cal.yaml: cases[0].set"),
        ("vllm_json", "cal.yaml: cases[0].vllm_result"),
        ("area_typo", "cal.yaml: areas.decode: pattern 'batch_decod' matches no case"),
        # safe_dump sorts the keys: batch is read first
        ("area_overlap", "cal.yaml: areas.decode: case 'batch_decode' is in area 'batch' too"),
        ("area_empty", "cal.yaml: areas.decode.cases: give at least one case-name glob"),
        ("area_list", "cal.yaml: areas: a mapping of area name to its cases"),
        ("area_number", "cal.yaml: areas.decode.cases: pattern 200 is not a glob: quote it"),
        ("area_key", "cal.yaml: areas.decode.target"),
        ("area_target", "cal.yaml: areas.decode.median_target"),
        ("whole_target", "cal.yaml: median_target: write the percent without its sign: 8"),
        ("zero_target", "cal.yaml: median_target: 0 is not a percent above 0"),
        ("area_no_cases", "cal.yaml: areas.decode: no cases: an area is a list of case-name"),
        # one value would silently replace the other on the case both reach
        (
            "shared_path",
            "cal.yaml: settings[3].cases: settings[0] and settings[3] both set "
            "cluster.latency_model.compute_efficiency on case 'lone_decode'",
        ),
        ("inside_path", "cal.yaml: settings[3].cases: settings[0] and settings[3] both set"),
    ],
)
def test_bad_calibration_files_exit_2_with_one_line(
    change: str,
    starts: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    simsched_cli,
) -> None:
    path = calibration_file(tmp_path, {"prefill": 900.0, "lone_decode": 8.0, "batch_decode": 20.0})
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    mutate(spec, change)
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, _, err = simsched_cli("calibrate", "cal.yaml", "--out", "fit.yaml")
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(starts)
    assert not (tmp_path / "fit.yaml").exists()


@pytest.mark.parametrize(
    ("change", "starts"),
    [
        ("bad_path", "cal.yaml: settings[0].path"),
        ("low_invalid", "cal.yaml: settings[2].low"),
        ("high_invalid", "cal.yaml: settings[1].high"),
    ],
)
def test_bad_settings_are_named_before_any_run(
    change: str,
    starts: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    simsched_cli,
) -> None:
    path = calibration_file(tmp_path, {"prefill": 900.0, "lone_decode": 8.0, "batch_decode": 20.0})
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    if change == "bad_path":
        spec["settings"][0]["path"] = LM + "nope"
    elif change == "low_invalid":
        spec["settings"][2]["low"] = -1.0  # overhead_ms cannot be negative
        spec["settings"][2]["start"] = 1.0
    else:
        spec["settings"][1]["high"] = 1.5  # memory_efficiency is a share
        spec["settings"][1]["start"] = 0.5
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, _, err = simsched_cli("calibrate", "cal.yaml")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(starts), err
    assert "evaluation" not in err  # nothing simulated


@pytest.mark.parametrize("form", ["  latency_model: roofline\n", ""])
def test_fits_under_a_short_form_or_omitted_latency_model(form: str, tmp_path: Path) -> None:
    path = calibration_file(tmp_path, {"prefill": 900.0, "lone_decode": 8.0, "batch_decode": 20.0})
    lines = SCENARIO.splitlines(keepends=True)
    text = "".join(form if "latency_model" in line else line for line in lines)
    (tmp_path / "burst.yaml").write_text(text, encoding="utf-8")
    result = calibrate(path, fit=False)
    # the settings apply as under `{kind: roofline}`: same figures as setting it explicitly
    explicit = [
        f"{LM}{k}={v}"
        for k, v in zip(
            ("compute_efficiency", "memory_efficiency", "overhead_ms"), result.fitted, strict=True
        )
    ]
    name, sets, metric = CASES[1]
    assert result.after[1] == run_case(
        (str(tmp_path / "burst.yaml"), ("cluster.latency_model={kind: roofline}",
                                        *explicit, *sets), metric))  # fmt: skip
    assert result.after[1] != result.before[1]  # the settings did change the case


def test_out_into_a_missing_folder_fails_before_the_run(tmp_path: Path, simsched_cli) -> None:
    path = calibration_file(tmp_path, {"prefill": 900.0, "lone_decode": 8.0, "batch_decode": 20.0})
    out = tmp_path / "nowhere" / "fit.yaml"
    code, _, err = simsched_cli("calibrate", str(path), "--out", str(out))
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"{out}: --out") and "evaluation" not in err


def test_jacobian_steps_a_fixed_share_of_the_range_backward_at_the_top() -> None:
    seen: list[tuple[float, ...]] = []

    def residuals(x: np.ndarray) -> np.ndarray:
        seen.append(tuple(x))
        return np.array([3.0 * x[0] + x[1] ** 2, x[0] - 2.0 * x[1]])

    jac = finite_jacobian(residuals, np.array([0.1, 0.99]))
    assert seen[1] == pytest.approx((0.12, 0.99))  # forward, 2% of the range (not of x)
    assert seen[2] == pytest.approx((0.1, 0.97))  # backward: 0.99 + 0.02 leaves [0, 1]
    assert jac[:, 0] == pytest.approx([3.0, 1.0])
    assert jac[:, 1] == pytest.approx([0.99 + 0.97, -2.0])


def test_a_settings_cases_are_said_as_a_subset_or_not_at_all(tmp_path: Path, simsched_cli) -> None:
    """A setting restricted to some cases says how many of the file's, and the first; one
    restricted to every case (as calibration/moe_experts.yaml writes them) needs no note."""
    path = calibration_file(tmp_path, {"prefill": 900.0, "lone_decode": 8.0, "batch_decode": 20.0})
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    overhead, memory = (
        next(s for s in spec["settings"] if s["path"] == LM + key)
        for key in ("overhead_ms", "memory_efficiency")
    )
    names = [c["name"] for c in spec["cases"]]
    spec["settings"] = [
        {**overhead, "cases": names[1:]},
        {**memory, "cases": names, "name": "everywhere"},
    ]
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    code, out, _ = simsched_cli("calibrate", str(path), "--no-fit")
    assert code in (0, None)
    (some,) = [line for line in out.splitlines() if line.startswith(f"  {LM}overhead_ms=")]
    assert some.endswith(f"# only {len(names) - 1} of the {len(names)} cases: {names[1]}, ...")
    (every,) = [line for line in out.splitlines() if line.startswith(f"  {LM}memory_efficiency=")]
    assert every.endswith("# everywhere")
