"""A plan's probes reuse a generated workload within that plan only: a second plan in the same
process (a notebook, a long-lived worker) reads the trace file as it is now, not as the first
plan left it in the workers' workload cache."""

from __future__ import annotations

from pathlib import Path

from simsched.studies.plan import plan
from tests.conftest import write_trace


def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(
        "tenants:\n"
        "  - {id: a, priority: interactive}\n"
        "trace: {path: trace.csv}\n"
        "cluster:\n"
        "  service_model: continuous_batching\n"
        "  latency_model: {kind: linear, base_ms: 10, prefill_ms_per_token: 0.1,\n"
        "                  decode_ms_per_seq: 1}\n"
    )
    return path


def p99_ttft(tmp_path: Path, prefill: int) -> list[float]:
    # 40 requests 5 ms apart, each with `prefill` prompt tokens: a prompt's iteration takes
    # 0.1 ms a token, so a changed file shows in the judged metric
    write_trace(tmp_path / "trace.csv", [(f"r{i}", "a", 5.0 * i, prefill, 4) for i in range(40)])
    fleet = plan(scenario(tmp_path), "cluster.replicas", "1:2", ["a.p99_ttft_ms<=1e9"],
                 headroom=False)  # fmt: skip
    return [probe.metrics["a.p99_ttft_ms"] for probe in fleet.plans[0].probes]


def test_a_second_plan_reads_the_rewritten_trace(tmp_path: Path) -> None:
    short = p99_ttft(tmp_path, 10)
    long = p99_ttft(tmp_path, 500)  # same path, same settings, new contents
    (tmp_path / "again").mkdir()
    fresh = p99_ttft(tmp_path / "again", 500)  # the same file in a folder no plan has read
    assert long == fresh and long > short
