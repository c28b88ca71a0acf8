"""Capacity planning finds boundaries known by construction, checked by brute force.

On the noisy neighbor with the batch tenant's token bucket lifted out of the way, only the KV
watermark sheds `tenant_batch_rag`, and more KV blocks shed fewer of its requests: the smallest
`cluster.total_kv_blocks` at which it sheds nothing is a boundary the test finds by running every
candidate value.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from simsched.cli.studies import register
from simsched.config.loading import load_scenario
from simsched.errors import InputError
from simsched.results.simulate import simulate
from simsched.results.tenants import metrics_rows
from simsched.studies.bisection import PlanResult, Probe, monotonicity_warnings
from simsched.studies.knob import knob_values
from simsched.studies.plan import plan
from simsched.studies.slo import parse_slo

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "noisy_neighbor.yaml"
VARIANT = "service_token_drr_with_admission"
NO_QUOTA = ["tenants.tenant_batch_rag.quota.burst_service_tokens=1000000"]


def batch_sheds(*overrides: str) -> int:
    scenario = load_scenario(SCENARIO, [*NO_QUOTA, *overrides])
    rows = metrics_rows(simulate(scenario, [VARIANT]))
    return next(r["shed"] for r in rows if r["tenant"] == "tenant_batch_rag")


def test_smallest_kv_that_sheds_no_batch_request_matches_brute_force() -> None:
    # A range narrow enough for a cheap brute force, wide enough that the answer (batch sheds
    # one request fewer per 400 blocks from 1600 up) lies strictly inside it, not at an edge.
    knob, values = "cluster.total_kv_blocks", list(range(6000, 7601, 400))
    expected = next(v for v in values if batch_sheds(f"{knob}={v}") == 0)
    assert values[0] < expected < values[-1]  # a bisection that returns an edge cannot pass
    result = plan(SCENARIO, knob, "6000:7600", ["tenant_batch_rag.shed<=0"], step=400,
                  overrides=NO_QUOTA, headroom=False)  # fmt: skip
    assert result.answer == expected and result.variant == VARIANT  # the last by default
    assert len(result.probes) < len(values)  # bisection, not a scan
    probed = {p.value: p.met for p in result.probes}
    below = values[values.index(expected) - 1]
    assert probed[expected] is True and probed[below] is False  # the answer and the step below
    assert result.warnings == []
    assert f"is {expected}; at {below} the SLOs are missed" in result.message


def test_largest_batch_burst_without_shedding_matches_brute_force() -> None:
    # Narrowed like the test above: the answer strictly inside the range, its edges both probed.
    knob, values = "tenants.tenant_batch_rag.arrivals.count", list(range(2, 8))
    expected = [v for v in values if batch_sheds(f"{knob}={v}") == 0][-1]
    assert values[0] < expected < values[-1]
    result = plan(SCENARIO, knob, "2:7", ["tenant_batch_rag.shed<=0"], maximize=True,
                  overrides=NO_QUOTA, headroom=False)  # fmt: skip
    assert result.answer == expected
    assert {p.value: p.met for p in result.probes}[expected + 1] is False


def test_no_value_in_range_meets_the_slos() -> None:
    slos = ["tenant_batch_rag.shed<=0", "all.p99_ttft_ms<100"]
    result = plan(SCENARIO, "cluster.total_kv_blocks", "1600:2000", slos, step=200, headroom=False)
    assert result.answer is None
    assert [p.value for p in result.probes] == [2000]  # the most capacity already fails
    assert result.message.startswith("no value of cluster.total_kv_blocks in 1600..2000 meets")
    assert "all.p99_ttft_ms = " in result.message


def test_non_monotone_probes_are_reported() -> None:
    result = PlanResult("k", "v", False, [1, 2, 3], [parse_slo("all.shed<=0")])
    result.probes = [
        Probe(3, True, {"all.shed": 0}),
        Probe(1, False, {"all.shed": 2}),
        Probe(2, True, {"all.shed": 0}),
    ]
    assert monotonicity_warnings(result) == []
    result.probes[1] = Probe(1, True, {"all.shed": 0})
    result.probes[2] = Probe(2, False, {"all.shed": 5})
    warnings = monotonicity_warnings(result)
    assert len(warnings) == 2
    assert warnings[0].startswith("meeting the SLOs is not monotone in k over the probes")
    assert warnings[1] == "all.shed is not monotone in k over the probes (1: 0, 2: 5, 3: 0)"


def test_knob_values() -> None:
    scenario = load_scenario(SCENARIO)
    assert knob_values(scenario, "cluster.total_kv_blocks", "10:20", 4) == [10, 14, 18, 20]
    assert knob_values(scenario, "cluster.total_kv_blocks", "3:5", None) == [3, 4, 5]
    floats = knob_values(scenario, "cluster.service_tokens_per_ms", "10:20", None)
    assert len(floats) == 65 and floats[0] == 10.0 and floats[-1] == 20.0
    assert knob_values(scenario, "tenants.tenant_chat_pro.weight", "1:2", 0.5) == [1.0, 1.5, 2.0]


@pytest.mark.parametrize(
    ("knob", "range_", "slo", "step", "expected"),
    [
        ("cluster.total_kv_blocks", "1600", "all.shed<=0", None, "expected LO:HI"),
        ("cluster.total_kv_blocks", "a:b", "all.shed<=0", None, "expected LO:HI"),
        ("cluster.total_kv_blocks", "20:10", "all.shed<=0", None, r"LO \(20\) is above HI"),
        ("cluster.total_kv_blocks", "10.5:20", "all.shed<=0", None, "integer setting"),
        ("cluster.total_kv_blocks", "10:20", "all.shed<=0", 0, "--step: must be positive"),
        ("cluster.total_kv_blockz", "10:20", "all.shed<=0", None, "no such setting"),
        ("scheduler.policy", "10:20", "all.shed<=0", None, "not a number"),
        ("cluster.total_kv_blocks", "10:20", "all.shed=0", None, "expected TENANT.METRIC"),
        ("cluster.total_kv_blocks", "10:20", "all.speed<=0", None, "unknown metric 'speed'"),
        ("cluster.total_kv_blocks", "10:20", "nobody.shed<=0", None, "no tenant or class 'nobody'"),
        ("cluster.total_kv_blocks", "10:20", "all.shed<=x", None, "not a number"),
        ("cluster.total_kv_blocks", "-10:20", "all.shed<=0", None, "greater than 0"),
    ],
)
def test_bad_plans_are_input_errors(knob, range_, slo, step, expected: str) -> None:
    with pytest.raises(InputError, match=expected):
        plan(SCENARIO, knob, range_, [slo], step=step)


@pytest.mark.parametrize(
    ("knob", "range_", "words"),
    [
        ("limits.max_requests", "1:2", ["limits.max_requests=", "more than limits.max_requests"]),
        ("cluster.service_tokens_per_ms", "1e-12:45", ["=1e-12", "simulated clock"]),
    ],
)
def test_a_probe_the_scenario_cannot_run_is_a_one_line_input_error(
    knob, range_, words, simsched_cli
) -> None:
    # Values that load but fail while running (a request budget, the clock bound): exit 2
    # naming the probe's value, not a RuntimeError traceback.
    args = ["plan", str(SCENARIO), "--vary", knob, "--range", range_, "--slo", "all.shed<=100"]
    code, _, err = simsched_cli(*args)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert f"the probe at --vary {knob}" in err, err
    for word in words:
        assert word in err, err


def test_cli_plan_table_and_json() -> None:
    app = typer.Typer()
    register(app)
    args = ["plan", str(SCENARIO), "--vary", "cluster.total_kv_blocks", "--range", "5600:8000"]
    args += ["--step", "800", "--slo", "tenant_batch_rag.shed<=0", *("--set", NO_QUOTA[0])]
    table = CliRunner().invoke(app, args)
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    guards = ["tenant_chat_pro.shed_rate", "tenant_ide_assist.shed_rate"]  # the others' guard
    shed = ["all.shed_rate", "tenant_batch_rag.shed_rate"]
    head = ["cluster.total_kv_blocks", "met", "tenant_batch_rag.shed", *guards, *shed]
    assert lines[0].split() == head
    assert lines[1].split() == ["8000", "yes", "0", "0", "0", "0", "0"]
    answer = next(line for line in lines if line.startswith("the smallest"))
    assert answer.startswith("the smallest cluster.total_kv_blocks meeting every SLO is ")
    assert lines[-2].startswith("note: margins at cluster.total_kv_blocks=")
    assert lines[-1].startswith("note: headroom: ")  # by default, after the margins
    as_json = CliRunner().invoke(app, [*args, "--format", "json"])
    document = json.loads(as_json.output)
    assert document["answer"] == int(answer.split(" is ")[1].split(";")[0])
    assert document["probes"][0] == {
        "value": 8000,
        "met": True,
        "metrics": {"tenant_batch_rag.shed": 0} | dict.fromkeys(guards, 0.0),
        "margins": {"tenant_batch_rag.shed": 0} | dict.fromkeys(guards, 0.001),
        "shed_rate": dict.fromkeys(["all", *load_scenario(SCENARIO).tenant_ids()], 0.0),
    }
    assert document["rule"] == "interval" and document["seeds"] == 1
    both = CliRunner().invoke(app, [*args, "--maximize", "cluster.total_kv_blocks"])
    assert isinstance(both.exception, InputError)
