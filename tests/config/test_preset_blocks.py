"""A nested `moe` mapping beside a model preset replaces the preset's whole block. Where the
written block lacks a key without a default, the refusal names those keys and gives the preset's
block with the written keys in it, which runs when pasted back."""

from __future__ import annotations

from pathlib import Path

from simsched.config.loading import load_scenario

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "moe_capacity.yaml"
# DeepSeek-R1's moe block as its config.json states it (moe_specdec_pd.md §1h, AR-1):
# n_routed_experts 256, num_experts_per_tok 8, n_shared_experts 1, moe_intermediate_size 2048,
# first_k_dense_replace 3, intermediate_size 18432, a router score correction (router_bias)
R1_FP4_EXPERTS = (
    "{experts: 256, experts_per_token: 8, shared_experts: 1, expert_ffn: 2048, "
    "first_dense_layers: 3, dense_ffn: 18432, router_bias: true, expert_dtype: fp4}"
)


def model_set(moe: str | None) -> str:
    block = "" if moe is None else f", moe: {moe}"
    return f"cluster.model={{preset: deepseek-r1, weight_dtype: fp4, kv_dtype: fp8{block}}}"


def test_a_partial_block_is_refused_with_the_whole_block_to_write(simsched_cli) -> None:
    run = simsched_cli("validate", SCENARIO, "--set", model_set("{expert_dtype: fp4}"))
    assert run.code == 2
    assert run.err.count("\n") == 1  # one line, no traceback
    assert run.err.startswith(f"{SCENARIO}: --set {model_set('{expert_dtype: fp4}')}: ")
    assert run.err.rstrip().endswith(
        "cluster.model: a moe mapping beside preset 'deepseek-r1' replaces its whole moe block, "
        "and this one lacks experts, experts_per_token, expert_ffn; write the whole block with "
        f"your keys in it: moe: {R1_FP4_EXPERTS}"
    )


def test_the_block_it_gives_runs_and_changes_only_what_was_written() -> None:
    written = load_scenario(SCENARIO, [model_set(R1_FP4_EXPERTS)]).cluster.model
    preset = load_scenario(SCENARIO, [model_set(None)]).cluster.model
    assert written.moe.expert_dtype == "fp4"
    assert preset.moe.expert_dtype is None
    assert written.moe.model_copy(update={"expert_dtype": None}) == preset.moe


def test_a_block_with_every_required_key_still_replaces_the_presets() -> None:
    # unwritten keys take the block's defaults, not the preset's: runs written this way before
    # keep their meaning (no shared expert, every layer MoE)
    moe = "{experts: 256, experts_per_token: 8, expert_ffn: 2048}"
    model = load_scenario(SCENARIO, [model_set(moe)]).cluster.model
    assert (model.moe.shared_experts, model.moe.first_dense_layers) == (0, 0)


def test_the_block_it_gives_for_wider_experts_drops_the_fp4_format(simsched_cli) -> None:
    # gpt-oss's preset block names its MXFP4 experts' format; written BF16 experts have none, so
    # the block to paste must not carry it (pasted, it would be refused)
    gpt_oss = "cluster.model={preset: gpt-oss-20b, moe: {expert_dtype: bf16}}"
    run = simsched_cli("validate", SCENARIO, "--variant", "dep8_x4", "--set", gpt_oss)
    assert run.code == 2
    block = run.err.rstrip().split("write the whole block with your keys in it: moe: ")[1]
    assert "fp4_format" not in block
    pasted = f"cluster.model={{preset: gpt-oss-20b, moe: {block}}}"
    model = load_scenario(SCENARIO, [pasted], ["dep8_x4"]).cluster.model
    assert model.moe.expert_dtype == "bf16" and model.moe.fp4_format is None
