"""A plan whose answer's front end queued requests says so among the answer's notes, with the
same replay as a scenario's table (outputs/api_server_notes.py; docs/engines.md)."""

from __future__ import annotations

from pathlib import Path

import yaml

from simsched.studies.plan import plan

ROOT = Path(__file__).resolve().parents[2]


def test_the_answers_api_server_note_comes_back_from_its_probe(tmp_path: Path) -> None:
    # 60 short requests a second on vLLM replicas whose API server takes 26.9 ms a request (37.2
    # a second each): one replica cannot keep up, two take 30 a second each, 80% of the ceiling
    scenario = yaml.safe_load((ROOT / "calibration" / "scenarios" / "fixed_burst.yaml").read_text())
    tenant = scenario["tenants"][0]
    tenant.update(prefill_tokens=128, decode_tokens=4)
    tenant["arrivals"] = {"kind": "poisson", "rate_per_s": 60, "count": 600}
    scenario["cluster"]["engine"] = "vllm"
    path = tmp_path / "short.yaml"
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    result = plan(path, "cluster.replicas", "1:4", ["bench.p99_ttft_ms<=3000"], headroom=False)
    assert "cluster.replicas meeting every SLO is 2" in result.message
    (note,) = [n for n in result.notes if "API server queued" in n]
    assert note.startswith("at the answer (seed 1), the API server queued requests")
    assert "which adds to TTFT but does not cap throughput" in note  # 30 of 37.2 a second
    assert "vLLM's 26.9 ms a request is derived from one short-prompt run" in note
