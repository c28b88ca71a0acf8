"""What a plan says besides its answer: the shedding note in place of a false non-monotone
warning, intervals rounded and clipped to the metric's range, a did-you-mean for SLO metric
names, money to the cent, and the probes as a DataFrame. Expected values are worked by hand."""

from __future__ import annotations

import math

import pytest

from simsched.cli.plan_output import combination_table, estimate_cell
from simsched.errors import InputError
from simsched.results.confidence import Estimate
from simsched.studies.bisection import PlanResult, Probe, failing, monotonicity_warnings
from simsched.studies.fleet import FleetPlan
from simsched.studies.plan_notes import shedding_note
from simsched.studies.slo import parse_slo

TTFT = "interactive.p99_ttft_ms"


def probe(value: int, p99: float, shed: float, met: bool) -> Probe:
    return Probe(value, met, {TTFT: p99}, shed={"all": shed})


def shedding_plan(p99_at_5: float) -> PlanResult:
    """1 and 2 replicas shed 70% and 30%: their latencies, over the few requests admitted, are
    lower than at 3 replicas, which admits everything."""
    result = PlanResult("k", "v", False, [1, 2, 3, 4, 5], [parse_slo(f"{TTFT}<=500")])
    result.probes = [
        probe(1, 300.0, 0.7, False),
        probe(2, 450.0, 0.3, False),
        probe(3, 600.0, 0.0, False),
        probe(4, 400.0, 0.0, True),
        probe(5, p99_at_5, 0.0, True),
    ]
    return result


def test_shedding_probes_get_a_note_not_a_non_monotone_warning() -> None:
    result = shedding_plan(p99_at_5=300.0)
    assert monotonicity_warnings(result) == []  # 600, 400, 300 over the admitting probes
    assert shedding_note(result) == (
        "probes at k=1-2 shed 30.0%-70.0%: latency there covers admitted requests only"
    )


def test_a_genuine_non_monotone_latency_is_still_a_warning() -> None:
    result = shedding_plan(p99_at_5=450.0)  # 600, 400, 450: down, then up
    assert monotonicity_warnings(result) == [
        f"{TTFT} is not monotone in k over the probes that admit every request "
        "(3: 600, 4: 400, 5: 450)"
    ]


def test_a_wiggle_below_the_shown_digits_is_not_a_reversal() -> None:
    # 600, 400, then 400.4: up by 0.1% of the value, below three significant digits (seed
    # noise a one-seed plan always has), so no warning; 401 is a reversal, shown rounded
    assert monotonicity_warnings(shedding_plan(p99_at_5=400.4)) == []
    warned = monotonicity_warnings(shedding_plan(p99_at_5=401.3333333))
    assert warned == [
        f"{TTFT} is not monotone in k over the probes that admit every request "
        "(3: 600, 4: 400, 5: 401)"
    ]


def test_no_note_without_shedding_or_without_a_latency_slo() -> None:
    result = shedding_plan(p99_at_5=300.0)
    result.probes = result.probes[2:]
    assert shedding_note(result) is None
    rates = PlanResult("k", "v", False, [1, 2], [parse_slo("all.shed_rate<=0.01")])
    rates.probes = [Probe(1, False, {"all.shed_rate": 0.5}, shed={"all": 0.5})]
    assert shedding_note(rates) is None  # no latency judged: nothing to qualify


def test_failing_rounds_the_interval_and_clips_it_to_the_metric_range() -> None:
    slo = parse_slo("all.shed_rate<=0.001")
    # mean 0.0123456, half-width 0.0224: two significant digits of it are 3 decimals
    found = Estimate(0.0123456, 0.0123456 - 0.0224, 0.0123456 + 0.0224, 3)
    missed = Probe(2, False, {slo.key: found.mean}, {slo.key: found}, verdicts={slo.key: False})
    assert failing([slo], missed) == "all.shed_rate = 0.012 [0.000, 0.035] (want <= 0.001)"
    assert estimate_cell(missed, slo.key) == "0.012 [0.000, 0.035]"  # no bound below 0
    # within the range, the table keeps its compact mean±half form
    ttft = Estimate(413.0, 233.0, 593.0, 3)
    inside = Probe(2, True, {TTFT: 413.0}, {TTFT: ttft})
    assert estimate_cell(inside, TTFT) == "413±180"


def test_an_slo_metric_name_gets_a_suggestion() -> None:
    with pytest.raises(InputError, match=r"unknown metric 'p99_ttft'; did you mean 'p99_ttft_ms'"):
        parse_slo("chat.p99_ttft<=800")
    with pytest.raises(InputError, match=r"unknown metric 'zzz' \(known: "):  # nothing close
        parse_slo("chat.zzz<=800")


