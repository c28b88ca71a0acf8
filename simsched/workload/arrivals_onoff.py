"""The `onoff` arrival process: a two-state Markov-modulated Poisson process, drawn in bulk."""

from __future__ import annotations

import numpy as np

from simsched.workload.arrivals_renewal import (
    MAX_CHUNK,
    chunk_size,
    joined,
    spec_horizon,
    spec_limit,
)

ON, OFF = 0, 1  # on/off states, as indices into (on, off) parameter pairs


def onoff(spec, rng: np.random.Generator) -> np.ndarray:
    """Window by window; each window's sojourns are cut at its end, and the state carries on.

    Cutting a sojourn and drawing its rest afresh in the next window is exact, because
    exponential sojourns are memoryless; it keeps a very long sojourn from being filled with
    more arrivals than the bounds will ever keep.
    """
    horizon, limit = spec_horizon(spec), spec_limit(spec)
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
    return joined(pieces, limit)


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
    pairs = chunk_size((stop - clock) / (spec.mean_on_s + spec.mean_off_s), MAX_CHUNK // 2)
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
