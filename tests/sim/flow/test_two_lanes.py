"""Today's two lanes map onto flow control: with the default bands (interactive over batch),
strict band selection and `fairness: scheduler`, every policy decides exactly as it does
without flow control, request by request (the golden noisy neighbor included)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import simsched
from simsched.config.names import POLICY_NAMES

NOISY = Path(__file__).resolve().parents[3] / "scenarios" / "noisy_neighbor.yaml"


@pytest.mark.parametrize("policy", sorted(POLICY_NAMES))
@pytest.mark.parametrize("admission", ["true", "false"])
def test_two_bands_with_the_scheduler_policy_are_todays_lanes(policy: str, admission: str) -> None:
    base = [f"scheduler.policy={policy}", f"admission.enabled={admission}"]
    variant = ["service_token_drr_with_admission"]
    plain = simsched.simulate(simsched.load_scenario(NOISY, base), variant)
    banded = simsched.simulate(
        simsched.load_scenario(NOISY, [*base, "flow_control={fairness: scheduler}"]), variant
    )
    pd.testing.assert_frame_equal(plain.requests, banded.requests)
    assert plain.summaries == banded.summaries