def fleet_of_two() -> FleetPlan:
    slos = [parse_slo(f"{TTFT}<=500")]
    plans = []
    for gpu, cost in (("a100-80gb", 30.775), ("h100-80gb", 36.93)):
        result = PlanResult(
            "cluster.replicas", "v", False, [1, 2], slos, combo=(("cluster.gpu", gpu),)
        )
        ttft = Estimate(420.0, 380.0, 460.0, 3)
        result.probes = [
            Probe(2, True, {TTFT: 420.0}, {TTFT: ttft}, {TTFT: 40.0}, shed={"all": 0.0},
                  combo=result.combo),
            Probe(1, False, {TTFT: 300.0}, {TTFT: Estimate(300.0, 300.0, 300.0, 3)},
                  {TTFT: -10.0}, shed={"all": 0.5}, combo=result.combo),
        ]  # fmt: skip
        result.answer, result.gpus, result.cost_per_hour = 2, 2, cost
        plans.append(result)
    return FleetPlan("cluster.replicas", "v", False, slos, "interval", 3, "cost", plans)


def test_money_in_the_combination_table_is_to_the_cent() -> None:
    lines = combination_table(fleet_of_two())
    assert "30.77" in lines[1] and "30.775" not in lines[1]
    assert "36.93" in lines[2]


def test_plan_probes_as_a_frame() -> None:
    fleet = fleet_of_two()
    frame = fleet.to_frame()
    assert list(frame.columns) == [
        "cluster.gpu", "cluster.replicas", "met", "answer", TTFT, f"{TTFT}.low",
        f"{TTFT}.high", f"{TTFT}.margin", "shed_rate",
    ]  # fmt: skip
    assert len(frame) == 4  # two probes per GPU, in the knob's order
    first = frame.iloc[0]
    assert (first["cluster.gpu"], first["cluster.replicas"], bool(first["met"])) == (
        "a100-80gb",
        1,
        False,
    )
    assert first["shed_rate"] == 0.5 and not first["answer"]
    answer = frame.iloc[1]
    assert answer["answer"] and answer[TTFT] == 420.0
    assert (answer[f"{TTFT}.low"], answer[f"{TTFT}.high"]) == (380.0, 460.0)
    one = fleet.plans[1].to_frame()  # one combination's own frame
    assert list(one["cluster.gpu"]) == ["h100-80gb", "h100-80gb"]
    assert not math.isnan(one[f"{TTFT}.margin"].iloc[1])


def test_a_plan_on_an_moe_model_says_its_error_as_the_scenario_table_does() -> None:
    """The answer is where a planner reads: an MoE or speculative variant's plan carries the
    notes its `simsched scenario` table has (outputs/moe_notes.py), and only that variant's."""
    from pathlib import Path

    from simsched.outputs.moe_notes import MOE_MEDIAN_ERROR
    from simsched.studies.plan import plan

    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "moe_capacity.yaml"
    short = [f"tenants.{t}.arrivals.duration_s=1" for t in ("chat", "code", "batch")]
    slos = [f"{TTFT}<=100000"]
    mtp = plan(scenario, "cluster.replicas", "1:2", slos, variant="dep8_mtp_x4",
               overrides=short, headroom=False)  # fmt: skip
    moe = [n for n in mtp.notes if n.startswith("MoE model:")]
    spec = [n for n in mtp.notes if n.startswith("speculative decoding:")]
    assert len(moe) == 1 and f"off by {MOE_MEDIAN_ERROR}" in moe[0]
    assert len(spec) == 1 and "off by 1.5% (median) in-sample" in spec[0]
    assert "other models, drafters and loads are unchecked" in spec[0]  # what 1.5% does not cover
    dep8 = plan(scenario, "cluster.replicas", "1:2", slos, variant="dep8_x4",
                overrides=short, headroom=False)  # fmt: skip
    assert [n for n in dep8.notes if n.startswith("MoE model:")] == moe
    assert not any(n.startswith("speculative decoding:") for n in dep8.notes)
    # over engines, each combination's own MoE notes: what its engine chose
    engines = plan(scenario, "cluster.replicas", "1:2", slos, variant="dep8_x4",
                   overrides=short, headroom=False,
                   over={"cluster.engine": ["vllm", "trtllm"]})  # fmt: skip
    chose = [n for n in engines.notes if ": engine " in n]
    assert any(n.startswith("cluster.engine=vllm: engine vllm: ") for n in chose)
    assert any(n.startswith("cluster.engine=trtllm: engine trtllm: ") for n in chose)
    assert [n for n in engines.notes if n.startswith("MoE model:")] == moe  # shared: said once


