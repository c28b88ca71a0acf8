"""Messages that say what to fix, and exit statuses that say how a run ended (issue 10)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOISY = str(REPO / "scenarios" / "noisy_neighbor.yaml")


def one_line(err: str) -> str:
    assert "Traceback" not in err
    assert err.count("\n") == 1, err
    return err.rstrip("\n")


def test_scenario_refuses_a_set_that_a_variant_overrides(simsched_cli) -> None:
    code, out, err = simsched_cli("scenario", NOISY, "--set", "admission.enabled=true")
    assert code == 2 and out == ""
    line = one_line(err)
    assert "--set admission.enabled=true: variant 'request_count_no_admission' sets" in line
    # the variant that leaves the setting alone runs
    code, out, err = simsched_cli(
        "scenario",
        NOISY,
        "--set",
        "admission.enabled=true",
        "--variant",
        "service_token_drr_with_admission",
    )
    assert code in (0, None), err


def test_plan_with_no_value_meeting_the_slos_exits_3(simsched_cli) -> None:
    args = ["plan", NOISY, "--vary", "cluster.total_kv_blocks", "--range", "1600:1700"]
    code, out, _ = simsched_cli(*args, "--slo", "all.shed<=0")
    assert code == 3 and "no value of cluster.total_kv_blocks" in out
    code, out, _ = simsched_cli(*args, "--slo", "all.shed<=100")
    assert code in (0, None)


def test_sweep_with_failed_points_exits_3(tmp_path: Path, simsched_cli) -> None:
    out_file = tmp_path / "s.csv"
    grid = ["--grid", "admission.interactive_kv_watermark=0.5,0.9"]
    grid += ["--grid", "admission.batch_kv_watermark=0.6"]
    common = ["sweep", NOISY, "--out", str(out_file), "--jobs", "1"]
    code, out, _ = simsched_cli(*common, *grid)
    assert code == 3 and "1 failed" in out and out_file.is_file()
    code, out, _ = simsched_cli(*common, "--grid", "seed=1,2")
    assert code in (0, None) and "0 failed" in out


@pytest.mark.parametrize(
    ("args", "pieces"),
    [
        (
            ["validate", NOISY, "--set", "tenants.0.arrivals={kind: poisson, rate_per_sec: 5}"],
            ["tenants[0].arrivals.rate_per_sec: unknown key", "did you mean rate_per_s?"],
        ),
        (  # a misspelt optional key misses nothing, and is still matched
            ["validate", NOISY, "--set", "limits.max_request=5"],
            ["limits.max_request: unknown key", "did you mean max_requests?"],
        ),
        (
            [
                "validate",
                NOISY,
                "--set",
                "tenants.0.prefill_tokens={dist: uniform, low: 1, high: 3, maxx: 3}",
            ],
            ["tenants[0].prefill_tokens.maxx: unknown key", "did you mean max?"],
        ),  # fmt: skip
        (  # nothing close: no suggestion, not the first missing key
            ["validate", NOISY, "--set", "tenants.0.arrivals={kind: poisson, zzz: 5}"],
            ["tenants[0].arrivals.zzz: unknown key", "check the spelling"],
        ),
        (
            ["validate", str(REPO / "scenarios" / "noisy_neighbor_batching.yaml")]
            + ["--set", "cluster.total_kv_blocks=5"],
            ["cluster.total_kv_blocks", "takes num_gpu_blocks"],
        ),
        (
            ["validate", NOISY, "--set", "tenants.nobody.weight=2"],
            ["known: tenant_chat_pro, tenant_ide_assist, tenant_batch_rag"],
        ),
        (
            ["plan", NOISY, "--vary", "cluster.total_kv_blocks", "--range", "1:2"]
            + ["--slo", "nobody.shed<=0"],
            ["no tenant or class 'nobody' (known: all, interactive, batch, tenant_chat_pro"],
        ),
        (
            ["plan", NOISY, "--vary", "tenants.tenant_chat_pro.weigth", "--range", "1:2"]
            + ["--slo", "all.shed<=0"],
            ["did you mean tenants.tenant_chat_pro.weight?"],
        ),
        (
            ["plan", str(REPO / "scenarios" / "capacity_planning.yaml"), "--vary", "cluster.gpu"]
            + ["--range", "1:2", "--slo", "all.shed<=0"],
            ["is a section (name, tflops", "e.g. cluster.gpu.tflops"],
        ),
    ],
)
def test_messages_say_what_to_fix(args, pieces, simsched_cli) -> None:
    code, out, err = simsched_cli(*args)
    assert code == 2 and out == ""
    line = one_line(err)
    assert "{'" not in line  # no internal dict
    for piece in pieces:
        assert piece in line, line


def test_a_missing_public_trace_points_to_make_traces(tmp_path, simsched_cli) -> None:
    scenario = tmp_path / "x.yaml"
    text = (REPO / "scenarios" / "azure_replay.yaml").read_text()
    scenario.write_text(text.replace("data/azure_llm_2023_conv.csv", "nowhere/conv.csv"))
    code, _, err = simsched_cli("validate", str(scenario))
    line = one_line(err)
    assert code == 2 and "no such trace file" in line
    assert "make traces" in line and "scenarios/README.md" in line
