"""Robust y-limits: one value far above the rest (p99 TTFT at the smallest capacity, say, when
the queue grows without bound) would squash the range where the answer lies. The axis stops a
little above the others instead, and the panel names what it leaves off."""

from __future__ import annotations

import math

FENCE = 3.0  # interquartile ranges above the upper quartile: Tukey's "far out" fence
SQUASH = 4.0  # the values left out must reach this many times the kept values' range beyond them
HEADROOM = 0.1  # of the kept range, above the highest value kept (and below the lowest)
MIN_VALUES = 4  # below this, no quartiles worth the name: the full range is shown


def robust_limits(
    values: list[float], floor: float | None = None, lowest: float = -math.inf
) -> tuple[float, float] | None:
    """(bottom, top) of the y-axis when values beyond the far-out fence would squash the rest
    (None: show them all). Values are left out only when they lie more than SQUASH times the
    kept values' range above the highest kept one: a curve that is flat but for one value
    (no shedding but at one replica) keeps its whole range, since nothing would be squashed.
    `floor` (a target) always stays in view. The bottom is `lowest`, the metric's lowest valid
    value, when it has one (0 for a latency: the seed bands below the kept values stay in
    view), else a little below the lowest kept value."""
    finite = sorted(v for v in values if math.isfinite(v))
    if len(finite) < MIN_VALUES:
        return None
    q1, q3 = _quantile(finite, 0.25), _quantile(finite, 0.75)
    fence = q3 + FENCE * (q3 - q1)
    kept = [v for v in finite if v <= fence]
    low, high = kept[0], kept[-1]
    if high <= low or finite[-1] - high <= SQUASH * (high - low):
        return None
    if floor is not None and math.isfinite(floor):  # the target in view, never the cause
        low, high = min(low, floor), max(high, floor)
    span = high - low
    bottom = lowest if math.isfinite(lowest) else low - HEADROOM * span
    return bottom, high + HEADROOM * span


def off_scale_note(values: list[float]) -> str:
    shown = ", ".join(f"{v:.4g}" for v in sorted(values, reverse=True)[:3])
    more = f" and {len(values) - 3} more" if len(values) > 3 else ""
    count = "1 point" if len(values) == 1 else f"{len(values)} points"
    return f"{count} off the scale above: {shown}{more}"


def _quantile(ordered: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
