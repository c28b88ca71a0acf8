"""Issue 10 item 10: a validator that reads another field copes with that field having failed.

`gpu_memory_utilization` out of range used to reach the `num_gpu_blocks` validator as a missing
key (`KeyError`), a traceback instead of one line naming the field, in YAML, `--set` and plans.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simsched.config.loading import load_scenario
from simsched.errors import InputError

REPO = Path(__file__).resolve().parents[2]
BATCHING = REPO / "scenarios" / "noisy_neighbor_batching.yaml"
BAD_SHARES = ["0", "1.5", "90", ".nan"]


@pytest.mark.parametrize("share", BAD_SHARES)
def test_a_bad_memory_share_is_named_not_a_key_error(share: str) -> None:
    with pytest.raises(InputError) as info:
        load_scenario(BATCHING, [f"cluster.gpu_memory_utilization={share}"])
    assert "cluster.gpu_memory_utilization" in str(info.value)


@pytest.mark.parametrize("field", ["gpu", "tp", "model", "block_size"])
def test_every_field_the_block_count_reads_may_have_failed(field: str) -> None:
    with pytest.raises(InputError) as info:
        load_scenario(BATCHING, [f"cluster.{field}=-1"])
    assert f"cluster.{field}" in str(info.value)


def test_plan_over_bad_shares_fails_in_one_line(monkeypatch, tmp_path: Path, simsched_cli) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = simsched_cli(
        "plan", str(BATCHING), "--variant", "service_token_drr_with_admission",
        "--vary", "cluster.gpu_memory_utilization", "--range", "0:1.5", "--slo", "all.shed<=0",
    )  # fmt: skip
    assert code == 2, err
    assert "Traceback" not in err and "KeyError" not in err
    assert len(err.strip().splitlines()) == 1
