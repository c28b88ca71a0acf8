"""Per-tenant cost and energy of one variant, from the attribution ledger (docs/chargeback.md).

The fleet is provisioned from 0 to the end of the last iteration on any replica (the span of
`results.utilisation`), every GPU of every replica, so

    provisioned GPU-s = replicas * tp * span
    busy GPU-s        = tp * (time inside iterations, summed over replicas)
                      = sum over tenants of their attributed GPU-s
    idle GPU-s        = provisioned - busy

and dollars are GPU-s times the price per GPU-hour / 3600. Idle cost is attributed twice, both
stated: by usage (each tenant's share of the busy GPU-s) and by allocation (each tenant's weight
share). Either way busy dollars plus idle dollars add up to the provisioned cost.

Per-token prices count busy cost only: a tenant's prefill time over the prompt tokens of its
admitted requests, its decode time over their output tokens (a recomputed prefill after a
preemption costs time and adds no token). Energy per tenant is its share of each iteration's
joules; the run's figure adds the idle draw of idle GPU time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from simsched.config.chargeback import power_sources
from simsched.config.prices import gpu_price
from simsched.results.frames import admitted

COLUMNS = [
    "gpu_seconds",
    "busy_dollars",
    "idle_dollars_by_usage",
    "idle_dollars_by_weight",
    "dollars_by_usage",
    "dollars_by_weight",
    "dollars_per_m_input_tokens",
    "dollars_per_m_output_tokens",
    "energy_joules",
    "joules_per_output_token",
]
MONEY_DIGITS = 9
# What `provisioned` counts, said where it is reported (chargeback refuses autoscaling, so the
# fleet is fixed for the whole span).
PROVISIONED_COVERS = (
    "every GPU of every replica (replicas x tensor_parallel), from 0 ms to the end of the "
    "last iteration on any replica; a fixed fleet (chargeback refuses autoscaling)"
)
PER_M_DIGITS = 4
ENERGY_DIGITS = 3


@dataclass(frozen=True)
class FleetTotals:
    """The run's provisioned, busy and idle GPU-seconds, dollars and joules (unrounded)."""

    price_per_gpu_hour: float
    provisioned_gpu_s: float
    busy_gpu_s: float
    busy_energy_j: float
    idle_watts: float

    @property
    def idle_gpu_s(self) -> float:
        return self.provisioned_gpu_s - self.busy_gpu_s

    def dollars(self, gpu_s: float) -> float:
        return gpu_s * self.price_per_gpu_hour / 3600.0

    @property
    def idle_energy_j(self) -> float:
        return self.idle_gpu_s * self.idle_watts


def fleet_totals(ledger: Any, usages: list, cluster: Any) -> FleetTotals:
    span_ms = max((u.last_end_ms for u in usages), default=0.0)
    gpus = ledger.gpus_per_replica
    price, _ = gpu_price(cluster)
    return FleetTotals(
        price_per_gpu_hour=price,
        provisioned_gpu_s=len(usages) * gpus * span_ms / 1000.0,
        busy_gpu_s=gpus * ledger.busy_ms / 1000.0,
        busy_energy_j=ledger.busy_energy_j,
        idle_watts=ledger.idle_watts,
    )


def add_chargeback_columns(
    rows: list[dict[str, Any]], scenario: Any, frame: pd.DataFrame, ledger: Any, usages: list
) -> dict[str, Any]:
    """The chargeback columns on each tenants.csv row (the `all` row sums the tenants, its
    idle columns the whole idle cost); returns summary.json's `chargeback` block."""
    totals = fleet_totals(ledger, usages, scenario.cluster)
    gpus = ledger.gpus_per_replica
    weights = np.array([t.weight for t in scenario.tenants], dtype=np.float64)
    busy_s = [
        (p + d) * gpus / 1000.0 for p, d in zip(ledger.prefill_ms, ledger.decode_ms, strict=True)
    ]
    usage_share = _shares(np.array(busy_s))
    weight_share = weights / weights.sum()
    idle_dollars = totals.dollars(totals.idle_gpu_s)
    tenant_ids = frame["tenant_id"].to_numpy()
    ok = admitted(frame)
    for index, tenant in enumerate(scenario.tenants):
        mine = ok & (tenant_ids == tenant.id)
        tokens = _tokens(frame, mine)
        parts = (ledger.prefill_ms[index], ledger.decode_ms[index], ledger.energy_j[index])
        idle = (idle_dollars * usage_share[index], idle_dollars * weight_share[index])
        rows[index] |= _columns(totals, gpus, parts, tokens, idle)
    everyone = _tokens(frame, ok)
    parts = (sum(ledger.prefill_ms), sum(ledger.decode_ms), sum(ledger.energy_j))
    rows[len(scenario.tenants)] |= _columns(
        totals, gpus, parts, everyone, (idle_dollars, idle_dollars)
    )
    sources = power_sources(scenario.chargeback, getattr(scenario.cluster.gpu, "name", "custom"))
    return _summary(totals, everyone[1], ledger) | {"power_sources": sources}


