"""The `rate_schedule` arrival process: time rescaling of a renewal process through the rate curve.

See `arrivals.py` for the method; `Curve` is the rate curve and its integral Λ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simsched.workload.arrivals_renewal import gamma_gaps, joined, renewal, spec_limit


@dataclass(frozen=True)
class Curve:
    """A piecewise-linear rate r(t) by segment (the last one open-ended) and its integral Λ."""

    t: np.ndarray  # segment starts, s
    rate: np.ndarray  # rate at each segment's start, 1/s
    slope: np.ndarray  # rate change per s within the segment (0 for step interpolation)
    area: np.ndarray  # Λ at each segment's start
    cv: np.ndarray  # inter-arrival cv of the gaps that start in the segment


def schedule_curve(spec) -> Curve:
    t = np.array([p[0] for p in spec.points], dtype=np.float64)
    rate = np.array([p[1] for p in spec.points], dtype=np.float64)
    cv = np.array([p[2] if len(p) == 3 else spec.cv for p in spec.points], dtype=np.float64)
    widths = np.diff(t)
    slope = np.zeros_like(rate)
    if spec.interpolation == "linear":
        slope[:-1] = np.diff(rate) / widths  # the last segment holds the last rate
    pieces = rate[:-1] * widths + 0.5 * slope[:-1] * widths**2
    area = np.concatenate(([0.0], np.cumsum(pieces)))
    return Curve(t, rate, slope, area, cv)


def integral(curve: Curve, t: float) -> float:
    """Λ(t): the expected number of arrivals before t (the rate is 0 before the first point)."""
    if t <= curve.t[0]:
        return 0.0
    k = int(np.searchsorted(curve.t, t, side="right")) - 1
    tau = t - curve.t[k]
    return float(curve.area[k] + curve.rate[k] * tau + 0.5 * curve.slope[k] * tau * tau)


def inverse(curve: Curve, units: np.ndarray) -> np.ndarray:
    """Λ⁻¹ of sorted positions; side="right" skips zero-rate segments (they have no area)."""
    k = np.searchsorted(curve.area, units, side="right") - 1
    d = units - curve.area[k]
    r, s = curve.rate[k], curve.slope[k]
    # Root of r*tau + s*tau²/2 = d in the form that stays exact when s is 0 or tiny.
    denominator = r + np.sqrt(np.maximum(r * r + 2.0 * s * d, 0.0))
    tau = np.divide(2.0 * d, denominator, out=np.zeros_like(d), where=denominator > 0)
    return np.maximum.accumulate(curve.t[k] + tau)  # irons out one-ulp dips at boundaries


def _cv_blocks(curve: Curve) -> tuple[np.ndarray, np.ndarray]:
    """Runs of segments with one cv: their start in Λ units, and their cv."""
    first = np.concatenate(([0], np.flatnonzero(np.diff(curve.cv) != 0) + 1))
    return curve.area[first], curve.cv[first]


def unit_renewal(curve: Curve, end: float, limit: int, rng: np.random.Generator) -> np.ndarray:
    """Positions in Λ units below `end`: mean-1 gamma gaps with the cv of where each starts."""
    starts, cvs = _cv_blocks(curve)
    pieces: list[np.ndarray] = []
    total, position = 0, 0.0
    while total < limit and position < end:
        block = int(np.searchsorted(starts, position, side="right")) - 1
        block_end = min(float(starts[block + 1]) if block + 1 < len(starts) else math.inf, end)
        gaps = gamma_gaps(rng, 1.0, float(cvs[block]))
        points, after = renewal(gaps, position, block_end, limit - total)
        pieces.append(points)
        total += len(points)
        if after < end and total < limit:  # the gap that crossed into the next block
            pieces.append(np.array([after]))
            total += 1
        position = after
    return joined(pieces, limit)


def rate_schedule(spec, rng: np.random.Generator) -> np.ndarray:
    curve = schedule_curve(spec)
    end = integral(curve, spec.duration_s) if spec.duration_s is not None else math.inf
    units = unit_renewal(curve, end, spec_limit(spec), rng)
    return inverse(curve, units) if len(units) else units
