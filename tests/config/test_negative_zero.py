"""-0.0 is a valid zero wherever a setting may be zero: numpy's samplers refuse it by its sign
bit ("sigma < 0"), so the specs hand them +0.0 (a fuzzing run found the traceback)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simsched.config.length_specs import LognormalLength, NormalLength
from simsched.workload.lengths import draw_lengths


@pytest.mark.parametrize(
    "spec",
    [
        LognormalLength(dist="lognormal", median=100.0, sigma=-0.0),
        NormalLength(dist="normal", mean=100.0, std=-0.0),
    ],
    ids=["lognormal sigma", "normal std"],
)
def test_a_negative_zero_spread_draws_the_centre_every_time(spec) -> None:
    spread = getattr(spec, "sigma", None) if spec.dist == "lognormal" else spec.std
    assert spread == 0.0 and math.copysign(1.0, spread) == 1.0
    lengths = draw_lengths(spec, 5, np.random.default_rng(1))
    assert lengths.tolist() == [100] * 5  # no spread: e^ln(100) and N(100, 0) are both 100
