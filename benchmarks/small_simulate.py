"""The fixed cost of one small simulation: `simsched.simulate` of a 20-request trace, many times.

Planners run many small simulations (sweeps, bisections over seeds) and the test suite runs
thousands, so what one costs beyond its simulation loop (reading the scenario and the trace,
building the result frames, the per-tenant metrics, the fairness summary, the timeline) is paid
on every call. This script writes a 20-request, two-tenant trace and a scenario reading it into a
temporary folder and calls `simsched.simulate` on the scenario file `--calls` times, then prints
the CPU time per call and a digest of the last result's request and tenant frames (two builds
that compute alike print the same digest). By hand:

    python benchmarks/small_simulate.py [--calls N] [--model token_server|continuous_batching]

Under `python -m cProfile -s cumtime benchmarks/small_simulate.py` for where the time goes;
compare builds with `/usr/bin/time -f '%U+%S'` in alternating runs on a loaded machine.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REQUESTS = 20
TENANTS = ("chat", "batch")


def trace_text() -> str:
    """Twenty requests alternating between an interactive and a batch tenant, 25 ms apart."""
    rows = ["request_id,tenant_id,arrival_ms,prefill_tokens,decode_tokens"]
    for index in range(REQUESTS):
        tenant = TENANTS[index % len(TENANTS)]
        prefill, decode = (300, 60) if tenant == "chat" else (2000, 200)
        rows.append(f"r{index},{tenant},{25 * index},{prefill},{decode}")
    return "\n".join(rows) + "\n"


def scenario_text(trace: Path, model: str) -> str:
    return (
        "name: small_simulate\n"
        "tenants:\n"
        "  - {id: chat, weight: 2.0, priority: interactive}\n"
        "  - {id: batch, weight: 1.0, priority: batch}\n"
        f"trace: {{path: {trace.name}}}\n"
        f"cluster: {{service_model: {model}}}\n"
        "slo: {interactive_ttft_ms: 500}\n"
    )


def result_digest(result) -> str:
    digest = hashlib.sha256()
    digest.update(result.requests.to_csv(index=False).encode())
    digest.update(result.tenants.to_csv(index=False).encode())
    digest.update(repr(sorted(result.fairness["base"].items())).encode())
    return digest.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50, help="simulate calls (default 50)")
    parser.add_argument(
        "--model", choices=("token_server", "continuous_batching"), default="token_server"
    )
    args = parser.parse_args(argv)
    if args.calls < 1:
        parser.error("--calls must be at least 1")
    import simsched  # after argument parsing: --help stays quick

    with tempfile.TemporaryDirectory() as folder, loop_timer() as loop_spent:
        trace = Path(folder) / "small.csv"
        trace.write_text(trace_text())
        scenario = Path(folder) / "small.yaml"
        scenario.write_text(scenario_text(trace, args.model))
        simsched.simulate(scenario)  # the first call pays lazy imports: not counted
        start = time.process_time()
        for _ in range(args.calls):
            result = simsched.simulate(scenario)
        spent = time.process_time() - start
    per_call_ms = 1000 * spent / args.calls
    loop_ms = 1000 * sum(loop_spent[1:]) / args.calls  # the first, uncounted call left out
    print(
        f"{args.model}: {args.calls} calls, {per_call_ms:.1f} ms CPU a call, of which "
        f"{loop_ms:.1f} ms in the simulation (run_variant), digest {result_digest(result)}"
    )
    return 0


@contextmanager
def loop_timer() -> Iterator[list[float]]:
    """Wrap `run_variant` where `simulate` calls it: the list gains each run's CPU seconds (the
    rest of a call is its fixed cost: reading the scenario and the trace, and the results).
    The wrapper is removed on leaving, so a caller in the same process is left as it was."""
    import simsched.results.simulate as simulate_module

    spent: list[float] = []
    run_variant = simulate_module.run_variant

    def timed(*args, **kwargs):
        start = time.process_time()
        try:
            return run_variant(*args, **kwargs)
        finally:
            spent.append(time.process_time() - start)

    simulate_module.run_variant = timed
    try:
        yield spent
    finally:
        simulate_module.run_variant = run_variant


if __name__ == "__main__":
    sys.exit(main())
