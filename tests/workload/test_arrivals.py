"""Arrival processes: rates, burstiness, bounds, offsets, determinism and spec validation.

Statistical checks run at fixed seeds. Each tolerance is stated next to its check with the
standard error it covers (roughly 4 standard errors or more, so a correct generator passes for
almost any seed, while a wrong rate or cv fails by a wide margin).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from pydantic import TypeAdapter

from simsched.config.arrival_kinds import ArrivalSpec
from simsched.config.loading import validate
from simsched.errors import InputError
from simsched.workload.arrivals import arrival_times
from simsched.workload.arrivals_renewal import weibull_shape

SPEC = TypeAdapter(ArrivalSpec)


def times_of(raw: dict[str, Any], seed: int = 7) -> np.ndarray:
    return arrival_times(SPEC.validate_python(raw), np.random.default_rng(seed))


def gaps_s(times_ms: np.ndarray) -> np.ndarray:
    return np.diff(times_ms) / 1000.0


def rate_and_cv(times_ms: np.ndarray) -> tuple[float, float]:
    gaps = gaps_s(times_ms)
    return 1.0 / gaps.mean(), gaps.std() / gaps.mean()


def relative(value: float, target: float) -> float:
    return abs(value / target - 1.0)


# --- renewal processes ----------------------------------------------------------------------


def test_poisson_rate_and_cv() -> None:
    # 200k exponential gaps: the mean's standard error is 0.22 %, the cv's about 0.3 %.
    rate, cv = rate_and_cv(times_of({"kind": "poisson", "rate_per_s": 50, "count": 200_000}))
    assert relative(rate, 50) < 0.01
    assert relative(cv, 1.0) < 0.02


@pytest.mark.parametrize(
    ("kind", "cv"),
    [("gamma", 0.5), ("gamma", 2.0), ("gamma", 4.0), ("weibull", 0.5), ("weibull", 2.0)],
)
def test_renewal_rate_and_cv(kind: str, cv: float) -> None:
    # 200k gaps. Over 30 seeds the relative errors had rms at most 0.7 % (rate and cv), so 3 %
    # is over 4 standard errors. (A Weibull cv above 2 has too heavy a tail for a sample cv to
    # be this sharp; the distribution test below covers it.)
    raw = {"kind": kind, "rate_per_s": 20, "cv": cv, "count": 200_000}
    rate, measured_cv = rate_and_cv(times_of(raw))
    assert relative(rate, 20) < 0.03
    assert relative(measured_cv, cv) < 0.03


def test_bursty_weibull_gaps_follow_the_weibull_law() -> None:
    # Kolmogorov-Smirnov distance to the Weibull CDF 1 - exp(-(x/scale)^k) with mean 1/rate;
    # the 1 % critical value at n = 200k is 1.63 / sqrt(n) = 0.0036.
    rate, cv = 20.0, 4.0
    gaps = np.sort(
        gaps_s(times_of({"kind": "weibull", "rate_per_s": rate, "cv": cv, "count": 200_001}))
    )
    k = weibull_shape(cv)
    scale = (1.0 / rate) / math.gamma(1.0 + 1.0 / k)
    cdf = 1.0 - np.exp(-((gaps / scale) ** k))
    n = len(gaps)
    distance = max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(n) / n))
    assert distance < 0.0036


@pytest.mark.parametrize(("shape", "cv"), [(1.0, 1.0), (2.0, math.sqrt(4 / math.pi - 1))])
def test_weibull_shape_solves_known_cases(shape: float, cv: float) -> None:
    # k = 1 is the exponential (cv 1); k = 2 is the Rayleigh distribution.
    assert weibull_shape(cv) == pytest.approx(shape, rel=1e-9)


def test_weibull_shape_falls_as_cv_grows() -> None:
    shapes = [weibull_shape(cv) for cv in (0.1, 0.5, 1.0, 3.0, 30.0, 400.0)]
    assert shapes == sorted(shapes, reverse=True)
    assert shapes[-1] >= 0.1


# --- on/off -------------------------------------------------------------------------------


def test_onoff_long_run_rate() -> None:
    # rate = (100 * 0.2 + 10 * 0.3) / 0.5 = 46/s. 400k arrivals span about 17k on/off cycles;
    # a cycle's count has sd about 0.9 of its mean, so the rate's standard error is about 0.7 %.
    raw = {
        "kind": "onoff",
        "on_rate_per_s": 100,
        "off_rate_per_s": 10,
        "mean_on_s": 0.2,
        "mean_off_s": 0.3,
        "count": 400_000,
    }
    times = times_of(raw)
    rate = len(times) / (times[-1] / 1000.0)
    assert relative(rate, 46.0) < 0.03
    _, cv = rate_and_cv(times)
    assert cv > 1.3  # modulation makes the gaps burstier than Poisson (cv 1)


def test_onoff_starts_in_the_on_state() -> None:
    # An on sojourn that (almost surely) outlasts the run leaves a plain Poisson process at the
    # on rate; starting off would give no arrivals at all (the off rate is 0).
    raw = {
        "kind": "onoff",
        "on_rate_per_s": 40,
        "off_rate_per_s": 0,
        "mean_on_s": 1e9,
        "mean_off_s": 1.0,
        "duration_s": 1000,
    }
    times = times_of(raw)
    assert abs(len(times) - 40_000) < 4 * math.sqrt(40_000)


# --- rate schedules -----------------------------------------------------------------------


def segment_counts(times_ms: np.ndarray, edges_s: list[float]) -> np.ndarray:
    return np.histogram(times_ms / 1000.0, bins=edges_s)[0]


def assert_counts(counts: np.ndarray, expected: list[float], cv: float = 1.0) -> None:
    # A renewal count over a long stretch has variance about cv² * mean: allow 4 sd (+2).
    for got, want in zip(counts, expected, strict=True):
        assert abs(got - want) <= 4 * cv * math.sqrt(want) + 2, (counts, expected)


def test_rate_schedule_step_counts_per_segment() -> None:
    points = [[0, 100], [100, 0], [200, 300], [300, 50]]
    raw = {"kind": "rate_schedule", "points": points, "duration_s": 400}
    times = times_of(raw)
    assert_counts(segment_counts(times, [0, 100, 200, 300, 400]), [10_000, 0, 30_000, 5_000])
    assert times.max() < 400_000


def test_rate_schedule_linear_counts() -> None:
    # The rate climbs 0 -> 200/s over [0, 100) s and then holds: expected counts are the areas.
    raw = {
        "kind": "rate_schedule",
        "points": [[0, 0], [100, 200]],
        "interpolation": "linear",
        "duration_s": 150,
    }
    counts = segment_counts(times_of(raw), [0, 50, 100, 150])
    assert_counts(counts, [2_500, 7_500, 10_000])


def test_rate_schedule_gamma_segments_keep_rate_and_cv() -> None:
    # Per-point cv: 0.5 on the first segment, the default 3 on the second.
    raw = {
        "kind": "rate_schedule",
        "points": [[0, 200, 0.5], [500, 50]],
        "cv": 3.0,
        "duration_s": 1500,
    }
    times = times_of(raw)
    assert_counts(segment_counts(times, [0, 500, 1500]), [100_000, 50_000], cv=3.0)
    first = gaps_s(times[times < 490_000])
    second = gaps_s(times[times > 510_000])
    assert relative(first.std() / first.mean(), 0.5) < 0.03
    assert relative(second.std() / second.mean(), 3.0) < 0.06  # 50k gaps, heavy tail


def test_rate_schedule_is_silent_before_its_first_point() -> None:
    raw = {"kind": "rate_schedule", "points": [[10, 100]], "duration_s": 20, "start_ms": 1000}
    times = times_of(raw)
    assert times.min() >= 11_000 and times.max() < 21_000
    assert_counts([len(times)], [1_000])


def test_rate_schedule_count_bound() -> None:
    raw = {"kind": "rate_schedule", "points": [[0, 5], [10, 0], [20, 80]], "count": 3_000}
    times = times_of(raw)
    assert len(times) == 3_000
    assert not np.any((times >= 10_000) & (times < 20_000))  # the zero-rate stretch


# --- bounds, offsets, determinism ---------------------------------------------------------

RANDOM_KINDS = [
    {"kind": "poisson", "rate_per_s": 30},
    {"kind": "gamma", "rate_per_s": 30, "cv": 2.5},
    {"kind": "weibull", "rate_per_s": 30, "cv": 0.7},
    {
        "kind": "onoff",
        "on_rate_per_s": 60,
        "off_rate_per_s": 0,
        "mean_on_s": 2,
        "mean_off_s": 2,
    },
    {"kind": "rate_schedule", "points": [[0, 10], [30, 50, 2.0]], "interpolation": "linear"},
]


@pytest.mark.parametrize("process", RANDOM_KINDS, ids=lambda p: p["kind"])
def test_bounds(process: dict[str, Any]) -> None:
    by_count = times_of({**process, "count": 5_000})
    by_duration = times_of({**process, "duration_s": 60})
    by_both = times_of({**process, "count": 500, "duration_s": 60})
    assert len(by_count) == 5_000
    assert 0 < len(by_duration) < 5_000 and by_duration.max() < 60_000
    assert len(by_both) == 500 and by_both.max() < 60_000
    for times in (by_count, by_duration, by_both):
        assert times.dtype == np.float64 and np.all(np.diff(times) >= 0) and times.min() > 0


@pytest.mark.parametrize("process", RANDOM_KINDS, ids=lambda p: p["kind"])
def test_start_offset_shifts_and_same_seed_repeats(process: dict[str, Any]) -> None:
    base = times_of({**process, "count": 2_000})
    shifted = times_of({**process, "count": 2_000, "start_ms": 2_500.5})
    np.testing.assert_array_equal(times_of({**process, "count": 2_000}), base)
    np.testing.assert_allclose(shifted - 2_500.5, base, rtol=0, atol=1e-6)
    assert not np.array_equal(times_of({**process, "count": 2_000}, seed=8), base)


def test_periodic_is_exact() -> None:
    times = times_of({"kind": "periodic", "start_ms": 5, "interval_ms": 15, "count": 4})
    np.testing.assert_array_equal(times, [5.0, 20.0, 35.0, 50.0])


# --- validation ---------------------------------------------------------------------------


def scenario_with(arrivals: Any) -> dict[str, Any]:
    tenant = {"id": "t", "arrivals": arrivals, "prefill_tokens": 10, "decode_tokens": 10}
    return {"name": "x", "tenants": [tenant]}


@pytest.mark.parametrize(
    ("arrivals", "where", "message"),
    [
        ({"kind": "poison", "rate_per_s": 5, "count": 1}, "arrivals", "unknown kind 'poison'"),
        ({"rate_per_s": 5, "count": 1}, "arrivals", "with kind: one of periodic"),
        (
            {"kind": "poisson", "rate_per_s": -5, "count": 1},
            "arrivals.rate_per_s",
            "greater than 0",
        ),
        ({"kind": "gamma", "rate_per_s": 5, "cv": 0, "count": 1}, "arrivals.cv", "greater than 0"),
        ({"kind": "weibull", "rate_per_s": 5, "cv": -1, "count": 1}, "arrivals.cv", "than 0"),
        ({"kind": "gamma", "rate_per_s": 5, "cv": 500, "count": 1}, "arrivals.cv", "equal to 400"),
        ({"kind": "poisson", "rate_per_s": 5}, "arrivals", "count or duration_s is required"),
        ({"kind": "poisson", "rate_per_s": 5, "count": 0}, "arrivals.count", "greater than or"),
        ({"kind": "poisson", "rate_per_s": 5, "duration_s": 0}, "arrivals.duration_s", "than 0"),
        ({"kind": "poisson", "rate_per_s": 5, "count": 1, "rate": 1}, "arrivals.rate", "unknown"),
        (
            {
                "kind": "onoff",
                "on_rate_per_s": 0,
                "off_rate_per_s": 1,
                "mean_on_s": 1,
                "mean_off_s": 1,
                "count": 1,
            },
            "arrivals.on_rate_per_s",
            "greater than 0",
        ),
        (
            {
                "kind": "onoff",
                "on_rate_per_s": 1,
                "off_rate_per_s": -1,
                "mean_on_s": 1,
                "mean_off_s": 1,
                "count": 1,
            },
            "arrivals.off_rate_per_s",
            "greater than or equal to 0",
        ),
        ({"kind": "rate_schedule", "points": [], "count": 1}, "arrivals.points", "at least one"),
        (
            {"kind": "rate_schedule", "points": [[0, 1], [0, 2]], "count": 1},
            "arrivals.points",
            "point 1: t_s must be greater",
        ),
        (
            {"kind": "rate_schedule", "points": [[0, 1], [5, -2]], "count": 1},
            "arrivals.points",
            "point 1: rate_per_s must not be negative",
        ),
        (
            {"kind": "rate_schedule", "points": [[0, 0], [5, 0]], "duration_s": 9},
            "arrivals.points",
            "positive rate",
        ),
        (
            {"kind": "rate_schedule", "points": [[0, 1, 0]], "count": 1},
            "arrivals.points",
            "point 0: cv must be greater than 0",
        ),
        (
            {"kind": "rate_schedule", "points": [[0, 1], [5, 0]], "count": 1},
            "arrivals",
            "count alone may never be reached",
        ),
        (
            {"kind": "rate_schedule", "points": [[0, 1]], "count": 1, "interpolation": "cubic"},
            "arrivals.interpolation",
            "'step' or 'linear'",
        ),
    ],
)
def test_bad_specs_name_the_field(arrivals: dict[str, Any], where: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        validate(scenario_with(arrivals), "x.yaml")
    assert caught.value.where == f"tenants[0].{where}"
    assert message in caught.value.message


def test_messages_read_well() -> None:
    raw = scenario_with({"kind": "gamma", "rate_per_s": 5, "cv": 0, "count": 1})
    with pytest.raises(InputError) as caught:
        validate(raw, "x.yaml")
    assert str(caught.value) == "x.yaml: tenants[0].arrivals.cv: Input should be greater than 0"
