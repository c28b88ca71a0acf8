"""Dispersion of weight-normalised service across tenants, beside Jain's index.

Over the same values as `jain_index_admitted` (each tenant that asked for something: its
admitted service tokens over its weight, x_i):

- `normalised_service_cv`: the coefficient of variation, population standard deviation over
  the mean, sqrt(mean(x^2) - mean(x)^2) / mean(x): 0 when every tenant got service in proportion
  to its weight; for n tenants of which one got everything, sqrt(n - 1);
- `normalised_service_max_min`: the largest x_i over the smallest; 1 when even, None (null) when
  some tenant was served nothing (the ratio has no finite value).

Jain's index J and the CV carry the same information, J = 1 / (1 + CV^2) (Jain, Chiu and Hawe,
1984); the CV reads as a relative spread and grows without bound, where J compresses it in
[1/n, 1]. Both are None when nothing was served.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simsched.results.frames import admitted

DIGITS = 4


def normalised_service(frame: pd.DataFrame, weights: dict[str, float]) -> np.ndarray:
    """x_i for each tenant that asked for some service, in the order they first appear."""
    served = frame.loc[admitted(frame)].groupby("tenant_id")["service_tokens"].sum()
    demand = frame.groupby("tenant_id")["service_tokens"].sum()
    asked = [t for t in frame["tenant_id"].unique() if demand[t] > 0]
    return np.array([served.get(t, 0) / weights[t] for t in asked], dtype=np.float64)


def coefficient_of_variation(values: np.ndarray) -> float | None:
    if not len(values) or not np.any(values):
        return None
    scaled = values / values.max()  # squares of huge values would overflow
    return round(float(np.std(scaled) / np.mean(scaled)), DIGITS)


def max_min_ratio(values: np.ndarray) -> float | None:
    if not len(values) or values.min() <= 0:
        return None
    return round(float(values.max() / values.min()), DIGITS)


def dispersion_summary(frame: pd.DataFrame, weights: dict[str, float]) -> dict[str, float | None]:
    values = normalised_service(frame, weights)
    return {
        "normalised_service_cv": coefficient_of_variation(values),
        "normalised_service_max_min": max_min_ratio(values),
    }
