"""The kinds of row bench knows: a comparison with a yardstick, planning throughput, phase
times (information) and the speed budgets. Each has a name, a title and `run(ctx)`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass

from .budgets import run_budgets
from .context import Context, Need, reference_loop
from .measure import Run, alternate, measure
from .verdicts import FAIL, INFO, PASS, Goal, Outcome, judged

Command = Callable[[Context], list[str]]


def describe(label: str, run: Run) -> str:
    return f"{label} {run.wall_s:.2f} s wall, {run.cpu_s:.2f} s CPU, {run.peak_rss_mib:.0f} MiB"


# A single-threaded process whose wall time is this many times its CPU time waited for a core
# most of the time: the machine was busy, and its wall times say more about the load than the code.
BUSY = 1.5


def waiting(ours: Run, theirs: Run) -> float:
    """The larger side's wall time over its CPU time: how long it waited for a core."""
    return max(ours.wall_s / ours.cpu_s, theirs.wall_s / theirs.cpu_s)


def stand_in(goal: Goal, busy: bool) -> Goal:
    """On a busy machine a wall-time goal is judged on CPU time, what the wall time would be with
    a core to itself: the wall ratio then measures the load more than the code."""
    return Goal("cpu", goal.limit, goal.floor) if busy and goal.metric == "wall" else goal


def load_note(ours: Run, theirs: Run) -> str:
    """On a busy machine, the CPU-time ratio beside the wall-time one, so neither misleads."""
    if waiting(ours, theirs) < BUSY:
        return ""
    return (
        f"; busy machine (wall up to {waiting(ours, theirs):.1f}x CPU time), so wall-time goals "
        f"are judged on CPU time: wall ratio {ours.wall_s / theirs.wall_s:.2f}x, "
        f"CPU ratio {ours.cpu_s / theirs.cpu_s:.2f}x"
    )


@dataclass(frozen=True)
class Comparison:
    """`subject` against `yardstick`, both whole processes run in turns, best of `repeat` each;
    one verdict per goal, each on the ratio subject / yardstick of its metric."""

    name: str
    title: str
    subject: Command
    yardstick: Command
    goals: tuple[Goal, ...]
    labels: tuple[str, str] = ("simsched", "reference")
    needs: tuple[Need, ...] = ()

    def run(self, ctx: Context) -> list[Outcome]:
        commands = {self.labels[0]: self.subject(ctx), self.labels[1]: self.yardstick(ctx)}
        runs = alternate(commands, ctx.repeat)
        ours, theirs = (runs[label] for label in self.labels)
        detail = f"{describe(self.labels[0], ours)}; {describe(self.labels[1], theirs)}"
        detail += load_note(ours, theirs)
        busy = waiting(ours, theirs) >= BUSY
        goals = [stand_in(goal, busy) for goal in self.goals]
        return [
            judged(self.name, goal, ours.metric(goal.metric) / theirs.metric(goal.metric), detail)
            for goal in goals
        ]


