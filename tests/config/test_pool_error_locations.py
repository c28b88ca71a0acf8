"""A bad setting inside a pool is named by the path the user wrote: `cluster.pools[i].field`.

pydantic puts the chosen union member's tag ("pools") into an error's location, and the pools'
field has the same name, so dropping every tag dropped the field too (`cluster[1].replicas`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simsched import load_scenario
from simsched.errors import InputError

SCENARIO = Path(__file__).parents[2] / "scenarios" / "disaggregated.yaml"


@pytest.mark.parametrize(
    ("setting", "where"),
    [
        ("cluster.pools[decode].replicas", "cluster.pools[1].replicas"),
        ("cluster.pools[prefill].max_num_seqs", "cluster.pools[0].max_num_seqs"),
    ],
)
def test_a_bad_pool_field_is_named_by_its_pool_path(setting: str, where: str) -> None:
    base = load_scenario(SCENARIO)
    with pytest.raises(InputError) as error:
        base.with_overrides({setting: 0})
    assert f"{where}: Input should be greater than 0" in str(error.value)


def test_a_single_pool_cluster_field_keeps_its_path() -> None:
    base = load_scenario(Path(__file__).parents[2] / "scenarios" / "fleet_planning.yaml")
    with pytest.raises(InputError) as error:
        base.with_overrides({"cluster.replicas": 0})
    assert "cluster.replicas: Input should be greater than 0" in str(error.value)
