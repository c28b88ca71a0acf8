"""calibration/moe_experts.yaml fits the MoE grouped-GEMM shares and the per-layer kernel time
on the MoE throughput and MTP-depth cases of published.yaml: its cases must be those cases as
written there, and its starts the shipped defaults, so that rerunning it reproduces the shipped
values' errors (docs/moe.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
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
    # fitted on 20 of the cases (the shipped values' fit: 14 throughput figures, the MTP depths),
    # judged on all of them: the same 20 for each setting, every one a case of the file
    fitted = settings[0]["cases"]
    assert all(s["cases"] == fitted for s in settings)
    names = [case["name"] for case in load("moe_experts.yaml")["cases"]]
    assert set(fitted) <= set(names) and len(names) == 174
    assert sum(name.startswith("moe_") for name in fitted) == 14
    assert sum(name.startswith("sd_t3_") for name in fitted) == 6


def test_the_published_file_fits_the_same_shares_from_the_same_starts() -> None:
    ours = load("moe_experts.yaml")["settings"]
    published = load("published.yaml")["settings"]
    theirs = [s for s in published if s["path"].startswith("cluster.moe_serving.")]
    keys = ("path", "low", "high", "start", "cases")
    assert [{k: s[k] for k in keys} for s in theirs] == [{k: s[k] for k in keys} for s in ours]


@pytest.mark.slow  # 174 simulations, about a minute of CPU
def test_the_area_medians_the_notes_state_are_what_calibrate_no_fit_computes() -> None:
    # `simsched calibrate calibration/moe_experts.yaml --no-fit` with the shipped values: the
    # MoE throughput cases' and the MTP-depth cases' median absolute errors, rounded to the
    # constants' three decimals, are the figures a plan's notes and tie margins state (the
    # MTP median is (1.4% + 1.6%) / 2 = 1.5%). Each configuration's figures (model, weight
    # dtype, GPU, tp, ep, attention_dp) are the ones its own note states
    from simsched.config.loading import load_scenario
    from simsched.outputs.moe_notes import (
        CHECKED_CONFIGURATIONS,
        MOE_MEDIAN_SHARE,
        MOE_WORST_SHARE,
        SPEC_MEDIAN_SHARE,
        configuration_of,
    )
    from simsched.studies.calibration.fit import Evaluator, error, run_case, summary
    from simsched.studies.calibration.spec import load_calibration

    path = ROOT / "calibration" / "moe_experts.yaml"
    spec, measured, _ = load_calibration(path)
    jobs = Evaluator(path, spec, 1).jobs(None)
    runs = list(zip(spec.cases, jobs, measured, strict=True))
    errors = {case.name: error(run_case(job), value) for case, job, value in runs}
    moe = [e for name, e in errors.items() if name.startswith("moe_")]
    mtp = [e for name, e in errors.items() if name.startswith("sd_t3_")]
    assert (len(moe), len(mtp)) == (168, 6)  # the 167 MoE table cells and MX-D3; SD-T3's depths
    assert round(summary(moe)[0], 3) == MOE_MEDIAN_SHARE
    assert round(summary(moe)[1], 3) == MOE_WORST_SHARE
    assert round(summary(mtp)[0], 3) == SPEC_MEDIAN_SHARE
    by_configuration: dict[tuple, list[float]] = {}
    for case, (scenario, overrides, _), _ in runs:
        if case.name.startswith("moe_"):
            cluster = load_scenario(Path(scenario), list(overrides)).cluster
            by_configuration.setdefault(configuration_of(cluster), []).append(errors[case.name])
    # every case's configuration is one a run can match, so each has its note
    assert None not in by_configuration
    assert set(by_configuration) == set(CHECKED_CONFIGURATIONS)
    for key, signed in by_configuration.items():
        checked = CHECKED_CONFIGURATIONS[key]
        stated = (checked.figures, checked.median, checked.low, checked.high)
        computed = (len(signed), summary(signed)[0], min(signed), max(signed))
        assert stated[0] == computed[0], key
        assert stated[1:] == tuple(round(x, 3) for x in computed[1:]), key


MEASUREMENTS = ROOT.parent / "shared" / "data" / "measurements" / "moe_specdec_pd.md"
GPUS = {"H200": "h200", "H100": "h100-80gb", "A100": "a100-80gb", "B200": "b200"}


def read_tables(
    sections: tuple[str, ...],
) -> tuple[dict[tuple[str, str], float], dict[str, str]]:
    """The given sections' tables: {(row id, "ISL/OSL"): total output tok/s} of every cell, and
    each row id's column header with the line naming its table ("MX-T26 Qwen3-235B H200 TP8
    (FP8)"; "MX-T48 H200 (FP8) Mixtral 8x22B, TP8:")."""
    cells: dict[tuple[str, str], float] = {}
    headers: dict[str, str] = {}
    section, header, title = None, None, ""
    for line in MEASUREMENTS.read_text().splitlines():
        if line.startswith("### "):
            section = line.split()[1].rstrip(".")
        if section not in sections or not line.startswith("|"):
            header = None
            title = line if line.strip() else title  # "Mixtral 8x22B, TP8:" names a column's TP
            continue
        row = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if row[0] == "ISL/OSL":
            header = [cell.split()[0] for cell in row[1:]]
            headers.update({cell.split()[0]: f"{cell} {title}" for cell in row[1:]})
        elif header and not set(row[0]) <= set("-"):
            for row_id, cell in zip(header, row[1:], strict=True):
                if cell not in ("—", ""):
                    cells[(row_id, row[0])] = float(cell.replace(",", ""))
    return cells, headers


