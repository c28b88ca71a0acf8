"""The terminal table's chargeback rows, shown only where some variant charges back: what
`provisioned` counts, said in the row's label, and where the idle draw comes from (a measured
figure, an assumption or the scenario's own)."""

from __future__ import annotations

from typing import Any


def chargeback_rows(result: Any) -> list[tuple[str, list[str]]]:
    blocks = [result.chargeback.get(v) for v in result.variants]
    if not any(blocks):
        return []
    return [
        (
            "  provisioned $ (all GPUs, 0 to last iteration)",
            [f"{b['provisioned_dollars']:.4f}" if b else "" for b in blocks],
        ),
        (
            "  busy $ (attributed to tenants)",
            [f"{b['busy_dollars']:.4f}" if b else "" for b in blocks],
        ),
        ("  idle watts a GPU (source)", [_idle(b) for b in blocks]),
    ]


def _idle(block: dict[str, Any] | None) -> str:
    if not block:
        return ""
    source = block["power_sources"]["idle_watts"]
    kind = next((k for k in ("measured", "assumed", "given") if source.startswith(k)), "datasheet")
    return f"{block['idle_watts']:g} ({kind})"
