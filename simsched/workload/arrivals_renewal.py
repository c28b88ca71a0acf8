"""Renewal processes (`poisson`, `gamma`, `weibull`), and the chunked drawing all kinds share.

Every random process runs in seconds from 0 and stops at its spec's `count` (`limit`) or
`duration_s` (`horizon`); the on/off and rate-schedule processes draw through the same helpers.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

MAX_CHUNK = 1 << 22  # the most draws per numpy call: bounds memory on long runs
UNLIMITED = sys.maxsize


@dataclass(frozen=True)
class Gaps:
    """Inter-arrival gaps of a renewal process: `draw(n)` returns n of them, of mean `mean`."""

    draw: Callable[[int], np.ndarray]
    mean: float


def spec_limit(spec) -> int:
    return spec.count if spec.count is not None else UNLIMITED


def spec_horizon(spec) -> float:
    return spec.duration_s if spec.duration_s is not None else math.inf


def joined(pieces: list[np.ndarray], limit: int) -> np.ndarray:
    if not pieces:
        return np.empty(0, dtype=np.float64)
    return np.concatenate(pieces)[:limit]


def gamma_gaps(rng: np.random.Generator, mean: float, cv: float) -> Gaps:
    """Gamma gaps: shape 1/cv², so cv 1 is exponential (drawn as such: faster, same law)."""
    if cv == 1.0:
        return Gaps(lambda n: rng.exponential(mean, n), mean)
    shape = 1.0 / (cv * cv)
    return Gaps(lambda n: rng.gamma(shape, mean / shape, n), mean)


def weibull_gaps(rng: np.random.Generator, mean: float, cv: float) -> Gaps:
    shape = weibull_shape(cv)
    scale = mean / math.exp(math.lgamma(1.0 + 1.0 / shape))  # E[X] = scale * Γ(1 + 1/k)
    return Gaps(lambda n: scale * rng.weibull(shape, n), mean)


def weibull_shape(cv: float) -> float:
    """The Weibull shape k with coefficient of variation `cv`, by bisection on log k.

    cv² + 1 = Γ(1 + 2/k) / Γ(1 + 1/k)², which falls as k grows; compared in logs (lgamma) so
    that no Gamma value overflows. The bracket k in [0.1, 1e6] covers cv from about 1e-6 to 430,
    past the spec's bound of 400 (below k = 0.1 the draws themselves would overflow).
    """
    target = math.log1p(cv * cv)
    low, high = math.log(0.1), math.log(1e6)
    for _ in range(80):
        middle = 0.5 * (low + high)
        k = math.exp(middle)
        if math.lgamma(1.0 + 2.0 / k) - 2.0 * math.lgamma(1.0 + 1.0 / k) > target:
            low = middle  # still too variable: a larger shape
        else:
            high = middle
    return math.exp(0.5 * (low + high))


def renewal(gaps: Gaps, start: float, end: float, limit: int) -> tuple[np.ndarray, float]:
    """Arrivals after one at `start`: those before `end` (at most `limit`), and the next one.

    Drawn in chunks sized by the expected count, so a duration-bounded process needs one or two
    numpy calls. The second value is the first arrival at or after `end` (inf if `limit` ran
    out first); a caller that switches gap laws there continues from it.
    """
    pieces: list[np.ndarray] = []
    total, position = 0, start
    while total < limit:
        size = chunk_size((end - position) / gaps.mean, limit - total)
        points = position + np.cumsum(gaps.draw(size))
        inside = int(np.searchsorted(points, end, side="left"))
        pieces.append(points[:inside])
        total += inside
        if inside < size:
            return joined(pieces, limit), float(points[inside])
        position = float(points[-1])
    return joined(pieces, limit), math.inf


def chunk_size(expected: float, remaining: int) -> int:
    # Slack of a few standard deviations makes a second call rare for Poisson-like counts.
    wanted = expected + 4.0 * math.sqrt(expected) + 16.0 if math.isfinite(expected) else math.inf
    return int(max(1, min(wanted, remaining, MAX_CHUNK)))


def _renewal_process(spec, gaps: Gaps) -> np.ndarray:
    return renewal(gaps, 0.0, spec_horizon(spec), spec_limit(spec))[0]


def poisson(spec, rng: np.random.Generator) -> np.ndarray:
    return _renewal_process(spec, gamma_gaps(rng, 1.0 / spec.rate_per_s, 1.0))


def gamma(spec, rng: np.random.Generator) -> np.ndarray:
    return _renewal_process(spec, gamma_gaps(rng, 1.0 / spec.rate_per_s, spec.cv))


def weibull(spec, rng: np.random.Generator) -> np.ndarray:
    return _renewal_process(spec, weibull_gaps(rng, 1.0 / spec.rate_per_s, spec.cv))