@pytest.mark.skipif(not MEASUREMENTS.exists(), reason="needs ../shared/data/measurements")
def test_every_cell_of_the_tensorrt_llm_moe_tables_is_a_case_with_its_figure() -> None:
    # not a chosen few: every configuration and length pair of sections 1a, 1b and 1c (1a's
    # dense anchor, Llama 3.3 70B, included); 1a publishes per GPU, the cases the system's total
    cells, headers = read_tables(("1a", "1b", "1c"))
    assert len(cells) == 177
    cases = {}
    for case in load("published.yaml")["cases"]:
        found = re.search(r"\(moe_specdec_pd\.md (1[abc]), (MX-T\d+)\)", case.get("source", ""))
        if found:
            sets = dict(item.split("=", 1) for item in case["set"])
            lengths = f"{sets['tenants[0].prefill_tokens']}/{sets['tenants[0].decode_tokens']}"
            # the column's GPU and parallel size, and the no-evict batch cap (the cache's
            # tokens over ISL + OSL, at most 2,048) for the replica as the case states it
            header = headers[found.group(2)]
            gpu = GPUS[re.search(r"\b(H200|H100|A100|B200)\b", header).group(1)]
            size = int(re.search(r"(?:TP|DEP)(\d+)", header).group(1))
            per_gpu = size if found.group(1) == "1a" else 1
            cases[(found.group(2), lengths)] = case["measured"] / per_gpu
            assert (sets["cluster.gpu"], int(sets["cluster.tp"])) == (gpu, size), case["name"]
            assert int(sets["cluster.max_num_seqs"]) == no_evict_cap(case), case["name"]
    assert cases == cells


# Section 1a's columns as its preface and headers state them (moe_specdec_pd.md): model, weight
# and KV precision (FP8 KV but "Hopper: use auto" for GPT-OSS: its checkpoint's BF16), the FP4
# experts of DeepSeek-R1's NVFP4 checkpoint (W4A4: FP4 activations), the DEPn layout (ep =
# attention_dp = n, TensorRT-LLM's gather), GPT-OSS's MXFP4 experts with MXFP8 activations on
# Blackwell (TensorRT-LLM's CUTLASS default there) and its TRITON MoE backend on Hopper (BF16
# activations, `permute: fused`)
SECTION_1A = {
    "MX-T1": ("deepseek-r1", "fp8", "fp8", "fp4", 4, "kernel", "fp4"),
    "MX-T3": ("deepseek-r1", "fp8", "fp8", None, 8, "kernel", None),
    "MX-T6": ("gpt-oss-120b", "bf16", "bf16", "fp4", 1, "fused", None),
    "MX-T7": ("gpt-oss-120b", "bf16", "bf16", "fp4", 4, "fused", None),
    "MX-T8": ("gpt-oss-20b", "bf16", "fp8", "fp4", 1, "kernel", "fp8"),
    "MX-T11": ("gpt-oss-20b", "bf16", "bf16", "fp4", 1, "fused", None),
    "MX-T15": ("qwen3-235b-a22b", "fp4", "fp8", None, 4, "kernel", None),
    "MX-T18": ("qwen3-235b-a22b", "fp8", "fp8", None, 8, "kernel", None),
    "MX-T19": ("qwen3-30b-a3b", "fp4", "fp8", None, 1, "kernel", None),
    "MX-T21": ("llama-3.3-70b", "fp4", "fp8", None, 1, None, None),
    "MX-T23": ("llama-3.3-70b", "fp8", "fp8", None, 1, None, None),
}
# the page's request counts by length pair (1000/1000, absent there, as the older page's)
REQUESTS_1A = {"1000/1000": 3000, "1024/1024": 3000, "1024/8192": 1500, "8192/1024": 1500,
               "1024/32768": 1000, "32768/1024": 1000}  # fmt: skip


