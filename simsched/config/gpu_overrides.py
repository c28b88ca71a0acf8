"""Per-GPU latency settings: `cluster.gpu_overrides: {a100-80gb: {compute_efficiency: 0.5}}`.

A calibration fits the roofline's settings for one GPU; a fleet search (`plan --over
cluster.gpu=a100-80gb,h100-80gb`) swaps the GPU, and `cluster.latency_model` would apply that
GPU's fit to every other. Settings under a GPU's name here apply only while the cluster runs on
that GPU (matched by `gpu.name`), on top of `cluster.latency_model`, so each GPU of the search
keeps its own fit. No SimPy here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from simsched.config.hardware import RooflineLatencyConfig, Share
from simsched.config.spec_base import MeasureOrZero


class GpuLatencyOverrides(BaseModel):
    """The roofline settings one GPU overrides (each optional; see `RooflineLatencyConfig`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    efficiency: Share | None = None
    compute_efficiency: Share | None = None
    memory_efficiency: Share | None = None
    overhead_ms: MeasureOrZero | None = None
    per_seq_ms: MeasureOrZero | None = None
    allreduce_us: MeasureOrZero | None = None
    frontend_before_ms: MeasureOrZero | None = None
    frontend_after_ms: MeasureOrZero | None = None


def latency_for_gpu(latency: Any, gpu_name: str, overrides: dict[str, GpuLatencyOverrides]) -> Any:
    """The latency model with the running GPU's overrides (if any) applied."""
    mine = overrides.get(gpu_name)
    if mine is None:
        return latency
    changed = mine.model_dump(exclude_none=True)
    return RooflineLatencyConfig.model_validate({**latency.model_dump(), **changed})


def check_overrides(latency: Any, overrides: dict[str, GpuLatencyOverrides]) -> None:
    """Overrides adjust the roofline: with the linear model there is nothing for them to set."""
    if overrides and latency.kind != "roofline":
        raise ValueError(
            "gpu_overrides set roofline latency settings per GPU; latency_model is "
            f"{latency.kind!r} (use the roofline, or leave gpu_overrides out)"
        )