@dataclass(frozen=True)
class PlanThroughput:
    """Configurations evaluated per hour by a seeded plan (benchmarks/plan_bench.py), serially
    and with each of `jobs`, as whole processes. The floor: a plan must evaluate a configuration
    in no more wall time than the reference loop takes for the same number of requests, the
    pace row `batching_100k` asks of one continuous-batching run, which a plan should beat
    since it reuses workloads and keeps its workers warm. Without the reference loop the
    throughput is printed with no floor."""

    name: str
    title: str
    jobs: tuple[int, ...] = (1, 2)
    seeds: int = 2
    needs: tuple[Need, ...] = ()

    def plan(self, ctx: Context, *options: str) -> list[str]:
        return [sys.executable, ctx.benchmark("plan_bench.py"), f"--seeds={self.seeds}", *options]

    def run(self, ctx: Context) -> list[Outcome]:
        shape = json.loads(measure(self.plan(ctx, "--count")).stdout)
        commands = {jobs_label(j): self.plan(ctx, f"--jobs={j}") for j in self.jobs}
        with_floor = reference_loop(ctx) is None
        if with_floor:
            trace = ctx.trace(shape["requests"])
            commands["reference"] = reference_command(ctx, trace, f"reference_{trace.stem}.csv")
        runs = alternate(commands, ctx.repeat)
        reference = runs.get("reference")
        plans = [label for label in commands if label != "reference"]
        return [self.verdict(label, runs[label], shape, reference) for label in plans]

    def verdict(self, label: str, run: Run, shape: dict, reference: Run | None) -> Outcome:
        """Configurations an hour against the reference loop's pace on the same requests. On a
        busy machine the serial plan is judged on CPU time, as the ratio rows are: the floor (the
        reference's wall time) and the plan's wall time would measure the load. A plan with
        worker processes is judged on wall time only: its pool workers' CPU is not counted in
        the measured process's (they are not its waited-for children), so its CPU figure is not
        printed."""
        configurations = json.loads(run.stdout)["configurations"]
        what = f"configurations/hour, {label}"
        serial = label == jobs_label(1)
        cpu = f", {run.cpu_s:.1f} s CPU" if serial else ""
        detail = (
            f"{configurations} configurations of about {shape['requests']:,} requests "
            f"({shape['seeds']} seeds) in {run.wall_s:.1f} s wall{cpu}, {run.peak_rss_mib:.0f} MiB"
        )
        per_hour = configurations * 3600 / run.wall_s
        if reference is None:
            return Outcome(self.name, what, f"{per_hour:,.0f}", "-", INFO, detail + "; no floor: "
                           "the reference loop is missing")  # fmt: skip
        floor = 3600 / reference.wall_s
        load = waiting(run, reference) if serial else reference.wall_s / reference.cpu_s
        if load >= BUSY and serial:
            per_hour, floor = configurations * 3600 / run.cpu_s, 3600 / reference.cpu_s
            what = f"configurations/CPU-hour, {label}"
            detail += (
                f"; busy machine (wall up to {load:.1f}x CPU time): judged on CPU time, against "
                "the reference loop's CPU pace"
            )
        elif load >= BUSY:
            detail += (
                f"; busy machine (the reference's wall {load:.1f}x its CPU time): the floor and "
                "this wall time move with the load, rerun on a quieter machine"
            )
        status = PASS if per_hour >= floor else FAIL
        return Outcome(self.name, what, f"{per_hour:,.0f}", f">= {floor:,.0f}", status, detail)


def jobs_label(jobs: int) -> str:
    return "serial" if jobs == 1 else f"--jobs {jobs}"


@dataclass(frozen=True)
class Phases:
    """Information: a scenario's generation, simulation and result times (benchmarks/phases.py)."""

    name: str
    title: str
    scenario: str
    needs: tuple[Need, ...] = ()

    def run(self, ctx: Context) -> list[Outcome]:
        run = measure([sys.executable, ctx.benchmark("phases.py"), ctx.benchmark(self.scenario)])
        r = json.loads(run.stdout)
        detail = (
            f"{r['requests']:,} requests; generate {r['generate_s']:.2f} s, simulate "
            f"{r['simulate_s']:.2f} s, results {r['results_s']:.2f} s; peak {r['peak_rss_mib']} MiB"
            f"; the process: {run.wall_s:.1f} s wall, {run.cpu_s:.1f} s CPU"  # wall >> CPU: busy
        )
        rate = f"{r['requests_per_s']:,}"
        return [Outcome(self.name, "simulated requests/s", rate, "-", INFO, detail)]


@dataclass(frozen=True)
class SpeedBudgets:
    """The wall-clock checks moved out of the test suite (benchkit/budgets.py)."""

    name: str
    title: str
    needs: tuple[Need, ...] = ()

    def run(self, ctx: Context) -> list[Outcome]:
        outcomes = run_budgets(ctx.repo, ctx.out, ctx.repeat)
        return [Outcome(f"{self.name}: {o.row}", *_fields(o)) for o in outcomes]


def _fields(o: Outcome) -> tuple[str, str, str, str, str]:
    return o.what, o.value, o.goal, o.status, o.detail


def reference_command(ctx: Context, trace, out_name: str) -> list[str]:
    """The reference loop reading `trace`, simulating it and writing its outcomes."""
    runner = ctx.benchmark("reference_run.py")
    return [sys.executable, runner, str(ctx.reference), str(trace), str(ctx.out / out_name)]


__all__ = ["FAIL", "Comparison", "PlanThroughput", "Phases", "SpeedBudgets", "reference_command"]
