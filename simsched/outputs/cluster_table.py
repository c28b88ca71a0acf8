"""The terminal table's cluster section and the notes under it.

Rows (continuous batching only): requests per replica, then busy share, token-budget share per
iteration, mean running sequences and KV held, each per replica (up to four; beyond, the lowest
and highest) and, after `|`, for the cluster (`results.utilisation` defines them). Notes: a
router the docs warn about, load skewed across replicas, and variants that differ only in the
gateway policy while the gateway never held a backlog (so the policy made no decisions and their
results are identical).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from simsched.config.loading import resolve_variants
from simsched.config.router import router_warning
from simsched.outputs.api_server_notes import api_server_notes
from simsched.outputs.engine_notes import engine_notes
from simsched.outputs.moe_notes import moe_notes
from simsched.outputs.provisioned_table import autoscaled_variants
from simsched.results.backlog import had_backlog
from simsched.results.frames import SimulationResult, admitted
from simsched.results.utilisation import SKEW_LIMIT, skewed, skewed_pools, skewed_replicas

LISTED = 4  # replicas shown one by one; more show as lowest..highest
NO_BACKLOG = "no gateway backlog: the policy made no decisions"
PREFILL_TTFT_ROW = "  p50 | p99 TTFT ms, prefill side"
PD_TTFT_NOTE = (
    "P/D TTFT is the client's, as through llm-d and vLLM's NIXL connector: the first token "
    "streamed by the decode replica, after the wait for decode blocks, the KV transfer and its "
    "first step; the prefill side's (DistServe's) is the prefill_ttft_ms column and the row "
    f"'{PREFILL_TTFT_ROW.strip()}' under 'KV transfer prefill -> decode'; docs/fleets.md"
)
# The one published P/D run the model is checked on (calibration/published.yaml, area 3: the
# llm-d P/D guide, gpt-oss-120b on 16 H200s): the simulated client TTFT mean over the published
# one, 20,150 / 1,157 ms with the shipped defaults (docs/fleets.md, "Calibration")
PD_PUBLISHED_TTFT_RATIO = 17.4
PD_FIDELITY_NOTE = (
    "P/D is checked against one published run only, of the MoE model gpt-oss-120b (the llm-d "
    "P/D guide, 16 H200s), and does not reproduce it: client TTFT "
    f"{PD_PUBLISHED_TTFT_RATIO:.1f} times the published, because that model's simulated prefill "
    "pool saturates; no dense-model P/D run and no KV-transfer time have been checked "
    "(docs/fleets.md, Calibration)"
)
# what every run with a KV transfer says, on the console and in a folder's report alike
PD_NOTES = (PD_TTFT_NOTE, PD_FIDELITY_NOTE)
METRICS = (
    ("busy share", "busy_share", "{:.2f}"),
    ("token-budget share per iteration", "token_budget_share", "{:.2f}"),
    ("mean running sequences", "mean_running", "{:.1f}"),
    ("KV held, mean share", "kv_held_share", "{:.2f}"),
)


def cluster_rows(result: SimulationResult) -> list[tuple[str, list[str]]]:
    """The utilisation rows, when some variant runs replicas; "-" for one that does not."""
    usage = [result.utilisation.get(v) for v in result.variants]
    if not any(usage):
        return []
    blank = [""] * len(usage)
    rows = [("replicas (each | cluster)", blank)]
    rows.append(
        ("  requests per replica", [_each(u, "requests", "{}", total=False) for u in usage])
    )
    for label, key, fmt in METRICS:
        rows.append((f"  {label}", [_each(u, key, fmt) for u in usage]))
    return rows + fleet_rows(usage) + transfer_rows(usage)


def fleet_rows(usage: list[dict[str, Any] | None]) -> list[tuple[str, list[str]]]:
    """Runs on cluster.pools: GPU-hours and cost over the run, per pool and for the fleet
    (results/pool_costs.py)."""
    fleets = [(u or {}).get("fleet") for u in usage]
    if not any(fleets):
        return []
    names = sorted({name for u in usage if u and "fleet" in u for name in u["pools"]})
    rows = [("GPU-hours | cost $ over the run", [""] * len(usage))]
    for name in names:
        cells = [_hours_cost((u or {}).get("pools", {}).get(name)) for u in usage]
        rows.append((f"  pool {name}", cells))
    rows.append(("  fleet", [_hours_cost(f) for f in fleets]))
    return rows


def _hours_cost(figures: dict[str, Any] | None) -> str:
    if not figures or "gpu_hours" not in figures:
        return "-"
    cost = "no price" if figures["cost_usd"] is None else f"{figures['cost_usd']:.4f}"
    return f"{figures['gpu_hours']:.4f} | {cost}"


def transfer_rows(usage: list[dict[str, Any] | None]) -> list[tuple[str, list[str]]]:
    """P/D runs (cluster.pools): the KV transfers, per handed-off request."""
    moved = [(u or {}).get("kv_transfer") for u in usage]
    if not any(moved):
        return []
    return [
        ("KV transfer prefill -> decode", [""] * len(usage)),
        ("  requests handed off", [str(m["transfers"]) if m else "-" for m in moved]),
        (
            "  p50 | p99 transfer ms",
            [f"{m['p50_ms']:.2f} | {m['p99_ms']:.2f}" if m else "-" for m in moved],
        ),
        ("  GB transferred", [f"{m['bytes_total'] / 1e9:.2f}" if m else "-" for m in moved]),
        (
            PREFILL_TTFT_ROW,
            [
                f"{m['prefill_ttft_p50_ms']:.2f} | {m['prefill_ttft_p99_ms']:.2f}" if m else "-"
                for m in moved
            ],
        ),
        (
            "  p50 | p99 TTFT ms, client",
            [f"{m['ttft_p50_ms']:.2f} | {m['ttft_p99_ms']:.2f}" if m else "-" for m in moved],
        ),
    ]


def _each(usage: dict[str, Any] | None, key: str, fmt: str, total: bool = True) -> str:
    """Each replica's figure (up to LISTED replicas; beyond, the lowest and highest, so that a
    wide fleet keeps the columns readable), then the cluster's after `|`."""
    if usage is None:
        return "-"
    values = [r[key] for r in usage["replicas"].values()]
    if len(values) <= LISTED:
        cells = " ".join(fmt.format(v) for v in values)
    else:
        cells = f"{fmt.format(min(values))}..{fmt.format(max(values))}"
    return f"{cells} | {fmt.format(usage['total'][key])}" if total else cells


