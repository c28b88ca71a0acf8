"""The console table's notes, recomputed for a report made later from a results folder
(`simsched report OUT_DIR`), from what the folder holds.

A `scenario --out` folder holds the requests (status, arrival, dispatch, queue wait), the
per-tenant rows and summary.json (utilisation per replica with its request skew, the
provisioned block of an autoscaled variant). From them: load skewed across replicas, the
autoscaled per-slot caveat, the P/D TTFT caveat, the admitted-only note and the gateway
backlog. The folder does not record the settings, so the notes that need them (a router the
docs warn about, MoE and speculative-decoding error, scheduler policies that flow control
overrides) cannot be recomputed: the report says they are only in `simsched scenario --report`.

One difference from the console: the console says "no gateway backlog" only where variants
differ in the gateway policy alone, which needs the settings; here it is said wherever several
variants ran and none held a backlog, which is as true (no policy made a decision) without them.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from simsched.outputs.cluster_table import (
    NO_BACKLOG,
    PD_NOTES,
    admitted_only_note,
    skew_note,
)
from simsched.outputs.provisioned_table import any_autoscaled_pool
from simsched.results.backlog import had_backlog
from simsched.results.utilisation import skewed

SETTINGS_NOTES = (
    "notes that need the scenario's settings (a router the docs warn about, MoE and "
    "speculative-decoding error, scheduler policies that flow control overrides) are only in "
    "`simsched scenario FILE --report`: a results folder does not record the settings"
)
AUTOSCALED = (
    "autoscaled: its per-replica figures are over replica slots that served only part of the "
    "run, each over the whole run; the provisioned rows are over the time each replica was "
    "paid for"
)


def folder_notes(
    variants: list[str],
    requests: pd.DataFrame,
    utilisation: dict[str, Any] | None,
    provisioned: dict[str, Any] | None,
) -> list[str]:
    """The notes a results folder supports, in the console's order, then what it cannot say."""
    usage = utilisation or {}
    scaled = [v for v in variants if _autoscaled((provisioned or {}).get(v))]
    notes = [f"{_who(variants, v)}{AUTOSCALED}" for v in scaled]
    if any("kv_transfer" in (usage.get(v) or {}) for v in variants):
        notes += PD_NOTES
    notes += [
        skew_note(_who(variants, v), usage[v])
        for v in variants
        if v not in scaled and _skewed(usage.get(v))
    ]
    notes += admitted_only_note(variants, requests)
    if len(variants) > 1 and not _any_backlog(variants, requests):
        notes.append(f"{NO_BACKLOG} (requests of two tenants never waited at once)")
    return [*notes, SETTINGS_NOTES]


def _who(variants: list[str], variant: str) -> str:
    return f"variant {variant}: " if len(variants) > 1 else ""


def _autoscaled(block: Any) -> bool:
    """As `outputs.provisioned_table.autoscaled_variants`: some pool had a warm-up."""
    return any_autoscaled_pool(block)


def _skewed(usage: Any) -> bool:
    return isinstance(usage, dict) and "request_skew" in usage and skewed(usage)


def _any_backlog(variants: list[str], requests: pd.DataFrame) -> bool:
    """Whether some variant held a backlog; a folder without the wait columns may have."""
    if not {"tenant_id", "arrival_ms", "queue_wait_ms"} <= set(requests.columns):
        return True  # unknown: claim nothing
    return any(had_backlog(requests[requests["variant"] == v]) for v in variants)
