"""results/backlog_dispersion.py: the spread of service while tenants stayed backlogged, on a
hand-built frame whose windows are worked out by hand, and on the policy tournament, where it
must tell global-strict from the fair policies (whole-run dispersion cannot)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

import simsched
from simsched.errors import InputError
from simsched.results.backlog_dispersion import backlog_dispersion
from simsched.sim.recorder import STATUS_OK

TOURNAMENT = Path(__file__).resolve().parents[2] / "scenarios" / "flow_policy_tournament.yaml"


def request(tenant: str, arrival: float, dispatch: float, tokens: int) -> dict:
    return {
        "tenant_id": tenant,
        "arrival_ms": arrival,
        "dispatch_ms": dispatch,
        "queue_wait_ms": dispatch - arrival,
        "service_tokens": tokens,
        "status_code": STATUS_OK,
    }


# Windows of 1000 ms; weights a 1, b 2, c 1. Backlog periods: a [0, 2500] and [2900, 4100],
# b [100, 2200] and [2900, 4000], c [0, 0] and [900, 2000].
# window 0 [0, 1000): only a through it: not counted.
# window 1 [1000, 2000): a, b, c through it (c's period ends at 2000 exactly); served in it:
#   a 50 (at 1200), b 400 / 2 = 200 (at 1500), c nothing (its 600 is dispatched at 2000, in
#   window 2): x = 50 * (1, 4, 0), mean 5/3, E[x^2] 17/3, std sqrt(26)/3, CV sqrt(26)/5.
# window 2 [2000, 3000): nobody through it. window 3 [3000, 4000): a and b; a 100 (at 3500),
#   b 200 / 2 = 100 (at 3600): CV 0. window 4: nobody.
# Mean CV (sqrt(26)/5 + 0) / 2; starved: c in window 1, 1 of 5 tenant-windows.
FRAME = pd.DataFrame(
    [
        request("a", 0, 500, 100),
        request("a", 0, 1200, 50),
        request("a", 0, 2500, 300),
        request("b", 100, 1500, 400),
        request("b", 100, 2200, 200),
        request("c", 0, 0, 50),
        request("c", 900, 2000, 600),
        request("a", 2900, 3500, 100),
        request("a", 2900, 4100, 100),
        request("b", 2900, 3600, 200),
        request("b", 2900, 4000, 10),
    ]
)
WEIGHTS = {"a": 1.0, "b": 2.0, "c": 1.0}


def test_the_hand_built_windows() -> None:
    got = backlog_dispersion(FRAME, WEIGHTS, 1000.0)
    assert got == {
        "backlog_window_ms": 1000.0,
        "backlogged_windows": 2,
        "backlogged_service_cv": round(math.sqrt(26) / 5 / 2, 4),
        "backlogged_starved_share": round(1 / 5, 4),
    }


def test_no_window_with_two_backlogged_tenants_reads_null() -> None:
    # windows of 5000 ms: no period covers [0, 5000)
    got = backlog_dispersion(FRAME, WEIGHTS, 5000.0)
    assert got["backlogged_windows"] == 0
    assert got["backlogged_service_cv"] is None
    assert got["backlogged_starved_share"] is None


def test_a_window_where_the_backlogged_tenants_got_the_same_weighted_service_reads_zero() -> None:
    rows = [r for r in FRAME.to_dict("records") if r["arrival_ms"] >= 2900]
    got = backlog_dispersion(pd.DataFrame(rows), WEIGHTS, 1000.0)
    assert (got["backlogged_windows"], got["backlogged_service_cv"]) == (1, 0.0)


@pytest.fixture(scope="module")
def fairness():
    return simsched.simulate(TOURNAMENT, variants=["global_strict", "round_robin", "drr"]).fairness


def test_whole_run_dispersion_cannot_tell_the_policies_apart(fairness) -> None:
    # every request is admitted under every policy: whole-run service is each tenant's demand
    assert len({f["normalised_service_cv"] for f in fairness.values()}) == 1


def test_backlogged_dispersion_ranks_global_strict_round_robin_and_drr(fairness) -> None:
    # Global-strict dispatches the band in arrival order, so while tenants wait each gets
    # service in proportion to what it sent: the heavy tenant's long requests dominate every
    # window. Round-robin gives each backlogged tenant one request a turn: equal requests,
    # unequal tokens (heavy's prompts are ~2500 tokens, mobile's ~150). DRR gives equal service
    # tokens a round: the spread is left only to request granularity.
    cv = {name: f["backlogged_service_cv"] for name, f in fairness.items()}
    assert cv["global_strict"] > cv["round_robin"] > cv["drr"]


def test_a_window_too_short_for_the_run_is_refused_naming_the_setting() -> None:
    # the run ends at 4100 ms: windows of 1 microsecond would be 4.1 million
    with pytest.raises(InputError) as error:
        backlog_dispersion(FRAME, WEIGHTS, 0.001)
    assert error.value.where == "fairness.backlog_window_ms"
