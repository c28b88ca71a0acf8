"""Each metric's valid range: what a value of it can be. A 95% t-interval across a few seeds can
reach past it (a shed rate's interval below 0, an attainment's above 1); reports and plan
messages clip the interval to this range, so no bound shows a value the metric cannot take."""

from __future__ import annotations

import math

from simsched.results.tenants import COUNT_METRICS

FRACTION_SUFFIXES = ("_rate", "_share", "_ratio", "_attainment")
NONNEGATIVE_SUFFIXES = ("_ms", "_rps", "_per_s")


def valid_range(metric: str) -> tuple[float, float]:
    """(lowest, highest) value the metric can take; (-inf, inf) for one not known here."""
    if metric.endswith(FRACTION_SUFFIXES) or metric == "slo_met":  # slo_met: a share of runs
        return 0.0, 1.0
    counts = metric in COUNT_METRICS or metric.startswith("shed")
    if counts or metric.endswith(NONNEGATIVE_SUFFIXES):
        return 0.0, math.inf
    return -math.inf, math.inf


def clip(metric: str, value: float) -> float:
    low, high = valid_range(metric)
    return min(max(value, low), high)


def interval_digits(half: float) -> int:
    """Decimal places for a value with this half-width: its two significant digits, never fewer
    than 0 (`413±180`, `51.3±2.4`); six for an interval of no width."""
    return max(0, 1 - math.floor(math.log10(abs(half)))) if half else 6


def rounded_interval(metric: str, mean: float, low: float, high: float) -> str:
    """`0.012 [0, 0.034]`: the mean and the interval clipped to the metric's range, rounded to
    the half-width's two significant digits."""
    digits = interval_digits((high - low) / 2)
    low, high = clip(metric, low), clip(metric, high)
    return f"{mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"
