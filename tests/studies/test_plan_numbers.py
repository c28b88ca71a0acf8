"""One rounding rule for a plan's notes: percentages with one decimal, margins to three
significant digits with their share of the target."""

from __future__ import annotations

from simsched.studies.bisection import PlanResult, Probe
from simsched.studies.fleet import FleetPlan
from simsched.studies.plan_notes import rule_notes, shedding_note
from simsched.studies.plan_numbers import margin_text, share_text, unit_text
from simsched.studies.slo import parse_slo


def test_percentages_have_one_decimal_and_a_nonzero_never_reads_zero() -> None:
    assert share_text(0.0246) == "2.5%"  # 2.46 rounds to 2.5
    assert share_text(0.0246, signed=True) == "+2.5%"
    assert share_text(-0.044, signed=True) == "-4.4%"
    assert share_text(0.0, signed=True) == "+0.0%"
    assert share_text(0.7) == "70.0%"
    assert share_text(0.0004) == "<0.1%"  # 0.04% rounds to 0.0
    assert share_text(-0.0004, signed=True) == "-<0.1%"


def test_units_keep_three_significant_digits_without_an_exponent() -> None:
    assert unit_text(112.85) == "+113"
    assert unit_text(12.31) == "+12.3"
    assert unit_text(-610.05) == "-610"
    assert unit_text(0.001) == "+0.001"
    assert unit_text(-0.274503) == "-0.275"
    assert unit_text(12345.6) == "+12346"
    assert unit_text(0) == "+0"


def test_a_margin_shows_its_share_of_the_target_unless_the_target_is_zero() -> None:
    assert margin_text(12.31, 500) == "+12.3 (+2.5%)"  # 12.31 / 500 = 2.462%
    assert margin_text(0.0, 0.0) == "+0"
    assert margin_text(None, 500) == "no value"


def test_a_margin_on_a_share_reads_in_percentage_points() -> None:
    # shed_rate 0.2533 against <= 0.001: 0.252 below, 25.2 points; not -25229.6% of the target
    assert margin_text(-0.2523, 0.001, of_a_share=True) == "-0.252 (-25.2 points)"
    assert margin_text(0.001, 0.001, of_a_share=True) == "+0.001 (+0.1 points)"
    assert margin_text(0.0, 0.0, of_a_share=True) == "+0 (+0.0 points)"


def test_every_note_uses_the_rule() -> None:
    slos = [parse_slo("a.p99_ttft_ms<=500"), parse_slo("all.shed_rate<=0.001")]
    result = PlanResult("k", "v", False, [1, 2], slos, answer=2)
    margins = {"a.p99_ttft_ms": 12.31, "all.shed_rate": 0.001}
    result.probes = [
        Probe(1, False, {"a.p99_ttft_ms": 300.0}, shed={"all": 0.54198}),
        Probe(2, True, {"a.p99_ttft_ms": 487.69}, margins=margins, shed={"all": 0.0}),
    ]
    fleet = FleetPlan("k", "v", False, slos, "interval", 1, "value", [result])
    assert rule_notes(fleet)[0] == (
        "margins at k=2: a.p99_ttft_ms +12.3 (+2.5%), all.shed_rate +0.001 (+0.1 points)"
    )
    assert shedding_note(result).startswith("the probe at k=1 sheds 54.2%: ")


def test_every_share_metric_an_slo_can_judge_reads_in_points() -> None:
    # a column an SLO may name that holds a share of a whole (0 to 1) is in SHARE_METRICS:
    # the KV occupancy ratio is one (<= 0.9 with 0.05 to spare is 5.0 points, not +5.6%)
    from simsched.results.tenants import METRIC_COLUMNS, SHARE_METRICS

    shares = {c for c in METRIC_COLUMNS if c.endswith(("_rate", "_share", "_ratio", "attainment"))}
    assert shares <= SHARE_METRICS
