"""M/G/1 validation: one Poisson tenant served FIFO by the token server is an M/G/1 queue.

With `request_count_fifo`, admission disabled and `decode_tokens: 0`, a request's service time is
`prefill_tokens / service_tokens_per_ms` and it waits exactly as an M/G/1 customer does, so its
mean queue wait must match Pollaczek-Khinchine: Wq = lambda * E[S^2] / (2 * (1 - rho)).

E[S] and E[S^2] come from the sizes actually drawn (whole tokens, at least 1), not from the
nominal distribution. At rho = 0.7 the sample mean wait of an M/M/1 queue has a relative
standard error of about sqrt(335 / n) / 2.33 (its asymptotic variance constant), 0.8 % at one
million requests, so 3 % is about 4 standard errors; M/D/1 is several times tighter. The batch
means standard error of each run is printed in the failure message.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from simsched import simulate
from simsched.config.loading import validate

SERVICE_TOKENS_PER_MS = 45.0
MEAN_PREFILL = 450  # tokens: a 10 ms mean service time


def mg1_scenario(prefill_tokens: Any, rho: float, count: int, seed: int):
    """One tenant, Poisson arrivals at the rate that loads the server to `rho` (nominally)."""
    rate_per_s = rho / (MEAN_PREFILL / SERVICE_TOKENS_PER_MS) * 1000.0
    tenant = {
        "id": "mg1",
        "weight": 1.0,
        "priority": "interactive",
        "arrivals": {"kind": "poisson", "rate_per_s": rate_per_s, "count": count},
        "prefill_tokens": prefill_tokens,
        "decode_tokens": 0,
    }
    raw = {
        "name": "mg1",
        "seed": seed,
        "tenants": [tenant],
        "cluster": {
            "service_model": "token_server",
            "service_tokens_per_ms": SERVICE_TOKENS_PER_MS,
        },
        "scheduler": {"policy": "request_count_fifo"},
        "admission": {"enabled": False},
    }
    return validate(raw, "mg1")


def pk_check(prefill_tokens: Any, rho: float, count: int, seed: int) -> tuple[float, str]:
    """Relative error of the simulated mean queue wait against Pollaczek-Khinchine, and a report."""
    scenario = mg1_scenario(prefill_tokens, rho, count, seed)
    requests = simulate(scenario).requests
    assert (requests["status_code"] == 200).all()
    service_ms = requests["service_tokens"].to_numpy(dtype=np.float64) / SERVICE_TOKENS_PER_MS
    lam = scenario.tenants[0].arrivals.rate_per_s / 1000.0  # per ms
    load = lam * service_ms.mean()
    expected = lam * np.mean(service_ms**2) / (2.0 * (1.0 - load))
    waits = requests["queue_wait_ms"].to_numpy()
    error = waits.mean() / expected - 1.0
    report = (
        f"rho {load:.4f}: mean wait {waits.mean():.4f} ms, P-K {expected:.4f} ms, "
        f"error {error:+.2%}, batch-means standard error {batch_means_se(waits) / expected:.2%}"
    )
    return error, report


def batch_means_se(values: np.ndarray, batches: int = 30) -> float:
    """Standard error of the mean of a correlated series, from the means of contiguous batches."""
    means = np.array([b.mean() for b in np.array_split(values, batches)])
    return float(means.std(ddof=1) / np.sqrt(batches))


EXPONENTIAL = {"dist": "exponential", "mean": MEAN_PREFILL}


@pytest.mark.validation
@pytest.mark.parametrize(
    ("prefill", "seed"), [(MEAN_PREFILL, 11), (EXPONENTIAL, 12)], ids=["MD1", "MM1"]
)
def test_mean_queue_wait_matches_pollaczek_khinchine(prefill: Any, seed: int) -> None:
    error, report = pk_check(prefill, rho=0.7, count=1_000_000, seed=seed)
    assert abs(error) < 0.03, report