def test_a_plan_over_engines_says_their_comparison_is_unvalidated() -> None:
    """`--over cluster.engine=...` sets engines side by side as variants on different engines
    do, so the plan carries the note the scenario table has (outputs/engine_notes.py); a plan
    over GPUs on one engine does not."""
    from pathlib import Path

    from simsched.studies.plan import plan

    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "fleet_planning.yaml"
    short = [f"tenants.{t}.arrivals.duration_s=1" for t in ("chat", "ide", "batch")]
    slos = [f"{TTFT}<=100000"]
    engines = plan(scenario, "cluster.replicas", "1:2", slos, overrides=short, headroom=False,
                   over={"cluster.engine": ["vllm", "sglang"]})  # fmt: skip
    (note,) = [n for n in engines.notes if n.startswith("engines compared (")]
    assert note.startswith("engines compared (vllm, sglang): ")
    assert "unvalidated" in note and "29.3%" in note
    # the scenario writes 2048 / 256, which replace vLLM's own 8192 / 1024 on an H100
    (limits,) = [n for n in engines.notes if n.startswith("engines compared at")]
    assert "vllm runs 2048 tokens and 256 sequences, not its profile's 8192 / 1024" in limits
    gpus = {"cluster.gpu": ["a100-80gb", "h100-80gb"]}
    one = plan(scenario, "cluster.replicas", "1:2", slos, overrides=short, headroom=False,
               over=gpus)  # fmt: skip
    assert not any(n.startswith("engines compared") for n in one.notes)
    both = plan(scenario, "cluster.replicas", "1:2", slos, overrides=short, headroom=False,
                over={**gpus, "cluster.engine": ["trtllm", "sglang"]})  # fmt: skip
    (note,) = [n for n in both.notes if n.startswith("engines compared (")]
    assert note.startswith("engines compared (trtllm, sglang): ")  # each engine once


def test_an_answer_on_a_gpu_without_a_price_says_so() -> None:
    """B200 has no list price: the answer names its GPUs and says it has no price (it raised a
    TypeError formatting a missing $/hour)."""
    from pathlib import Path

    from simsched.studies.plan import plan

    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "fleet_planning.yaml"
    short = [f"tenants.{t}.arrivals.duration_s=1" for t in ("chat", "ide", "batch")]
    fleet = plan(scenario, "cluster.replicas", "1:2", [f"{TTFT}<=100000"], overrides=short,
                 headroom=False, over={"cluster.gpu": ["b200", "h100-80gb"]})  # fmt: skip
    assert "cluster.gpu=b200 with cluster.replicas=1" in fleet.message  # the same value (one
    # GPU of each); the tie-break itself is tests/studies/test_plan_uncertainty.py's
    assert fleet.message.endswith("1 GPU, no list price)")
    (prices,) = [n for n in fleet.notes if n.startswith("prices per GPU-hour")]
    assert "b200 no price," in prices and "(no price)" not in prices


def test_a_plan_validates_only_the_variant_it_judges() -> None:
    """As `scenario --variant` does: moe_capacity's MTP variant cannot take gpt-oss-120b (no MTP
    module), which must not refuse a plan judged on another variant."""
    from pathlib import Path

    import pytest

    from simsched.errors import InputError
    from simsched.studies.plan import plan

    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "moe_capacity.yaml"
    short = [f"tenants.{t}.arrivals.duration_s=1" for t in ("chat", "code", "batch")]
    gpt_oss = ["cluster.gpu=h100-80gb", "cluster.tp=4", "cluster.model=gpt-oss-120b",
               "cluster.moe_serving={ep: 4, attention_dp: 4, dispatch: allgather}"]  # fmt: skip
    slos = [f"{TTFT}<=100000"]
    result = plan(scenario, "cluster.replicas", "1:2", slos, variant="dep8_x4",
                  overrides=[*short, *gpt_oss], headroom=False)  # fmt: skip
    assert result.variant == "dep8_x4" and result.answer == 1
    from simsched.config.loading import load_scenario

    as_object = plan(load_scenario(scenario), "cluster.replicas", "1:2", slos,
                     variant="dep8_x4", overrides=[*short, *gpt_oss], headroom=False)  # fmt: skip
    assert as_object.answer == result.answer  # an object's variants are left out as a file's
    with pytest.raises(InputError, match="dep8_mtp_x4"):  # judged, it is still refused
        plan(scenario, "cluster.replicas", "1:2", slos, variant="dep8_mtp_x4",
             overrides=[*short, *gpt_oss], headroom=False)  # fmt: skip
