"""What every row needs to know: where things are, and how many runs to take the best of."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Context:
    repo: Path
    out: Path  # bench-out/: generated traces and the runs' output files
    reference: Path  # the folder holding the reference loop, seed_scheduler.py
    repeat: int

    @property
    def simsched(self) -> str:
        return str(Path(sys.executable).parent / "simsched")

    def benchmark(self, name: str) -> str:
        return str(self.repo / "benchmarks" / name)

    def trace(self, requests: int) -> Path:
        """A noisy-neighbor-like trace of `requests` requests (benchmarks/make_trace.py),
        written once and reused by later runs."""
        path = self.out / f"trace_{requests}.csv"
        if not path.exists():
            maker = [sys.executable, self.benchmark("make_trace.py"), str(path)]
            subprocess.run([*maker, "--requests", str(requests)], check=True)
        return path


# Why a row cannot run here (a missing input), or None when it can.
Need = Callable[[Context], "str | None"]


def reference_loop(ctx: Context) -> str | None:
    if (ctx.reference / "seed_scheduler.py").is_file():
        return None
    where = "--reference DIR, or make bench REFERENCE=DIR"
    return f"no reference loop (seed_scheduler.py) in {ctx.reference}; give its folder: {where}"


def data_file(name: str) -> Need:
    def need(ctx: Context) -> str | None:
        if (ctx.repo / "scenarios" / "data" / name).exists():
            return None
        return f"no scenarios/data/{name}: run make traces (see scenarios/README.md)"

    return need


def first_missing(needs: tuple[Need, ...], ctx: Context) -> str | None:
    return next((why for why in (need(ctx) for need in needs) if why), None)
