"""Goals, the line each measurement becomes, the table and the exit status."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

PASS, FAIL, INFO, SKIP = "PASS", "FAIL", "INFO", "SKIP"
METRIC_WORDS = {"wall": "wall time", "cpu": "CPU time", "rss": "peak memory"}


@dataclass(frozen=True)
class Goal:
    """A bound on a ratio: at most `limit` (a cost), or at least `limit` (a floor)."""

    metric: str  # "wall", "cpu" or "rss": what the ratio compares
    limit: float
    floor: bool = False

    def met(self, ratio: float) -> bool:
        return ratio >= self.limit if self.floor else ratio <= self.limit

    def text(self) -> str:
        return f"{'>=' if self.floor else '<='} {self.limit:.2f}x"


@dataclass(frozen=True)
class Outcome:
    """One line of the table: a row's measured value against its goal, or why it has none."""

    row: str
    what: str
    value: str
    goal: str
    status: str
    detail: str = ""


def judged(row: str, goal: Goal, ratio: float, detail: str) -> Outcome:
    """A ratio against its goal: PASS or FAIL."""
    what = f"{METRIC_WORDS[goal.metric]} ratio"
    status = PASS if goal.met(ratio) else FAIL
    return Outcome(row, what, f"{ratio:.2f}x", goal.text(), status, detail)


def skipped(row: str, why: str) -> Outcome:
    return Outcome(row, "skipped", "-", "-", SKIP, why)


def table(outcomes: Iterable[Outcome]) -> str:
    """The closing table: row, what, value, goal, verdict, and a note saying why a row was
    skipped or could not be measured."""
    header = ("row", "measured", "value", "goal", "verdict", "note")
    lines = [(o.row, o.what, o.value, o.goal, o.status, note(o)) for o in outcomes]
    widths = [max(len(cell) for cell in column) for column in zip(header, *lines, strict=True)]
    rows = [header, tuple("-" * w for w in widths), *lines]
    cells = (zip(row, widths, strict=True) for row in rows)
    return "\n".join("  ".join(c.ljust(w) for c, w in row).rstrip() for row in cells)


def note(outcome: Outcome) -> str:
    if outcome.status == SKIP:
        return f"skipped: {outcome.detail}"
    return outcome.detail if outcome.value == "-" else ""


def progress_line(outcome: Outcome) -> str:
    """The line printed as a row finishes, before the table."""
    if outcome.status == SKIP:
        return f"SKIP: {outcome.detail}"
    goal = f" (goal {outcome.goal})" if outcome.goal != "-" else ""
    return f"{outcome.status} {outcome.what} {outcome.value}{goal}: {outcome.detail}"


def machine_line(cores: int, load: float) -> str:
    """How busy the machine is: absolute figures (the speed budgets, the planning throughput)
    move with it; the ratios much less, since both sides share the load."""
    line = f"machine: {cores} cores, load average {load:.1f} over the last minute"
    if load > cores:
        line += "; busy: more runnable processes than cores, so absolute times are inflated"
    return line


def exit_status(outcomes: Iterable[Outcome]) -> int:
    """1 when any goal is missed; skips and information never fail the run."""
    return 1 if any(o.status == FAIL for o in outcomes) else 0
