"""Issue 10 item 13 (resource bombs): what cannot fit is refused before it is generated.

Each case used to run out of memory or loop for ever; now it is one `InputError` naming the
field and the `limits` setting that lets a user with the machine for it go on, in well under a
second.

How fast is checked by `make bench` (row budget), not here: a wall-clock assertion flakes
on a loaded machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simsched.config.loading import load_scenario
from simsched.errors import InputError
from simsched.results.simulate import simulate
from simsched.workload.build import build_workload

REPO = Path(__file__).resolve().parents[2]
STUDY = REPO / "scenarios" / "noisy_neighbor.yaml"
BATCHING = REPO / "scenarios" / "noisy_neighbor_batching.yaml"
POISSON = "tenants.0.arrivals={kind: poisson, rate_per_s: %s, duration_s: %s}"
ONOFF = (
    "tenants.0.arrivals={kind: onoff, on_rate_per_s: 10, off_rate_per_s: 0,"
    " mean_on_s: %s, mean_off_s: %s, %s}"
)


def _refused_fast(overrides: list[str], *words: str, path: Path = STUDY) -> str:
    with pytest.raises(InputError) as info:
        scenario = load_scenario(path, overrides)
        simulate(scenario, [scenario.variants[0].name])
    message = str(info.value)
    for word in words:
        assert word in message, message
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    "override",
    [
        "tenants.0.arrivals={kind: periodic, interval_ms: 1, count: 1000000000}",
        "tenants.0.arrivals={kind: poisson, rate_per_s: 1, count: 1000000000}",
        POISSON % ("1e12", "1"),
        POISSON % ("1", "1e15"),
        "tenants.0.arrivals={kind: gamma, rate_per_s: 1e9, cv: 2, duration_s: 100}",
        "tenants.0.arrivals={kind: rate_schedule, points: [[0, 1e9]], duration_s: 100}",
        ONOFF % ("1", "1", "duration_s: 1e12"),
    ],
)
def test_too_many_requests_are_refused_before_generating(override: str) -> None:
    _refused_fast([override], "tenants[0].arrivals", "limits.max_requests")


@pytest.mark.parametrize("bounds", ["duration_s: 100", "count: 100", "count: 100, duration_s: 1e9"])
def test_vanishing_sojourns_are_refused_not_looped_on(bounds: str) -> None:
    _refused_fast([ONOFF % ("1e-300", "1e-300", bounds)], "sojourns", "limits.max_requests")


def test_the_limit_can_be_raised() -> None:
    scenario = load_scenario(STUDY, [POISSON % ("100", "10"), "limits.max_requests=10"])
    with pytest.raises(InputError, match="limits.max_requests"):
        build_workload(scenario)
    scenario = load_scenario(STUDY, [POISSON % ("100", "10"), "limits.max_requests=5000"])
    assert 500 < len(build_workload(scenario)) < 1500


def test_too_many_replicas_are_refused() -> None:
    _refused_fast(["cluster.replicas=1000000"], "cluster.replicas", "limits.max_replicas",
                  path=BATCHING)  # fmt: skip


def test_a_timeline_too_fine_is_refused() -> None:
    _refused_fast(["timeline.interval_ms=0.001", POISSON % ("10", "1000")],
                  "timeline.interval_ms", "limits.max_timeline_rows")  # fmt: skip


def test_arrivals_beyond_any_clock_are_refused() -> None:
    far = "tenants.0.arrivals={kind: periodic, start_ms: 1e300, interval_ms: 1, count: 3}"
    _refused_fast([far], "tenants[0]", "arrival")


@pytest.mark.parametrize(
    "override",
    [
        "tenants.0.arrivals={kind: gamma, rate_per_s: 10, cv: 1e-300, count: 5}",
        "tenants.0.arrivals={kind: weibull, rate_per_s: 10, cv: 1e-300, count: 5}",
        "tenants.0.arrivals={kind: rate_schedule, points: [[0, 10, 1e-300]], count: 5}",
    ],
)
def test_a_vanishing_cv_is_refused(override: str) -> None:
    _refused_fast([override], "tenants[0].arrivals", "1e-06")


@pytest.mark.parametrize("points", ["[[0, 1], [1e300, 1e300]]", "[[0, 1e300], [1e300, 0]]"])
def test_a_rate_curve_beyond_any_clock_is_refused(points: str) -> None:
    override = (
        "tenants.0.arrivals={kind: rate_schedule, interpolation: linear, duration_s: 100, "
        f"points: {points}}}"
    )
    _refused_fast([override], "tenants[0].arrivals.points", "at most 1e+12")


def test_a_budget_that_is_not_a_number_is_refused() -> None:
    # an overflowing estimate (NaN) must not slip past the limit
    with pytest.raises(InputError, match="limits.max_requests"):
        scenario = load_scenario(STUDY, [POISSON % ("1e12", "1e12")])
        build_workload(scenario)


SESSIONS = REPO / "scenarios" / "chat_sessions.yaml"


@pytest.mark.parametrize(
    "turns",
    [
        "{dist: lognormal, median: 1000000000, sigma: 0.1}",
        "{dist: lognormal, median: 10, sigma: 40}",  # a mean far above the median
        "{dist: empirical, values: [1, 1000000000], weights: [1, 1]}",
        "{dist: normal, mean: 1000000000, std: 1}",
        "{dist: exponential, mean: 1000000000}",
        "{dist: uniform, low: 1, high: 2000000000}",
        "{dist: lognormal, median: 1000000000, sigma: 0.1, min: 5, max: 1000000000}",
    ],
)
def test_sessions_with_huge_turn_counts_are_refused(turns: str) -> None:
    _refused_fast(
        [f"tenants.0.arrivals.turns={turns}"], "tenants[0].arrivals", "limits.max_requests",
        path=SESSIONS,
    )  # fmt: skip


def test_a_max_clips_the_turn_estimate() -> None:
    # The same huge median, clipped to 12 turns, fits the default budget.
    scenario = load_scenario(
        SESSIONS, ["tenants.0.arrivals.turns={dist: lognormal, median: 1e9, sigma: 0.1, max: 12}"]
    )
    from simsched.workload.limits import check_request_budget

    check_request_budget(scenario)


def test_the_automatic_timeline_interval_fits_the_row_limit() -> None:
    # 8 replicas x about 2000 samples would pass a limit of 4000 rows: the automatic interval
    # widens to fit it instead of refusing the run (the default case: 2500+ replicas).
    scenario = load_scenario(
        BATCHING,
        ["cluster.replicas=8", "limits.max_timeline_rows=4000", POISSON % ("10", "10"),
         "timeline.enabled=true"],
    )  # fmt: skip
    result = simulate(scenario, [scenario.variants[0].name])
    timeline = result.timeline
    requests = result.requests
    first, last = requests["arrival_ms"].min(), requests["arrival_ms"].max()
    over_arrivals = timeline[(timeline["time_ms"] >= first) & (timeline["time_ms"] <= last)]
    assert 2000 <= len(over_arrivals) <= 4000 + 8, len(over_arrivals)


def test_an_explicit_interval_too_fine_for_the_replicas_is_refused() -> None:
    _refused_fast(
        ["cluster.replicas=8", "limits.max_timeline_rows=4000", POISSON % ("10", "10"),
         "timeline.interval_ms=1"],
        "timeline.interval_ms", "limits.max_timeline_rows", path=BATCHING,
    )  # fmt: skip
