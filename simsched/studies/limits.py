"""How large a sweep or a plan's candidate list may be, checked before anything is built.

`--seeds 1000000000` or `--range 1:1e12` would build a billion points or values in memory
before a single run; such grids are refused at once. A sweep that is large but possible runs,
with a warning on stderr saying how many runs it holds.
"""

from __future__ import annotations

import math
import sys

from simsched.errors import InputError

MAX_POINTS = 1_000_000  # sweep points (grid x seeds): their tasks alone take about a GiB
WARN_POINTS = 10_000
MAX_CANDIDATES = 1_000_000  # plan values; a bisection probes about log2 of them


def check_points(grid_points: int, seeds: int, label: str) -> None:
    total = grid_points * seeds
    if total > MAX_POINTS:
        raise InputError(
            label,
            "--seeds" if seeds > 1 else "--grid",
            f"{grid_points:,} grid points x {seeds:,} seeds = {total:,} runs, more than a sweep "
            f"may hold ({MAX_POINTS:,}); split it into smaller sweeps",
        )
    if total > WARN_POINTS:
        print(f"{label}: warning: this sweep holds {total:,} runs", file=sys.stderr)


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
