"""A plan's report: each SLO metric against the knob, a line per `--over` combination, with the
target drawn and each combination's answer marked. It reads the plan's JSON document, so the
outputs never depend on the study that made it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from simsched.outputs.report.legends import shared_legend
from simsched.outputs.report.page import Plot, decorate, save, small_multiples, write_index
from simsched.outputs.report.targets import TARGET_GID
from simsched.outputs.report_files import PLAN_REPORT_FILES
from simsched.results.metric_ranges import clip

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
            "GPUs": plan.get("gpus"),
            "cost": money(plan.get("cost_per_hour")),
            "result": plan.get("error")
            or (None if plan.get("answer") is not None else "none meets"),
        }
        for plan in plans
    ]
    # objects, not floats: a column with an empty cell must still print 3, not 3.0
    table = pd.DataFrame(rows, dtype=object).dropna(axis="columns", how="all")
    table = table.where(table.notna(), "")  # an empty cell, never "None"
    scenario = document.get("scenario")
    title = f"plan: {scenario}" if scenario else f"plan: {knob}"
    write_index(folder, title, plots, [("Answer per combination", table)],
                description=document["message"], lines=plan_lines(document))  # fmt: skip


def _result(plan: dict[str, Any]) -> str | None:
    """Why a combination has no answer (None when it has one: the column then drops)."""
    if plan.get("error"):
        return plan["error"]
    return None if plan.get("answer") is not None else "none meets"


def plan_lines(document: dict[str, Any]) -> list[str]:
    """What the console prints beside the table: the question (knob, variant, SLOs, what
    `--minimize` chose by), then every note (the shed guard, seeds and decision rule, margins,
    GPUs and cost, price sources, shedding probes) and warning."""
    goal = "largest" if document.get("direction") == "maximize" else "smallest"
    judged = f", judged on variant {document['variant']}" if document.get("variant") else ""
    question = f"The {goal} {document['knob']} meeting every SLO{judged}; "
    question += f"SLOs: {', '.join(document['slos'])}."
    if document.get("minimize") not in (None, "value"):
        question += f" Among the combinations: minimize {document['minimize']}."
    several = document.get("seeds", 1) > 1  # then a note gives the seeds and the rule
    lines = [question] if several else [question, "One seed per probe."]
    lines += [f"note: {note}" for note in document.get("notes", [])]
    lines += [f"warning: {warning}" for warning in document.get("warnings", [])]
    return lines


def money(cost: float | None) -> str | None:
    """As the console writes it: `$30.77/hour`."""
    return None if cost is None else f"${cost:.2f}/hour"


def slo_plot(document: dict[str, Any], plans: list[dict], folder: Path) -> Plot:
    slos = document["slos"]
    fig, axes = small_multiples(len(slos), sharex=True)
    for ax, text in zip(axes, slos, strict=False):
        key, op, limit = _split(text)
        for plan in plans:
            probes = sorted(plan["probes"], key=lambda p: p["value"])
            probes = [p for p in probes if p["metrics"].get(key) is not None]
            xs = [p["value"] for p in probes]
            ys = [p["metrics"][key] for p in probes]
            label = ", ".join(f"{v}" for v in plan.get("over", {}).values()) or "probes"
            (line,) = ax.plot(xs, ys, marker="o", label=label)
            _bands(ax, probes, key, line.get_color())
            _mark_shedding(ax, probes, key)
            if plan.get("answer") is not None:
                at = next(p for p in probes if p["value"] == plan["answer"])
                ax.plot([plan["answer"]], [at["metrics"][key]], marker="*", markersize=14,
                        color=line.get_color(), linestyle="none")  # fmt: skip
        ax.axhline(limit, color="red", linestyle="--", linewidth=1, gid=TARGET_GID,
                   label=f"target {op} {limit:g}")  # fmt: skip
        decorate(ax, text, document["knob"], key)
    shared_legend(fig, list(fig.axes))  # under the panels, not on the lines they fill
    return save(
        fig,
        folder,
        "plan_slos.png",
        "Each SLO metric against the knob",
        "Every probe (mean across seeds, bars: the interval, clipped to the metric's range), the "
        "target (red, dashed) and each combination's answer (star). A red ring marks a probe "
        "that shed requests: its latencies cover the admitted requests only, so they can be "
        "lower than at a larger fleet that admits everything.",
    )


def _mark_shedding(ax, probes: list[dict], key: str) -> None:
    shedding = [p for p in probes if (p.get("shed_rate") or {}).get("all")]
    if shedding:
        # one legend entry for every combination's rings: they mean the same
        said = SHED_LABEL in [line.get_label() for line in ax.lines]
        ax.plot([p["value"] for p in shedding], [p["metrics"][key] for p in shedding],
                marker="o", markersize=11, markerfacecolor="none", markeredgecolor="red",
                linestyle="none", label="_nolegend_" if said else SHED_LABEL)  # fmt: skip


SHED_LABEL = "sheds requests (latency: admitted only)"


def _bands(ax, probes: list[dict], key: str, color: str) -> None:
    spans = [(p["value"], p["intervals"][key]) for p in probes if "intervals" in p]
    spans = [(x, e) for x, e in spans if e["mean"] is not None]
    metric = key.rpartition(".")[2]
    spans = [(x, e | {"low": clip(metric, e["low"]), "high": clip(metric, e["high"])})
             for x, e in spans]  # fmt: skip
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
