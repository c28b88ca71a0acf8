"""Calibration over pooled (P/D) scenarios: settings reach every pool, and the llm-d P/D guide's
cases (measurements moe_specdec_pd.md PD-L1, PD-L2) load and build as their source states them.
No case is simulated at its full 5,400 requests here."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simsched.config.loading import load_scenario
from simsched.studies.calibration.fit import calibrate, run_case
from simsched.studies.calibration.paths import per_pool
from simsched.studies.calibration.spec import case_overrides, load_calibration

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "calibration" / "published.yaml"
LM = "cluster.latency_model."

POOLED = """name: pooled
seed: 1
tenants:
  - id: bench
    arrivals: {kind: periodic, interval_ms: 1.0, count: 2}
    prefill_tokens: 64
    decode_tokens: 16
cluster:
  pools:
    - {name: p, role: prefill, replicas: 1, gpu: h100-80gb, model: llama-3-8b}
    - {name: d, role: decode, replicas: 1, gpu: h100-80gb, model: llama-3-8b}
  kv_transfer: roce_400g
admission: {enabled: false}
"""


def _pooled_calibration(folder: Path) -> Path:
    (folder / "pooled.yaml").write_text(POOLED, encoding="utf-8")
    spec = {
        "settings": [{"path": LM + "overhead_ms", "low": 0.0, "high": 20.0, "start": 15.0}],
        "cases": [
            {"name": "lone", "scenario": "pooled.yaml", "metric": "mean_e2e_ms", "measured": 9.0}
        ],
    }
    path = folder / "cal.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def test_a_cluster_path_means_every_pool_of_a_pooled_scenario(tmp_path: Path) -> None:
    (tmp_path / "pooled.yaml").write_text(POOLED, encoding="utf-8")
    scenario = tmp_path / "pooled.yaml"
    assert per_pool(scenario, LM + "overhead_ms") == [
        "cluster.pools[0].latency_model.overhead_ms",
        "cluster.pools[1].latency_model.overhead_ms",
    ]
    # the pooled cluster's own keys and paths already inside a pool stay as written
    assert per_pool(scenario, "cluster.kv_transfer.gbps") == ["cluster.kv_transfer.gbps"]
    assert per_pool(scenario, "cluster.pools[1].tp") == ["cluster.pools[1].tp"]
    assert per_pool(scenario, "tenants[0].decode_tokens") == ["tenants[0].decode_tokens"]
    (tmp_path / "single.yaml").write_text(
        "cluster: {service_model: continuous_batching}\n", encoding="utf-8"
    )
    assert per_pool(tmp_path / "single.yaml", LM + "overhead_ms") == [LM + "overhead_ms"]


def test_a_setting_moves_a_pooled_case_as_if_written_in_each_pool(tmp_path: Path) -> None:
    result = calibrate(_pooled_calibration(tmp_path), fit=False)
    scenario = str(tmp_path / "pooled.yaml")
    pools = [f"cluster.pools[{i}].latency_model" for i in range(2)]
    explicit = [f"{p}={{kind: roofline}}" for p in pools]
    explicit += [f"{p}.overhead_ms=15.0" for p in pools]
    assert result.after[0] == run_case((scenario, tuple(explicit), "mean_e2e_ms"))
    # 15 ms of CPU time an iteration shows: more than 15 ms over the default's E2E
    assert result.after[0] > result.before[0] + 15.0


def _llmd_cases() -> list[dict]:
    raw = yaml.safe_load(PUBLISHED.read_text(encoding="utf-8"))
    return [case for case in raw["cases"] if case["name"].startswith("pd_l")]


@pytest.fixture(scope="module")
def llmd_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the published file with its CPU-time and all-reduce settings (which reach the
    llm-d cases, as every fitted case) and only the llm-d cases."""
    raw = yaml.safe_load(PUBLISHED.read_text(encoding="utf-8"))
    folder = tmp_path_factory.mktemp("llmd")
    cases = _llmd_cases()
    names = [case["name"] for case in cases]
    for case in cases:
        case["scenario"] = str(PUBLISHED.parent / case["scenario"])
    costs = ("overhead_ms", "per_seq_ms", "allreduce_us")
    settings = [s for s in raw["settings"] if s["path"].rsplit(".", 1)[1] in costs]
    assert len(settings) == 3 and all(set(names) <= set(s["cases"]) for s in settings)
    settings = [{**s, "cases": names} for s in settings]
    path = folder / "llmd.yaml"
    path.write_text(yaml.safe_dump({"settings": settings, "cases": cases}), encoding="utf-8")
    return path


def test_the_llmd_cases_load_at_every_bound(llmd_only: Path) -> None:
    spec, measured, scenarios = load_calibration(llmd_only)  # start, low and high of each setting
    names = [case.name for case in spec.cases]
    assert len(names) == 10
    assert sum(name.startswith("pd_l1_") for name in names) == 7
    assert all(value > 0 for value in measured)
    for case, scenario in zip(spec.cases, scenarios, strict=True):
        overrides = case_overrides(spec, case, PUBLISHED.parent / case.scenario, [0.5] * 3)
        if case.name.startswith("pd_l1_"):  # the settings reach both pools
            assert "cluster.pools[1].latency_model.per_seq_ms=0.5" in overrides
        _check_workload(scenario)


def _check_workload(scenario) -> None:
    """inference-perf's run: a constant 45 requests/s for 120 s, 5,000 in and 250 out exactly."""
    bench = scenario.tenants[0]
    assert bench.arrivals.kind == "periodic"
    assert bench.arrivals.count == 45 * 120
    assert bench.arrivals.interval_ms == pytest.approx(1000.0 / 45, rel=1e-12)
    assert (bench.prefill_tokens, bench.decode_tokens) == (5000, 250)


def test_the_pd_case_is_the_guides_layout() -> None:
    cluster = load_scenario(ROOT / "calibration/scenarios/llmd_pd_gpt_oss.yaml").cluster
    layout = [
        (p.role, p.replicas, p.tp, p.gpu.name, p.model.name, p.engine.name) for p in cluster.pools
    ]
    assert layout == [
        ("prefill", 8, 1, "h200", "gpt-oss-120b", "vllm"),
        ("decode", 2, 4, "h200", "gpt-oss-120b", "vllm"),
    ]
    assert sum(p.replicas * p.tp for p in cluster.pools) == 16  # 16 H200s
    assert (cluster.kv_transfer.name, cluster.kv_transfer.gbps) == ("roce_400g", 400.0)


def test_the_aggregated_case_is_the_same_gpus_co_located() -> None:
    cluster = load_scenario(ROOT / "calibration/scenarios/llmd_aggregated_gpt_oss.yaml").cluster
    assert (cluster.replicas, cluster.tp, cluster.gpu.name, cluster.model.name) == (
        16,
        1,
        "h200",
        "gpt-oss-120b",
    )
    assert cluster.engine.name == "vllm"


def test_a_short_pd_case_runs_under_the_harness() -> None:
    """Two lone requests through the P/D case: served, and the client TTFT is at least the
    KV transfer of 5,000 BF16 tokens (36,864 bytes a token, measurements §1h) over 400 Gb/s."""
    scenario = ROOT / "calibration/scenarios/llmd_pd_gpt_oss.yaml"
    short = ("tenants[0].arrivals.count=2", "tenants[0].arrivals.interval_ms=10000")
    ttft = run_case((str(scenario), short, "mean_ttft_ms"))
    transfer_ms = 5000 * 36864 * 8 / 400e9 * 1000 + 0.01
    assert ttft > transfer_ms
    assert run_case((str(scenario), short, "req_s")) > 0
