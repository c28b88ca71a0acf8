"""The speculative-decoding note says where a run's speculation cost rests on the CPU time
charged per verified token (outputs/moe_notes.py; docs/moe.md, speculative decoding)."""

from __future__ import annotations

from pathlib import Path

from simsched.config.loading import load_scenario
from simsched.outputs.cluster_table import table_notes
from simsched.results.simulate import simulate

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "spec_decode_load.yaml"


def speculative_note(*sets: str) -> str:
    result = simulate(load_scenario(SCENARIO, list(sets)))
    (note,) = [n for n in table_notes(result) if "speculative decoding:" in n]
    return note


def test_the_cpu_time_per_verified_token_is_named_where_it_is_charged() -> None:
    # the roofline's default CPU time per sequence, 0.0968 ms, is charged k + 1 times a step
    assert "the CPU time per sequence (0.0968 ms) is charged per verified token" in (
        speculative_note()
    )
    no_cpu = speculative_note("cluster.latency_model={kind: roofline, per_seq_ms: 0}")
    assert "charged per verified token" not in no_cpu
    assert "other models, drafters and loads are unchecked" in no_cpu


def test_no_cpu_clause_where_the_cpu_time_is_overlapped_or_shared_over_steps() -> None:
    # SGLang's overlap scheduler hides the per-sequence time; vLLM 0.6's multi-step scheduling
    # shares it over its steps: neither pays it per verified token
    for sets in (
        ("cluster.engine=sglang",),
        ("cluster.cpu_time=overlap",),
        ("cluster.engine=vllm-0.6", "cluster.num_scheduler_steps=8"),
    ):
        assert "charged per verified token" not in speculative_note(*sets)
