"""A sweep or plan must not vary a setting that a variant it runs sets itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from simsched.config.loading import load_scenario
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


RAW = {"tenants": [{"id": "chat"}, {"id": "rag", "quota": {"burst_service_tokens": 5}}]}


def test_overlapping_resolves_tenant_ids_to_indices() -> None:
    # A path written with a tenant's id and one written with its index name the same setting.
    assert overlapping("tenants.rag.quota", "tenants.1.quota.burst_service_tokens", RAW)
    assert overlapping("tenants[1]", "tenants.rag.weight", RAW)
    assert not overlapping("tenants.chat.quota", "tenants.1.quota", RAW)


def test_sweep_refuses_a_path_a_variant_sets_under_another_name(tmp_path: Path) -> None:
    # The variant names the tenant by id, the sweep by index: it must still be seen.
    text = NOISY.read_text().replace(
        "set: {}", "set: {tenants.tenant_batch_rag.quota.burst_service_tokens: 5000}"
    )
    scenario = tmp_path / "renamed.yaml"
    scenario.write_text(text)
    with pytest.raises(InputError, match="variant 'service_token_drr_with_admission' sets"):
        sweep(
            scenario,
            {"tenants.2.quota.burst_service_tokens": [1000, 1000000]},
            jobs=1,
            progress=False,
        )


def test_plan_refuses_a_knob_its_variant_sets_under_another_name(tmp_path: Path) -> None:
    text = NOISY.read_text().replace("set: {}", "set: {tenants.2.weight: 3}")
    scenario = tmp_path / "renamed.yaml"
    scenario.write_text(text)
    with pytest.raises(InputError, match="sets tenants.2.weight itself"):
        plan(scenario, "tenants.tenant_batch_rag.weight", "1:2", ["all.shed<=0"])


def test_sweep_refuses_one_setting_swept_under_two_names() -> None:
    with pytest.raises(InputError, match="swept twice"):
        sweep(
            NOISY,
            {"tenants.0.weight": [1, 2], "tenants.tenant_chat_pro.weight": [3, 4]},
            jobs=1,
            progress=False,
        )


def test_set_shadowed_by_a_variant_is_refused_by_every_command(tmp_path: Path) -> None:
    # The same check, with the same message, in scenario, sweep and plan.
    from simsched.config.shadowing import refuse_shadowed_overrides

    base = load_scenario(NOISY, ["admission.enabled=true"])
    with pytest.raises(InputError, match="--set admission.enabled=true: variant"):
        refuse_shadowed_overrides(base, ["admission.enabled=true"], None, str(NOISY))
    refuse_shadowed_overrides(  # the variant that does not set it: fine
        base, ["admission.enabled=true"], ["service_token_drr_with_admission"], str(NOISY)
    )
    with pytest.raises(InputError, match="--set admission.enabled=true: variant"):
        sweep(
            NOISY,
            {"seed": [1, 2]},
            overrides=["admission.enabled=true"],
            jobs=1,
            progress=False,
        )
    with pytest.raises(InputError, match="--set scheduler.policy=vtc: variant"):
        plan(
            NOISY,
            "cluster.total_kv_blocks",
            "1000:2000",
            ["all.shed<=0"],
            variant="request_count_no_admission",
            overrides=["scheduler.policy=vtc"],
        )
