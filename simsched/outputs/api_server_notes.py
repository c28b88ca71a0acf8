"""A note when a replica's API server, not its GPU, set the pace: the requests a replica took per
second reached its front end's ceiling (`cluster.frontend`: processes over the per-request
time). Throughput and TTFT are then the front end's, and with a served engine profile's
per-request time that is a single published value (docs/engines.md, "The API server")."""

from __future__ import annotations

from typing import Any

import pandas as pd

from simsched.config.engines import ENGINE_RULES

# a replica whose request rate is within this share of its front end's ceiling is bound by it:
# a saturated queue serves at the ceiling less its idle start and end (the run's first request
# waits for none, the last leaves the server idle while the engine finishes)
BOUND_SHARE = 0.9
# What the published short-prompt runs say of each served profile's per-request time
# (engines.py; docs/engines.md, "The API server"). vLLM's comes from one GPUStack run, Qwen3-14B
# on an A100 at 128 prompt and 4 output tokens, 37.2 requests/s; the same source's runs with the
# same client and lengths (moe_specdec_pd.md §4) reached 184 requests/s on vLLM 0.11 (AS-G2) and
# 239 on vLLM 0.10.2 (AS-G3), and 156 on SGLang (AS-G7). SGLang's and TensorRT-LLM's were
# searched on a TTFT at 4 clients (EN-G2, EN-G3), a latency read as a capacity.
PROFILE_CHECKS = {
    "vllm": (
        "vLLM's 26.9 ms a request is derived from one short-prompt run (Qwen3-14B on an A100, "
        "37 requests/s) that the GPU may account for instead, and the same source's runs on "
        "vLLM 0.10-0.11 reached 184 requests/s (gpt-oss-20b, one A100) and 239 (gpt-oss-120b, "
        "two H100s): this ceiling may be several times too low"
    ),
    "sglang": (
        "SGLang's 15 ms a request is a TTFT at 4 clients read as a capacity, and a published "
        "SGLang run of 1,000 such requests at once reached 156 requests/s (DeepSeek-R1, eight "
        "H200s): this ceiling may be several times too low"
    ),
    "trtllm": (
        "TensorRT-LLM's 32.2 ms a request is a TTFT at 4 clients read as a capacity, and no "
        "published run of short requests at once checks it"
    ),
}


def api_server_notes(
    resolved: dict[str, Any], utilisation: dict[str, Any], requests: pd.DataFrame
) -> list[str]:
    """One note per variant whose busiest replica took requests at 90% or more of its front
    end's ceiling (a cluster split into pools is left out: its pools' front ends differ)."""
    notes = []
    for variant, scenario in resolved.items():
        cluster = scenario.cluster
        usage = utilisation.get(variant)
        spec = getattr(cluster, "frontend", None)
        if usage is None or spec is None or getattr(cluster, "pools", None):
            continue
        rows = requests[requests["variant"] == variant]
        ceiling = ceiling_per_s(spec, rows)
        if ceiling is None:
            continue
        span_s = usage["span_ms"] / 1000
        rates = [r["requests"] / span_s for r in usage["replicas"].values()] if span_s else []
        if not rates or max(rates) < BOUND_SHARE * ceiling:
            continue
        notes.append(_note(variant, len(resolved), max(rates), ceiling, spec, cluster))
    return notes


def ceiling_per_s(spec: Any, rows: pd.DataFrame) -> float | None:
    """Requests a second one replica's front end can take: processes over the inbound time of
    a mean request (per_request_ms + per_input_token_us x mean prompt); None at no cost."""
    prompt = float(rows["prefill_tokens"].clip(lower=1).mean()) if len(rows) else 1.0
    inbound_ms = spec.per_request_ms + spec.per_input_token_us * prompt / 1000
    if inbound_ms <= 0:
        return None
    return spec.processes * 1000 / inbound_ms


def _note(variant: str, variants: int, rate: float, ceiling: float, spec: Any, cluster: Any) -> str:
    who = f"variant {variant}: " if variants > 1 else ""
    processes = f"{spec.processes} process{'es' if spec.processes > 1 else ''}"
    note = (
        f"{who}the API server set the pace: the busiest replica took {rate:.1f} requests/s, "
        f"{rate / ceiling:.0%} of its front end's ceiling of {ceiling:.1f} ({processes} at "
        f"{ceiling_ms(spec, ceiling):.1f} ms a request), so throughput and TTFT here are the "
        "front end's, not the GPU's"
    )
    engine = getattr(getattr(cluster, "engine", None), "name", None)
    if engine in PROFILE_CHECKS and _is_the_profiles(spec, engine):
        note += f"; {PROFILE_CHECKS[engine]}"
    return note + " (docs/engines.md, The API server)"


def ceiling_ms(spec: Any, ceiling: float) -> float:
    """The mean request's inbound time the ceiling stands for."""
    return spec.processes * 1000 / ceiling


def _is_the_profiles(spec: Any, engine: str) -> bool:
    """Whether the front end is the engine profile's own (not a value the user wrote)."""
    profile = ENGINE_RULES[engine][2]
    return (
        spec.processes == profile["processes"]
        and spec.per_request_ms == profile["per_request_ms"]
        and spec.per_input_token_us == 0
    )
