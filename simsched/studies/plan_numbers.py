"""One rounding rule for the numbers in a plan's notes (the console, the JSON's `notes`, the
plan report all show the same strings):

- a percentage (a margin as a share of its target, a gap, a shed rate, a load growth, a busy
  share) has one decimal: `+2.5%`, `54.2%`; a share that is not zero but rounds to zero shows
  as `<0.1%` (so a rate above 0 never reads as 0);
- a margin in its metric's unit has three significant digits (`+12.3`, `-610`, `+0.001`), never
  an exponent, and a whole part keeps all its digits (`+12346`, not `+12300`); beside it, its
  share of the SLO's target where the target is not zero;
- a metric's value in a warning is rounded the same way, and a probe series is judged monotone
  on those rounded values: a wiggle below the third significant digit is noise, not a reversal.
"""

from __future__ import annotations

import math

PERCENT_DECIMALS = 1
SIGNIFICANT = 3


def share_text(share: float, signed: bool = False) -> str:
    """A share as a percentage with one decimal: 0.0246 as `2.5%` (`+2.5%` when signed)."""
    percent = round(100 * share, PERCENT_DECIMALS)
    sign = "+" if signed and share >= 0 else ""
    if share != 0 and percent == 0:
        below = f"<{10**-PERCENT_DECIMALS:g}%"
        return f"{'-' if share < 0 else sign}{below}"
    if percent == 0:
        percent = 0.0  # no "-0.0%"
    return f"{percent:{'+' if sign else ''}.{PERCENT_DECIMALS}f}%"


def unit_text(value: float) -> str:
    """A signed value in its metric's unit, to three significant digits (the whole part kept
    whole), never an exponent."""
    if value == 0:
        return "+0"
    return _trimmed(f"{rounded(value):+.{_decimals(value)}f}")


def value_text(value: float) -> str:
    """A metric's value as `unit_text` writes it, without a sign for positive values."""
    if value == 0:
        return "0"
    return _trimmed(f"{rounded(value):.{_decimals(value)}f}")


def rounded(value: float) -> float:
    """The value to three significant digits, the whole part kept whole (as the notes show it)."""
    return value if value == 0 else round(value, _decimals(value))


def _decimals(value: float) -> int:
    return max(0, SIGNIFICANT - 1 - math.floor(math.log10(abs(value))))


def _trimmed(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def margin_share(margin: float | None, limit: float) -> float | None:
    """A margin as a share of its SLO's target (None without a margin or with a zero target)."""
    return None if margin is None or limit == 0 else margin / abs(limit)


def margin_text(margin: float | None, limit: float, of_a_share: bool = False) -> str:
    """`+12.3 (+2.5%)`: the margin in the metric's unit and as a share of the target; for a
    metric that is itself a share (`of_a_share`: a shed rate), in percentage points instead,
    `-0.252 (-25.2 points)`, since against a target of 0.001 that would read -25229.6%."""
    if margin is None:
        return "no value"
    if of_a_share:
        points = share_text(margin, signed=True).removesuffix("%")
        return f"{unit_text(margin)} ({points} points)"
    share = margin_share(margin, limit)
    return unit_text(margin) + ("" if share is None else f" ({share_text(share, signed=True)})")
