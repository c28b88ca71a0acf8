"""Time the phases of one scenario run in this process: generation, simulation, results.

    python benchmarks/phases.py SCENARIO.yaml

Prints one JSON line: requests, generate_s, simulate_s, results_s, requests_per_s (simulated
requests per wall second of the simulation phase) and peak_rss_mib of this process.
"""

from __future__ import annotations

import json
import resource
import sys
import time

import simsched
from simsched.config.loading import resolve_variants
from simsched.results.frames import summarize, variant_frame
from simsched.sim.engine import request_costs, run_variant
from simsched.workload import build_workload


def main() -> None:
    scenario = simsched.load_scenario(sys.argv[1])
    name, resolved = resolve_variants(scenario)[-1]
    start = time.perf_counter()
    table = build_workload(resolved)
    generated = time.perf_counter()
    run = run_variant(resolved, table)
    simulated = time.perf_counter()
    summarize(variant_frame(name, resolved, table, request_costs(resolved, table), run.recorder))
    done = time.perf_counter()
    print(
        json.dumps(
            {
                "requests": len(table),
                "generate_s": round(generated - start, 3),
                "simulate_s": round(simulated - generated, 3),
                "results_s": round(done - simulated, 3),
                "requests_per_s": round(len(table) / (simulated - generated)),
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            }
        )
    )


if __name__ == "__main__":
    main()
