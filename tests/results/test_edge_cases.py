"""Edge cases a review found: late traces, variants switching cluster models, starved classes."""

from __future__ import annotations

from pathlib import Path

import simsched
from simsched.config.loading import validate

REPO = Path(__file__).resolve().parents[2]


def test_timeline_starts_at_the_first_arrival(tmp_path: Path) -> None:
    # epoch-millisecond timestamps: sampling from 0 would never end
    trace = tmp_path / "t.csv"
    trace.write_text(
        "request_id,tenant_id,arrival_ms,prefill_tokens,decode_tokens\n"
        "r1,a,1700000000000,100,10\nr2,a,1700000060000,100,10\n"
    )
    scenario = validate({"tenants": [{"id": "a"}], "trace": {"path": str(trace)}}, "x.yaml")
    timeline = simsched.simulate(scenario).timeline
    assert timeline["time_ms"].min() == 1700000000000
    assert len(timeline) <= 3 * 2000


def test_a_variant_can_switch_the_cluster_model() -> None:
    raw = {
        "tenants": [
            {
                "id": "a",
                "arrivals": {"kind": "periodic", "interval_ms": 50, "count": 5},
                "prefill_tokens": 100,
                "decode_tokens": 10,
            }
        ],
        "variants": [
            {"name": "token_server", "set": {}},
            {"name": "batching", "set": {"cluster.service_model": "continuous_batching"}},
        ],
    }
    result = simsched.simulate(validate(raw, "x.yaml"))
    assert result.requests.groupby("variant").size().to_dict() == {"batching": 5, "token_server": 5}


def test_interactive_requests_all_shed_fail_the_interactive_slo(tmp_path: Path) -> None:
    # a batch tenant whose trace rows are interactive, all shed at the KV watermark
    trace = tmp_path / "t.csv"
    rows = "".join(f"r{i},b,{i},3000,300,interactive\n" for i in range(3))
    trace.write_text(
        "request_id,tenant_id,arrival_ms,prefill_tokens,decode_tokens,priority_class\n" + rows
    )
    raw = {
        "tenants": [{"id": "b", "priority": "batch"}],
        "trace": {"path": str(trace)},
        "cluster": {"total_kv_blocks": 10},
    }
    result = simsched.simulate(validate(raw, "x.yaml"))
    assert result.summaries["base"]["admitted_requests"] == 0
    assert result.summaries["base"]["interactive_p99_ttft_ms"] == 0.0  # the reference's shape
    assert not result.slo["base"]["met"]