def _columns(totals: FleetTotals, gpus: int, parts, tokens, idle) -> dict[str, Any]:
    prefill_ms, decode_ms, joules = parts
    input_tokens, output_tokens = tokens
    gpu_s = (prefill_ms + decode_ms) * gpus / 1000.0
    busy = totals.dollars(gpu_s)
    return {
        "gpu_seconds": round(gpu_s, MONEY_DIGITS),
        "busy_dollars": round(busy, MONEY_DIGITS),
        "idle_dollars_by_usage": round(idle[0], MONEY_DIGITS),
        "idle_dollars_by_weight": round(idle[1], MONEY_DIGITS),
        "dollars_by_usage": round(busy + idle[0], MONEY_DIGITS),
        "dollars_by_weight": round(busy + idle[1], MONEY_DIGITS),
        "dollars_per_m_input_tokens": _per(
            totals.dollars(prefill_ms * gpus / 1000.0), input_tokens, 1e6
        ),
        "dollars_per_m_output_tokens": _per(
            totals.dollars(decode_ms * gpus / 1000.0), output_tokens, 1e6
        ),
        "energy_joules": round(joules, ENERGY_DIGITS),
        "joules_per_output_token": _per(joules, output_tokens, 1.0),
    }


def _per(amount: float, tokens: int, scale: float) -> float:
    """Amount per `tokens / scale`; NaN for no token (no answer, not free)."""
    return round(amount * scale / tokens, PER_M_DIGITS) if tokens else float("nan")


def _tokens(frame: pd.DataFrame, mask: np.ndarray) -> tuple[int, int]:
    return (
        int(frame["prefill_tokens"].to_numpy()[mask].sum()),
        int(frame["decode_tokens"].to_numpy()[mask].sum()),
    )


def _shares(values: np.ndarray) -> np.ndarray:
    total = values.sum()
    return values / total if total > 0 else np.zeros_like(values)


def _summary(totals: FleetTotals, output_tokens: int, ledger: Any) -> dict[str, Any]:
    energy = totals.busy_energy_j + totals.idle_energy_j
    return {
        "price_per_gpu_hour": totals.price_per_gpu_hour,
        "idle_watts": ledger.idle_watts,
        "max_watts": ledger.max_watts,
        "provisioned_covers": PROVISIONED_COVERS,
        "provisioned_gpu_seconds": round(totals.provisioned_gpu_s, MONEY_DIGITS),
        "busy_gpu_seconds": round(totals.busy_gpu_s, MONEY_DIGITS),
        "idle_gpu_seconds": round(totals.idle_gpu_s, MONEY_DIGITS),
        "provisioned_dollars": round(totals.dollars(totals.provisioned_gpu_s), MONEY_DIGITS),
        "busy_dollars": round(totals.dollars(totals.busy_gpu_s), MONEY_DIGITS),
        "idle_dollars": round(totals.dollars(totals.idle_gpu_s), MONEY_DIGITS),
        "busy_energy_joules": round(totals.busy_energy_j, ENERGY_DIGITS),
        "idle_energy_joules": round(totals.idle_energy_j, ENERGY_DIGITS),
        "energy_joules": round(energy, ENERGY_DIGITS),
        # the run's: idle draw included, over every admitted output token
        "joules_per_output_token": _per(energy, output_tokens, 1.0),
    }
