"""Refusing workloads that cannot fit, before a single request is generated.

The expected number of requests follows from each tenant's arrival spec (its `count`, or its
rate times its duration); the on/off process also draws one value per sojourn, so sojourns that
are vanishingly short are counted too. Beyond `limits.max_requests` the run is refused with a
message naming the tenant and the setting. After generation, every instant must lie within a
clock that float64 milliseconds still resolve (`MAX_TIME_MS`).
"""

from __future__ import annotations

import math

import numpy as np

from simsched.config.limits import BYTES_PER_REQUEST
from simsched.errors import InputError
from simsched.workload.arrivals_rate_schedule import integral, schedule_curve
from simsched.workload.lengths import PREFILL, clip, trace_pairs

# About 31,700 years of milliseconds: float64 still resolves an eighth of a millisecond there,
# and sums of such instants stay far from overflow.
MAX_TIME_MS = 1e15
GIB = 1024**3


def check_request_budget(scenario) -> None:
    most = scenario.limits.max_requests
    total = 0.0
    for index, tenant in enumerate(scenario.tenants):
        if tenant.arrivals is None:
            continue
        where = f"tenants[{index}].arrivals"
        starts = tenant.arrivals.start if tenant.arrivals.kind == "sessions" else tenant.arrivals
        _check_sojourns(starts, most, "", where)
        total += expected_requests(tenant.arrivals)
        if not total <= most:  # NaN too: an overflowing rate curve
            memory = total * BYTES_PER_REQUEST / GIB
            raise InputError(
                "",  # the caller names the scenario file
                where,
                f"the workload would have about {_amount(total)} requests (roughly "
                f"{_amount(memory)} GiB of memory), more than limits.max_requests ({most:,})"
                f"{_retries_counted(tenant.arrivals)}; lower the count, rate or duration, or "
                "raise limits.max_requests if the machine can hold them",
            )


def _retries_counted(spec) -> str:
    if spec.kind != "sessions" or sends_per_turn(spec) == 1:
        return ""
    return (
        f", counting each session turn {sends_per_turn(spec):,} times (on_shed: retry sends a "
        f"shed turn again up to max_retries, {spec.max_retries:,}, times: lower it)"
    )


def _amount(value: float) -> str:
    return f"{value:,.0f}" if value < 1e15 else f"{value:.3g}"


def expected_requests(spec) -> float:
    """The requests an arrival spec is expected to give (its count, if it has one, bounds it)."""
    if spec.kind == "closed_loop":
        return float(spec.count)
    if spec.kind == "sessions":  # sessions x turns x sends per turn
        return expected_requests(spec.start) * _rough_turns(spec.turns) * sends_per_turn(spec)
    if spec.kind == "periodic":
        return float(spec.count)
    count = math.inf if spec.count is None else float(spec.count)
    if spec.duration_s is None:
        return count
    return min(count, _rate_integral(spec, spec.duration_s))


def sends_per_turn(spec) -> int:
    """The most requests one session turn can become: with `on_shed: retry`, a turn shed every
    time is sent `1 + max_retries` times. The budget counts that worst case, since a gateway
    that sheds everything makes it the actual one."""
    return 1 + spec.max_retries if spec.on_shed == "retry" else 1


def _rough_turns(turns) -> float:
    """A turns spec's expected value, clipped as draws are (to [min, max], at least 1).

    Clamping the mean is not the clipped distribution's exact mean, but it is its right order
    of size (and an upper bound when only `max` clips), which is what a budget check needs.
    A trace-drawn spec is read (its rows are what the turns are drawn from): the mean of its
    clipped column is the exact expectation."""
    if isinstance(turns, int):
        return float(max(turns, 1))
    if turns.dist == "trace":
        return float(clip(turns, trace_pairs(turns)[PREFILL]).mean())
    mean = _spec_mean(turns)
    low = max(1.0, float(turns.min or 1))
    high = math.inf if turns.max is None else float(turns.max)
    return min(max(mean, low), high)


def _spec_mean(spec) -> float:
    if spec.dist == "uniform":
        return (spec.low + spec.high) / 2.0
    if spec.dist == "empirical":
        weights = np.asarray(spec.weights, dtype=float)
        return float(np.dot(spec.values, weights) / weights.sum())
    if spec.dist == "lognormal" and spec.median is not None:
        exponent = spec.sigma**2 / 2.0
        return spec.median * math.exp(exponent) if exponent < 700 else math.inf  # no overflow
    if spec.dist in ("normal", "lognormal", "exponential"):
        return float(spec.mean)
    raise ValueError(f"no mean for dist {spec.dist!r}")  # every dist is handled above


def _rate_integral(spec, seconds: float) -> float:
    if spec.kind == "onoff":
        return _mean_rate(spec) * seconds
    if spec.kind == "rate_schedule":
        return integral(schedule_curve(spec), seconds)
    return spec.rate_per_s * seconds


def _mean_rate(spec) -> float:
    cycle = spec.mean_on_s + spec.mean_off_s
    return (spec.on_rate_per_s * spec.mean_on_s + spec.off_rate_per_s * spec.mean_off_s) / cycle


def _check_sojourns(spec, most: int, label: str, where: str) -> None:
    if spec.kind != "onoff":
        return
    seconds = spec.duration_s if spec.duration_s is not None else math.inf
    if spec.count is not None:
        seconds = min(seconds, 2.0 * spec.count / _mean_rate(spec))  # with slack, as drawn
    sojourns = 2.0 * seconds / (spec.mean_on_s + spec.mean_off_s)
    if not sojourns <= most:
        raise InputError(
            label,
            where,
            f"about {sojourns:,.3g} on/off sojourns would be drawn (mean_on_s and mean_off_s "
            f"are tiny beside the run), more than limits.max_requests ({most:,})",
        )


def check_times(arrival_ms: np.ndarray, label: str, where: str) -> None:
    """Every arrival instant finite, not negative and within `MAX_TIME_MS`."""
    if len(arrival_ms) and not (
        np.isfinite(arrival_ms).all() and arrival_ms.min() >= 0 and arrival_ms.max() <= MAX_TIME_MS
    ):
        raise InputError(
            label,
            where,
            f"an arrival falls at {float(arrival_ms.max()):.6g} ms, beyond the {MAX_TIME_MS:g} ms "
            "(about 31,700 years) a simulation clock resolves; lower start_ms or the duration",
        )
