"""An answer judged on one seed with a thin margin or headroom says so, and names the rerun."""

from __future__ import annotations

from simsched.studies.bisection import PlanResult, Probe
from simsched.studies.fleet import FleetPlan
from simsched.studies.headroom import Headroom
from simsched.studies.seed_fragility import one_seed_note, thin_answer_note
from simsched.studies.slo import parse_slo
from simsched.studies.uncertainty import CALIBRATION_MEDIAN_ERROR

SLOS = [parse_slo("interactive.p99_ttft_ms<=500"), parse_slo("all.shed_rate<=0.001")]


def fleet_with(p99_margin_ms: float, seeds: int = 1, headroom: Headroom | None = None):
    margins = {"interactive.p99_ttft_ms": p99_margin_ms, "all.shed_rate": 0.001}
    result = PlanResult("cluster.replicas", "base", False, [1, 2, 3], SLOS, answer=2)
    result.probes = [Probe(2, True, {}, margins=margins, shed={"all": 0.0})]
    fleet = FleetPlan("cluster.replicas", "base", False, SLOS, "interval", seeds, "value",
                      [result], headroom=headroom)  # fmt: skip
    fleet.choose()
    return fleet


def test_a_thin_one_seed_margin_gets_the_note() -> None:
    # 12.31 ms of 500 = 2.46%, within 5.8%; the shed SLO's 0.001 of 0.001 = 100% is not thinner
    note = one_seed_note(fleet_with(12.31), CALIBRATION_MEDIAN_ERROR)
    assert note == (
        "judged on one seed; margin +2.5% (interactive.p99_ttft_ms): within the 5.8% tie "
        "margin, where another seed can move the answer: rerun with --seeds 3"
    )


def test_the_threshold_is_inclusive_and_wide_margins_are_quiet() -> None:
    assert one_seed_note(fleet_with(29.0), CALIBRATION_MEDIAN_ERROR) is not None  # 5.8% exactly
    assert one_seed_note(fleet_with(30.0), CALIBRATION_MEDIAN_ERROR) is None  # 6.0%
    assert one_seed_note(fleet_with(30.0), 0.07) is not None  # a wider --tie-margin


def test_several_seeds_need_no_note() -> None:
    assert one_seed_note(fleet_with(1.0, seeds=3), CALIBRATION_MEDIAN_ERROR) is None


def test_a_thin_headroom_alone_gets_the_note() -> None:
    thin = Headroom(1.0, 1.05, 1.1, [])  # +5% load, within 5.8%
    note = one_seed_note(fleet_with(100.0, headroom=thin), CALIBRATION_MEDIAN_ERROR)
    assert (
        note is not None
        and "one seed; headroom +5.0% load: within" in note
        and "margin" not in note.split(":")[0]  # the +20% margin is wide: not listed as thin
    )
    wide = Headroom(1.0, 1.1, 1.15, [])
    assert one_seed_note(fleet_with(100.0, headroom=wide), CALIBRATION_MEDIAN_ERROR) is None
    top = Headroom(1.0, 2.0, None, [])  # met at the top of the search: at least +100%
    assert one_seed_note(fleet_with(100.0, headroom=top), CALIBRATION_MEDIAN_ERROR) is None


def test_no_answer_no_note() -> None:
    fleet = fleet_with(1.0)
    fleet.best = None
    assert one_seed_note(fleet, CALIBRATION_MEDIAN_ERROR) is None


def test_a_thin_answer_on_several_seeds_is_called_a_near_tie() -> None:
    # 0.17 ms of 500 = 0.034%, within 5.8%: seeds average out the spread, not the model's error
    note = thin_answer_note(fleet_with(0.17, seeds=3), CALIBRATION_MEDIAN_ERROR)
    assert note == (
        "a near-tie: margin +<0.1% (interactive.p99_ttft_ms), within the 5.8% tie margin (the "
        "calibration's median error for this kind of model), so a model error of that size "
        "can move the answer: rerun with --model-error 5.8 to see where it goes"
    )
    # 30 ms of 500 = 6.0%: wider than the margin, no note; one seed: the one-seed note's case
    assert thin_answer_note(fleet_with(30.0, seeds=3), CALIBRATION_MEDIAN_ERROR) is None
    assert thin_answer_note(fleet_with(0.17, seeds=1), CALIBRATION_MEDIAN_ERROR) is None
    thin = Headroom(1.0, 1.05, 1.1, [])  # +5% load, within 5.8%, beside a wide margin
    note = thin_answer_note(fleet_with(100.0, seeds=2, headroom=thin), CALIBRATION_MEDIAN_ERROR)
    assert note is not None and note.startswith("a near-tie: headroom +5.0% load, within")


def test_a_near_tie_on_a_given_tie_margin_does_not_call_it_the_models_error() -> None:
    # --tie-margin 20: the user's margin, not the calibration's median error; and the rerun
    # is named with the margin's own digits
    note = thin_answer_note(fleet_with(0.17, seeds=3), 0.2, measured=False)
    assert note is not None and "latency model's median error" not in note
    assert "within the 20.0% tie margin (--tie-margin), so a model error" in note
    assert note.endswith("rerun with --model-error 20 to see where it goes")


def test_a_near_tie_names_no_rerun_the_latency_model_refuses() -> None:
    # --model-error moves the roofline model's efficiencies only: on another model the
    # command the note named exited 2; and a tie margin that rounds to <0.1% is no number
    note = thin_answer_note(fleet_with(0.0, seeds=3), 0.058, rerun=False)
    assert note is not None and "--model-error" not in note
    tiny = thin_answer_note(fleet_with(0.0, seeds=3), 0.0004, measured=False)
    assert tiny is not None and "--model-error <" not in tiny
    assert tiny.endswith("rerun with --model-error 0.04 to see where it goes")


def test_a_thin_margin_on_a_share_metric_says_it_is_a_share_of_the_target() -> None:
    # all.shed_rate 0.00005 inside <= 0.001: 5.0% of the target, 0.005 points; the margins
    # note reads share metrics in points, so a bare "+5.0%" here read as 5 points
    fleet = fleet_with(100.0, seeds=3)
    fleet.best.at_answer.margins["all.shed_rate"] = 0.00005
    note = thin_answer_note(fleet, CALIBRATION_MEDIAN_ERROR)
    assert note is not None
    assert note.startswith("a near-tie: margin +5.0% of its target (all.shed_rate), within")
