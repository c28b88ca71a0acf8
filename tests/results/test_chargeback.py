"""Chargeback outputs: the attributed GPU time adds up to the busy time the utilisation meter
measured, and busy plus idle dollars add up to the provisioned cost (a property over random
scenarios); hand-computed idle splits; bad input; outputs unchanged without the section."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import simsched
from simsched.cli.app import main
from simsched.config.prices import GPU_PRICES_PER_HOUR
from simsched.config.scenario import Scenario
from simsched.results.chargeback import COLUMNS, MONEY_DIGITS

REPO = Path(__file__).resolve().parents[2]
LINEAR = {"kind": "linear", "base_ms": 2.0, "prefill_ms_per_token": 0.02, "decode_ms_per_seq": 0.1}


@st.composite
def cases(draw: st.DrawFn):
    tenant_count = draw(st.integers(1, 3))
    tenants = [
        {"id": f"t{i}", "weight": draw(st.sampled_from([0.5, 1.0, 3.0]))}
        for i in range(tenant_count)
    ]
    clock, rows = 0.0, []
    for index in range(draw(st.integers(1, 25))):
        clock += draw(st.sampled_from([0.0, 0.5, 3.0, 40.0]))
        tenant = f"t{draw(st.integers(0, tenant_count - 1))}"
        rows.append(
            (f"r{index:03d}", tenant, clock, draw(st.integers(1, 400)), draw(st.integers(1, 80)))
        )
    cluster = {
        "service_model": "continuous_batching",
        "replicas": draw(st.integers(1, 3)),
        "tp": draw(st.sampled_from([1, 2])),
        "gpu": draw(st.sampled_from(["h100-80gb", "h200"])),
        "num_gpu_blocks": draw(st.sampled_from([24, 400])),
        "max_num_batched_tokens": draw(st.sampled_from([64, 512])),
        "max_num_seqs": draw(st.sampled_from([4, 64])),
        "latency_model": draw(st.sampled_from([LINEAR, {"kind": "roofline"}])),
        "prefix_caching": draw(st.booleans()),
        "fast_forward": draw(st.booleans()),
    }
    return rows, tenants, cluster


@settings(max_examples=10, deadline=None)  # each example runs a cluster
@given(case=cases())
def test_attributed_time_and_dollars_add_up(make_scenario: Callable[..., Scenario], case) -> None:
    rows, tenants, cluster = case
    scenario = make_scenario(rows, tenants, cluster=cluster, chargeback={})
    result = simsched.simulate(scenario)
    usage = result.utilisation["base"]
    fleet = result.chargeback["base"]
    replicas, tp = cluster["replicas"], cluster["tp"]
    # the meter's own figures: busy share of the span, per replica
    span_s = usage["span_ms"] / 1000.0
    frame = result.tenants.set_index("tenant_id")
    attributed = frame.loc[[t["id"] for t in tenants], "gpu_seconds"].sum()
    assert attributed == pytest.approx(fleet["busy_gpu_seconds"], rel=1e-3)
    busy_from_meter = usage["total"]["busy_share"] * span_s * replicas * tp
    assert attributed == pytest.approx(busy_from_meter, rel=1e-3, abs=1e-4 * span_s * tp)
    price = GPU_PRICES_PER_HOUR[cluster["gpu"]]
    provisioned = replicas * tp * span_s * price / 3600
    # span_ms is written to 2 decimals: half a hundredth of a ms on every GPU; the dollars to
    # MONEY_DIGITS decimals
    rounding = replicas * tp * 0.005e-3 * price / 3600 + 0.5 * 10.0**-MONEY_DIGITS
    assert fleet["provisioned_dollars"] == pytest.approx(provisioned, rel=1e-6, abs=rounding)
    busy_dollars = frame.loc[[t["id"] for t in tenants], "busy_dollars"].sum()
    for basis in ("usage", "weight"):
        idle = frame.loc[[t["id"] for t in tenants], f"idle_dollars_by_{basis}"].sum()
        assert busy_dollars + idle == pytest.approx(fleet["provisioned_dollars"], rel=1e-3)
        total = frame.loc[[t["id"] for t in tenants], f"dollars_by_{basis}"].sum()
        assert total == pytest.approx(fleet["provisioned_dollars"], rel=1e-3)


def _two_tenant_result(make_scenario, **chargeback):
    # t0 sends one request at 0; t1 one much later: the fleet idles between them
    rows = [("a", "t0", 0.0, 200, 20), ("b", "t1", 2000.0, 100, 10)]
    tenants = [{"id": "t0", "weight": 1.0}, {"id": "t1", "weight": 3.0}]
    cluster = {"service_model": "continuous_batching", "replicas": 1}
    return simsched.simulate(make_scenario(rows, tenants, cluster=cluster, chargeback=chargeback))


def test_idle_is_split_by_usage_and_by_weight(make_scenario) -> None:
    result = _two_tenant_result(make_scenario)
    fleet = result.chargeback["base"]
    rows = result.tenants.set_index("tenant_id")
    idle = fleet["idle_dollars"]
    assert idle > 0.5 * fleet["provisioned_dollars"]  # mostly idle: a 2 s gap
    usage = rows.loc["t0", "gpu_seconds"] / (
        rows.loc["t0", "gpu_seconds"] + rows.loc["t1", "gpu_seconds"]
    )
    assert rows.loc["t0", "idle_dollars_by_usage"] == pytest.approx(idle * usage, rel=1e-6)
    assert rows.loc["t0", "idle_dollars_by_weight"] == pytest.approx(idle * 1 / 4, rel=1e-6)
    assert rows.loc["t1", "idle_dollars_by_weight"] == pytest.approx(idle * 3 / 4, rel=1e-6)
    # per-token prices: the tenant's busy dollars over its tokens, prefill and decode parts
    t0 = rows.loc["t0"]
    per_m = t0["dollars_per_m_input_tokens"] * 200 + t0["dollars_per_m_output_tokens"] * 20
    assert per_m / 1e6 == pytest.approx(t0["busy_dollars"], rel=1e-3)
    # the run's energy: busy joules plus idle GPU-s at the idle draw (80 W for an H100 here)
    assert fleet["idle_energy_joules"] == pytest.approx(fleet["idle_gpu_seconds"] * 80.0, rel=1e-6)
    total = fleet["busy_energy_joules"] + fleet["idle_energy_joules"]
    assert fleet["joules_per_output_token"] == pytest.approx(total / 30, rel=1e-3)


def test_power_figures_from_the_scenario_win(make_scenario) -> None:
    low = _two_tenant_result(make_scenario, power={"idle_watts": 10.0, "max_watts": 20.0})
    fleet = low.chargeback["base"]
    assert (fleet["idle_watts"], fleet["max_watts"]) == (10.0, 20.0)
    busy_s = fleet["busy_gpu_seconds"]
    assert 10.0 * busy_s <= fleet["busy_energy_joules"] <= 20.0 * busy_s


def test_no_section_no_columns(make_scenario) -> None:
    rows = [("a", "t0", 0.0, 200, 20)]
    cluster = {"service_model": "continuous_batching", "replicas": 1}
    result = simsched.simulate(make_scenario(rows, [{"id": "t0"}], cluster=cluster))
    assert not set(COLUMNS) & set(result.tenants.columns)
    assert "chargeback" not in result.to_json_dict()


def run_main(monkeypatch, capsys, *args: str):
    monkeypatch.setattr(sys, "argv", ["simsched", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


@pytest.mark.parametrize(
    ("file", "sets", "expected"),
    [
        ("noisy_neighbor.yaml", ["chargeback={}"], "continuous_batching"),
        ("mixed_fleet.yaml", ["chargeback={power: {idle_watts: 80}}"], "cluster.pools"),
        (
            "noisy_neighbor_batching.yaml",
            ["chargeback={}", "cluster.gpu=a100-80gb"],
            "chargeback.power.idle_watts",
        ),
        (
            "noisy_neighbor_batching.yaml",
            ["chargeback={power: {idle_watts: 900}}"],
            "exceeds max_watts",
        ),
        (
            "noisy_neighbor_batching.yaml",
            ["chargeback={power: {watts: 9}}"],
            "chargeback.power.watts",
        ),
    ],
)
def test_bad_chargeback_is_one_line(monkeypatch, capsys, tmp_path, file, sets, expected) -> None:
    sets_args = [arg for s in sets for arg in ("--set", s)]
    out = tmp_path / "out"
    code, stdout, err = run_main(
        monkeypatch,
        capsys,
        "scenario",
        str(REPO / "scenarios" / file),
        *sets_args,
        "--out",
        str(out),
    )
    assert code == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1 and expected in err and file in err
    assert not out.exists()


def test_chargeback_in_files(tmp_path, monkeypatch, capsys) -> None:
    raw = yaml.safe_load((REPO / "scenarios" / "noisy_neighbor_batching.yaml").read_text())
    raw["chargeback"] = {}
    raw["variants"] = raw["variants"][:2]
    (tmp_path / "x.yaml").write_text(yaml.safe_dump(raw))
    monkeypatch.chdir(tmp_path)
    code, _, _ = run_main(monkeypatch, capsys, "scenario", "x.yaml", "--out", "out")
    assert code == 0
    header = (tmp_path / "out" / "tenants.csv").read_text().splitlines()[0].split(",")
    assert header[-len(COLUMNS) :] == COLUMNS
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert set(summary["chargeback"]) == {v["name"] for v in raw["variants"]}
    assert np.isfinite(summary["chargeback"][next(iter(summary["chargeback"]))]["energy_joules"])


def test_report_draws_cost_per_tenant(make_scenario, tmp_path) -> None:
    from simsched.outputs.report import write_report

    folder = write_report(_two_tenant_result(make_scenario), tmp_path / "report")
    assert (folder / "cost_per_tenant.png").stat().st_size > 0
    page = (folder / "index.html").read_text()
    assert "Chargeback: the fleet per variant" in page
    assert "Cost and energy per tenant, across variants" in page


def test_provisioned_says_what_it_covers_and_matches_it(make_scenario) -> None:
    # two replicas of tp 2 on the linear model: provisioned = 2 x 2 x (end of the last
    # iteration), read from the utilisation meter independently of the chargeback code
    rows = [("a", "t0", 0.0, 200, 20), ("b", "t0", 500.0, 100, 10)]
    cluster = {"service_model": "continuous_batching", "replicas": 2, "tp": 2}
    cluster["latency_model"] = LINEAR
    result = simsched.simulate(make_scenario(rows, [{"id": "t0"}], cluster=cluster, chargeback={}))
    fleet = result.chargeback["base"]
    assert "every GPU of every replica" in fleet["provisioned_covers"]
    span_s = result.utilisation["base"]["span_ms"] / 1000.0  # rounded to 0.01 ms there
    assert fleet["provisioned_gpu_seconds"] == pytest.approx(2 * 2 * span_s, abs=4 * 5e-6)


@pytest.mark.parametrize(
    ("gpu", "power", "idle_word", "max_word"),
    [
        ("h100-80gb", {}, "assumed", "NVIDIA H100 datasheet"),
        ("h200", {}, "measured", "NVIDIA H200 datasheet"),
        ("l40s", {"idle_watts": 30.0}, "given in the scenario", "NVIDIA L40S datasheet"),
    ],
)
def test_power_figures_name_their_source(make_scenario, gpu, power, idle_word, max_word) -> None:
    rows = [("a", "t0", 0.0, 200, 20)]
    cluster = {"service_model": "continuous_batching", "replicas": 1, "gpu": gpu}
    cluster["gpu_prices"] = {gpu: 1.0}  # the L40S has no price preset
    scenario = make_scenario(rows, [{"id": "t0"}], cluster=cluster, chargeback={"power": power})
    sources = simsched.simulate(scenario).chargeback["base"]["power_sources"]
    assert sources["idle_watts"].startswith(idle_word)
    assert sources["max_watts"].startswith(max_word)


def test_the_terminal_table_says_what_provisioned_covers(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    tournament = REPO / "scenarios" / "flow_policy_tournament.yaml"
    code, out, _ = run_main(
        monkeypatch,
        capsys,
        "scenario",
        str(tournament),
        "--variant",
        "drr",
        "--set",
        "chargeback={}",
    )
    assert code == 0
    assert "provisioned $ (all GPUs, 0 to last iteration)" in out
    assert "80 (assumed)" in out
