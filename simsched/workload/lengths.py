"""Token lengths: a tenant's prefill and decode sizes, drawn as whole numpy arrays.

A fixed length (a plain number) is used as given, 0 included. A distribution's draws are
rounded to the nearest whole token, then clipped to its `[min, max]` and to at least 1: a
request always has a prompt, and a decode that was asked for produces a token.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from simsched.errors import InputError

PREFILL, DECODE = 0, 1  # columns of a trace's (prefill, decode) pairs
# The longest request, as for a fixed length or a trace row: with weights bounded by 1e6, a
# request's service tokens stay exact integers far inside int64.
MAX_TOKENS = 2**31 - 1


def draw_token_lengths(
    prefill, decode, count: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Prefill and decode sizes (int64) of `count` requests.

    Each side has its own child stream, so changing one distribution never changes the other's
    draws. Two `trace` specs on the same file and format draw the same rows, keeping each
    request's (prefill, decode) pair as it was recorded.
    """
    prefill_rng, decode_rng = rng.spawn(2)
    if _same_trace(prefill, decode):
        pairs = trace_pairs(prefill)
        rows = prefill_rng.integers(0, len(pairs[PREFILL]), count)
        return clip(prefill, pairs[PREFILL][rows]), clip(decode, pairs[DECODE][rows])
    return (
        draw_lengths(prefill, count, prefill_rng, PREFILL),
        draw_lengths(decode, count, decode_rng, DECODE),
    )


def draw_lengths(spec, count: int, rng: np.random.Generator, column: int = PREFILL) -> np.ndarray:
    """`count` lengths from one spec; `column` picks a trace's prefill or decode side."""
    if isinstance(spec, int):
        return np.full(count, spec, dtype=np.int64)
    if spec.dist == "trace":
        values = trace_pairs(spec)[column]
        return clip(spec, values[rng.integers(0, len(values), count)])
    return clip(spec, SAMPLERS[spec.dist](spec, count, rng))


def clip(spec, raw: np.ndarray) -> np.ndarray:
    low = spec.min if spec.min is not None else 1
    high = min(spec.max, MAX_TOKENS) if spec.max is not None else MAX_TOKENS
    return np.clip(np.rint(raw), max(low, 1), high).astype(np.int64)


def _same_trace(prefill, decode) -> bool:
    traces = [getattr(spec, "dist", None) == "trace" for spec in (prefill, decode)]
    return all(traces) and (prefill.path, prefill.format) == (decode.path, decode.format)


def trace_pairs(spec) -> tuple[np.ndarray, np.ndarray]:
    """The trace's (prefill, decode) columns; the reader caches, so a second call is cheap."""
    from simsched.workload.formats import read_length_pairs  # trace readers load on demand

    pairs = read_length_pairs(spec.path, spec.format)
    if not len(pairs[PREFILL]):
        raise InputError(spec.path, "", "holds no requests to draw token lengths from")
    return pairs


def lognormal_params(spec) -> tuple[float, float]:
    """(mu, sigma) of the underlying normal, from (median, sigma) or the lengths' (mean, std)."""
    if spec.median is not None:
        return math.log(spec.median), spec.sigma
    variance = math.log1p((spec.std / spec.mean) ** 2)
    return math.log(spec.mean) - 0.5 * variance, math.sqrt(variance)


def _uniform(spec, count: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(spec.low, spec.high, size=count, endpoint=True)


def _normal(spec, count: int, rng: np.random.Generator) -> np.ndarray:
    return rng.normal(spec.mean, spec.std, count)


def _lognormal(spec, count: int, rng: np.random.Generator) -> np.ndarray:
    mu, sigma = lognormal_params(spec)
    return rng.lognormal(mu, sigma, count)


def _exponential(spec, count: int, rng: np.random.Generator) -> np.ndarray:
    return rng.exponential(spec.mean, count)


def _empirical(spec, count: int, rng: np.random.Generator) -> np.ndarray:
    weights = np.asarray(spec.weights, dtype=np.float64)
    return rng.choice(
        np.asarray(spec.values, dtype=np.float64), size=count, p=weights / weights.sum()
    )


SAMPLERS: dict[str, Callable[[object, int, np.random.Generator], np.ndarray]] = {
    "uniform": _uniform,
    "normal": _normal,
    "lognormal": _lognormal,
    "exponential": _exponential,
    "empirical": _empirical,
}
