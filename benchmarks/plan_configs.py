"""The plan bench's simulation alone: a few of its configurations, CPU time and an outcome digest.

The plan's time is almost all simulation (docs/benchmarks.md), so a change to the hot path is
measured here: the scenario of `plan_bench.py` (fleet_planning at 10 minutes, about 29,000
requests), one workload, each configuration simulated by `run_variant`, its process CPU time
printed with a digest of the recorded outcomes. Two builds that simulate alike print the same
digests; compare their CPU times in alternating runs on a loaded machine. By hand:

    python benchmarks/plan_configs.py [--config GPU:REPLICAS ...] [--duration-s S]

(the default configurations: h100-80gb:2 h100-80gb:4 a100-80gb:3 a100-80gb:6). Run it under
`python -m cProfile -o plan.prof` for the profile.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios" / "fleet_planning.yaml"
TENANTS = ("chat", "ide", "batch")
CONFIGS = ["h100-80gb:2", "h100-80gb:4", "a100-80gb:3", "a100-80gb:6"]


def outcome_digest(recorder) -> str:
    # what the digest covers: every per-request outcome the recorder keeps as a typed array
    from simsched.sim.recorder import OUTCOME_ARRAYS

    digest = hashlib.sha256()
    for name in OUTCOME_ARRAYS:
        digest.update(name.encode())
        digest.update(getattr(recorder, name).tobytes())
    return digest.hexdigest()[:16]


def run(configs: list[str], duration_s: float) -> list[dict]:
    from simsched.config.loading import load_scenario
    from simsched.sim.engine import run_variant
    from simsched.workload.build import build_workload

    shared = [f"tenants.{t}.arrivals.duration_s={duration_s:g}" for t in TENANTS]
    table = build_workload(load_scenario(SCENARIO, shared))  # the cluster does not change it
    lines = []
    for config in configs:
        gpu, replicas = config.split(":")
        overrides = [*shared, f"cluster.gpu={gpu}", f"cluster.replicas={replicas}"]
        scenario = load_scenario(SCENARIO, overrides)
        start = time.process_time()
        result = run_variant(scenario, table)
        cpu = time.process_time() - start
        digest = outcome_digest(result.recorder)
        lines.append(
            {"config": config, "requests": len(table), "cpu_s": round(cpu, 3), "digest": digest}
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", nargs="+", default=CONFIGS, help="GPU:REPLICAS ...")
    parser.add_argument("--duration-s", type=float, default=600.0)
    args = parser.parse_args()
    lines = run(args.config, args.duration_s)
    for line in lines:
        print(json.dumps(line))
    print(json.dumps({"total_cpu_s": round(sum(line["cpu_s"] for line in lines), 3)}))


if __name__ == "__main__":
    sys.exit(main())
