"""Python's `round(x, digits)` over a whole array, to the bit.

The simulation records raw times and ratios; they are rounded as the reference rounds them
(Python's `round`: the decimal nearest the exact binary value, ties to even) only when the
results are built, once per column rather than once per request in the simulation loop.

numpy's `round` scales, rounds and divides in doubles, which differs from Python's `round`
when the scaled product rounds across a tie (`round(2.675, 2)` is 2.67 because 2.675 is stored
as 2.67499999...; `np.round(2.675, 2)` is 2.68). Here the product is taken in extended
precision, where it is exact (64 significant bits hold a double's 53 times 10**4's odd part,
625), so `rint` sees every tie exactly and rounds it to even, giving Python's integer K; and
`K / 10**digits` in doubles (an exact integer over an exact power of ten, correctly rounded) is
the double nearest K / 10**digits, which is what Python's `round` returns. NaN, infinities and
values whose K is not exact as a double go through Python's `round` itself, as does everything
on a platform without extended precision.
"""

from __future__ import annotations

import numpy as np

EXACT_INTEGERS = 2.0**53  # a rounded integer K beyond this is not exact as a double
# x * 10**digits is exact in an extended double when the significand has room for x's 53 bits
# and 10**digits' odd part (625 for 4 digits: 10 bits): then ties are seen exactly.
EXTENDED = np.finfo(np.longdouble).nmant >= 63
MOST_DIGITS = 4  # 10**4 = 2**4 * 625: 53 + 10 bits fit in 64


def python_round(values: np.ndarray, digits: int) -> np.ndarray:
    """`np.array([round(v, digits) for v in values])`, computed in bulk."""
    values = np.asarray(values, dtype=np.float64)
    if not (EXTENDED and 0 <= digits <= MOST_DIGITS):
        return np.array([round(v, digits) for v in values.tolist()], dtype=np.float64)
    scale = 10.0**digits
    with np.errstate(invalid="ignore", over="ignore"):  # NaN and infinities go to Python
        # exact products, and rint rounds their ties to even, as Python's round does
        rounded = np.rint(values.astype(np.longdouble) * np.longdouble(scale)).astype(np.float64)
        out = rounded / scale  # an exact integer over an exact power of ten: correctly rounded
        doubtful = np.flatnonzero(~(np.abs(rounded) < EXACT_INTEGERS))
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
