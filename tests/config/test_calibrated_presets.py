"""The shipped presets and roofline defaults carry the values `make calibrate` fitted.

calibration/fitted.yaml is what `make calibrate` writes; this checks that presets.py and the
roofline's defaults agree with it, so a refit that is not copied over is caught.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simsched.config import presets
from simsched.config.hardware import RooflineLatencyConfig

FITTED = Path(__file__).resolve().parents[2] / "calibration" / "fitted.yaml"
GROUPS = {  # the calibration file's names for GPU groups, and the presets that take the values
    "a100": ["a100-80gb", "a100-40gb"],
    "h100": ["h100-80gb", "h100-pcie"],
    "h100/h200": ["h100-80gb", "h100-pcie", "h200"],
    "h200": ["h200"],
    "b200": ["b200"],
}


def fitted() -> dict:
    return yaml.safe_load(FITTED.read_text(encoding="utf-8"))


def test_roofline_defaults_are_the_fitted_ones() -> None:
    latency = fitted()["cluster"]["latency_model"]
    defaults = RooflineLatencyConfig(kind="roofline")
    for key, value in latency.items():
        assert getattr(defaults, key) == pytest.approx(value, rel=0.01, abs=1e-4), key


@pytest.mark.parametrize("entry", fitted()["per_case_settings"], ids=lambda e: e["name"])
def test_gpu_presets_carry_the_fitted_efficiencies(entry: dict) -> None:
    group, field = entry["name"].split(" ")
    for gpu in GROUPS[group]:
        preset = presets.GPU_PRESETS[gpu]
        if "." in field:
            field_name, dtype = field.split(".")
            value = preset[field_name][dtype]
        else:
            value = preset[field]
        assert value == pytest.approx(entry["value"], rel=0.01, abs=1e-4), gpu
