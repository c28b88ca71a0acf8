"""An answer judged on one seed whose margin or headroom is thin: say so, and how to firm it up.

With `--seeds 1` (the default, for speed: seeds multiply a plan's runtime) every probe is one
run, and a p99 over one run moves by several percent from seed to seed. An answer whose
smallest SLO margin (as a share of the SLO's target) or whose headroom (the load growth it
absorbs) is within the tie margin (by default the calibration's median error, 5.8%) sits where
one run cannot place it: another seed can flip it to the neighbouring replica count or GPU.
The note names the thin figure and the rerun (`--seeds 3`), rather than changing the default
and tripling every plan's time.
"""

from __future__ import annotations

from simsched.results.tenants import SHARE_METRICS
from simsched.studies.fleet import FleetPlan
from simsched.studies.plan_numbers import margin_share, share_text

RERUN_SEEDS = 3


def thinnest_margin(fleet: FleetPlan) -> tuple[str, float] | None:
    """(SLO key, margin as a share of its target) of the answer's thinnest SLO."""
    at = fleet.best.at_answer if fleet.best is not None else None
    if at is None:
        return None
    shares = [
        (slo.key, share)
        for slo in fleet.slos
        if (share := margin_share(at.margins.get(slo.key), slo.limit)) is not None
    ]
    return min(shares, key=lambda item: item[1], default=None)


def headroom_growth(fleet: FleetPlan) -> float | None:
    """The load growth the answer absorbs, when a headroom search found one."""
    found = fleet.headroom
    if found is None or found.met is None or found.missed is None:
        return None  # not searched, none at all, or at least the top of the search
    return found.met / found.base - 1


def thin_figures(fleet: FleetPlan, threshold: float) -> str | None:
    """The answer's margin and headroom that are within `threshold` (a share), as text
    (`margin +2.5% (SLO), headroom +5.0% load`); None when neither is, or without an answer."""
    if fleet.best is None:
        return None
    margin = thinnest_margin(fleet)
    growth = headroom_growth(fleet)
    parts = []  # only the thin figures: a wide one listed beside them reads as thin too
    if margin is not None and margin[1] <= threshold:
        # a share metric's margin reads in points elsewhere (plan_numbers): say what this is
        share = " of its target" if margin[0].rsplit(".", 1)[-1] in SHARE_METRICS else ""
        parts.append(f"margin {share_text(margin[1], signed=True)}{share} ({margin[0]})")
    if growth is not None and growth <= threshold:
        parts.append(f"headroom {share_text(growth, signed=True)} load")
    return ", ".join(parts) or None


def one_seed_note(fleet: FleetPlan, threshold: float) -> str | None:
    """A note when the answer was judged on one seed and its margin or headroom is within
    `threshold` (a share); None otherwise."""
    if fleet.seeds > 1 or (thin := thin_figures(fleet, threshold)) is None:
        return None
    return (
        f"judged on one seed; {thin}: within the {share_text(threshold)} tie "
        f"margin, where another seed can move the answer: rerun with --seeds {RERUN_SEEDS}"
    )


def thin_answer_note(
    fleet: FleetPlan, threshold: float, *, measured: bool = True, rerun: bool = True
) -> str | None:
    """With several seeds the seed-to-seed spread is averaged out, but the latency model's own
    error is not: an answer whose margin or headroom is within `threshold` (the tie margin, by
    default the judged model's calibration error) is a near-tie with the next size, and says
    so with the command that shows where that error moves it. `measured`: the threshold is
    the calibration's error (not a `--tie-margin` of the user's); `rerun`: `--model-error` can
    move this scenario's latency model (roofline only). None otherwise."""
    if fleet.seeds <= 1 or (thin := thin_figures(fleet, threshold)) is None:
        return None
    why = "the calibration's median error for this kind of model" if measured else "--tie-margin"
    note = (
        f"a near-tie: {thin}, within the {share_text(threshold)} tie margin ({why}), so a model "
        "error of that size can move the answer"
    )
    if rerun and threshold > 0:
        note += f": rerun with --model-error {threshold * 100:.3g} to see where it goes"
    return note
