"""The `chargeback` section: per-tenant cost and energy, opt-in (no SimPy here).

A scenario with `chargeback: {}` (or with settings) attributes each iteration's GPU time and
energy to the tenants whose requests ran in it (sim/cluster/attribution.py) and adds the
chargeback columns to tenants.csv, a `chargeback` block to summary.json and a section to the
report (docs/chargeback.md). Without the section nothing is measured and no output changes.

The GPU power model needs two figures per GPU: its idle draw and its maximum (the board power,
TDP). The presets below carry what has a published source; a GPU without one (or a custom GPU)
needs `chargeback.power.idle_watts` and `max_watts` in the scenario.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

Watts = Annotated[float, Field(gt=0, le=100_000, allow_inf_nan=False)]

# Board power (TDP, the maximum draw) per GPU preset, watts, from the makers' datasheets.
MAX_WATTS_SOURCES: dict[str, tuple[float, str]] = {
    "a100-80gb": (400.0, "NVIDIA A100 datasheet (SXM: 400 W); measurements README section 5"),
    "a100-40gb": (400.0, "NVIDIA A100 datasheet (SXM: 400 W for the 40 GB and 80 GB parts)"),
    "h100-80gb": (700.0, "NVIDIA H100 datasheet (SXM: up to 700 W); measurements README sec. 5"),
    "h100-pcie": (350.0, "NVIDIA H100 PCIe product brief PB-11133-001 (maximum TDP 350 W)"),
    "h200": (700.0, "NVIDIA H200 datasheet (SXM: up to 700 W); measurements README section 5"),
    "b200": (1000.0, "NVIDIA HGX B200 spec table (1,000 W a GPU); measurements README sec. 5"),
    "l40s": (350.0, "NVIDIA L40S datasheet (max power consumption 350 W)"),
    "mi300x": (750.0, "AMD Instinct MI300X (OAM module, 750 W board power)"),
}
# Idle draw, watts, where a measurement is published: an H200 SXM measured at 80.3 W idle under
# vLLM with no load (the Alice GPU energy benchmark, api.serialalice.pt/alice-benchmark;
# secondary). The H200 is the H100's silicon with more and faster HBM (glennklockwood.com/garden/
# processors/h100, as cited in the measurements' section 5), so the H100 SXM takes the same
# figure: an assumption, said so in the output and docs/chargeback.md. No other GPU has a
# published idle figure here: give it.
IDLE_WATTS_SOURCES: dict[str, tuple[float, str]] = {
    "h200": (80.0, "measured: 80.3 W idle under vLLM, Alice GPU energy benchmark (secondary)"),
    "h100-80gb": (80.0, "assumed: the H200's measured idle (same silicon), not measured on H100"),
}
MAX_WATTS = {gpu: watts for gpu, (watts, _) in MAX_WATTS_SOURCES.items()}
IDLE_WATTS = {gpu: watts for gpu, (watts, _) in IDLE_WATTS_SOURCES.items()}


def power_sources(spec: ChargebackSpec, gpu_name: str) -> dict[str, str]:
    """Where each power figure of the run comes from: the scenario, or the preset's source."""
    power = spec.power
    given = "given in the scenario (chargeback.power)"
    return {
        "idle_watts": given if power.idle_watts is not None else IDLE_WATTS_SOURCES[gpu_name][1],
        "max_watts": given if power.max_watts is not None else MAX_WATTS_SOURCES[gpu_name][1],
    }


class PowerSpec(BaseModel):
    """One GPU's draw: `idle_watts` when it runs nothing, `max_watts` at full utilisation."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    idle_watts: Watts | None = None  # None: the GPU preset's (IDLE_WATTS)
    max_watts: Watts | None = None  # None: the GPU preset's (MAX_WATTS)

    @model_validator(mode="after")
    def _idle_below_max(self) -> PowerSpec:
        both = self.idle_watts is not None and self.max_watts is not None
        if both and self.idle_watts > self.max_watts:
            raise ValueError("idle_watts must not exceed max_watts")
        return self


class ChargebackSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    power: PowerSpec = Field(default_factory=PowerSpec)


def resolved_power(spec: ChargebackSpec, gpu_name: str) -> tuple[float | None, float | None]:
    """(idle watts, max watts): the scenario's own, else the GPU preset's, else None."""
    power = spec.power
    idle = power.idle_watts if power.idle_watts is not None else IDLE_WATTS.get(gpu_name)
    peak = power.max_watts if power.max_watts is not None else MAX_WATTS.get(gpu_name)
    return idle, peak


def _unsplit_mechanism(cluster: Any) -> str | None:
    """A mechanism whose iteration time the tenant split does not cover (attribution.py splits
    the dense roofline's and the linear model's terms, one token per decode step)."""
    if getattr(cluster, "autoscale", None) is not None:
        return "cluster.autoscale (provisioned time is the fixed fleet's here)"
    if getattr(cluster, "speculative", None) is not None:
        return "cluster.speculative"
    if getattr(cluster, "cpu_time", None) not in (None, "serial"):
        return f"cluster.cpu_time {cluster.cpu_time}"
    model = getattr(cluster, "model", None)
    if getattr(model, "moe", None) is not None:
        return "a Mixture-of-Experts model"
    return None


def chargeback_problem(spec: ChargebackSpec | None, cluster: Any) -> str | None:
    """Why this cluster cannot be charged back (None when it can): it needs GPUs, a price and
    both power figures."""
    from simsched.config.prices import gpu_price  # prices.py is plain data; no cycle

    if spec is None:
        return None
    if getattr(cluster, "service_model", None) == "pools":
        return (
            "chargeback cannot split a cluster of cluster.pools yet (one GPU, price and power "
            "model per run); use a single continuous_batching cluster"
        )
    if getattr(cluster, "service_model", None) != "continuous_batching":
        return "chargeback needs cluster.service_model: continuous_batching (GPUs to charge for)"
    unsplit = _unsplit_mechanism(cluster)
    if unsplit:
        return (
            f"chargeback cannot split iterations with {unsplit} yet: the split follows the dense "
            "roofline's and the linear model's terms (docs/chargeback.md)"
        )
    name = getattr(cluster.gpu, "name", "custom")
    price, _ = gpu_price(cluster)
    if price is None:
        return (
            f"chargeback needs a price for GPU {name!r}: give cluster.gpu.price_per_gpu_hour "
            "or cluster.gpu_prices"
        )
    idle, peak = resolved_power(spec, name)
    for key, value in (("idle_watts", idle), ("max_watts", peak)):
        if value is None:
            return f"chargeback.power.{key}: GPU {name!r} has no published figure here; give it"
    if idle > peak:
        return f"chargeback.power: idle_watts ({idle:g}) exceeds max_watts ({peak:g})"
    return None
