"""A plan's report: each SLO metric against the knob, a line per `--over` combination, with the
target drawn and each combination's answer marked. It reads the plan's JSON document, so the
outputs never depend on the study that made it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from simsched.outputs.report.page import Plot, decorate, save, small_multiples, write_index
from simsched.outputs.report_files import PLAN_REPORT_FILES

SLO_PATTERN_OPS = ("<=", ">=", "<", ">")


def write_plan_report(
    document: dict[str, Any], out_dir: str | Path, inputs: Iterable[Path] = ()
) -> Path:
    """The plan's report in `out_dir` (`--report`), none of its files one of the `inputs`."""
    from simsched.outputs.report import publish  # the package imports this module

    build = lambda folder: plan_report(document, folder)  # noqa: E731
    return publish(out_dir, build, PLAN_REPORT_FILES, inputs, "--report")


def plan_report(document: dict[str, Any], folder: Path) -> None:
    plans = document.get("combinations") or [document]
    plots = [slo_plot(document, plans, folder)]
    knob = document["knob"]
    rows = [
        {
            **plan.get("over", {}),
            knob: plan.get("answer"),
            "cost_per_hour": plan.get("cost_per_hour"),
        }
        for plan in plans
    ]
    table = pd.DataFrame(rows)
    write_index(folder, f"plan: {document['knob']}", plots, [(document["message"], table)])


def slo_plot(document: dict[str, Any], plans: list[dict], folder: Path) -> Plot:
    slos = document["slos"]
    fig, axes = small_multiples(len(slos), sharex=True)
    for ax, text in zip(axes, slos, strict=False):
        key, op, limit = _split(text)
        for plan in plans:
            probes = sorted(plan["probes"], key=lambda p: p["value"])
            xs = [p["value"] for p in probes if p["metrics"].get(key) is not None]
            ys = [p["metrics"][key] for p in probes if p["metrics"].get(key) is not None]
            label = ", ".join(f"{v}" for v in plan.get("over", {}).values()) or "probes"
            (line,) = ax.plot(xs, ys, marker="o", label=label)
            _bands(ax, probes, key, line.get_color())
            if plan.get("answer") is not None:
                at = next(p for p in probes if p["value"] == plan["answer"])
                ax.plot([plan["answer"]], [at["metrics"][key]], marker="*", markersize=14,
                        color=line.get_color(), linestyle="none")  # fmt: skip
        ax.axhline(limit, color="red", linestyle="--", linewidth=1, label=f"target {op} {limit:g}")
        decorate(ax, text, document["knob"], key)
    return save(
        fig,
        folder,
        "plan_slos.png",
        "Each SLO metric against the knob",
        "Every probe (mean across seeds, bars: the interval), the target (red, dashed) and "
        "each combination's answer (star).",
    )


def _bands(ax, probes: list[dict], key: str, color: str) -> None:
    spans = [(p["value"], p["intervals"][key]) for p in probes if "intervals" in p]
    spans = [(x, e) for x, e in spans if e["mean"] is not None]
    if spans:
        ax.errorbar(
            [x for x, _ in spans],
            [e["mean"] for _, e in spans],
            yerr=[
                [e["mean"] - e["low"] for _, e in spans],
                [e["high"] - e["mean"] for _, e in spans],
            ],
            fmt="none",
            ecolor=color,
            capsize=3,
        )


def _split(text: str) -> tuple[str, str, float]:
    for op in SLO_PATTERN_OPS:
        if op in text:
            key, limit = text.split(op, 1)
            return key.strip(), op, float(limit)
    raise ValueError(text)
