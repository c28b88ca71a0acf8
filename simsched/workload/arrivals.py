"""Arrival processes: a tenant's request instants, generated as whole numpy arrays.

`arrival_times(spec, rng)` returns sorted float64 milliseconds. Every random process runs in
seconds from the tenant's `start_ms` and ends at `count` requests or at `duration_s` (arrivals
strictly before it), whichever comes first.

- `poisson`, `gamma`, `weibull`: ordinary renewal processes; the first request comes one gap
  after the start (there is no request at the start itself).
- `onoff`: a two-state Markov-modulated Poisson process. Sojourns are exponential; in each one
  the count is Poisson and the instants uniform, which is a Poisson process, drawn in bulk.
- `rate_schedule`: time rescaling. Positions of a renewal process with mean gap 1 in
  integrated-rate units u = Λ(t) are mapped back through Λ⁻¹. With cv 1 (exponential gaps) this
  is exactly the non-homogeneous Poisson process of the curve. With cv ≠ 1 the gaps are gamma,
  each with the cv of the segment in which it starts: within a constant-rate segment that is a
  gamma renewal process of that rate and cv, and across segments the process carries on (no
  restart at segment boundaries, so counts per segment stay unbiased).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

MAX_CHUNK = 1 << 22  # the most draws per numpy call: bounds memory on long runs
UNLIMITED = sys.maxsize
ON, OFF = 0, 1  # on/off states, as indices into (on, off) parameter pairs


@dataclass(frozen=True)
class Gaps:
    """Inter-arrival gaps of a renewal process: `draw(n)` returns n of them, of mean `mean`."""

    draw: Callable[[int], np.ndarray]
    mean: float


def arrival_times(spec, rng: np.random.Generator) -> np.ndarray:
    """Arrival instants in ms of one tenant's arrival process (sorted, float64)."""
    if spec.kind == "periodic":  # exact in ms: the reference's instants, bit for bit
        return spec.start_ms + spec.interval_ms * np.arange(spec.count, dtype=np.float64)
    seconds = PROCESSES[spec.kind](spec, rng)
    return spec.start_ms + 1000.0 * seconds


def _limit(spec) -> int:
    return spec.count if spec.count is not None else UNLIMITED


def _horizon(spec) -> float:
    return spec.duration_s if spec.duration_s is not None else math.inf


def _joined(pieces: list[np.ndarray], limit: int) -> np.ndarray:
    if not pieces:
        return np.empty(0, dtype=np.float64)
    return np.concatenate(pieces)[:limit]


# --- renewal processes --------------------------------------------------------------------


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
        size = _chunk_size((end - position) / gaps.mean, limit - total)
        points = position + np.cumsum(gaps.draw(size))
        inside = int(np.searchsorted(points, end, side="left"))
        pieces.append(points[:inside])
        total += inside
        if inside < size:
            return _joined(pieces, limit), float(points[inside])
        position = float(points[-1])
    return _joined(pieces, limit), math.inf


def _chunk_size(expected: float, remaining: int) -> int:
    # Slack of a few standard deviations makes a second call rare for Poisson-like counts.
    wanted = expected + 4.0 * math.sqrt(expected) + 16.0 if math.isfinite(expected) else math.inf
    return int(max(1, min(wanted, remaining, MAX_CHUNK)))


def _renewal_process(spec, gaps: Gaps) -> np.ndarray:
    return renewal(gaps, 0.0, _horizon(spec), _limit(spec))[0]


def _poisson(spec, rng: np.random.Generator) -> np.ndarray:
    return _renewal_process(spec, gamma_gaps(rng, 1.0 / spec.rate_per_s, 1.0))


def _gamma(spec, rng: np.random.Generator) -> np.ndarray:
    return _renewal_process(spec, gamma_gaps(rng, 1.0 / spec.rate_per_s, spec.cv))


def _weibull(spec, rng: np.random.Generator) -> np.ndarray:
    return _renewal_process(spec, weibull_gaps(rng, 1.0 / spec.rate_per_s, spec.cv))


