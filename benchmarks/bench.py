"""`make bench`: speed guarded by goals, each a ratio to a yardstick measured in the same run.

Runs every row of benchkit/rows.py (or those named by --only), prints each row's lines as it
finishes and then one table: row, what was measured, value, goal, PASS/FAIL (INFO for figures
without a goal, SKIP with the reason when an input such as a trace or the reference loop is
missing; a skip never fails). Exits 1 when any goal is missed, 2 on a bad option.

    python benchmarks/bench.py [--only ROW ...] [--repeat N] [--reference DIR] [--list]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from benchkit.context import Context, first_missing
from benchkit.measure import CommandFailed
from benchkit.rows import ROWS
from benchkit.verdicts import (
    FAIL,
    Outcome,
    exit_status,
    machine_line,
    progress_line,
    skipped,
    table,
)

REPO = Path(__file__).resolve().parents[1]


def run_row(row, ctx: Context) -> list[Outcome]:
    """A row's lines; a missing input is a skip, a command that fails is a FAIL that says why."""
    why = first_missing(row.needs, ctx)
    if why:
        return [skipped(row.name, why)]
    try:
        return row.run(ctx)
    except CommandFailed as failure:
        return [Outcome(row.name, "run", "-", "-", FAIL, str(failure).strip()[-300:])]


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = [row.name for row in ROWS]
    parser.add_argument("--only", nargs="+", choices=names, metavar="ROW",
                        help=f"run only these rows: {', '.join(names)}")  # fmt: skip
    # 2: best of two keeps the whole bench under ten minutes on 2 cores (docs/benchmarks.md)
    parser.add_argument("--repeat", type=int, default=2, help="runs per side; the best counts")
    parser.add_argument("--reference", type=Path, default=REPO.parent / "shared" / "reference",
                        help="folder of the reference loop (seed_scheduler.py)")  # fmt: skip
    parser.add_argument("--list", action="store_true", help="list the rows and exit")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.list:
        print("\n".join(f"{row.name}: {row.title}" for row in ROWS))
        return 0
    out = REPO / "bench-out"
    out.mkdir(exist_ok=True)
    ctx = Context(repo=REPO, out=out, reference=args.reference.resolve(), repeat=args.repeat)
    outcomes: list[Outcome] = []
    print(machine_line(os.cpu_count() or 1, os.getloadavg()[0]), flush=True)
    for row in ROWS:
        if args.only and row.name not in args.only:
            continue
        print(f"== {row.name}: {row.title}", flush=True)
        for outcome in run_row(row, ctx):
            print(f"   {progress_line(outcome)}", flush=True)
            outcomes.append(outcome)
    print()
    print(table(outcomes))
    print(machine_line(os.cpu_count() or 1, os.getloadavg()[0]))
    return exit_status(outcomes)


if __name__ == "__main__":
    sys.exit(main())
