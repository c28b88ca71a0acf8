"""How firm a plan's answer is: runner-up and near-ties, headroom, and --model-error."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from simsched.config.loading import validate
from simsched.errors import InputError
from simsched.studies.bisection import PlanResult
from simsched.studies.fleet import FleetPlan
from simsched.studies.plan import plan
from simsched.studies.uncertainty import (
    CALIBRATION_MEDIAN_ERROR,
    runner_up_document,
    runner_up_notes,
)

REPO = Path(__file__).resolve().parents[2]


def chosen(plans: list[PlanResult], minimize: str) -> FleetPlan:
    """A plan over `plans` (their knob and direction), its choice made as `simsched plan` makes
    it."""
    first = plans[0]
    fleet = FleetPlan(first.knob, "base", first.maximize, [], "interval", 1, minimize, plans)
    fleet.choose()
    return fleet


def fleet_of(costs: dict[str, float | None]) -> FleetPlan:
    plans = [
        PlanResult("cluster.replicas", "base", False, [1, 2], [], combo=(("cluster.gpu", gpu),),
                   answer=None if cost is None else 2, gpus=2, cost_per_hour=cost)
        for gpu, cost in costs.items()
    ]  # fmt: skip
    fleet = chosen(plans, "cost")
    return fleet


def test_the_default_margin_is_the_median_error_the_docs_state() -> None:
    fidelity = (REPO / "docs" / "continuous_batching.md").read_text()
    # the dense figures' median when the dense values were last fitted (the shipped defaults'
    # own median may drift below it after a modelling change, until the next refit)
    stated = re.search(
        r"The default tie margin for a dense\s+model keeps the fitted ([\d.]+)%", fidelity
    )
    assert stated is not None and float(stated.group(1)) / 100 == pytest.approx(
        CALIBRATION_MEDIAN_ERROR
    )


def test_an_option_within_the_margin_is_a_near_tie_with_both_shown() -> None:
    # 14.00 / 13.50 - 1 = 3.7%, within 5.8%; 20.00 / 13.50 - 1 = 48.1%, not
    fleet = fleet_of({"a100-80gb": 13.50, "h100-80gb": 14.00, "h200": 20.00})
    notes = runner_up_notes(fleet, CALIBRATION_MEDIAN_ERROR)
    assert notes[0] == (
        "runner-up: cluster.gpu=h100-80gb with cluster.replicas=2 ($14.00/hour), "
        "+$0.50/hour (+3.7%)"
    )
    ties = [n for n in notes if n.startswith("near-tie")]
    assert len(ties) == 1 and "h100-80gb" in ties[0] and "a100-80gb" in ties[0]
    assert "within the 5.8% margin (the calibration's median absolute error" in ties[0]
    assert not [n for n in runner_up_notes(fleet, 0.03) if n.startswith("near-tie")]


def test_a_clear_answer_names_its_runner_up_without_a_tie() -> None:
    fleet = fleet_of({"a100-80gb": 13.50, "h100-80gb": 18.465, "h200": None})
    notes = runner_up_notes(fleet, CALIBRATION_MEDIAN_ERROR)
    assert notes == [
        "runner-up: cluster.gpu=h100-80gb with cluster.replicas=2 ($18.46/hour), "
        "+$4.96/hour (+36.8%)"
    ]
    alone = fleet_of({"a100-80gb": 13.50, "h100-80gb": None})
    assert runner_up_notes(alone, CALIBRATION_MEDIAN_ERROR)[0].startswith("runner-up: none")


def test_the_json_carries_the_runner_up_and_near_ties_the_notes_state() -> None:
    fleet = fleet_of({"a100-80gb": 13.50, "h100-80gb": 14.00, "h200": 20.00})
    fleet.choice = runner_up_document(fleet, CALIBRATION_MEDIAN_ERROR)
    document = fleet.to_json_dict()
    h100 = {"over": {"cluster.gpu": "h100-80gb"}, "answer": 2, "gpus": 2, "cost_per_hour": 14.00}
    assert document["runner_up"] == h100 | {"gap": pytest.approx(14.00 / 13.50 - 1)}
    assert document["near_ties"] == [document["runner_up"]]  # 3.7% within 5.8%; h200 48% not
    assert document["tie_margin"] == CALIBRATION_MEDIAN_ERROR
    alone = fleet_of({"a100-80gb": 13.50, "h100-80gb": None})
    assert runner_up_document(alone, CALIBRATION_MEDIAN_ERROR) == {
        "runner_up": None, "tie_margin": CALIBRATION_MEDIAN_ERROR, "near_ties": []
    }  # fmt: skip
    one = fleet_of({"a100-80gb": 13.50})
    one.minimize = "gpus"
    assert runner_up_document(one, CALIBRATION_MEDIAN_ERROR) is None  # one search: no choice


def gpu_fleet(gpus: dict[str, int | None]) -> FleetPlan:
    """Combinations that meet every SLO with these GPU counts (one-GPU replicas, so the answer
    is the count; None: none in the range), no price known (B200 has none), chosen by
    --minimize gpus."""
    plans = [
        PlanResult("cluster.replicas", "base", False, [1, 2], [],
                   combo=(("cluster.engine", engine),), answer=n,
                   gpus=n, cost_per_hour=None)
        for engine, n in gpus.items()
    ]  # fmt: skip
    fleet = chosen(plans, "gpus")
    return fleet


def test_an_equal_gpu_count_is_a_tie_the_answer_does_not_hide() -> None:
    # vllm and trtllm both need 16 GPUs: min() keeps vllm, the first in --over's order, which
    # says nothing about which is better; sglang's 24 is 50% more, outside 17.4%
    fleet = gpu_fleet({"vllm": 16, "sglang": 24, "trtllm": 16})
    notes = runner_up_notes(fleet, 0.174)
    assert notes[0] == "runner-up: cluster.engine=trtllm with cluster.replicas=16, the same GPUs"
    assert notes[1:] == [
        "tie: cluster.engine=trtllm with cluster.replicas=16 does as well as the answer "
        "cluster.engine=vllm with cluster.replicas=16 by GPUs (16 GPUs); the answer is the first "
        "in --over's order, not a better one: weigh both"
    ]
    document = runner_up_document(fleet, 0.174)
    assert [t["over"] for t in document["near_ties"]] == [{"cluster.engine": "trtllm"}]
    assert document["near_ties"][0]["gap"] == 0


def test_a_gpu_count_within_the_margin_is_a_near_tie() -> None:
    # 18 / 16 - 1 = 12.5%, within the MoE margin of 17.4%; 24 / 16 - 1 = 50%, not
    fleet = gpu_fleet({"vllm": 24, "sglang": 18, "trtllm": 16, "none": None})
    notes = runner_up_notes(fleet, 0.174)
    assert notes[0] == "runner-up: cluster.engine=sglang with cluster.replicas=18, +2 GPUs (+12.5%)"
    assert notes[1].startswith(
        "near-tie: cluster.engine=sglang with cluster.replicas=18 needs +12.5% GPUs against the "
        "answer cluster.engine=trtllm with cluster.replicas=16, within the 17.4% margin"
    )
    assert len(notes) == 2


def counting_scenario(tmp_path: Path) -> Path:
    # Near-periodic arrivals (gamma, cv 1e-6) at 10/s for 10 s: about 100 x load_scale requests
    # on a token server too fast to shed any.
    path = tmp_path / "count.yaml"
    path.write_text(
        "tenants:\n"
        "  - id: a\n"
        "    arrivals: {kind: gamma, rate_per_s: 10, cv: 0.000001, duration_s: 10}\n"
        "    prefill_tokens: 10\n"
        "    decode_tokens: 5\n"
        "admission: {enabled: false}\n"
    )
    return path


def test_headroom_is_the_largest_load_scale_the_answer_absorbs(tmp_path) -> None:
    # all.submitted <= 122: 1.20 x 100 = 120 requests meet it, 1.25 x 100 = 125 do not
    fleet = plan(counting_scenario(tmp_path), "cluster.service_tokens_per_ms", "40:50",
                 ["all.submitted<=122"], step=10)  # fmt: skip
    assert fleet.answer == 40
    assert (fleet.headroom.met, fleet.headroom.missed) == (1.2, 1.25)
    assert "headroom: +20.0% load; load_scale in [1.2, 1.25)" in fleet.notes[-1]
    assert fleet.to_json_dict()["headroom"]["met"] == 1.2
    quiet = plan(counting_scenario(tmp_path), "cluster.service_tokens_per_ms", "40:50",
                 ["all.submitted<=122"], step=10, headroom=False)  # fmt: skip
    assert quiet.headroom is None and "headroom" not in quiet.to_json_dict()


def test_maximize_load_scale_answers_the_growth_a_fixed_fleet_absorbs(tmp_path) -> None:
    fleet = plan(counting_scenario(tmp_path), "load_scale", "1:2", ["all.submitted<=122"],
                 step=0.05, maximize=True)  # fmt: skip
    assert fleet.answer == 1.2 and fleet.headroom is None  # the answer is the headroom


MOVED = """\
tenants:
  - id: a
    arrivals: {kind: poisson, rate_per_s: 30, duration_s: 4}
    prefill_tokens: 1500
    decode_tokens: 20
