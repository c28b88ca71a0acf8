"""Per-tenant metrics: goodput against class targets, TPOT targets, the `all` row."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import simsched
from simsched.results.tenants import ALL

NOISY = Path(__file__).resolve().parents[2] / "scenarios" / "noisy_neighbor.yaml"
PROTECTED = "service_token_drr_with_admission"


def tenants(overrides: list[str] | None = None):
    result = simsched.simulate(simsched.load_scenario(NOISY, overrides), [PROTECTED])
    return result, result.tenants.set_index("tenant_id")


def test_all_row_adds_up_the_tenants() -> None:
    _, rows = tenants()
    parts = rows.drop(index=ALL)
    for column in ("submitted", "admitted", "shed", "admitted_service_tokens"):
        assert rows.loc[ALL, column] == parts[column].sum()
    assert rows.loc[ALL, "goodput_rps"] == pytest.approx(parts["goodput_rps"].sum(), abs=1e-3)


def test_goodput_counts_requests_within_their_class_target() -> None:
    result, rows = tenants()
    requests = result.requests
    chat = requests[(requests.tenant_id == "tenant_chat_pro") & (requests.status_code == 200)]
    good = int((chat.ttft_ms <= 500).sum())
    span_s = (requests.finish_ms.max() - requests.arrival_ms.min()) / 1000
    assert rows.loc["tenant_chat_pro", "goodput_rps"] == pytest.approx(good / span_s, abs=1e-3)
    assert rows.loc["tenant_chat_pro", "slo_attainment"] == pytest.approx(good / len(chat))


def test_a_tight_tpot_target_removes_goodput_and_fails_the_slo() -> None:
    _, loose = tenants()
    _, tight = tenants(["slo.interactive_tpot_ms=0.01"])
    assert loose.loc["tenant_chat_pro", "slo_met"]
    assert not tight.loc["tenant_chat_pro", "slo_met"]
    assert tight.loc["tenant_chat_pro", "goodput_rps"] == 0.0
    # the batch class has no TPOT target, so its goodput does not change
    assert (
        tight.loc["tenant_batch_rag", "goodput_rps"] == loose.loc["tenant_batch_rag", "goodput_rps"]
    )


def test_batch_tenants_are_judged_against_the_batch_target() -> None:
    _, generous = tenants()
    _, strict = tenants(["slo.batch_ttft_ms=100"])
    assert generous.loc["tenant_batch_rag", "slo_met"]
    assert not strict.loc["tenant_batch_rag", "slo_met"]


def test_shedding_everything_meets_no_latency_target() -> None:
    result, rows = tenants(["cluster.total_kv_blocks=10"])
    assert rows.loc["tenant_chat_pro", "admitted"] == 0
    assert pd.isna(rows.loc["tenant_chat_pro", "p99_ttft_ms"])  # no value, not 0.0
    assert not rows.loc["tenant_chat_pro", "slo_met"]
    assert not result.slo[PROTECTED]["met"]


def test_token_server_never_finishes_before_the_first_token() -> None:
    short = ["tenants.tenant_chat_pro.prefill_tokens=10", "tenants.tenant_chat_pro.decode_tokens=5"]
    result, _ = tenants(short)
    served = result.requests[result.requests.status_code == 200]
    assert (served.finish_ms >= served.first_token_ms).all()
    assert (served.tpot_ms.dropna() >= 0).all()
