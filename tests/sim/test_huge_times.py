"""Issue 10 item 13: huge times are refused, never written as `inf` or `Infinity`.

A cluster a trillion times too slow used to give `finish_ms=inf` in requests.csv and
`Infinity` in summary.json (which is not JSON); now the run stops when the simulated clock
passes what float64 milliseconds resolve, with one line naming the cluster.

How fast is checked by `make bench` (row budget), not here: a wall-clock assertion flakes
on a loaded machine.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from simsched.config.loading import load_scenario
from simsched.errors import InputError
from simsched.outputs.files import json_safe
from simsched.results.simulate import simulate

REPO = Path(__file__).resolve().parents[2]
STUDY = REPO / "scenarios" / "noisy_neighbor.yaml"


@pytest.mark.parametrize(
    "override",
    [
        "cluster.service_tokens_per_ms=1e-300",
        "cluster.prefill_tokens_per_ms=1e-300",
    ],
)
def test_a_clock_beyond_any_resolution_is_refused(override: str) -> None:
    with pytest.raises(InputError, match="cluster"):
        simulate(load_scenario(STUDY, [override]), ["service_token_drr_with_admission"])


def test_a_time_just_under_the_clock_blames_the_workload_not_the_cluster(tmp_path) -> None:
    # 999999999999.999 s = 1e15 ms - 1 ms passes the BurstGPT reader's bound (1e12 s), but its
    # request cannot finish within the clock (1e15 ms): the error points at the arrivals, not at a
    # cluster too slow
    header = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    rows = "0,ChatGPT,10,5,15,x\n999999999999.999,ChatGPT,10,5,15,x\n"
    (tmp_path / "b.csv").write_text(header + rows, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(
        "tenants:\n  - id: a\n    trace: {path: b.csv, format: burstgpt}\n", encoding="utf-8"
    )
    with pytest.raises(InputError) as info:
        simulate(load_scenario(tmp_path / "s.yaml"))
    assert "tenants: requests arrive as late as 999999999999999 ms" in str(info.value)
    assert "cluster" not in str(info.value)


def test_summaries_are_valid_json() -> None:
    data = {"a": math.inf, "b": [math.nan, 1.5, -math.inf], "c": {"d": 2}}
    text = json.dumps(json_safe(data), allow_nan=False)
    assert json.loads(text) == {"a": None, "b": [None, 1.5, None], "c": {"d": 2}}


def test_huge_but_representable_settings_are_refused_at_load() -> None:
    with pytest.raises(InputError, match="cluster.kv_hold_factor"):
        load_scenario(STUDY, ["cluster.kv_hold_factor=1e300"])
