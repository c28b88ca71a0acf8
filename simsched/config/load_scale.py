"""`load_scale`: every tenant's arrival rate multiplied by one factor (1: as written).

Each open arrival kind says how its rate is multiplied (`RATE_SCALERS`): a rate times the
factor, a fixed interval divided by it, a rate curve's rates times it (its times kept). The
window (`start_ms`, `duration_s`) stays: a scale of 2 sends about twice the requests over the
same seconds; a process bounded by `count` sends its count sooner. Sessions scale how often
sessions begin (their turns follow their own clients). Trace replays are time-scaled instead:
every arrival instant divided by the factor (`workload.build`). Closed-loop clients set their own
pace (`concurrency`, think time), so a scale other than 1 is refused for them.

The scenario keeps the rates as written; the workload applies the factor when it generates, so a
scenario saved and reloaded is never scaled twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Scaler = Callable[[Any, float], dict[str, Any]]


def _rate(spec: Any, scale: float) -> dict[str, Any]:
    return {"rate_per_s": spec.rate_per_s * scale}


RATE_SCALERS: dict[str, Scaler] = {
    "periodic": lambda spec, s: {"interval_ms": spec.interval_ms / s},
    "poisson": _rate,
    "gamma": _rate,
    "weibull": _rate,
    "onoff": lambda spec, s: {
        "on_rate_per_s": spec.on_rate_per_s * s,
        "off_rate_per_s": spec.off_rate_per_s * s,
    },
    "rate_schedule": lambda spec, s: {
        "points": [[point[0], point[1] * s, *point[2:]] for point in spec.points]
    },
    "sessions": lambda spec, s: {"start": scaled_arrivals(spec.start, s)},
}
UNSCALABLE = {"closed_loop": "closed-loop clients set their own pace; scale their concurrency"}


def scaled_arrivals(spec: Any, scale: float) -> Any:
    """The arrival spec with its rate multiplied by `scale` (the same object at 1)."""
    if scale == 1:
        return spec
    return spec.model_copy(update=RATE_SCALERS[spec.kind](spec, scale))


def at_load_scale(scenario: Any) -> Any:
    """The scenario with every tenant's arrivals scaled by its `load_scale`, for generating."""
    scale = scenario.load_scale
    if scale == 1:
        return scenario
    tenants = [
        t
        if t.arrivals is None
        else t.model_copy(update={"arrivals": scaled_arrivals(t.arrivals, scale)})
        for t in scenario.tenants
    ]
    return scenario.model_copy(update={"tenants": tenants})


def unscalable_tenant(scenario: Any) -> str | None:
    """Why `load_scale` cannot apply to some tenant, or None."""
    for tenant in scenario.tenants:
        kind = None if tenant.arrivals is None else tenant.arrivals.kind
        if kind in UNSCALABLE:
            return f"tenant {tenant.id!r}: {UNSCALABLE[kind]}"
    return None


# requests that all arrive within this span are one burst: sent sooner they are the same burst
BURST_MS = 1.0


def burst_only(scenario: Any) -> str | None:
    """Why `load_scale` cannot add load to any tenant, or None: every tenant sends a fixed count
    of periodic requests within BURST_MS, and a scale only sends that count sooner."""
    if getattr(scenario, "trace", None) is not None:
        return None  # a scenario's trace is time-scaled: load_scale does add load there
    spans = []
    for tenant in scenario.tenants:
        arrivals = tenant.arrivals
        if arrivals is None or arrivals.kind != "periodic":
            return None
        spans.append(arrivals.interval_ms * (arrivals.count - 1))
        if spans[-1] > BURST_MS:
            return None
    return (
        f"every tenant's requests arrive at once (periodic, all within {max(spans):.3g} ms), and "
        "load_scale only sends a fixed count sooner, so it cannot add load; vary the tenants' "
        "arrivals.count instead"
    )
