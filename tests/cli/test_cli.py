"""The `simsched` commands, through typer's CliRunner, plus one run of the installed script."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from simsched.cli.app import app
from simsched.config.loading import load_scenario, resolve_variants
from simsched.errors import InputError

REPO = Path(__file__).resolve().parents[2]
SCENARIO = str(REPO / "scenarios" / "noisy_neighbor.yaml")
SCENARIO_WITHOUT_VARIANTS = str(REPO / "scenarios" / "fleet_planning.yaml")
REFERENCE = (
    Path(__file__).resolve().parents[2] / "tests" / "data" / "noisy_neighbor_comparison.json"
)
VARIANTS = ("request_count_no_admission", "service_token_drr_with_admission")
TENANTS = ("tenant_chat_pro", "tenant_ide_assist", "tenant_batch_rag")
REQUEST_COLUMNS = (
    "variant",
    "request_id",
    "tenant_id",
    "priority_class",
    "status_code",
    "reason",
    "service_tokens",
    "arrival_ms",
    "dispatch_ms",
    "ttft_ms",
    "queue_wait_ms",
    "kv_occupancy_ratio",
)
TABLE_METRICS = (
    "submitted",
    "admitted",
    "shed: KV watermark",
    "shed: queue-wait SLO",
    "shed: token quota",
    "p50 TTFT ms, interactive",
    "p99 TTFT ms, interactive",
    "p99 TTFT ms, batch",
    "admitted service tokens",
    "peak KV occupancy at decisions",
    "peak KV held (fullest replica)",
    "interactive p99 TTFT <= 500 ms",
    "service share (weight share)",
    "class SLO (p99)",
    "p99 TPOT ms",
    "goodput, requests/s within SLO",
    "Jain index, admitted work / weight",
    "Jain index, share of demand admitted",
    "max backlogged service gap",
)

runner = CliRunner()


def invoke(*args: str) -> str:
    """Run a command that must succeed; its stdout."""
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 0, result.output
    return result.stdout


def run_json(*args: str) -> dict[str, Any]:
    return json.loads(invoke("scenario", SCENARIO, "--format", "json", *args))


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def baseline() -> dict[str, Any]:
    return run_json()


def test_table_shows_every_variant_tenant_and_metric() -> None:
    out = invoke("scenario", SCENARIO)
    lines = out.splitlines()
    assert lines[0].startswith("noisy_neighbor: ")
    header = next(line for line in lines if VARIANTS[0] in line)
    assert header.split() == list(VARIANTS)  # side by side, in the file's order
    for tenant in TENANTS:
        assert any(line.startswith(tenant) for line in lines), tenant
    labels = {re.split(r"\s{2,}", line.strip())[0] for line in lines}  # cells are 2+ apart
    for metric in TABLE_METRICS:
        assert metric in labels, metric


def test_table_is_the_default_format() -> None:
    assert invoke("scenario", SCENARIO) == invoke("scenario", SCENARIO, "--format", "table")


def test_json_has_the_reference_comparison(baseline: dict[str, Any]) -> None:
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    assert baseline["scenario"] == "noisy_neighbor"
    comparison = baseline["comparison"]
    assert list(comparison) == list(VARIANTS)
    for name in VARIANTS:
        assert comparison[name].keys() == reference[name].keys()
        assert comparison[name]["tenants"].keys() == reference[name]["tenants"].keys()
        for tenant, summary in comparison[name]["tenants"].items():
            assert summary.keys() == reference[name]["tenants"][tenant].keys()
    assert (
        comparison[VARIANTS[1]]["admitted_requests"] == reference[VARIANTS[1]]["admitted_requests"]
    )


def test_variant_filters(baseline: dict[str, Any]) -> None:
    only = run_json("--variant", VARIANTS[1])
    assert list(only["comparison"]) == [VARIANTS[1]]
    assert only["comparison"][VARIANTS[1]] == baseline["comparison"][VARIANTS[1]]
    table = invoke("scenario", SCENARIO, "--variant", VARIANTS[0])
    assert VARIANTS[0] in table and VARIANTS[1] not in table


def test_repeated_variants_run_in_file_order() -> None:
    both = run_json("--variant", VARIANTS[1], "--variant", VARIANTS[0])
    assert list(both["comparison"]) == list(VARIANTS)


def test_set_changes_the_cluster(baseline: dict[str, Any]) -> None:
    bigger = run_json("--variant", VARIANTS[0], "--set", "cluster.total_kv_blocks=2400")
    before = baseline["comparison"][VARIANTS[0]]["peak_kv_occupancy_ratio"]
    after = bigger["comparison"][VARIANTS[0]]["peak_kv_occupancy_ratio"]
    assert after < before  # the same blocks held, out of more
    assert after == pytest.approx(before * 1600 / 2400, abs=1e-4)


def test_set_turns_admission_off(baseline: dict[str, Any]) -> None:
    assert baseline["comparison"][VARIANTS[1]]["shed_429_requests"] > 0
    off = run_json("--variant", VARIANTS[1], "--set", "admission.enabled=false")
    assert off["comparison"][VARIANTS[1]]["shed_429_requests"] == 0


def test_set_applies_before_the_variants(baseline: dict[str, Any]) -> None:
    # The variant's own setting is applied on top of --set, so the command refuses a --set that
    # a variant it runs would undo (issue 10), and accepts it for the variant that leaves it.
    result = CliRunner().invoke(app, ["scenario", SCENARIO, "--set", "scheduler.policy=vtc"])
    assert isinstance(result.exception, InputError)
    assert "variant 'request_count_no_admission' sets scheduler.policy" in str(result.exception)
    forced = run_json("--set", "scheduler.policy=request_count_fifo", "--variant", VARIANTS[1])
    assert forced["comparison"][VARIANTS[1]] != baseline["comparison"][VARIANTS[1]]
    variants = dict(resolve_variants(load_scenario(SCENARIO, ["scheduler.policy=vtc"])))
    assert variants[VARIANTS[0]].scheduler.policy == "request_count_fifo"


def test_out_writes_the_three_files(tmp_path: Path) -> None:
    out = tmp_path / "results"
    invoke("scenario", SCENARIO, "--out", str(out))
    assert sorted(p.name for p in out.iterdir()) == [
        "requests.csv",
        "summary.json",
        "tenants.csv",
        "timeline.csv",
    ]
    requests = read_csv(out / "requests.csv")
    columns = list(requests[0])
    assert [c for c in columns if c in REQUEST_COLUMNS] == list(REQUEST_COLUMNS)
    assert len(requests) == 2 * 60  # one row per request per variant
    assert {row["variant"] for row in requests} == set(VARIANTS)
    tenants = read_csv(out / "tenants.csv")
    assert [(row["variant"], row["tenant_id"]) for row in tenants] == [
        (v, t)
        for v in VARIANTS
        for t in [*TENANTS, "all"]  # every tenant, then the variant
    ]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary == run_json()


def test_out_creates_missing_parents(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b" / "results"
    invoke("scenario", SCENARIO, "--variant", VARIANTS[0], "--out", str(out))
    assert (out / "summary.json").is_file()
    assert sorted(p.name for p in out.parent.iterdir()) == ["results"]  # no temporary left


def test_validate_describes_the_scenario() -> None:
    out = invoke("validate", SCENARIO)
    lines = out.splitlines()
    assert lines[0] == "noisy_neighbor: valid"
    assert "60 requests from 3 tenants" in lines[1]
    for tenant in TENANTS:
        assert any(tenant in line for line in lines), tenant
    assert any(line.strip().startswith("cluster:") for line in lines)
    assert lines[-1].strip() == f"variants: {', '.join(VARIANTS)}"
    assert len(lines) <= 10  # a few lines, not a report


def test_validate_counts_one_tenant_and_one_request_in_the_singular() -> None:
    burst = str(REPO / "calibration" / "scenarios" / "fixed_burst.yaml")
    out = invoke("validate", burst, "--set", "tenants[0].arrivals.count=1")
    assert out.splitlines()[1].startswith("  1 request from 1 tenant over ")


def test_validate_applies_set() -> None:
    out = invoke("validate", SCENARIO, "--set", "cluster.total_kv_blocks=2400")
    assert "2400 KV blocks" in out


def test_validate_checks_only_the_variants_named(simsched_cli) -> None:
    # moe_capacity's tp8_x4 variant sets cluster.moe_serving itself: a --set of that mapping
    # is refused on every variant, and checked on dep8_x4 alone, as `scenario --variant` runs it
    capacity = str(REPO / "scenarios" / "moe_capacity.yaml")
    flag = "cluster.moe_serving={ep: 8}"
    code, _, err = simsched_cli("validate", capacity, "--set", flag)
    assert code == 2 and "variant 'tp8_x4' sets cluster.moe_serving itself" in err
    code, out, _ = simsched_cli("validate", capacity, "--variant", "dep8_x4", "--set", flag)
    assert code in (0, None) and out.splitlines()[-1].strip() == "variants: dep8_x4"
    code, _, err = simsched_cli("validate", capacity, "--variant", "nope")
    assert code == 2 and err.startswith(f"{capacity}: --variant: no variant 'nope'")
    # a scenario without variants has one, `base`: another name is refused there too
    code, _, err = simsched_cli("validate", SCENARIO_WITHOUT_VARIANTS, "--variant", "nope")
    assert code == 2 and "--variant: no variant 'nope' (known: base)" in err
    code, out, _ = simsched_cli("validate", SCENARIO_WITHOUT_VARIANTS, "--variant", "base")
    assert code in (0, None) and out.splitlines()[-1].strip() == "variants: base"


def test_validate_describes_a_variants_own_cluster(simsched_cli) -> None:
    # moe_capacity's tp8_x4 runs attention TP8: a KV cache of its own, which the file's cluster
    # line (DEP8's) does not describe; a variant whose cluster is the file's adds no line
    from simsched.config.loading import load_scenario, resolve_variants

    capacity = REPO / "scenarios" / "moe_capacity.yaml"
    variants = dict(resolve_variants(load_scenario(capacity)))
    blocks = {name: v.cluster.total_kv_blocks for name, v in variants.items()}
    assert blocks["tp8_x4"] != blocks["dep8_x4"]
    code, out, _ = simsched_cli("validate", str(capacity), "--variant", "tp8_x4")
    assert code in (0, None)
    assert f"  cluster of variant tp8_x4: continuous_batching, {blocks['tp8_x4']} KV blocks" in out
    code, out, _ = simsched_cli("validate", str(capacity), "--variant", "dep8_x4")
    assert "cluster of variant" not in out and f"{blocks['dep8_x4']} KV blocks" in out


@pytest.mark.parametrize(
    ("args", "pieces"),
    [
        ((), ("scenario", "validate")),
        (("scenario",), ("--variant", "--set", "--out", "--format", "FILE")),
        (("validate",), ("--variant", "--set", "FILE")),
    ],
)
def test_help(args: tuple[str, ...], pieces: tuple[str, ...]) -> None:
    out = invoke(*args, "--help")
    assert "Usage:" in out
    for piece in pieces:
        assert piece in out


def test_no_arguments_shows_help() -> None:
    result = runner.invoke(app, [])
    assert "Usage:" in result.output
    assert "scenario" in result.output


def installed_script() -> str:
    beside = Path(sys.executable).parent / "simsched"
    found = str(beside) if beside.is_file() else shutil.which("simsched")
    if found is None:
        pytest.skip("the simsched console script is not installed")
    return found


@pytest.mark.slow  # the installed script in real processes
def test_installed_console_script(tmp_path: Path) -> None:
    """The real script, in a real process: help, then the study as JSON."""
    script = installed_script()
    help_run = subprocess.run(
        [script, "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    assert help_run.returncode == 0, help_run.stderr
    assert "Usage:" in help_run.stdout and "scenario" in help_run.stdout
    run = subprocess.run(
        [script, "scenario", "scenarios/noisy_neighbor.yaml", "--format", "json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""  # progress lines only go to a terminal
    document = json.loads(run.stdout)
    assert list(document["comparison"]) == list(VARIANTS)


def test_a_variant_trace_path_is_relative_to_the_scenario_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    study = tmp_path / "study"
    study.mkdir()
    raw = yaml.safe_load(Path(SCENARIO).read_text(encoding="utf-8"))
    for key in ("arrivals", "prefill_tokens", "decode_tokens"):
        del raw["tenants"][0][key]
    raw["trace"] = {"path": "one.csv"}
    raw["variants"] = [
        {"name": "one", "set": {}},
        {"name": "two", "set": {"trace.path": "two.csv"}},
    ]
    (study / "x.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    header = "request_id,tenant_id,arrival_ms,prefill_tokens,decode_tokens\n"
    row = "r{},tenant_chat_pro,{},100,10\n"
    (study / "one.csv").write_text(header + row.format(1, 0), encoding="utf-8")
    (study / "two.csv").write_text(header + row.format(1, 0) + row.format(2, 5), encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # not the scenario's folder
    comparison = json.loads(invoke("scenario", "study/x.yaml", "--format", "json"))["comparison"]
    generated = 18 + 18  # the two tenants that still have arrivals
    assert comparison["one"]["total_requests"] == generated + 1
    assert comparison["two"]["total_requests"] == generated + 2


def test_validate_flags_a_tenant_that_sends_nothing(tmp_path: Path) -> None:
    raw = yaml.safe_load(Path(SCENARIO).read_text(encoding="utf-8"))
    for key in ("arrivals", "prefill_tokens", "decode_tokens"):
        del raw["tenants"][2][key]
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    out = invoke("validate", str(path))
    assert "42 requests from 3 tenants" in out
    assert "  - tenant_batch_rag: batch, weight 1, 0 requests (none)" in out.splitlines()


def test_version() -> None:
    from simsched import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"simsched {__version__}"


def test_a_misspelt_engine_is_answered_with_the_closest_name(simsched_cli) -> None:
    burst = REPO / "calibration" / "scenarios" / "fixed_burst.yaml"
    for typo, meant in (("trt-llm", "trtllm"), ("vlm", "vllm"), ("sglng", "sglang")):
        run = simsched_cli("validate", burst, "--set", f"cluster.engine={typo}")
        assert run.code == 2 and run.err.count("\n") == 1
        assert run.err.rstrip().endswith(
            "cluster.engine.name: Input should be 'vllm', 'vllm-0.6', 'sglang' or 'trtllm'; "
            f"did you mean {meant!r}?"
        )
    far = simsched_cli("validate", burst, "--set", "cluster.engine=tensorflow")
    assert "did you mean" not in far.err  # nothing close: the list alone


def test_an_error_a_later_flag_brings_back_is_that_flags(simsched_cli) -> None:
    # a 70B model does not fit one 80 GiB GPU: --set tp=4 mends it, the last --set tp=1 undoes the
    # mend, so the last flag is to blame, not the model flag that first caused it
    fleet = REPO / "scenarios" / "fleet_planning.yaml"
    flags = ("--set", "cluster.model=llama-3.1-70b", "--set", "cluster.tp=4")
    run = simsched_cli("validate", fleet, *flags, "--set", "cluster.tp=1")
    assert run.code == 2 and run.err.startswith(f"{fleet}: --set cluster.tp=1: cluster.model: ")
    # without the mend, the model flag brought it in and keeps it
    run = simsched_cli("validate", fleet, "--set", "cluster.model=llama-3.1-70b")
    assert run.err.startswith(f"{fleet}: --set cluster.model=llama-3.1-70b: cluster.model: ")


def test_over_takes_plain_values_each_once(simsched_cli) -> None:
    fleet = REPO / "scenarios" / "fleet_planning.yaml"
    base = ("--vary", "cluster.replicas", "--range", "1:2", "--slo", "all.shed_rate<=0.5")
    mapping = simsched_cli(
        "plan", fleet, "--over", "cluster.engine={name: trtllm, offline: true},vllm", *base
    )
    assert mapping.code == 2 and mapping.err.count("\n") == 1 and "Traceback" not in mapping.err
    assert mapping.err.startswith(f"{fleet}: --over cluster.engine: takes plain values")
    twice = simsched_cli("plan", fleet, "--over", "cluster.engine=trtllm,trtllm", *base)
    assert twice.code == 2
    assert twice.err.rstrip().endswith("--over cluster.engine: trtllm is given twice")


def test_an_error_behind_another_is_still_the_flag_that_brought_it(simsched_cli) -> None:
    # seed=-1 is an error of its own, reported before load_scale's; --set seed=0 mends it, not
    # load_scale's, which --set load_scale=-1 brought in and nothing took away
    steady = REPO / "scenarios" / "steady_mix.yaml"
    flags = ("--set", "load_scale=-1", "--set", "seed=-1", "--set", "seed=0")
    run = simsched_cli("validate", steady, *flags)
    assert run.err.startswith(f"{steady}: --set load_scale=-1: load_scale: ")
    # a field's error (seed -1) hides the cluster's own checks: that version says nothing of
    # replicas, which --set cluster.replicas=100000 brought in
    fleet = REPO / "scenarios" / "fleet_planning.yaml"
    flags = ("--set", "cluster.replicas=100000", "--set", "seed=-1", "--set", "seed=0")
    run = simsched_cli("validate", fleet, *flags)
    assert run.err.startswith(f"{fleet}: --set cluster.replicas=100000: cluster.replicas ")
    # the value in effect is the last flag's: seed -2, not -1
    run = simsched_cli("validate", steady, "--set", "seed=-1", "--set", "seed=-2")
    assert run.err.startswith(f"{steady}: --set seed=-2: seed: ")
