"""How `simsched plan` prints: each probe as a row when it is known, then (with `--over`) one row
per combination, then the answer, its notes (the shed guard, the decision rule, the margins)
and any warnings."""

from __future__ import annotations

from typing import Any

import typer

from simsched.results.metric_ranges import clip, interval_digits, rounded_interval


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def estimate_cell(probe, key: str) -> str:
    found = probe.estimates.get(key)
    if found is None or found.n <= 1 or found.mean is None or found.high == found.low:
        return cell(probe.metrics[key])
    metric = key.rpartition(".")[2]
    if (clip(metric, found.low), clip(metric, found.high)) != (found.low, found.high):
        return rounded_interval(metric, found.mean, found.low, found.high)  # no shed rate < 0
    return interval_text(found.mean, (found.high - found.low) / 2)


def interval_text(mean: float, half: float) -> str:
    """`413±180`, `51.3±2.4`: the half-width to two significant digits, never in e-notation,
    and the mean to the same decimal place (more digits than the interval would be noise)."""
    digits = interval_digits(half)
    return f"{mean:.{digits}f}±{half:.{digits}f}"


def money_cell(cost: float | None) -> str:
    """Dollars to the cent, as the answer's `$30.77/hour` shows them."""
    return "-" if cost is None else f"{cost:.2f}"


class ProbePrinter:
    """Each probe as a table row on stdout, as soon as it is known."""

    def __init__(self, knob: str, over: list[str]) -> None:
        self.knob, self.over = knob, over
        self.columns: list[str] = []

    def row(self, cells: list[object]) -> str:
        return "  ".join(
            f"{c!s:>{max(len(h), 8)}}" for c, h in zip(cells, self.columns, strict=True)
        )

    def __call__(self, probe) -> None:
        # the judged variant's tenants, `all` first, unless an SLO already shows the rate
        shed = [t for t in probe.shed if f"{t}.shed_rate" not in probe.metrics]
        if not self.columns:
            self.columns += [*self.over, self.knob, "met", *probe.metrics]
            self.columns += [f"{t}.shed_rate" for t in shed]
            typer.echo(self.row(self.columns))
        cells = [cell(v) for _, v in probe.combo]
        cells += [probe.value, "yes" if probe.met else "no"]
        cells += [estimate_cell(probe, key) for key in probe.metrics]
        cells += [cell(probe.shed[t]) for t in shed]
        typer.echo(self.row(cells))


def combination_table(fleet) -> list[str]:
    """One row per combination: its answer, GPUs, cost, each SLO's value and margin there."""
    keys = [slo.key for slo in fleet.slos]
    head = [*(p for p, _ in fleet.plans[0].combo), fleet.knob, "GPUs", "$/hour"]
    head += [part for key in keys for part in (key, f"{key}.margin")]  # one margin per SLO
    shed = "all.shed_rate" not in keys
    head += ["all.shed_rate"] if shed else []
    lines, reasons = [head], [""]
    for plan in fleet.plans:
        at = plan.at_answer
        cells = [cell(v) for _, v in plan.combo]
        reasons.append(f"  {plan.error}" if plan.error else "")  # why the scenario rejects it
        if at is None:
            why = "invalid" if plan.error else "none meets"
            lines.append([*cells, why, *["-"] * (len(head) - len(cells) - 1)])
            continue
        cells += [cell(plan.answer), cell(plan.gpus), money_cell(plan.cost_per_hour)]
        for key in keys:
            cells += [estimate_cell(at, key), cell(at.margins[key])]
        lines.append([*cells, *([cell(at.shed["all"])] if shed else [])])
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(head))]
    return [
        "  ".join(f"{c!s:>{w}}" for c, w in zip(line, widths, strict=True)) + reason
        for line, reason in zip(lines, reasons, strict=True)
    ]


def print_result(fleet) -> None:
    if len(fleet.plans) > 1:
        typer.echo("")
        for line in combination_table(fleet):
            typer.echo(line)
    typer.echo(fleet.message)
    for note in fleet.notes:
        typer.echo(f"note: {note}")
    for warning in fleet.warnings:
        typer.echo(f"warning: {warning}")
