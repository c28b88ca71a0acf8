"""Shed status codes are configurable per reason (429 by default)."""

from __future__ import annotations

from pathlib import Path

import pytest

import simsched
from simsched.errors import InputError

NOISY = Path(__file__).resolve().parents[2] / "scenarios" / "noisy_neighbor.yaml"
PROTECTED = "service_token_drr_with_admission"


def shed_codes(overrides: list[str]) -> set[int]:
    result = simsched.simulate(simsched.load_scenario(NOISY, overrides), [PROTECTED])
    rows = result.requests
    return set(rows.loc[rows["reason"] != "admitted", "status_code"])


def test_sheds_answer_429_by_default() -> None:
    assert shed_codes([]) == {429}


def test_a_reason_can_answer_503() -> None:
    assert shed_codes(["admission.shed_status_codes.shed_kv_watermark=503"]) == {503}


def test_the_summary_still_counts_every_shed() -> None:
    result = simsched.simulate(
        simsched.load_scenario(NOISY, ["admission.shed_status_codes.shed_kv_watermark=503"]),
        [PROTECTED],
    )
    assert result.summaries[PROTECTED]["shed_429_requests"] == 14  # the reference's count


@pytest.mark.parametrize(
    "override",
    ["admission.shed_status_codes.shed_kv_watermark=200", "admission.shed_status_codes.bogus=503"],
)
def test_bad_codes_and_reasons_are_input_errors(override: str) -> None:
    with pytest.raises(InputError):
        simsched.load_scenario(NOISY, [override])
