"""Sweep panels are about the tenants the SLOs name: those in colour, the rest grey behind."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from simsched.outputs.report import sweep_report, sweep_targets
from simsched.outputs.report.sweep_focus import BACKGROUND, BACKGROUND_LABEL, focus_rows


def table(judged: set[str]) -> pd.DataFrame:
    """Four tenants and `all` at 1..3 replicas; `slo_met` only for the tenants in `judged`."""
    rows = []
    for replicas in (1, 2, 3):
        for tenant in ("chat", "ide", "batch", "rag", "all"):
            met = (replicas > 1) if tenant in judged or tenant == "all" else None
            rows.append({"point": replicas, "cluster.replicas": replicas, "variant": "v",
                         "tenant": tenant, "p99_ttft_ms": 900 / replicas + len(tenant),
                         "slo_met": met, "error": None})  # fmt: skip
    return pd.DataFrame(rows)


def test_the_named_tenant_in_colour_the_rest_grey_under_one_legend_entry(
    figures: dict, tmp_path: Path
) -> None:
    frame = table({"chat", "ide", "batch", "rag"})
    targets = sweep_targets(frame, ["chat.p99_ttft_ms<=500"], "t.csv")
    sweep_report(frame, "t.csv", tmp_path, targets)
    ax = figures["sweep_p99_ttft_ms.png"].axes[0]
    lines = {line.get_label(): line for line in ax.lines}
    assert "chat" in lines and "all" in lines and BACKGROUND_LABEL in lines
    assert "ide" not in lines and "batch" not in lines and "rag" not in lines
    grey = [line for line in ax.lines if line.get_color() == BACKGROUND["color"]]
    assert len(grey) == 3  # ide, batch, rag: behind the others
    assert all(line.get_zorder() < lines["chat"].get_zorder() for line in grey)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:2] == ["chat", "all"] and legend.count(BACKGROUND_LABEL) == 1


def test_without_a_tenant_target_the_tenants_with_an_slo_are_the_focus() -> None:
    no_target: list = []
    assert focus_rows(table({"chat", "ide"}), no_target) == {"chat", "ide"}
    # every tenant judged, or every tenant named: nothing to put behind
    assert focus_rows(table({"chat", "ide", "batch", "rag"}), no_target) is None
    frame = table(set())
    every = sweep_targets(frame, [f"{t}.p99_ttft_ms<=500" for t in ("chat", "ide", "batch", "rag")],
                          "t.csv")  # fmt: skip
    assert focus_rows(frame, every) is None
