"""The API-server note: a replica whose request rate reached its front end's ceiling says the
front end set the pace (docs/engines.md, "The API server")."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from simsched.config.loading import load_scenario
from simsched.outputs.api_server_notes import api_server_notes, ceiling_per_s
from simsched.outputs.cluster_table import table_notes
from simsched.results.simulate import simulate

ROOT = Path(__file__).resolve().parents[2]
BURST = ROOT / "calibration" / "scenarios" / "fixed_burst.yaml"
SHORT = ["tenants[0].prefill_tokens=128", "tenants[0].decode_tokens=4"]


def notes_of(*sets: str) -> list[str]:
    result = simulate(load_scenario(BURST, [*SHORT, "tenants[0].arrivals.count=200", *sets]))
    return [n for n in table_notes(result) if "API server set the pace" in n]


def test_the_ceiling_is_processes_over_a_mean_requests_inbound_time() -> None:
    # 2 processes, 25 ms + 100 us x 128 tokens = 37.8 ms a request: 2 x 1000 / 37.8 a second
    class Spec:
        processes, per_request_ms, per_input_token_us = 2, 25.0, 100.0

    rows = pd.DataFrame({"prefill_tokens": [100, 156]})  # mean 128
    assert ceiling_per_s(Spec, rows) == pytest.approx(2000 / 37.8)
    Spec.per_request_ms, Spec.per_input_token_us = 0.0, 0.0
    assert ceiling_per_s(Spec, rows) is None  # no cost, no ceiling


def test_a_burst_through_one_slow_process_is_bound_by_it() -> None:
    frontend = "cluster.frontend={processes: 2, per_request_ms: 25, per_input_token_us: 100}"
    (note,) = notes_of(frontend)
    ceiling = 2000 / 37.8  # as above: 52.9 requests/s
    assert f"of its front end's ceiling of {ceiling:.1f} (2 processes at 37.8 ms a request)" in note
    assert "vLLM's 26.9 ms" not in note  # a written front end, not the profile's value


def test_vllms_profile_says_its_value_is_contradicted() -> None:
    (note,) = notes_of("cluster.engine=vllm")
    assert "(1 process at 26.9 ms a request)" in note
    assert "reached 184 requests/s (gpt-oss-20b, one A100) and 239" in note
    # the same engine with the per-request time written by the user: no word on the profile's
    (written,) = notes_of("cluster.engine=vllm", "cluster.frontend.per_request_ms=30")
    assert "vLLM's 26.9 ms" not in written
    (sglang,) = notes_of("cluster.engine=sglang")
    assert "(1 process at 15.0 ms a request)" in sglang and "reached 156 requests/s" in sglang
    (trtllm,) = notes_of("cluster.engine=trtllm")
    assert "no published run of short requests at once checks it" in trtllm


def test_no_note_below_the_ceiling_or_without_a_front_end() -> None:
    # 40 requests over 4 s (10 a second) against a 37-a-second ceiling; the fixed delays of a
    # cluster with no front end section have no ceiling at all
    spread = "tenants[0].arrivals={kind: periodic, interval_ms: 100, count: 40}"
    assert notes_of("cluster.engine=vllm", spread) == []
    assert notes_of() == []
    offline = "cluster.engine={name: vllm, offline: true}"  # no HTTP server: no cost
    assert notes_of(offline) == []


def test_the_note_names_each_variant_it_concerns() -> None:
    result = simulate(load_scenario(BURST, [*SHORT, "cluster.engine=vllm"]))
    resolved = {"a": result.scenario, "b": result.scenario}
    usage = {"a": result.utilisation["base"], "b": result.utilisation["base"]}
    both = [result.requests.assign(variant=name) for name in ("a", "b")]
    requests = pd.concat(both, ignore_index=True)
    notes = api_server_notes(resolved, usage, requests)
    assert [n.split(":")[0] for n in notes] == ["variant a", "variant b"]
