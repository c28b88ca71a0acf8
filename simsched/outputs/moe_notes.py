"""Notes under a run's table when it serves an MoE model or decodes speculatively: how far the
model's figures are from the published runs it was checked against (docs/moe.md,
"Calibration"), and what it leaves out."""

from __future__ import annotations

from typing import Any

# Median absolute errors of `simsched calibrate --no-fit` on the MoE and speculative cases of
# calibration/published.yaml with the shipped defaults (docs/continuous_batching.md, Fidelity)
MOE_MEDIAN_SHARE = 0.151
SPEC_MEDIAN_SHARE = 0.018
MOE_MEDIAN_ERROR = f"{MOE_MEDIAN_SHARE:.1%}"
# Judged only (calibration/inferencemax_gpt_oss.yaml, `--no-fit`): vLLM 0.13 serving gpt-oss-120b
# on H100, H200 and B200 runs faster than the model predicts; the median absolute error of the
# 12 output-throughput figures, and the ranges of the 8 on H100/H200 and the 4 on B200
# (docs/moe.md, "Judged: vLLM gpt-oss-120b")
VLLM_GPT_OSS_OUTPUT_SHORTFALL = "26%"
VLLM_GPT_OSS_HOPPER_SHORTFALL = "6-37%"
VLLM_GPT_OSS_B200_SHORTFALL = "38-58%"
JUDGED_ON_VLLM = "gpt-oss-120b"  # the one MoE model judged on vLLM; other models: unchecked
VLLM_GPT_OSS_NOTE = (
    "gpt-oss-120b: against vLLM 0.13 serving it with async scheduling (InferenceMAX; "
    "`cpu_time: overlap` here, which the vllm profile does not set) the figures are too slow, "
    f"throughput {VLLM_GPT_OSS_OUTPUT_SHORTFALL} low (median; {VLLM_GPT_OSS_HOPPER_SHORTFALL} "
    f"on H100/H200, {VLLM_GPT_OSS_B200_SHORTFALL} on B200): a plan for it on vLLM 0.13 asks "
    "for more GPUs than it needs, and --model-error's pessimistic side more still "
    "(docs/moe.md, Judged)"
)
SPEC_MEDIAN_ERROR = f"{SPEC_MEDIAN_SHARE:.1%}"


def served(cluster: Any) -> list[tuple[Any, Any]]:
    """(model, speculative) of each pool of `cluster: {pools: [...]}`, or of the one cluster."""
    parts = getattr(cluster, "pools", None) or [cluster]
    return [(getattr(p, "model", None), getattr(p, "speculative", None)) for p in parts]


def moe_notes(resolved: dict[str, Any], variants: list[str]) -> list[str]:
    """One note per kind of figure that needs a word, naming the variants it concerns."""
    found: dict[str, list[str]] = {}
    for variant in variants:
        notes = [n for part in served(resolved[variant].cluster) for n in _notes_for(*part)]
        for note in dict.fromkeys(notes):  # once per variant, whatever its pools
            found.setdefault(note, []).append(variant)
    every = len(variants)
    return [
        note if len(names) == every or every == 1 else f"variant {', '.join(names)}: {note}"
        for note, names in found.items()
    ]


def _notes_for(model: Any, speculative: Any) -> list[str]:
    notes = []
    if getattr(model, "moe", None) is not None:
        notes.append(
            "MoE model: against published MoE throughput its figures are off by "
            f"{MOE_MEDIAN_ERROR} (median of TensorRT-LLM runs; docs/moe.md, Calibration)"
        )
    if getattr(model, "name", None) == JUDGED_ON_VLLM:
        notes.append(VLLM_GPT_OSS_NOTE)
    if getattr(model, "sliding_window", None) is not None:
        notes.append(
            "sliding-window layers: their bounded cache (window tokens a sequence) is not "
            "counted in the KV blocks nor read per iteration"
        )
    if speculative is not None:
        notes.append(
            "speculative decoding: a fixed mean acceptance for every request; its step is "
            "checked only against published MTP latencies of DeepSeek-R1 on B200 at batch 1, "
            f"off by {SPEC_MEDIAN_ERROR} (median) in-sample (the MoE kernel time was fitted "
            "on them): other models, drafters and loads are unchecked"
        )
    return notes
