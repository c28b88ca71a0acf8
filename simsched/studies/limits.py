"""How large a sweep or a plan may be, checked before anything is built or run.

`--seeds 1000000`, a grid of a million points or `--over` with a thousand values would build
their tasks in memory and then run for days; each is refused at once, the message giving the
count and the `limits` setting that bounds it (the scenario's `limits` section, raised with
`--set limits.max_study_runs=...`). A plan's runs are estimated: its probes per search are those
of a bisection over the candidates. A plan's candidate list has a bound of its own
(`MAX_CANDIDATES`), whatever the limits: it is built whole.
"""

from __future__ import annotations

import math

from simsched.errors import InputError

MAX_CANDIDATES = 1_000_000  # plan values; a bisection probes about log2 of them


def check_count(
    count: int, limit: int, key: str, what: str, label: str, where: str, detail: str = ""
) -> None:
    """Refuse `count` `what` (`detail` = how it is made up) beyond `limits.<key>` = `limit`,
    saying how to raise it."""
    if count > limit:
        made = f"{detail} = " if detail else ""
        raise InputError(
            label,
            where,
            f"{made}{count:,} {what}, more than limits.{key} ({limit:,}); ask for less, or raise "
            f"it (--set limits.{key}={count}) if the machine can take it",
        )


def check_seeds(seeds: int, limits, label: str) -> None:
    check_count(seeds, limits.max_seeds, "max_seeds", "seeds", label, "--seeds")


def check_points(grid_points: int, seeds: int, limits, label: str) -> None:
    """A sweep of `grid_points` points, each run with `seeds` seeds, within the limits."""
    check_seeds(seeds, limits, label)
    key = "max_grid_points"
    check_count(grid_points, limits.max_grid_points, key, "grid points", label, "--grid")
    total = grid_points * seeds
    detail = f"{grid_points:,} grid points x {seeds:,} seeds"
    where = "--seeds" if seeds > 1 else "--grid"
    check_count(total, limits.max_study_runs, "max_study_runs", "runs", label, where, detail)


def check_combinations(combinations: int, limits, label: str) -> None:
    key, what = "max_combinations", "--over combinations"
    check_count(combinations, limits.max_combinations, key, what, label, "--over")


def check_plan_runs(combinations: int, candidates: int, seeds: int, limits, label: str) -> None:
    """A plan's runs: combinations x probes per search (a bisection's) x seeds."""
    probes = probes_per_search(candidates)
    detail = f"{combinations:,} combinations x {probes} probes x {seeds:,} seeds"
    total = combinations * probes * seeds
    key = "max_study_runs"
    check_count(total, limits.max_study_runs, key, "runs (about)", label, "--seeds", detail)


def probes_per_search(candidates: int) -> int:
    """A bisection's probes over `candidates` values: HI, LO, then halving what is left."""
    return min(candidates, 2 + math.ceil(math.log2(max(candidates, 1))))


def candidate_count(lo: float, hi: float, step: float) -> float:
    """LO, LO+S, ..., HI counted without overflow: integers exactly, floats as inf when the
    range or the count is beyond a float (`-1.7e308:1.7e308`, a step of 5e-324)."""
    if not step > 0:
        return math.inf
    if all(isinstance(n, int) for n in (lo, hi, step)):
        return (hi - lo) // step + 1  # Python integers: exact at any size
    try:
        count = (hi - lo) / step
    except OverflowError:  # an integer range too wide for a float division
        return math.inf
    return math.floor(count) + 1 if math.isfinite(count) else math.inf


def check_candidates(lo: float, hi: float, step: float, label: str) -> None:
    count = candidate_count(lo, hi, step)
    if not count <= MAX_CANDIDATES:
        raise InputError(
            label,
            "--step",
            f"{lo:g}..{hi:g} in steps of {step:g} gives {_shown(count)}, more than the "
            f"{MAX_CANDIDATES:,} a plan may try; give a larger --step or a narrower --range",
        )


def _shown(count: float) -> str:
    try:
        value = float(count)  # an exact integer count may be beyond any float
    except OverflowError:
        value = math.inf
    return f"{value:,.3g} candidate values" if math.isfinite(value) else "countless values"
