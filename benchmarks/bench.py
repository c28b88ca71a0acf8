"""`make bench`: simsched against the reference loop on the same generated trace.

First it generates and simulates a million-request multi-tenant Poisson scenario
(benchmarks/poisson_1m.yaml) and prints each phase's time and the peak memory; then it runs
100k requests on the continuous-batching model (benchmarks/batching_100k.yaml, sizes drawn from
the Azure conversation trace: run `make traces` first) as a whole process. Then, for each
size, it writes a noisy-neighbor-like trace (benchmarks/make_trace.py), then times, as
whole processes, `simsched scenario benchmarks/bench.yaml --out DIR` (DRR with admission) and the
reference loop doing the same work (benchmarks/reference_run.py: read the CSV, simulate, write
the outcomes), alternating them. It prints median wall times, their ratio, peak RSS, and how
time grows from the smallest to the largest size (5.0 means linear for 100k -> 500k).

    python benchmarks/bench.py [--sizes 100000 500000] [--repeat 3]

The reference lives outside the project (../shared/reference); without it, only simsched runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench-out"
REFERENCE = REPO.parent / "shared" / "reference"
# Runs a command in a fresh child and reports its wall time and peak RSS (KiB, Linux).
MEASURE = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
    "wall = time.perf_counter() - t\n"
    "print(wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def measure(command: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one run of `command`."""
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, *command], check=True, capture_output=True, text=True
    ).stdout.split()
    return float(out[0]), float(out[1]) / 1024


def simsched_command(trace: Path, out_dir: Path) -> list[str]:
    simsched = str(Path(sys.executable).parent / "simsched")
    scenario = str(REPO / "benchmarks" / "bench.yaml")
    return [simsched, "scenario", scenario, f"--set=trace.path={trace}", f"--out={out_dir}"]


def reference_command(trace: Path, out_file: Path) -> list[str]:
    runner = str(REPO / "benchmarks" / "reference_run.py")
    return [sys.executable, runner, str(REFERENCE), str(trace), str(out_file)]


def run_size(size: int, repeat: int) -> dict[str, float]:
    trace = OUT / f"trace_{size}.csv"
    if not trace.exists():
        maker = REPO / "benchmarks" / "make_trace.py"
        subprocess.run(
            [sys.executable, str(maker), str(trace), "--requests", str(size)], check=True
        )
    ours, theirs = [], []
    with_reference = (REFERENCE / "seed_scheduler.py").exists()
    for _ in range(repeat):
        ours.append(measure(simsched_command(trace, OUT / f"simsched_{size}")))
        if with_reference:
            theirs.append(measure(reference_command(trace, OUT / f"reference_{size}.csv")))
    result = {
        "wall_s": statistics.median(w for w, _ in ours),
        "rss_mib": max(r for _, r in ours),
    }
    if theirs:
        result["reference_wall_s"] = statistics.median(w for w, _ in theirs)
        result["ratio"] = statistics.median(a[0] / b[0] for a, b in zip(ours, theirs, strict=True))
    return result


def phases(scenario: str) -> dict[str, float]:
    """Generation and simulation times of one scenario, in a fresh process."""
    script = str(REPO / "benchmarks" / "phases.py")
    command = [sys.executable, script, str(REPO / "benchmarks" / scenario)]
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)


def report_phases(title: str, scenario: str) -> None:
    r = phases(scenario)
    print(
        f"{title}: {r['requests']:,} requests; generate {r['generate_s']:.2f} s, "
        f"simulate {r['simulate_s']:.2f} s ({r['requests_per_s']:,} requests/s), "
        f"results {r['results_s']:.2f} s, peak RSS {r['peak_rss_mib']} MiB",
        flush=True,
    )


def report_batching(repeat: int) -> None:
    """The continuous-batching model: 100k requests, whole process, requests per wall second."""
    if not (REPO / "scenarios" / "data" / "azure_llm_2023_conv.csv").exists():
        print("continuous batching: skipped (no scenarios/data/; see scenarios/README.md)")
        return
    simsched = str(Path(sys.executable).parent / "simsched")
    scenario = str(REPO / "benchmarks" / "batching_100k.yaml")
    runs = [
        measure([simsched, "scenario", scenario, f"--out={OUT / 'batching'}"])
        for _ in range(repeat)
    ]
    wall = statistics.median(w for w, _ in runs)
    print(
        f"continuous batching, 100,000 requests on 4 replicas: {wall:.2f} s for the whole "
        f"process ({100_000 / wall:,.0f} requests/s; target under 10 s), "
        f"peak RSS {max(r for _, r in runs):.0f} MiB",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="simsched vs the reference loop")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 500_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    report_phases("1M-request multi-tenant Poisson scenario", "poisson_1m.yaml")
    plan_bench = REPO / "benchmarks" / "plan_bench.py"  # configurations per hour of planning
    subprocess.run([sys.executable, str(plan_bench)], check=True)
    report_batching(args.repeat)
    results = {}
    for size in args.sizes:
        results[size] = r = run_size(size, args.repeat)
        line = f"{size:>9,} requests: simsched {r['wall_s']:.2f} s, peak RSS {r['rss_mib']:.0f} MiB"
        if "ratio" in r:
            line += (
                f"; reference {r['reference_wall_s']:.2f} s; ratio {r['ratio']:.2f} (target <= 1.0)"
            )
        print(line, flush=True)
    small, large = min(args.sizes), max(args.sizes)
    if small != large:
        growth = results[large]["wall_s"] / results[small]["wall_s"]
        print(f"time growth {small:,} -> {large:,}: x{growth:.2f} (linear: x{large / small:.2f})")


if __name__ == "__main__":
    main()