# --- on/off (Markov-modulated Poisson) ----------------------------------------------------


def _onoff(spec, rng: np.random.Generator) -> np.ndarray:
    """Window by window; each window's sojourns are cut at its end, and the state carries on.

    Cutting a sojourn and drawing its rest afresh in the next window is exact, because
    exponential sojourns are memoryless; it keeps a very long sojourn from being filled with
    more arrivals than the bounds will ever keep.
    """
    horizon, limit = _horizon(spec), _limit(spec)
    pieces: list[np.ndarray] = []
    total, clock, state = 0, 0.0, ON
    while total < limit and clock < horizon:
        stop = min(horizon, clock + _window(spec, limit - total))
        starts, lengths, states = _sojourns(spec, rng, clock, stop, state)
        rates = np.array([spec.on_rate_per_s, spec.off_rate_per_s])[states]
        times = poisson_in_segments(rng, starts, lengths, rates)
        pieces.append(times)
        total += len(times)
        clock, state = stop, int(states[-1])
    return _joined(pieces, limit)


def _window(spec, remaining: int) -> float:
    """Seconds to simulate next: the expected time to the remaining count, with slack, and
    short enough that neither its arrivals nor its sojourns outgrow one chunk."""
    cycle = spec.mean_on_s + spec.mean_off_s
    mean_rate = (
        spec.on_rate_per_s * spec.mean_on_s + spec.off_rate_per_s * spec.mean_off_s
    ) / cycle
    peak = max(spec.on_rate_per_s, spec.off_rate_per_s)
    return min(1.1 * remaining / mean_rate + 4.0 * cycle, MAX_CHUNK / peak, MAX_CHUNK / 4 * cycle)


def _sojourns(spec, rng: np.random.Generator, clock: float, stop: float, state: int):
    """Alternating sojourns from `clock` in `state`, the last one cut at `stop`.

    Returns (starts, lengths, states). Batches hold whole on+off pairs, so each batch begins in
    the state the previous one began in.
    """
    means = np.array([spec.mean_on_s, spec.mean_off_s])
    pairs = _chunk_size((stop - clock) / (spec.mean_on_s + spec.mean_off_s), MAX_CHUNK // 2)
    states = (state + np.arange(2 * pairs)) % 2
    batches, reached = [], clock
    while reached < stop:
        batches.append(rng.exponential(means[states]))
        reached += float(batches[-1].sum())
    lengths = np.concatenate(batches)
    ends = clock + np.cumsum(lengths)
    last = int(np.searchsorted(ends, stop, side="left"))  # the sojourn in progress at `stop`
    starts = np.concatenate(([clock], ends[:last]))
    lengths = np.append(lengths[:last], stop - starts[-1])
    return starts, lengths, np.resize(states, last + 1)


def poisson_in_segments(
    rng: np.random.Generator, starts: np.ndarray, lengths: np.ndarray, rates: np.ndarray
) -> np.ndarray:
    """A Poisson process of rate `rates[i]` on each disjoint [starts[i], starts[i] + lengths[i])."""
    counts = rng.poisson(rates * lengths)
    offsets = rng.random(int(counts.sum())) * np.repeat(lengths, counts)
    return np.sort(np.repeat(starts, counts) + offsets)


# --- rate schedules (time rescaling) ------------------------------------------------------


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
    return _joined(pieces, limit)


def _rate_schedule(spec, rng: np.random.Generator) -> np.ndarray:
    curve = schedule_curve(spec)
    end = integral(curve, spec.duration_s) if spec.duration_s is not None else math.inf
    units = unit_renewal(curve, end, _limit(spec), rng)
    return inverse(curve, units) if len(units) else units


PROCESSES: dict[str, Callable[..., np.ndarray]] = {
    "poisson": _poisson,
    "gamma": _gamma,
    "weibull": _weibull,
    "onoff": _onoff,
    "rate_schedule": _rate_schedule,
}
