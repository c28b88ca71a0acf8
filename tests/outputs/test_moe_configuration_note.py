"""A run on a configuration the MoE cases check gets that configuration's own error beside the
area's: for DeepSeek-R1 DEP8 on H200 the one published run is +27.9% off, about twice the area's
median, and a plan's default margins would not say so (docs/moe.md, Calibration)."""

from __future__ import annotations

from pathlib import Path

from simsched.config.loading import load_scenario
from simsched.outputs import moe_notes

ROOT = Path(__file__).resolve().parents[2]
CAPACITY = ROOT / "scenarios" / "moe_capacity.yaml"


def notes(*sets: str) -> list[str]:
    return moe_notes._notes_for(load_scenario(CAPACITY, list(sets)).cluster)


def test_the_moe_capacity_layout_is_a_checked_configuration() -> None:
    (note,) = [n for n in notes() if n.startswith("this configuration")]
    checked = moe_notes.CHECKED_CONFIGURATIONS[("deepseek-r1", "fp8", "h200", 8, 8, 8)]
    assert checked.figures == 1 and checked.low == checked.high == checked.median
    assert "(DeepSeek-R1 FP8 on 8 H200s, DEP8)" in note
    assert f"one TensorRT-LLM run: its throughput is off by {checked.low:+.1%} (too fast)" in note
    assert f"--model-error {checked.median * 100:.1f} plans with its own" in note
    assert f"against the {moe_notes.MOE_MEDIAN_ERROR} of all MoE runs" in note


def test_another_layout_or_gpu_is_not_claimed_as_checked() -> None:
    # attention TP8 instead of DEP8, or the same layout on B200: no case checks either
    for sets in (["cluster.moe_serving.attention_dp=1"], ["cluster.gpu=b200"]):
        found = notes(*sets)
        assert any(n.startswith("MoE model:") for n in found)
        assert not any(n.startswith("this configuration") for n in found)


def test_a_spread_of_runs_says_its_range_and_which_way() -> None:
    class Pool:  # the attributes `configuration_of` reads, as a validated cluster has them
        model = type("M", (), {"name": "qwen3-235b-a22b", "weight_dtype": "fp8", "moe": 1})()
        gpu = type("G", (), {"name": "h200"})()
        tp = 8
        moe_serving = type("S", (), {"ep": 8, "attention_dp": 8})()

    checked = moe_notes.CHECKED_CONFIGURATIONS[moe_notes.configuration_of(Pool())]
    note = moe_notes.configuration_note(Pool())
    spread = f"{checked.low:+.1%} to {checked.high:+.1%}"
    assert f"off by {checked.median:.1%} (median; {spread}, both ways)" in note
    assert note.startswith(f"this configuration ({checked.label}) is checked on 10 TensorRT")
    # Mixtral on one H200 is too slow in every row, Scout on DEP4 too fast in every row
    sides = {c.label: c for c in moe_notes.CHECKED_CONFIGURATIONS.values()}
    assert sides["Mixtral 8x7B FP8 on one H200"].high < 0
    assert sides["Llama 4 Scout FP8 on 4 H200s, DEP4"].low > 0


def test_an_engine_says_what_it_chose_for_the_moe_layers() -> None:
    # moe_capacity's DEP8 layout: TensorRT-LLM gathers and permutes in a kernel; vLLM keeps the
    # all-to-all and gathers rows inside its GEMM; a written value is reported as written
    def chosen(*sets: str) -> str | None:
        return moe_notes.engine_choices_note(load_scenario(CAPACITY, list(sets)).cluster)

    assert chosen() is None  # no engine: nothing was chosen
    trtllm = chosen("cluster.engine=trtllm")
    assert "dispatch: allgather, permute: kernel" in trtllm
    assert trtllm.startswith("engine trtllm: its MoE layers exchange tokens by allgather")
    assert "dispatch: alltoall, permute: fused" in chosen("cluster.engine=vllm")
    written = chosen("cluster.engine=vllm", "cluster.moe_serving.permute=kernel")
    assert "dispatch: alltoall, permute: kernel" in written
