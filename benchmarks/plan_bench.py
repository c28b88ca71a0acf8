"""Planning throughput: configurations fully evaluated by a realistic seeded plan.

scenarios/fleet_planning.yaml at 10 minutes of traffic (three tenants, about 48 requests/s,
continuous batching, so some 29,000 requests per configuration): which GPU (A100 or H100) and
how many replicas (1 to 8) meet the interactive p99 TTFT target at the lowest cost, each probe
at --seeds seeds. A configuration is one simulated run (a probe at one seed). Prints one JSON
line: jobs, seeds, configurations, wall_s (the plan alone), configurations_per_hour and the
plan's answer. With --count it prints instead the requests of one configuration (the first
seed's workload) without planning. `make bench` runs it as a whole process (row
plan_throughput); by hand:

    python benchmarks/plan_bench.py [--jobs N] [--seeds S] [--count]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios" / "fleet_planning.yaml"
TEN_MINUTES = [f"tenants.{t}.arrivals.duration_s=600" for t in ("chat", "ide", "batch")]


def count_requests() -> int:
    from simsched.config.loading import load_scenario
    from simsched.workload.build import build_workload

    return len(build_workload(load_scenario(SCENARIO, TEN_MINUTES)))


def run_plan(jobs: int, seeds: int) -> dict:
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
        seeds=seeds,
        jobs=jobs,
        headroom=False,  # the search's throughput, as before headroom existed
    )
    wall = time.perf_counter() - start
    # each probe is `seeds` runs; the answer's utilisation is read from its probe's run at the
    # scenario's seed (simsched.studies.plan_usage), so it adds no run and no configuration
    configurations = len(result.probes) * seeds
    return {
        "jobs": jobs,
        "seeds": seeds,
        "configurations": configurations,
        "wall_s": round(wall, 3),
        "configurations_per_hour": round(configurations * 3600 / wall),
        "answer": result.message,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--count", action="store_true", help="print the requests per run only")
    args = parser.parse_args()
    if args.count:
        print(json.dumps({"requests": count_requests(), "seeds": args.seeds}))
    else:
        print(json.dumps(run_plan(args.jobs, args.seeds)))


if __name__ == "__main__":
    sys.exit(main())
