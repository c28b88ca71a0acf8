"""Python's `round(x, digits)` over a whole array, to the bit.

The simulation records raw times and ratios; they are rounded as the reference rounds them
(Python's `round`: the decimal nearest the exact binary value, ties to even) only when the
results are built, once per column rather than once per request in the simulation loop.

numpy's `round` scales, rounds and divides, which differs from Python's `round` when the
scaled product rounds across a tie (`round(2.675, 2)` is 2.67 because 2.675 is stored as
2.67499999...; `np.round(2.675, 2)` is 2.68). Away from ties the scaled product is on the
right side, its `rint` is Python's rounded integer K, and `K / 10**digits` (an exact integer
over an exact power of ten, divided with correct rounding) is the double nearest K / 10**digits,
which is what Python's `round` returns. The few values near a tie, or too large for that
argument, are rounded by Python itself.
"""

from __future__ import annotations

import numpy as np

EXACT_INTEGERS = 2.0**52  # beyond this the scaled product has no fraction to judge by
# The scaled product is within half an ulp (|x| * 2**-53) of the exact one: a fraction this
# far from one half, relative to the product, is on the same side of the tie as the exact one.
TIE_MARGIN = 1e-15


def python_round(values: np.ndarray, digits: int) -> np.ndarray:
    """`np.array([round(v, digits) for v in values])`, computed in bulk."""
    values = np.asarray(values, dtype=np.float64)
    scale = 10.0**digits
    with np.errstate(invalid="ignore", over="ignore"):  # infinities go to Python's round
        scaled = values * scale
        out = np.rint(scaled) / scale
        size = np.abs(scaled)
        near_tie = np.abs(scaled - np.floor(scaled) - 0.5) <= size * TIE_MARGIN
        doubtful = np.flatnonzero(near_tie | (size >= EXACT_INTEGERS))
    for index in doubtful.tolist():
        out[index] = round(float(values[index]), digits)
    return out


def reference_decisions(ttft_ms, queue_wait_ms, kv_occupancy_ratio) -> dict[str, np.ndarray]:
    """A recorder's raw TTFT, queue wait and occupancy (per seq), rounded as the reference
    records them: 2 decimals for times, 4 for the occupancy ratio."""
    return {
        "ttft_ms": python_round(np.frombuffer(ttft_ms), 2),
        "queue_wait_ms": python_round(np.frombuffer(queue_wait_ms), 2),
        "kv_occupancy_ratio": python_round(np.frombuffer(kv_occupancy_ratio), 4),
    }