def table_notes(result: SimulationResult) -> list[str]:
    """Plain-words notes on what the table cannot show by itself."""
    resolved = dict(resolve_variants(result.scenario))
    notes = _router_notes(result, resolved)
    notes += moe_notes(resolved, list(result.variants))  # MoE / speculative: their error
    notes += engine_notes(resolved, list(result.variants))  # engines side by side
    # the front end, not the GPU, set the pace
    notes += api_server_notes(resolved, result.utilisation, result.requests)
    scaled = autoscaled_variants(result)
    for variant in sorted(scaled, key=result.variants.index):
        notes.append(
            f"{_who(result, variant)}autoscaled: its per-replica figures are over replica slots "
            "that served only part of the run, each over the whole run; the provisioned rows "
            "are over the time each replica was paid for"
        )
    if any("kv_transfer" in (result.utilisation.get(v) or {}) for v in result.variants):
        notes += PD_NOTES
    for variant in result.variants:
        usage = result.utilisation.get(variant)
        if variant not in scaled and skewed(usage):
            notes.append(skew_note(_who(result, variant), usage))
    notes += admitted_only_note(list(result.variants), result.requests)
    notes += _unused_policy_notes(result, resolved)
    if _policy_only(result, resolved) and not any(
        had_backlog(result.requests[result.requests["variant"] == v]) for v in result.variants
    ):
        notes.append(f"{NO_BACKLOG} (requests of two tenants never waited at once)")
    return notes


def skew_note(who: str, usage: dict[str, Any]) -> str:
    """Load skewed across replicas (`results.utilisation.skewed_pools`, within a pool on
    `cluster.pools`): the busiest sets latency."""
    where = []
    for pool, skew in skewed_pools(usage):
        where.append(
            f"across {skewed_replicas(pool)}: the busiest took {skew:.2f}x the mean of requests"
        )
    return (
        f"{who}load is skewed {'; '.join(where)} (more than {SKEW_LIMIT:g}x); its latency is "
        "the busiest replica's"
    )


def admitted_only_note(variants: list[str], requests: pd.DataFrame) -> list[str]:
    """Where some variant shed: latency and SLO rows describe the admitted requests only, so a
    policy that sheds more can look faster; say how much each variant shed."""
    shed = {}
    for variant in variants:
        rows = requests[requests["variant"] == variant]
        if len(rows) and not admitted(rows).all():
            shed[variant] = 1 - admitted(rows).mean()
    if not shed:
        return []
    several = len(variants) > 1
    shares = ", ".join(f"{v + ' ' if several else ''}{share:.1%}" for v, share in shed.items())
    return [
        "TTFT, TPOT, goodput and SLO rows cover admitted requests only; shed requests (429/503) "
        f"have no latency and count in the shed rows (shed: {shares})"
    ]


def _router_notes(result: SimulationResult, resolved: dict[str, Any]) -> list[str]:
    found = {v: router_warning(resolved[v].cluster) for v in result.variants}
    texts = {text for text in found.values() if text}
    if len(texts) == 1 and all(found.values()):  # every variant: one note
        return [texts.pop()]
    return [f"variant {v}: {text}" for v, text in found.items() if text]


def _unused_policy_notes(result: SimulationResult, resolved: dict[str, Any]) -> list[str]:
    """Variants that set different `scheduler.policy` values where flow control's fairness
    policy, not the scheduler's, picks the flow: the difference does nothing."""
    unused = [
        v
        for v in result.variants
        if resolved[v].flow_control is not None and resolved[v].flow_control.fairness != "scheduler"
    ]
    if len({resolved[v].scheduler.policy for v in unused}) < 2:
        return []
    return [
        f"scheduler.policy differs between variants {', '.join(unused)} but none uses it: "
        "flow_control.fairness picks the flow there (set it to `scheduler` to use the policy)"
    ]


def _who(result: SimulationResult, variant: str) -> str:
    return f"variant {variant}: " if len(result.variants) > 1 else ""


def _policy_only(result: SimulationResult, resolved: dict[str, Any]) -> bool:
    """Several variants, alike in everything but the scheduler (the gateway policy)."""
    if len(result.variants) < 2:
        return False
    settings = [
        resolved[v].model_dump(mode="json", exclude={"scheduler", "variants"})
        for v in result.variants
    ]
    schedulers = [resolved[v].scheduler for v in result.variants]
    return all(s == settings[0] for s in settings) and len({repr(s) for s in schedulers}) > 1