cluster: {service_model: continuous_batching, gpu: a100-80gb, latency_model: roofline}
admission: {enabled: false}
"""


def test_model_error_replans_with_efficiencies_moved_both_ways(tmp_path) -> None:
    path = tmp_path / "moved.yaml"
    path.write_text(MOVED)
    fleet = plan(path, "cluster.replicas", "1:6", ["a.p99_ttft_ms<=800"], headroom=False,
                 model_error=0.3)  # fmt: skip
    slower, faster = fleet.model_error
    assert (slower.shift, faster.shift) == (-0.3, 0.3)
    # a slower model never needs fewer replicas (none in the range: more), a faster one never more
    needed = [math.inf if a is None else a for a in (slower.answer, fleet.answer, faster.answer)]
    assert needed == sorted(needed, reverse=True) and fleet.answer is not None
    assert fleet.notes[-1].startswith("model error +-30.0%: efficiencies -30.0%: ")
    survives = slower.answer == faster.answer == fleet.answer
    assert ("the answer survives" in fleet.notes[-1]) == survives


def test_model_error_needs_a_roofline_model(tmp_path) -> None:
    path = tmp_path / "linear.yaml"
    linear = "{kind: linear, base_ms: 5, prefill_ms_per_token: 0.01, decode_ms_per_seq: 0.1}"
    path.write_text(MOVED.replace("latency_model: roofline", f"latency_model: {linear}"))
    with pytest.raises(InputError) as caught:
        plan(path, "cluster.replicas", "1:6", ["a.p99_ttft_ms<=400"], model_error=0.1)
    assert "--model-error" in str(caught.value) and "model is linear" in str(caught.value)
    with pytest.raises(InputError) as scaled:
        validate({"tenants": [{"id": "a", "arrivals": {"kind": "periodic", "interval_ms": 1,
                  "count": 1}, "prefill_tokens": 1, "decode_tokens": 1}], "cluster": {
                  "service_model": "continuous_batching", "efficiency_scale": 0.9,
                  "latency_model": {"kind": "linear", "base_ms": 5, "prefill_ms_per_token": 0.01,
                                    "decode_ms_per_seq": 0.1}}}, "s.yaml")  # fmt: skip
    assert "the linear model has none" in str(scaled.value)


def test_headroom_is_skipped_with_a_note_when_a_tenant_sets_its_own_pace(tmp_path) -> None:
    """A closed-loop tenant takes no load_scale: the plan still answers, and says why there is
    no headroom (it used to run every probe and then exit 2)."""
    path = tmp_path / "closed.yaml"
    path.write_text(
        "name: closed\n"
        "tenants:\n"
        "  - id: ide\n"
        "    arrivals: {kind: closed_loop, concurrency: 2, count: 6, duration_s: 5,\n"
        "               think_time_ms: {dist: uniform, low: 50, high: 150}}\n"
        "    prefill_tokens: 64\n"
        "    decode_tokens: 4\n"
        "cluster: {total_kv_blocks: 1600}\n",
        encoding="utf-8",
    )
    result = plan(path, "cluster.total_kv_blocks", "100:200", ["all.shed_rate<=0.5"], step=100)
    assert result.answer is not None and result.headroom is None
    assert any(
        note.startswith("headroom not computed: tenant 'ide': closed-loop") for note in result.notes
    )


def test_tie_margin_is_a_share_in_python_and_a_percent_on_the_command_line(tmp_path) -> None:
    import typer
    from typer.testing import CliRunner

    from simsched.cli.studies import register

    path = counting_scenario(tmp_path)
    with pytest.raises(InputError) as caught:  # 5.8 meant as percent: refused, naming the unit
        plan(path, "cluster.service_tokens_per_ms", "40:50", ["all.submitted<=122"],
             tie_margin=5.8)  # fmt: skip
    assert caught.value.where == "tie_margin"
    assert "is a share in [0, 1) (0.058 is 5.8%), got 5.8" in caught.value.message
    app = typer.Typer()
    register(app)
    args = ["plan", str(path), "--vary", "cluster.service_tokens_per_ms", "--range", "40:50",
            "--slo", "all.submitted<=122"]  # fmt: skip
    refused = CliRunner().invoke(app, [*args, "--tie-margin", "150"])
    error = refused.exception  # the command's entry point prints it and exits 2
    assert isinstance(error, InputError) and error.where == "--tie-margin"
    assert error.message == "must be in [0, 100) percent, got 150"


def test_a_near_tie_on_a_linear_model_names_no_refused_rerun(tmp_path) -> None:
    # several seeds and a 90% --tie-margin: the answer is a near-tie; --model-error exits 2 on
    # a linear model, so the note names no such rerun, and the margin is the user's own
    path = tmp_path / "linear.yaml"
    linear = "{kind: linear, base_ms: 5, prefill_ms_per_token: 0.01, decode_ms_per_seq: 0.1}"
    path.write_text(MOVED.replace("latency_model: roofline", f"latency_model: {linear}"))
    fleet = plan(path, "cluster.replicas", "1:6", ["a.p99_ttft_ms<=400"], headroom=False,
                 seeds=2, tie_margin=0.9)  # fmt: skip
    ties = [n for n in fleet.notes if n.startswith("a near-tie:")]
    assert len(ties) == 1 and "--model-error" not in ties[0]
    assert "within the 90.0% tie margin (--tie-margin)" in ties[0]


def value_fleet(answers: dict[str, float | None], maximize: bool) -> FleetPlan:
    """Combinations answering these knob values, chosen by the knob (--minimize value)."""
    plans = [
        PlanResult("load_scale", "base", maximize, [1, 2], [], combo=(("cluster.replicas", n),),
                   answer=value, gpus=None, cost_per_hour=None)
        for n, value in answers.items()
    ]  # fmt: skip
    fleet = chosen(plans, "value")
    return fleet


def test_a_largest_load_plan_states_how_much_less_the_runner_up_sustains() -> None:
    # 4 replicas sustain 2.0, 3 replicas 1.5: 25% less of the answer's, not 33% more of its own
    fleet = value_fleet({"3": 1.5, "4": 2.0}, maximize=True)
    assert fleet.best.combo == (("cluster.replicas", "4"),)
    (runner,) = runner_up_notes(fleet, 0.30)[:1]
    assert runner == "runner-up: cluster.replicas=3 with load_scale=1.5, sustains -25.0% load_scale"
    assert runner_up_document(fleet, 0.30)["runner_up"]["gap"] == pytest.approx(0.25)
    # within a 30% margin it is a near-tie, signed as the load it loses
    assert runner_up_notes(fleet, 0.30)[1].startswith(
        "near-tie: cluster.replicas=3 with load_scale=1.5 sustains -25.0% load_scale against"
    )
    assert len(runner_up_notes(fleet, 0.20)) == 1  # 25% is outside 20%


def test_a_tie_at_zero_is_still_a_tie() -> None:
    fleet = value_fleet({"a": 0, "b": 0}, maximize=False)
    assert runner_up_notes(fleet, 0.058)[1].startswith("tie: cluster.replicas=b with load_scale=0")


def test_equal_gpus_go_to_the_cheaper_and_the_tie_says_why() -> None:
    plans = [
        PlanResult("cluster.replicas", "base", False, [1, 2], [], combo=(("cluster.gpu", gpu),),
                   answer=2, gpus=16, cost_per_hour=cost)
        for gpu, cost in (("h200", 100.88), ("h100-80gb", 98.46))
    ]  # fmt: skip
    fleet = chosen(plans, "gpus")
    assert fleet.best.combo == (("cluster.gpu", "h100-80gb"),)  # not the first in --over
    tie = runner_up_notes(fleet, 0.174)[1]
    assert tie.endswith(
        "by GPUs (16 GPUs); the answer costs less ($98.46 against $100.88/hour): weigh both"
    )


def test_a_single_search_names_no_runner_up_whatever_it_minimizes() -> None:
    for minimize in ("cost", "gpus", "value"):
        fleet = fleet_of({"a100-80gb": 13.50})
        fleet.minimize = minimize
        assert runner_up_notes(fleet, CALIBRATION_MEDIAN_ERROR) == []
        assert runner_up_document(fleet, CALIBRATION_MEDIAN_ERROR) is None


def test_a_tie_with_an_unpriced_option_says_the_answer_has_a_price() -> None:
    # b200 (no list price) comes first in --over, yet h200, priced, is the answer: the tie must
    # not call it the first in --over's order
    plans = [
        PlanResult("cluster.replicas", "base", False, [1, 2], [], combo=(("cluster.gpu", gpu),),
                   answer=2, gpus=16, cost_per_hour=cost)
        for gpu, cost in (("b200", None), ("h200", 100.88))
    ]  # fmt: skip
    fleet = chosen(plans, "gpus")
    assert fleet.best.combo == (("cluster.gpu", "h200"),)
    assert runner_up_notes(fleet, 0.174)[1].endswith(
        "the answer has a price and the other none: weigh both"
    )
    # a maximize tie's runner-up reads as the same load, not "+0.0%"
    tie = value_fleet({"3": 1.5, "4": 1.5}, maximize=True)
    assert runner_up_notes(tie, 0.1)[0].endswith(", the same load_scale")


def test_an_over_plans_json_names_the_answers_gpus_and_cost() -> None:
    fleet = fleet_of({"a100-80gb": 13.50, "h100-80gb": 14.00})
    document = fleet.to_json_dict()
    assert (document["gpus"], document["cost_per_hour"]) == (2, 13.50)


def test_of_two_equally_cheap_options_the_one_further_from_its_targets_is_the_answer() -> None:
    from simsched.studies.bisection import Probe
    from simsched.studies.slo import parse_slo

    # both cost $68.80 with 2 replicas; sglang's TTFT is 5.5% under its 800 ms target (756 ms),
    # trtllm's 77% under (184 ms): sglang comes first in --over, trtllm is the answer
    slo = parse_slo("interactive.p99_ttft_ms<=800")

    def option(engine: str, margin_ms: float) -> PlanResult:
        probe = Probe(value=2, met=True, metrics={slo.key: 800 - margin_ms},
                      margins={slo.key: margin_ms})  # fmt: skip
        return PlanResult("cluster.replicas", "base", False, [1, 2], [slo],
                          combo=(("cluster.engine", engine),), answer=2, probes=[probe],
                          gpus=8, cost_per_hour=68.80)  # fmt: skip

    plans = [option("sglang", 44.0), option("trtllm", 616.0)]
    fleet = chosen(plans, "cost")
    assert fleet.best.combo == (("cluster.engine", "trtllm"),)
    # a zero target (no shedding at all) has no share to give: its margin, 0 for both, does not
    # hide the TTFT margins
    guard = parse_slo("all.shed_rate<=0")
    for engine in plans:
        engine.slos.append(guard)
        engine.probes[0].margins[guard.key] = 0.0
    fleet = chosen(plans, "cost")
    assert fleet.best.combo == (("cluster.engine", "trtllm"),)
    assert runner_up_notes(fleet, 0.058)[1].endswith(
        "the answer's thinnest SLO margin is wider (+77.0% against +5.5% of its target): weigh both"
    )


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"cluster.gpu": "h200"}, "--over cluster.gpu: takes a list of values, not the str"),
        ({"cluster.tp": {1, 2}}, "--over cluster.tp: takes a list of values, not the set"),
        ({"cluster.tp": [1, 1]}, "--over cluster.tp: 1 is given twice"),
        ({"cluster.engine": [{"name": "trtllm"}, "vllm"]}, "takes plain values"),
    ],
    ids=["text", "set", "twice", "mapping"],
)
def test_the_python_plan_checks_over_as_the_cli_does(over: dict, message: str) -> None:
    from simsched.errors import InputError
    from simsched.studies.plan import plan as run_plan

    scenario = REPO / "scenarios" / "fleet_planning.yaml"
    with pytest.raises(InputError) as caught:
        run_plan(scenario, "cluster.replicas", "1:2", ["all.shed_rate<=0.5"], over=over)
    assert message in str(caught.value)


@pytest.mark.parametrize(("interval_ms", "skipped"), [(0.001, True), (1.0, False)])
def test_headroom_is_skipped_with_a_note_when_every_request_arrives_at_once(
    tmp_path, interval_ms: float, skipped: bool
) -> None:
    """A burst's requests arrive at once: load_scale only sends the same count sooner, so no
    bisection of it can find headroom ("at least +100%" was printed without a load added).
    Six requests 0.001 ms apart span 0.005 ms, within 1 ms; 1 ms apart they span 5 ms, and a
    scale does raise their rate."""
    path = tmp_path / "burst.yaml"
    path.write_text(
        "name: burst\n"
        "tenants:\n"
        "  - id: bench\n"
        f"    arrivals: {{kind: periodic, interval_ms: {interval_ms}, count: 6}}\n"
        "    prefill_tokens: 64\n"
        "    decode_tokens: 4\n"
        "cluster: {total_kv_blocks: 1600}\n",
        encoding="utf-8",
    )
    result = plan(path, "cluster.total_kv_blocks", "100:200", ["all.shed_rate<=0.5"], step=100)
    assert result.answer is not None
    said = [n for n in result.notes if n.startswith("headroom not computed: every tenant")]
    assert (result.headroom is None) == skipped and bool(said) == skipped
    if skipped:
        assert "(periodic, all within 0.005 ms)" in said[0]


def test_a_burst_beside_a_scenario_trace_keeps_its_headroom(tmp_path) -> None:
    """A scenario-level trace is time-scaled by load_scale: the burst tenant alone does not make
    the whole workload unscalable."""
    from simsched.config.load_scale import burst_only

    trace = tmp_path / "trace.csv"
    trace.write_text(
        "arrival_ms,tenant_id,prefill_tokens,decode_tokens\n"
        + "".join(f"{i * 100},bench,64,4\n" for i in range(20)),
        encoding="utf-8",
    )
    raw = {
        "name": "t",
        "tenants": [{"id": "bench", "arrivals": {"kind": "periodic", "interval_ms": 0.001,
                                                  "count": 2},
                     "prefill_tokens": 64, "decode_tokens": 4}],
        "cluster": {"total_kv_blocks": 1600},
    }  # fmt: skip
    assert burst_only(validate(raw, "t")) is not None
    with_trace = validate({**raw, "trace": {"path": str(trace)}}, "t")
    assert burst_only(with_trace) is None
