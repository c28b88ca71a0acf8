"""Planning throughput: configurations fully evaluated per hour for a realistic plan.

scenarios/fleet_planning.yaml at 10 minutes of traffic (three tenants, about 115 requests/s,
continuous batching, so some 69,000 requests per configuration): which GPU (A100 or H100) and
how many replicas (1 to 8) meet the interactive p99 TTFT target at the lowest cost. A
configuration is one simulated run (a probe at one seed). The plan runs serially, then with
--jobs; each prints its wall time, the runs it made and the runs per hour.

    python benchmarks/plan_bench.py [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios" / "fleet_planning.yaml"
TEN_MINUTES = [f"tenants.{t}.arrivals.duration_s=600" for t in ("chat", "ide", "batch")]


def run_plan(jobs: int) -> tuple[float, int, str]:
    from simsched.studies.plan import plan

    start = time.perf_counter()
    result = plan(
        SCENARIO,
        "cluster.replicas",
        "1:8",
        ["interactive.p99_ttft_ms<=500"],
        over={"cluster.gpu": ["a100-80gb", "h100-80gb"]},
        minimize="cost",
        overrides=TEN_MINUTES,
        jobs=jobs,
        headroom=False,  # the search's throughput, as before headroom existed
    )
    # the answer's utilisation is one more run, at one configuration
    runs = len(result.probes) + (result.utilisation is not None)
    return time.perf_counter() - start, runs, result.message


def report(jobs: int) -> None:
    wall, runs, message = run_plan(jobs)
    mode = "serial" if jobs == 1 else f"--jobs {jobs}"
    print(
        f"plan throughput ({mode}): {runs} configurations in {wall:.1f} s = "
        f"{runs / wall * 3600:,.0f} configurations/hour; {message}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    parser.add_argument("--jobs", type=int, default=max(2, cores or 1))
    args = parser.parse_args()
    print("plan: 3 tenants, 10 minutes of traffic, continuous batching, A100 or H100 x 1..8")
    report(1)
    report(args.jobs)


if __name__ == "__main__":
    sys.exit(main())
