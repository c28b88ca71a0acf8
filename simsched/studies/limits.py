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


def check_candidates(lo: float, hi: float, step: float, label: str) -> None:
    count = math.floor((hi - lo) / step) + 1 if step > 0 else math.inf
    if not count <= MAX_CANDIDATES:
        raise InputError(
            label,
            "--step",
            f"{lo:g}..{hi:g} in steps of {step:g} is {count:,.3g} candidate values, more than "
            f"{MAX_CANDIDATES:,}; give a larger --step",
        )
