"""A sweep or plan must not vary a setting that a variant it runs sets itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from simsched.config.overrides import overlapping
from simsched.errors import InputError
from simsched.studies.plan import plan
from simsched.studies.sweep import sweep

NOISY = Path(__file__).resolve().parents[2] / "scenarios" / "noisy_neighbor.yaml"


def test_overlapping_paths() -> None:
    assert overlapping("scheduler.policy", "scheduler.policy")
    assert overlapping("scheduler", "scheduler.policy")
    assert overlapping("tenants[1].weight", "tenants.1")
    assert not overlapping("scheduler.policy", "scheduler.decode_weight")


def test_sweep_refuses_a_path_a_variant_sets() -> None:
    with pytest.raises(InputError, match="variant 'request_count_no_admission' sets"):
        sweep(NOISY, {"admission.enabled": [True, False]}, jobs=1, progress=False)


def test_plan_refuses_a_knob_its_variant_sets() -> None:
    with pytest.raises(InputError, match="sets scheduler.policy itself"):
        plan(
            NOISY,
            "scheduler.policy",
            "1:2",
            ["all.shed<=0"],
            variant="request_count_no_admission",
        )
