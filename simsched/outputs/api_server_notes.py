"""A note when a replica's API server queued its requests: the front end (`cluster.frontend`),
not only the GPU, then shapes throughput and TTFT, and with a served engine profile's
per-request time that rests on published runs of its own (docs/engines.md, "The API server").

The queue is replayed from the run's own records: each admitted request's inbound job
(`inbound_ms`) on the replica's `processes`, first come first served from its dispatch instant,
as the simulation ran it (`FifoProcesses`). The outbound jobs, which only `per_output_token_us`
gives, share those processes but are not replayed (their start is not recorded), so with them
the waits found are a lower bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from simsched.config.engines import ENGINE_RULES
from simsched.results.frames import admitted
from simsched.sim.cluster.frontend import FifoProcesses, inbound_ms

# a replica's front end whose queueing is this share of its requests' mean TTFT or more is
# worth a word: below it the front end is a fixed cost, not a bottleneck
QUEUED_SHARE = 0.1
# a front end busy this share of the time or more is saturated: it sets the throughput
SATURATED_SHARE = 0.9
WAITED_SERVICES = 2.0
# a GPU that queued the requests of the API server's busiest stretch for this share of it, and
# for this many inbound services (more than the jitter of waiting for the GPU's next step and
# of prompts of different lengths), was behind the server: it, not the server, set the pace
LAG_SHARE = 0.25
LAG_SERVICES = 4

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
    "vllm-0.6": (
        "vLLM 0.6's profile borrows vLLM 0.11's 26.9 ms a request, derived from one short-prompt "
        "run that the GPU may account for instead, and the same source's runs on vLLM 0.10-0.11 "
        "reached 184 and 239 requests/s: this ceiling may be several times too low"
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
    """One note per variant where, on some replica, admitted requests waited for a free API
    server process for 10% or more of their mean TTFT (a cluster split into pools is left out:
    its pools' front ends differ)."""
    notes = []
    for variant, scenario in resolved.items():
        cluster = scenario.cluster
        spec = getattr(cluster, "frontend", None)
        if spec is None or getattr(cluster, "pools", None) or inbound_ms(spec, 1) <= 0:
            continue
        rows = requests[requests["variant"] == variant]
        rows = rows[admitted(rows)]
        worst = max(
            (_queueing(spec, replica) for _, replica in rows.groupby("replica")), default=None
        )
        if worst is None or worst.wait < QUEUED_SHARE * worst.ttft:
            continue
        notes.append(_note(variant, len(resolved), worst, spec, cluster, rows))
    return notes


@dataclass(frozen=True, order=True)
class Queueing:
    """One replica's front-end queue, replayed (compared by the mean wait first)."""

    wait: float  # mean wait for a free API-server process
    ttft: float  # its requests' mean TTFT
    busy: float  # the processes' busy share from the first dispatch to the last inbound end
    window: float  # the processes' busy period with the most waiting, ms
    lag: float  # ms the GPU queued a request of that period beyond its quickest (its backlog)


def _queueing(spec: Any, rows: pd.DataFrame) -> Queueing:
    """A replica's front-end queue replayed over its requests (`Queueing`). The GPU's part of a
    request is from its inbound job's end to its first token; over the processes' busy period
    that held the most waiting (from when they were last all idle), the spread of that part
    beyond the quickest request's is the GPU's queueing, its backlog behind the front end."""
    ordered = rows.sort_values(["dispatch_ms", "request_id"], kind="stable")
    processes = FifoProcesses(spec.processes)
    busy = 0.0
    waits: list[float] = []
    ends: list[float] = []
    periods: list[int] = []  # the first request of each busy period
    last_end = 0.0
    for i, (dispatch, prompt) in enumerate(
        zip(ordered["dispatch_ms"], ordered["prefill_tokens"], strict=True)
    ):
        if i == 0 or dispatch >= last_end:  # every process idle: a new busy period
            periods.append(i)
        service = inbound_ms(spec, int(prompt))
        end = processes.serve(dispatch, service)
        waits.append(end - service - dispatch)
        ends.append(end)
        busy += service
        last_end = max(last_end, end)
    first_dispatch = float(ordered["dispatch_ms"].iloc[0])
    span = last_end - first_dispatch
    share = busy / (spec.processes * span) if span > 0 else 1.0
    bounds = list(zip(periods, [*periods[1:], len(ends)], strict=True))
    start, stop = max(bounds, key=lambda b: sum(waits[b[0] : b[1]]))
    first_token = (ordered["arrival_ms"] + ordered["ttft_ms"]).to_numpy(dtype=float)
    part = first_token[start:stop] - ends[start:stop]
    window = max(ends[start:stop]) - float(ordered["dispatch_ms"].iloc[start])
    mean_ttft = float(ordered["ttft_ms"].mean())
    return Queueing(
        sum(waits) / len(waits), mean_ttft, share, window, float(part.max() - part.min())
    )


def ceiling_per_s(spec: Any, prompt_tokens: float) -> float | None:
    """Requests a second one replica's front end can take at `prompt_tokens` a request:
    processes over the inbound time (`inbound_ms`); None at no cost."""
    inbound = inbound_ms(spec, prompt_tokens)
    if inbound <= 0:
        return None
    return spec.processes * 1000 / inbound


def _note(
    variant: str,
    variants: int,
    queue: Queueing,
    spec: Any,
    cluster: Any,
    rows: pd.DataFrame,
) -> str:
    who = f"variant {variant}: " if variants > 1 else ""
    wait, ttft, busy = queue.wait, queue.ttft, queue.busy
    service = inbound_ms(spec, float(rows["prefill_tokens"].clip(lower=1).mean()))
    ceiling = spec.processes * 1000 / service
    processes = f"{spec.processes} process{'es' if spec.processes > 1 else ''}"
    note = (
        f"{who}the API server queued requests: on the replica where they waited longest, "
        f"{wait:,.0f} ms on average for a free process ({wait / ttft:.0%} of their mean TTFT), "
        f"with {processes} at {service:.1f} ms a request busy "
        f"{busy:.0%} of the time (a ceiling of {ceiling:.1f} requests/s a replica), "
        f"{_verdict(queue, service, spec.per_output_token_us > 0)}"
    )
    engine = getattr(getattr(cluster, "engine", None), "name", None)
    if engine in PROFILE_CHECKS and _is_the_profiles(spec, engine):
        note += f"; {PROFILE_CHECKS[engine]}"
    if spec.per_output_token_us > 0:  # outbound jobs: their starts are not recorded
        note += (
            "; the outbound jobs (per_output_token_us) share the processes but are not "
            "replayed, so these waits are a lower bound"
        )
    return note + " (docs/engines.md, The API server)"


MORE = "more processes (cluster.frontend.processes, vLLM's --api-server-count)"


def _verdict(queue: Queueing, service: float, outbound: bool) -> str:
    """Whether the front end caps the run: its processes saturated over the replica's run, or
    for stretches (a mean wait of two services or more is a queue an M/D/1 server reaches only
    above 80% load, which a burst does at any mean load), while the GPU kept up with what they
    passed on. A GPU that queued the requests of the processes' busiest stretch for LAG_SHARE
    of it or more was behind them and sets the pace whatever the processes: with more of them its
    requests would wait in the GPU's queue instead (LAG_SERVICES keeps a steady load's jitter
    out; the replay's order within one dispatch instant is the request ids', so the figure is
    an estimate, and the note says "seems"). Outbound jobs, not replayed, delay first
    tokens too, so with them the replay cannot tell the two apart."""
    if queue.busy < SATURATED_SHARE and queue.wait < WAITED_SERVICES * service:
        return (
            f"which adds to TTFT but does not cap throughput; {MORE} or more replicas take the "
            "queue away"
        )
    if outbound:
        return (
            "so throughput and TTFT here are bound by the front end or by the GPU (its outbound "
            f"jobs, not replayed, hide which); {MORE} or more replicas take the queue away"
        )
    if queue.lag >= LAG_SHARE * queue.window and queue.lag >= LAG_SERVICES * service:
        return (
            "but the GPU seems to set the pace: it queued the requests of the server's busiest "
            f"stretch up to {queue.lag:,.0f} ms beyond its quickest "
            f"({queue.lag / queue.window:.0%} of that stretch's {queue.window:,.0f} ms), so "
            f"{MORE} may only move this wait into the GPU's queue; more replicas take it away"
        )
    return (
        "so throughput and TTFT here are bound by the front end, not by the GPU alone; "
        f"{MORE} or more replicas take the queue away"
    )


def _is_the_profiles(spec: Any, engine: str) -> bool:
    """Whether the per-request time is the engine profile's own (not a value the user wrote)."""
    return spec.per_request_ms == ENGINE_RULES[engine][2]["per_request_ms"]
