"""A run on a configuration the MoE cases check gets that configuration's own error beside the
area's: for DeepSeek-R1 DEP8 on H200 the five published runs are 32.6% off (median, every one too
fast), well beyond the area's median, and a plan's default margins would not say so (docs/moe.md,
Calibration)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simsched.config.loading import load_scenario
from simsched.outputs import moe_notes

ROOT = Path(__file__).resolve().parents[2]
CAPACITY = ROOT / "scenarios" / "moe_capacity.yaml"


OFFLINE_TRTLLM = "cluster.engine={name: trtllm, offline: true}"
# the CPU costs and front-end delays every MoE case writes as 0 (TensorRT-LLM offline)
ZEROED = (
    "cluster.latency_model={kind: roofline, "
    + ", ".join(f"{name}: 0" for name in moe_notes.CASES_ZEROED)
    + "}",
)
# with an engine its API-server stage replaces the fixed front-end delays: the CPU costs alone
ENGINE_ZEROED = "cluster.latency_model={kind: roofline, overhead_ms: 0, per_seq_ms: 0}"
# MX-D3 as the calibration states it: an FP8 KV cache, TensorRT-LLM's gather, no overheads
AS_CHECKED = (
    "cluster.model={preset: deepseek-r1, kv_dtype: fp8}",
    "cluster.moe_serving.dispatch=allgather",
    *ZEROED,
)


def notes(*sets: str) -> list[str]:
    return moe_notes._notes_for(load_scenario(CAPACITY, list(sets)).cluster)


def checked_notes(*sets: str) -> list[str]:
    return [n for n in notes(*sets) if n.startswith("this configuration")]


def test_the_checked_layout_states_its_own_error() -> None:
    (note,) = checked_notes(*AS_CHECKED)
    key = ("deepseek-r1", "fp8", "fp8", "h200", 8, 8, 8, "allgather", "kernel")
    checked = moe_notes.CHECKED_CONFIGURATIONS[key]
    # MX-D3 and the four cells of section 1a's H200 DEP8 column, every one too fast
    assert checked.figures == 5 and 0 < checked.low <= checked.median <= checked.high
    assert "(DeepSeek-R1 FP8 on 8 H200s, DEP8)" in note
    spread = f"{checked.low:+.1%} to {checked.high:+.1%}"
    how = f"off by {checked.median:.1%} (median; {spread}, too fast)"
    assert f"5 TensorRT-LLM runs: its throughput is {how}" in note
    # too fast by 35.0% (median): efficiencies 1 - 1/1.35 = 25.9% lower cancel it, not 35.0%
    assert checked.median == 0.35
    assert "--model-error 25.9 plans with its own (the efficiency change that cancels" in note
    assert f"against the {moe_notes.MOE_MEDIAN_ERROR} of all MoE runs" in note
    written = AS_CHECKED
    # served (an API server in front), with vLLM's serial CPU time, with the TensorRT-LLM
    # profile's exposed 1.2 ms an iteration, or with the CPU costs back through gpu_overrides:
    # not the offline runs the figure is of
    model = "cluster.model={preset: deepseek-r1, kv_dtype: fp8}"
    back = "cluster.gpu_overrides={h200: {overhead_ms: 0.938, per_seq_ms: 0.0968}}"
    for unlike in ((model, "cluster.engine=trtllm"), (model, OFFLINE_TRTLLM), written[:2],
                   (*written, back)):  # fmt: skip
        assert checked_notes(*unlike) == [], unlike
        assert "differs from in its overheads (CPU time, front end):" in nearest_notes(*unlike)[0]
    # the engine's exposed time written away, offline TensorRT-LLM is the checked run
    hidden = (model, OFFLINE_TRTLLM, ENGINE_ZEROED, "cluster.overlap_exposed_ms=0")
    assert checked_notes(*hidden) == [note]


def nearest_notes(*sets: str) -> list[str]:
    return [n for n in notes(*sets) if n.startswith("the MoE cases check")]


def test_a_run_of_a_checked_layout_that_differs_says_how() -> None:
    # the shipped moe_capacity scenario: MX-D3's model, GPU and layout, but a BF16 KV cache and
    # (no engine named) the all-to-all; MX-D3's figure is named as the check's, not the run's
    (note,) = nearest_notes()
    assert note.startswith("the MoE cases check DeepSeek-R1 FP8 on 8 H200s, DEP8 (5 TensorRT")
    assert (
        "differs from in its KV cache precision, exchange and overheads (CPU time, front end): "
        "its own error is unchecked" in note
    )
    assert checked_notes() == []
    assert nearest_notes(*AS_CHECKED) == []  # the checked run itself: the other note speaks
    engine = nearest_notes(
        "cluster.model={preset: deepseek-r1, kv_dtype: fp8}", "cluster.engine=vllm"
    )
    assert "in its exchange, permute, engine and overheads (CPU time, front end):" in engine[0]
    mtp = nearest_notes(
        *AS_CHECKED, "cluster.speculative={method: mtp, tokens: 1, acceptance: 0.8}"
    )
    assert "in its speculative decoding:" in mtp[0]
    assert nearest_notes("cluster.moe_serving.attention_dp=1") == []  # another layout: no check


def test_anything_the_run_does_not_share_with_the_checked_one_drops_the_claim() -> None:
    # the shipped moe_capacity scenario itself: a BF16 KV cache and the all-to-all
    assert checked_notes() == []
    others = (
        ["cluster.moe_serving={ep: 8, attention_dp: 1}"],  # attention TP8
        ["cluster.gpu=b200"],
        [ENGINE_ZEROED, "cluster.engine=vllm"],  # another engine's kernels
        ["cluster.moe_serving.dispatch=alltoall"],
        ["cluster.model={preset: deepseek-r1, kv_dtype: fp8, layers: 30}"],  # not the preset
    )
    for more in others:
        found = notes(*AS_CHECKED, *more)
        assert any(n.startswith("MoE model:") for n in found), more
        assert not any(n.startswith("this configuration") for n in found), more


def test_a_spread_of_runs_says_its_range_and_which_way() -> None:
    burst = ROOT / "calibration" / "scenarios" / "fixed_burst.yaml"
    qwen = [
        "cluster.model={preset: qwen3-235b-a22b, weight_dtype: fp8, kv_dtype: fp8}",
        "cluster.gpu=h200",
        "cluster.tp=8",
        "cluster.moe_serving={ep: 8, attention_dp: 8, dispatch: allgather}",
        *ZEROED,
    ]
    pool = load_scenario(burst, qwen).cluster
    checked = moe_notes.CHECKED_CONFIGURATIONS[moe_notes.configuration_of(pool)]
    note = moe_notes.configuration_note(pool)
    spread = f"{checked.low:+.1%} to {checked.high:+.1%}"
    assert f"off by {checked.median:.1%} (median; {spread}, both ways)" in note
    assert note.startswith(f"this configuration ({checked.label}) is checked on 10 TensorRT")
    # FP16 written out is the unset 16-bit precision of the A100 Mixtral cases
    mixtral = ["cluster.model={preset: mixtral-8x7b, weight_dtype: fp16}", "cluster.gpu=a100-80gb",
               "cluster.tp=4", *ZEROED]  # fmt: skip
    a100 = moe_notes.configuration_note(load_scenario(burst, mixtral).cluster)
    assert a100 is not None and "(Mixtral 8x7B FP16 on 4 A100s, TP4)" in a100
    assert "too slow" in a100  # every A100 row is too slow


def test_an_engine_says_what_it_chose_for_the_moe_layers() -> None:
    # moe_capacity's DEP8 layout: TensorRT-LLM gathers and permutes in a kernel; vLLM's
    # all-to-all is a stand-in (its own default gathers) and it gathers rows inside its GEMM;
    # a written value is marked as written; only TensorRT-LLM is what the MoE cases ran
    def chosen(*sets: str) -> str | None:
        return moe_notes.engine_choices_note(load_scenario(CAPACITY, list(sets)).cluster)

    assert chosen() is None  # no engine: nothing was chosen
    trtllm = chosen("cluster.engine=trtllm")
    assert trtllm.startswith(
        "engine trtllm: its MoE layers exchange tokens by allgather (trtllm's default) and put "
        "them in expert order in a kernel of its own (trtllm's default)"
    )
    assert "unchecked" not in trtllm
    vllm = chosen("cluster.engine=vllm")
    assert "by alltoall (a stand-in: vLLM's own default exchange gathers)" in vllm
    assert "inside the first GEMM (vllm's default)" in vllm
    assert "on this engine an MoE model is unchecked but for gpt-oss-120b" in vllm
    written = chosen("cluster.engine=trtllm", "cluster.moe_serving.dispatch=alltoall")
    assert "by alltoall (written)" in written


def test_a_one_sided_error_says_which_side_to_read() -> None:
    (note,) = checked_notes(*AS_CHECKED)  # MX-D3 runs too fast: the pessimistic side
    assert "cancels its median); read its pessimistic side (it moves the roofline's" in note


def test_the_model_error_it_suggests_is_the_efficiency_change_that_cancels_the_error() -> None:
    # too fast by m: 1 - 1/(1 + m) lower; too slow by m: 1/(1 - m) - 1 higher; both ways: m
    fast = moe_notes.CheckedConfiguration("a", 3, 0.25, 0.1, 0.3)
    slow = moe_notes.CheckedConfiguration("b", 3, 0.20, -0.3, -0.1)
    both = moe_notes.CheckedConfiguration("c", 3, 0.15, -0.2, 0.2)
    assert moe_notes.efficiency_error(fast) == pytest.approx(0.2)  # 1 - 1/1.25
    assert moe_notes.efficiency_error(slow) == pytest.approx(0.25)  # 1/0.8 - 1
    assert moe_notes.efficiency_error(both) == 0.15


def test_what_no_case_shares_is_named_and_drops_the_claim() -> None:
    # from the checked run, each of these alone turns the claim into "differs from in its ..."
    for more, what in (
        (["cluster.model={preset: deepseek-r1, kv_dtype: fp8, layers: 30}"], "model's shape"),
        (["cluster.gpu={preset: h200, hbm_gbps: 9000}"], "GPU's spec"),
        (["cluster.moe_serving.permute=fused"], "permute"),  # DEP8 H200 ran TensorRT-LLM's kernel
        (["cluster.moe_serving.imbalance=2.0"], "MoE settings (imbalance)"),
        (
            ["cluster.moe_serving.expert_tile_rows=64", "cluster.moe_serving.layer_us=30"],
            "MoE settings (expert_tile_rows, layer_us)",
        ),
        (["cluster.speculative={method: mtp, tokens: 1, acceptance: 0.8}"], "speculative"),
    ):
        assert checked_notes(*AS_CHECKED, *more) == [], what
        (note,) = nearest_notes(*AS_CHECKED, *more)
        assert f"differs from in its {what}" in note, what


def test_other_engines_are_unchecked_and_their_gather_is_stood_in_for() -> None:
    for engine, gathers in (("sglang", "SGLang's DP attention"), ("vllm-0.6", "vLLM's own")):
        note = moe_notes.engine_choices_note(
            load_scenario(CAPACITY, [f"cluster.engine={engine}"]).cluster
        )
        assert f"by alltoall (a stand-in: {gathers}" in note
        assert "on this engine an MoE model is unchecked" in note
    # attention TP: every GPU holds every token, nothing stands in for a gather
    tp = moe_notes.engine_choices_note(
        load_scenario(CAPACITY, ["cluster.engine=vllm", "cluster.moe_serving.attention_dp=1"])
        .cluster
    )  # fmt: skip
    assert "by alltoall (vllm's default)" in tp
    # no expert parallelism: no exchange to speak of
    none = moe_notes.engine_choices_note(
        load_scenario(CAPACITY, ["cluster.engine=trtllm", "cluster.moe_serving=null"]).cluster
    )
    assert "exchange no tokens (the experts are split by TP)" in none
    # and on one GPU nothing is split at all
    burst = ROOT / "calibration" / "scenarios" / "fixed_burst.yaml"
    one = load_scenario(burst, ["cluster.model=gpt-oss-20b", "cluster.engine=vllm"]).cluster
    assert "exchange no tokens (one GPU holds every expert)" in moe_notes.engine_choices_note(one)


def test_a_too_slow_configuration_points_to_the_optimistic_side() -> None:
    burst = ROOT / "calibration" / "scenarios" / "fixed_burst.yaml"
    sets = ["cluster.model={preset: mixtral-8x7b, weight_dtype: fp8, kv_dtype: fp8}",
            "cluster.gpu=h200", "cluster.tp=1", *ZEROED]  # fmt: skip
    note = moe_notes.configuration_note(load_scenario(burst, sets).cluster)
    assert "(Mixtral 8x7B FP8 on one H200)" in note  # its upper bound is -0.137: too slow
    assert "too slow)" in note and "read its optimistic side" in note


def test_each_pool_of_a_pd_cluster_is_named_and_its_role_is_unchecked(tmp_path: Path) -> None:
    pool = ("{name: %s, role: %s, replicas: 1, gpu: h200, tp: 8, engine: trtllm, "
            "model: {preset: deepseek-r1, kv_dtype: fp8}, "
            "moe_serving: {ep: 8, attention_dp: 8}}")  # fmt: skip
    path = tmp_path / "pd.yaml"
    path.write_text(
        "name: pd\nseed: 1\ntenants:\n  - id: a\n"
        "    arrivals: {kind: periodic, interval_ms: 10, count: 2}\n"
        "    prefill_tokens: 100\n    decode_tokens: 10\ncluster:\n  pools:\n"
        f"    - {pool % ('prefill', 'prefill')}\n    - {pool % ('decode', 'decode')}\n"
        "  kv_transfer: nvlink\nadmission: {enabled: false}\n",
        encoding="utf-8",
    )
    scenario = load_scenario(path)
    notes = moe_notes.moe_notes({"pd": scenario}, ["pd"])
    assert not any("this configuration" in n for n in notes)
    for role in ("prefill", "decode"):
        (note,) = [n for n in notes if n.startswith(f"pool {role}: the MoE cases check")]
        assert "differs from in its P/D role" in note


def attention_dp_notes(*sets: str) -> list[str]:
    return [n for n in notes(*sets) if n.startswith("attention DP:")]


def test_attention_dp_says_its_ranks_are_pooled_with_their_count() -> None:
    # DEP8: eight ranks run in lockstep by the engines, one balanced pool here (docs/moe.md,
    # "Attention-DP ranks"); DEP4 names four; attention TP over the node (attention_dp 1) and
    # a dense model have no ranks to pool
    (note,) = attention_dp_notes()
    assert note.startswith("attention DP: the 8 ranks are simulated as one, each iteration")
    assert "read TTFT and throughput here as optimistic" in note and "Attention-DP ranks" in note
    assert "--model-error does not cover" in note
    (four,) = attention_dp_notes("cluster.moe_serving={ep: 8, attention_dp: 4}")
    assert four.startswith("attention DP: the 4 ranks")
    assert attention_dp_notes("cluster.moe_serving={ep: 8, attention_dp: 1}") == []
    dense = load_scenario(ROOT / "scenarios" / "fleet_planning.yaml").cluster  # a dense model
    assert not any(n.startswith("attention DP") for n in moe_notes._notes_for(dense))


GPT_OSS_H100_DEP4 = (
    "cluster.gpu=h100-80gb", "cluster.tp=4", "cluster.model=gpt-oss-120b",
    "cluster.moe_serving={ep: 4, attention_dp: 4, dispatch: allgather, permute: fused}", *ZEROED,
)  # fmt: skip


def burst_notes(*sets: str) -> list[str]:
    burst = ROOT / "calibration" / "scenarios" / "fixed_burst.yaml"
    return moe_notes._notes_for(load_scenario(burst, list(sets)).cluster)


def test_gpt_oss_gets_one_verdict_per_engine_not_two_that_disagree() -> None:
    # no engine named and exactly a checked TensorRT-LLM configuration: its own check, too fast,
    # without the vLLM judgement (too slow) beside it
    found = burst_notes(*GPT_OSS_H100_DEP4)
    assert any(n.startswith("this configuration (gpt-oss-120b, 4 H100s, DEP4") for n in found)
    assert not any(n.startswith("gpt-oss-120b: against vLLM 0.13") for n in found)
    # on vLLM: the vLLM judgement, without a TensorRT-LLM check's "unchecked" beside it
    on_vllm = burst_notes(*GPT_OSS_H100_DEP4[:4], "cluster.engine=vllm")
    assert any(n.startswith("gpt-oss-120b: against vLLM 0.13") for n in on_vllm)
    assert not any(n.startswith("the MoE cases check") for n in on_vllm)


def test_an_error_no_model_error_can_cancel_says_to_measure() -> None:
    # too slow by 60%: efficiencies 1/0.4 - 1 = 150% higher, beyond what --model-error takes
    slow = moe_notes.CheckedConfiguration("d", 3, 0.60, -0.7, -0.5)
    assert moe_notes.efficiency_error(slow) == pytest.approx(1.5)
    assert moe_notes._model_error_advice(slow).startswith(
        "no --model-error cancels it (it would take efficiencies 2.5 times as high): measure"
    )


def test_written_expert_inputs_are_echoed_and_keep_the_vllm_judgement_out() -> None:
    # the vLLM gpt-oss figures were judged with vLLM's BF16 expert inputs: written FP8 inputs on
    # a B200 are another run, and the engine note says what was written
    b200 = ("cluster.gpu=b200", "cluster.model=gpt-oss-120b", "cluster.engine=vllm")
    assert any(n.startswith("gpt-oss-120b: against vLLM 0.13") for n in burst_notes(*b200))
    written = burst_notes(*b200, "cluster.moe_serving.expert_activations=fp8")
    assert not any(n.startswith("gpt-oss-120b: against vLLM 0.13") for n in written)
    assert any("their experts take fp8 inputs (written)" in n for n in written)


def test_trtllm_named_on_b200_runs_gpt_oss_as_its_checked_configuration() -> None:
    # MX-T8 states TensorRT-LLM's FP8 inputs to gpt-oss's MXFP4 experts; naming the engine
    # gives them (its default on Blackwell): the run differs from the check in its overheads
    # only, and with those as the cases write them it is the check
    run = ("cluster.gpu=b200", "cluster.model={preset: gpt-oss-20b, kv_dtype: fp8}")
    named = burst_notes(*run, OFFLINE_TRTLLM)
    assert any(
        n.startswith("the MoE cases check gpt-oss-20b, one B200, FP8 KV")
        and "differs from in its overheads (CPU time, front end):" in n
        for n in named
    )
    assert any(
        "their experts take fp8 inputs (trtllm's default for MXFP4 experts)" in n for n in named
    )
    quiet = burst_notes(*run, OFFLINE_TRTLLM, ENGINE_ZEROED, "cluster.overlap_exposed_ms=0")
    assert any(n.startswith("this configuration (gpt-oss-20b, one B200, FP8 KV") for n in quiet)
    # unnamed, the model's BF16 inputs: a run that differs from the check there
    unnamed = burst_notes(*run, *ZEROED)
    assert any("differs from in its weight or expert-input precision" in n for n in unnamed)


@pytest.mark.parametrize("name", ["deepseek_r1", "DeepSeek-R1-0528"])
def test_a_model_read_from_its_config_json_gets_its_presets_notes(name: str, tmp_path) -> None:
    import json

    from tests.config.test_moe_presets import DEEPSEEK

    # DeepSeek-R1's config.json, in a folder not named after the preset: the same shape as the
    # preset (which DeepSeek-V3 shares), so the same checks speak for it, as for the preset
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(DEEPSEEK), encoding="utf-8")
    h200_dep8 = ("cluster.gpu=h200", "cluster.tp=8", "cluster.moe_serving={ep: 8, attention_dp: 8}")
    imported = burst_notes(*h200_dep8, f"cluster.model={{hf_config: {folder / 'config.json'}}}")
    preset = burst_notes(*h200_dep8, "cluster.model=deepseek-r1")
    assert imported == preset
    assert any(n.startswith("the MoE cases check DeepSeek-R1 FP8 on 8 H200s") for n in imported)
    # DeepSeek-V3 shares R1's shape: named as its own preset, R1's checks speak for it too
    assert burst_notes(*h200_dep8, "cluster.model=deepseek-v3") == preset
    # a changed shape is not the preset's, whatever its folder
    changed = {**DEEPSEEK, "n_routed_experts": 128}
    (folder / "config.json").write_text(json.dumps(changed), encoding="utf-8")
    other = burst_notes(*h200_dep8, f"cluster.model={{hf_config: {folder / 'config.json'}}}")
    assert not any("the MoE cases check" in n for n in other)


@pytest.mark.parametrize(
    ("sets", "clause"),
    [
        (("cluster.gpu=b200", "cluster.model=gpt-oss-20b", "cluster.engine=vllm"),
         "their FP4 experts take the model's bf16 inputs (vllm's default for MXFP4 experts)"),
        (("cluster.gpu=b200", "cluster.model=gpt-oss-20b", "cluster.engine=sglang"),
         "their FP4 experts take the model's bf16 inputs (sglang's choice for MXFP4 experts is "
         "not settled here)"),
        (("cluster.gpu=h200", "cluster.model=gpt-oss-20b", "cluster.engine=trtllm"),
         "their FP4 experts take the model's bf16 inputs (h200 has no FP4 tensor cores)"),
        (("cluster.gpu=b200", "cluster.tp=4",
          "cluster.model={preset: deepseek-r1, moe: {experts: 256, experts_per_token: 8, "
          "shared_experts: 1, expert_ffn: 2048, first_dense_layers: 3, dense_ffn: 18432, "
          "router_bias: true, expert_dtype: fp4}}", "cluster.engine=trtllm"),
         "their FP4 experts take the model's fp8 inputs (moe.fp4_format unset; trtllm would "
         "take fp4 for nvfp4, fp8 for mxfp4 experts: write the checkpoint's format)"),
        (("cluster.gpu=b200", "cluster.model=gpt-oss-20b", "cluster.engine=trtllm"),
         "their experts take fp8 inputs (trtllm's default for MXFP4 experts)"),
    ],
    ids=["vllm", "sglang", "hopper", "no-format", "chosen"],
)  # fmt: skip
def test_the_engine_note_always_says_what_fp4_experts_take(sets: tuple, clause: str) -> None:
    burst = ROOT / "calibration" / "scenarios" / "fixed_burst.yaml"
    note = moe_notes.engine_choices_note(load_scenario(burst, list(sets)).cluster)
    assert clause in note
    # 8-bit experts run at their weights' precision: nothing to say
    fp8 = load_scenario(burst, ["cluster.model=deepseek-r1", "cluster.engine=trtllm",
                                "cluster.gpu=h200", "cluster.tp=8"]).cluster  # fmt: skip
    assert "inputs" not in moe_notes.engine_choices_note(fp8)


def test_settings_moved_on_an_unchecked_layout_are_named_too() -> None:
    # DeepSeek-R1 on TP 8 without expert parallelism: no case checks that layout, so no
    # "differs from" note names the settings; the area's median was measured with the shipped
    # values, so a moved exponent (or tile, or share) gets a note of its own
    tp8 = ("cluster.moe_serving={ep: 1, attention_dp: 1}",)
    assert not [n for n in notes(*tp8) if n.startswith("MoE settings moved")]
    moved = [
        n
        for n in notes(*tp8, "cluster.moe_serving.expert_size_exponent=0.3")
        if n.startswith("MoE settings moved")
    ]
    assert moved == [
        "MoE settings moved from their shipped values (expert_size_exponent): the MoE median "
        "above was measured with the shipped ones, so this run's error is unchecked "
        "(docs/moe.md, Serving it)"
    ]
    assert not nearest_notes(*tp8, "cluster.moe_serving.expert_size_exponent=0.3")
    # on a checked layout the "differs from" note names them instead, not twice
    named = notes(*AS_CHECKED, "cluster.moe_serving.expert_size_exponent=0.3")
    assert not [n for n in named if n.startswith("MoE settings moved")]
    assert any("MoE settings (expert_size_exponent)" in n for n in named)
