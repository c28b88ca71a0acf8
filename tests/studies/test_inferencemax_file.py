"""calibration/inferencemax_gpt_oss.yaml judges the MoE roofline against InferenceMAX's vLLM 0.13
sweep of gpt-oss-120b (measurements moe_specdec_pd.md §1f; docs/moe.md, "Judged: vLLM
gpt-oss-120b"). Its figures must be the measurement rows' own, its cases must state the sweep's
recipe (calibration/scenarios/inferencemax_gpt_oss.yaml), its starts must be the shipped
defaults (so `--no-fit` shows the shipped errors), and none of it may leak into published.yaml,
whose global settings would then be fitted on it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from simsched.config.moe_serving import MoeServingSpec
from simsched.studies.calibration.spec import load_calibration

ROOT = Path(__file__).resolve().parents[2]
CASE_FILE = ROOT / "calibration" / "inferencemax_gpt_oss.yaml"
MEASUREMENTS = ROOT.parent / "shared" / "data" / "measurements" / "moe_specdec_pd.md"
GPU_NAMES = {"H100": "h100-80gb", "H200": "h200", "B200": "b200"}


def cases() -> list[dict]:
    return yaml.safe_load(CASE_FILE.read_text())["cases"]


def sets_of(case: dict) -> dict[str, str]:
    return dict(line.split("=", 1) for line in case["set"])


def vllm_gpt_oss_rows() -> dict[str, dict]:
    """The §1f rows of gpt-oss-120b served by vLLM, by id, parsed from the measurements table."""
    rows = {}
    for line in MEASUREMENTS.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 13 or not re.fullmatch(r"MX-I\d+", cells[0]):
            continue
        if "gpt-oss-120b" not in cells[1] or not cells[3].startswith("vllm"):
            continue
        isl, osl = (int(x) for x in cells[5].split("/"))
        rows[cells[0]] = {
            "gpu": GPU_NAMES[cells[2]],
            "tp": int(cells[4].split("/")[0].strip().removeprefix("TP")),
            "isl": isl,
            "osl": osl,
            "concurrency": int(cells[6]),
            "output_per_gpu": float(cells[8]),
            "ttft_s": float(cells[9].split("/")[0]),
            "tpot_ms": float(cells[10]),
        }
    return rows


@pytest.mark.skipif(not MEASUREMENTS.exists(), reason="needs ../shared/data/measurements")
def test_every_vllm_gpt_oss_row_is_three_cases_with_its_own_figures() -> None:
    rows = vllm_gpt_oss_rows()
    assert len(rows) == 12  # H100 TP2 x4, H200 TP1 x2 and TP2 x2, B200 TP1 x4
    by_row: dict[str, dict[str, dict]] = {}
    for case in cases():
        row_id = re.search(r"MX-I\d+", case["source"]).group(0)
        by_row.setdefault(row_id, {})[case["metric"]] = case
    assert set(by_row) == set(rows)
    for row_id, row in rows.items():
        figures = by_row[row_id]
        # the row's figures are per GPU: the replica's output rate is TP times it
        assert figures["output_tok_s"]["measured"] == pytest.approx(
            row["output_per_gpu"] * row["tp"]
        )
        assert figures["mean_tpot_ms"]["measured"] == pytest.approx(row["tpot_ms"])
        assert figures["mean_ttft_ms"]["measured"] == pytest.approx(row["ttft_s"] * 1000)
        for case in figures.values():
            values = sets_of(case)
            assert values["cluster.gpu"] == row["gpu"]
            assert int(values["cluster.tp"]) == row["tp"]
            assert int(values["tenants[0].arrivals.concurrency"]) == row["concurrency"]
            prompt = yaml.safe_load(values["tenants[0].prefill_tokens"])
            output = yaml.safe_load(values["tenants[0].decode_tokens"])
            assert (prompt["high"], output["high"]) == (row["isl"], row["osl"])


def test_each_case_states_the_sweeps_recipe() -> None:
    for case in cases():
        values = sets_of(case)
        clients = int(values["tenants[0].arrivals.concurrency"])
        # benchmark_lib.sh: num-prompts = CONC x 10, range ratio 0.8: uniform on [0.8 L, L]
        assert int(values["tenants[0].arrivals.count"]) == 10 * clients
        for key in ("prefill_tokens", "decode_tokens"):
            lengths = yaml.safe_load(values[f"tenants[0].{key}"])
            assert lengths["dist"] == "uniform"
            assert lengths["low"] == int(0.8 * lengths["high"])
        # max-num-seqs: the concurrency on Hopper, 512 on B200, whose KV cache alone is FP8
        b200 = values["cluster.gpu"] == "b200"
        assert int(values["cluster.max_num_seqs"]) == (512 if b200 else clients)
        assert ("cluster.model" in values) == b200
        if b200:
            assert yaml.safe_load(values["cluster.model"])["kv_dtype"] == "fp8"
    scenario = yaml.safe_load(
        (ROOT / "calibration" / "scenarios" / "inferencemax_gpt_oss.yaml").read_text()
    )
    cluster = scenario["cluster"]
    # --async-scheduling, 8192 batched tokens, memory utilisation 0.9, vLLM 0.13 served
    assert cluster["cpu_time"] == "overlap" and cluster["engine"] == "vllm"
    assert cluster["max_num_batched_tokens"] == 8192
    assert cluster["gpu_memory_utilization"] == 0.9
    assert scenario["tenants"][0]["arrivals"]["kind"] == "closed_loop"


def test_its_starts_are_the_shipped_defaults_and_it_stays_out_of_the_published_file() -> None:
    spec = yaml.safe_load(CASE_FILE.read_text())
    shipped = MoeServingSpec()
    starts = {s["path"].rsplit(".", 1)[1]: s["start"] for s in spec["settings"]}
    assert starts == {
        "expert_compute_efficiency": shipped.expert_compute_efficiency,
        "expert_memory_efficiency": shipped.expert_memory_efficiency,
        "layer_us": shipped.layer_us,
    }
    published = yaml.safe_load((ROOT / "calibration" / "published.yaml").read_text())
    ours = {case["name"] for case in spec["cases"]}
    assert not ours & {case["name"] for case in published["cases"]}


def test_the_file_loads_and_every_case_builds() -> None:
    spec, measured, scenarios = load_calibration(CASE_FILE)
    assert len(spec.cases) == len(measured) == len(scenarios) == 36


@pytest.mark.slow  # 36 simulations, about 10 s of CPU
def test_the_moe_note_quotes_this_files_errors() -> None:
    """The scenario note's vLLM figures (outputs/moe_notes.py) are this file's `--no-fit`
    output-throughput errors: the median of their sizes, and the range of the B200 ones."""
    from statistics import median

    from simsched.outputs import moe_notes
    from simsched.studies.calibration.fit import calibrate

    result = calibrate(CASE_FILE, jobs=1, fit=False)
    errors = {
        case.name: simulated / measured - 1
        for case, simulated, measured in zip(
            result.spec.cases, result.before, result.measured, strict=True
        )
        if case.metric == "output_tok_s"
    }
    assert all(e < 0 for e in errors.values())  # too slow everywhere, as the note says
    assert f"{median(abs(e) for e in errors.values()):.0%}" == (
        moe_notes.VLLM_GPT_OSS_OUTPUT_SHORTFALL
    )
    b200 = sorted(-100 * e for name, e in errors.items() if "_b200_" in name)
    assert f"{b200[0]:.0f}-{b200[-1]:.0f}%" == moe_notes.VLLM_GPT_OSS_B200_SHORTFALL
    hopper = sorted(-100 * e for name, e in errors.items() if "_b200_" not in name)
    assert len(hopper) == 8
    assert f"{hopper[0]:.0f}-{hopper[-1]:.0f}%" == moe_notes.VLLM_GPT_OSS_HOPPER_SHORTFALL


def test_only_the_judged_model_gets_the_vllm_note() -> None:
    # the sweep judged gpt-oss-120b alone: DeepSeek-R1 (its one case runs too fast) or another
    # MoE model must not be told that vLLM would need fewer GPUs
    from simsched.config.loading import load_scenario
    from simsched.outputs import moe_notes

    def notes(preset: str, *more: str) -> list[str]:
        burst = ROOT / "calibration" / "scenarios" / "fixed_burst.yaml"
        sets = [f"cluster.model={preset}", "cluster.gpu=h200", "cluster.tp=8", *more]
        return moe_notes._notes_for(load_scenario(burst, sets).cluster)

    def judged(found: list[str]) -> list[str]:
        return [n for n in found if n.startswith(moe_notes.VLLM_GPT_OSS_NOTE)]

    # run as the judged runs ran (async scheduling: overlapped CPU time), the note alone; with
    # the vllm profile's serial CPU time, it says the run is slower still
    overlapped = ("cluster.engine=vllm", "cluster.cpu_time=overlap")
    assert judged(notes("gpt-oss-120b", *overlapped)) == [moe_notes.VLLM_GPT_OSS_NOTE]
    for serial in (notes("gpt-oss-120b"), notes("gpt-oss-120b", "cluster.engine=vllm")):
        assert judged(serial) == [
            moe_notes.VLLM_GPT_OSS_NOTE + "; this run's CPU time is serial, not overlapped as "
            "theirs, so its figures are slower still than the judged ones (write "
            "cluster.cpu_time=overlap to run as they did)"
        ]
    # vLLM's figures say nothing of another engine serving it
    for engine in ("trtllm", "sglang"):
        assert not judged(notes("gpt-oss-120b", f"cluster.engine={engine}"))
    for other in ("deepseek-r1", "qwen3-235b-a22b", "gpt-oss-20b", "mixtral-8x7b"):
        found = notes(other)
        assert not judged(found)
        assert any(note.startswith("MoE model:") for note in found)
    assert notes("llama-3-8b") == []


def test_the_vllm_judgement_is_of_the_mxfp4_checkpoint_only() -> None:
    from simsched.config.loading import load_scenario
    from simsched.outputs import moe_notes

    # gpt-oss-120b with BF16 experts, or NVFP4 ones (FP4 inputs on vLLM), is another model to
    # the judgement: InferenceMAX served the MXFP4 checkpoint on BF16 inputs
    burst = ROOT / "calibration" / "scenarios" / "fixed_burst.yaml"
    bf16 = (
        "cluster.model={preset: gpt-oss-120b, moe: {experts: 128, experts_per_token: 4, "
        "expert_ffn: 2880, router_bias: true, expert_bias: true, expert_dtype: bf16}}"
    )
    nvfp4 = bf16.replace("expert_dtype: bf16", "expert_dtype: fp4, fp4_format: nvfp4")
    for model in ("cluster.model=gpt-oss-120b", bf16, nvfp4):
        sets = [model, "cluster.gpu=h200", "cluster.tp=4", "cluster.engine=vllm"]
        cluster = load_scenario(burst, sets).cluster
        judged = any(
            n.startswith(moe_notes.VLLM_GPT_OSS_NOTE) for n in moe_notes._notes_for(cluster)
        )
        assert judged == (model == "cluster.model=gpt-oss-120b"), model
