"""The reference loop doing the same work as `simsched scenario --out`: read, simulate, write.

    python benchmarks/reference_run.py REFERENCE_DIR TRACE.csv OUT.csv

REFERENCE_DIR holds `seed_scheduler.py` (the project's specification, not part of the project).
The tenants and settings are the noisy neighbor's, as in benchmarks/bench.yaml.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import sys
from pathlib import Path


def load_reference(directory: Path):
    spec = importlib.util.spec_from_file_location("seed_scheduler", directory / "seed_scheduler.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["seed_scheduler"] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    reference_dir, trace, out = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    ref = load_reference(reference_dir)
    quotas, _ = ref.build_noisy_neighbor_workload()
    classes = {q.tenant_id: q.priority_class for q in quotas}
    with open(trace, newline="") as f:
        requests = [
            ref.InferenceRequest(
                request_id=row["request_id"],
                tenant_id=row["tenant_id"],
                arrival_ms=float(row["arrival_ms"]),
                prefill_tokens=int(row["prefill_tokens"]),
                decode_tokens=int(row["decode_tokens"]),
                priority_class=classes[row["tenant_id"]],
            )
            for row in csv.DictReader(f)
        ]
    scheduler = ref.MultiTenantScheduler(quotas)
    outcomes = scheduler.run_trace(requests)
    summary = ref.summarize_outcomes(outcomes)
    with open(out, "w", newline="") as f:
        writer = csv.writer(f)
        fields = [field.name for field in dataclasses.fields(ref.ScheduledOutcome)]
        writer.writerow(fields)
        writer.writerows(dataclasses.astuple(o) for o in outcomes)
    print(summary["admitted_requests"], summary["shed_reasons"])


if __name__ == "__main__":
    main()
