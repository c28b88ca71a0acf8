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

from collections.abc import Callable

import numpy as np

from simsched.workload.arrivals_onoff import onoff
from simsched.workload.arrivals_rate_schedule import rate_schedule
from simsched.workload.arrivals_renewal import gamma, poisson, weibull


def arrival_times(spec, rng: np.random.Generator) -> np.ndarray:
    """Arrival instants in ms of one tenant's arrival process (sorted, float64)."""
    if spec.kind == "periodic":  # exact in ms: the reference's instants, bit for bit
        return spec.start_ms + spec.interval_ms * np.arange(spec.count, dtype=np.float64)
    seconds = PROCESSES[spec.kind](spec, rng)
    return spec.start_ms + 1000.0 * seconds


PROCESSES: dict[str, Callable[..., np.ndarray]] = {
    "poisson": poisson,
    "gamma": gamma,
    "weibull": weibull,
    "onoff": onoff,
    "rate_schedule": rate_schedule,
}