def test_each_section_1a_case_states_its_columns_facts() -> None:
    from simsched.config.loading import load_scenario
    from simsched.config.moe_serving import NO_EXPERT_PARALLELISM, with_engine_choices

    seen = set()
    for case in load("published.yaml")["cases"]:
        found = re.search(r"\(moe_specdec_pd\.md 1a, (MX-T\d+)\)", case.get("source", ""))
        if not found:
            continue
        seen.add(found.group(1))
        name, weights, cache, experts, dep, permute, activations = SECTION_1A[found.group(1)]
        scenario = load_scenario(ROOT / "calibration" / case["scenario"], case["set"])
        cluster, tenant = scenario.cluster, scenario.tenants[0]
        model = cluster.model
        stated = (model.name, model.weight_dtype or "bf16", model.kv_dtype or "bf16")
        assert stated == (name, weights, cache), case["name"]
        assert getattr(model.moe, "expert_dtype", None) == experts, case["name"]
        # as the run resolves it: no engine is named, so an unset permute is TensorRT-LLM's kernel
        serving = with_engine_choices(cluster.moe_serving or NO_EXPERT_PARALLELISM, None)
        layout = (serving.ep, serving.attention_dp, serving.dispatch if dep > 1 else None)
        assert layout == (dep, dep, "allgather" if dep > 1 else None), case["name"]
        assert (serving.permute if model.moe else None) == permute, case["name"]
        assert serving.expert_activations == activations, case["name"]
        lengths = f"{tenant.prefill_tokens}/{tenant.decode_tokens}"
        assert tenant.arrivals.count == REQUESTS_1A[lengths], case["name"]
        assert cluster.gpu_memory_utilization == 0.95, case["name"]
    assert seen == set(SECTION_1A)


def no_evict_cap(case: dict) -> int:
    from simsched.config.loading import load_scenario

    scenario = ROOT / "calibration" / case["scenario"]
    sets = [item for item in case["set"] if not item.startswith("cluster.max_num_seqs=")]
    cluster = load_scenario(scenario, sets).cluster
    tokens = cluster.blocks_per_replica * cluster.block_size
    per_request = cluster_tokens_per_request(sets)
    return min(2048, tokens // per_request)


def cluster_tokens_per_request(sets: list[str]) -> int:
    values = dict(item.split("=", 1) for item in sets)
    return int(values["tenants[0].prefill_tokens"]) + int(values["tenants[0].decode_tokens"])


def test_no_setting_of_the_published_file_is_fitted_on_a_judged_moe_case() -> None:
    # `make calibrate` must reproduce the shipped fit: the MoE table cells beyond the 20 the
    # MoE values were fitted on are judged only, so no setting (the CPU and all-reduce costs
    # included, which once reached every case) lists them
    published = load("published.yaml")
    fitted = set(load("moe_experts.yaml")["settings"][0]["cases"])
    judged = {
        case["name"]
        for case in published["cases"]
        if case["name"].startswith("moe_") and case["name"] not in fitted
    }
    assert len(judged) == 154  # 109 of sections 1b-1d, 45 of 1a
    for setting in published["settings"]:
        assert setting.get("cases"), f"{setting['path']} reaches every case"
        assert not judged & set(setting["cases"]), setting["path"]
