"""`benchmarks/small_simulate.py`: its trace, its output line, and that it leaves no wrapper.

Nothing here judges a time: the figures it prints depend on the machine."""

from __future__ import annotations

import io
import re
import sys
from contextlib import redirect_stdout
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import small_simulate  # noqa: E402

import simsched  # noqa: E402
import simsched.results.simulate as simulate_module  # noqa: E402


def test_the_trace_holds_twenty_requests_of_two_tenants() -> None:
    header, *rows = small_simulate.trace_text().splitlines()
    assert header.split(",")[:3] == ["request_id", "tenant_id", "arrival_ms"]
    assert len(rows) == 20
    assert {row.split(",")[1] for row in rows} == {"chat", "batch"}


def test_it_prints_the_cost_a_call_and_restores_run_variant() -> None:
    before = simulate_module.run_variant
    out = io.StringIO()
    with redirect_stdout(out):
        assert small_simulate.main(["--calls", "1"]) == 0
    line = out.getvalue().strip()
    pattern = (
        r"token_server: 1 calls, ([\d.]+) ms CPU a call, of which ([\d.]+) ms in the simulation"
    )
    match = re.match(pattern, line)
    assert match, line
    assert float(match[2]) <= float(match[1])  # the loop is part of the call
    assert simulate_module.run_variant is before


def test_the_loop_timer_counts_each_run(tmp_path: Path) -> None:
    trace = tmp_path / "small.csv"
    trace.write_text(small_simulate.trace_text())
    scenario = tmp_path / "small.yaml"
    scenario.write_text(small_simulate.scenario_text(trace, "continuous_batching"))
    with small_simulate.loop_timer() as spent:
        result = simsched.simulate(scenario)
    assert len(spent) == 1  # one variant, one run
    assert len(result.requests) == 20
