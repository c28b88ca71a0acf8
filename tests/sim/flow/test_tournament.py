"""scenarios/flow_policy_tournament.yaml: six fairness policies in one band under one trace.
Global-strict serves the band in arrival order, so the heavy tenant's bursts delay everyone;
every fair policy keeps the light tenant (`mobile`) well ahead of that."""

from __future__ import annotations

from pathlib import Path

import pytest

import simsched

TOURNAMENT = Path(__file__).resolve().parents[3] / "scenarios" / "flow_policy_tournament.yaml"
FAIR = ["round_robin", "las", "drr", "vtc", "wfq"]


@pytest.fixture(scope="module")
def tenants():
    return simsched.simulate(TOURNAMENT).tenants


def p99(tenants, variant: str, tenant: str) -> float:
    row = tenants[(tenants.variant == variant) & (tenants.tenant_id == tenant)]
    return float(row.p99_ttft_ms.iloc[0])


def test_every_policy_serves_the_same_requests(tenants) -> None:
    everyone = tenants[tenants.tenant_id == "all"]
    assert set(everyone.variant) == {"global_strict", *FAIR}
    assert set(everyone.admitted) == set(everyone.submitted)


@pytest.mark.parametrize("variant", FAIR)
def test_fair_policies_protect_the_light_tenant_from_the_bursts(tenants, variant: str) -> None:
    assert p99(tenants, variant, "mobile") < p99(tenants, "global_strict", "mobile") / 2


@pytest.mark.parametrize("variant", FAIR)
def test_the_heavy_tenant_pays_for_its_bursts(tenants, variant: str) -> None:
    assert p99(tenants, variant, "heavy") > p99(tenants, variant, "mobile")
