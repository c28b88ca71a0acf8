"""The interference P/D disaggregation removes (scenarios/disaggregated.yaml, 8 s of traffic).

Co-located, each long prompt's 2048-token prefill chunks ride in the chat tenant's decode
iterations, so an iteration that took ~9 ms takes several times that while a flood prompt is in
prefill. Disaggregated, decode iterations carry no prefill chunk: with the flood answering two
tokens (one decode iteration each on the decode side, so nothing else of it reaches there), the
chat tenant's p99 TPOT stays where it was without the flood.
"""

from __future__ import annotations

from pathlib import Path

import simsched
from simsched.config.loading import load_scenario

REPO = Path(__file__).resolve().parents[3]
SCENARIO = REPO / "scenarios" / "disaggregated.yaml"
SHORT = [f"tenants.{t}.arrivals.duration_s=8" for t in ("chat", "long_prompts")]
TWO_TOKENS = ["tenants.long_prompts.decode_tokens=2"]
NO_FLOOD = [*TWO_TOKENS, "tenants.long_prompts.arrivals.duration_s=0.5"]  # a request or two


def chat_p99_tpot(extra: list[str]) -> dict[str, float]:
    tenants = simsched.simulate(load_scenario(SCENARIO, [*SHORT, *extra])).tenants
    chat = tenants[tenants["tenant_id"] == "chat"]
    return dict(zip(chat["variant"], chat["p99_tpot_ms"].astype(float), strict=True))


def test_a_long_prompt_flood_stretches_colocated_tpot_but_not_pd_tpot() -> None:
    flood, alone = chat_p99_tpot(TWO_TOKENS), chat_p99_tpot(NO_FLOOD)
    assert flood["colocated_4"] > 2 * alone["colocated_4"]
    assert 0.9 * alone["pd_3p_1d"] <= flood["pd_3p_1d"] <= 1.1 * alone["pd_3p_1d"]
