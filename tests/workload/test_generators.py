"""A tenant's generated requests: columns, independent random streams, scenario round trips."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from simsched import simulate
from simsched.config.loading import load_scenario, resolve_variants, validate
from simsched.errors import InputError
from simsched.workload.build import build_workload, tenant_rng
from simsched.workload.generators import generate_tenant, request_ids

POISSON = {"kind": "poisson", "rate_per_s": 40, "count": 3_000}
LOGNORMAL = {"dist": "lognormal", "median": 300, "sigma": 0.9, "max": 4_000}


def scenario(*tenants: dict[str, Any], **top: Any):
    return validate({"name": "g", "tenants": list(tenants), **top}, "g.yaml")


def tenant(tenant_id: str = "t", **fields: Any) -> dict[str, Any]:
    base = {"arrivals": POISSON, "prefill_tokens": LOGNORMAL, "decode_tokens": 50}
    return {"id": tenant_id, **base, **fields}


def generate(raw_tenant: dict[str, Any], seed: int = 1):
    spec = scenario(raw_tenant).tenants[0]
    return generate_tenant(spec, 0, tenant_rng(seed, spec.id))


def test_columns() -> None:
    table = generate(tenant("chat", priority="batch"))
    assert len(table) == 3_000
    assert table.request_id[0] == "chat-000000" and table.request_id[-1] == "chat-002999"
    assert np.all(table.lane == 1) and np.all(table.tenant == 0)
    assert table.arrival_ms.dtype == np.float64 and np.all(np.diff(table.arrival_ms) >= 0)
    assert table.prefill_tokens.dtype == np.int64 and table.decode_tokens.dtype == np.int64
    assert table.prefill_tokens.min() >= 1 and table.prefill_tokens.max() <= 4_000
    assert np.all(table.decode_tokens == 50)


def test_request_ids_sort_numerically() -> None:
    ids = request_ids("a", 1_000_001)
    assert ids[7] == "a-0000007" and ids[-1] == "a-1000000"
    assert list(ids[:12]) == sorted(ids[:12])
    assert list(request_ids("b", 2)) == ["b-000000", "b-000001"]


def test_length_changes_leave_arrivals_alone() -> None:
    first = generate(tenant())
    other = generate(tenant(prefill_tokens={"dist": "exponential", "mean": 90}, decode_tokens=7))
    np.testing.assert_array_equal(first.arrival_ms, other.arrival_ms)
    assert not np.array_equal(first.prefill_tokens, other.prefill_tokens)


def test_arrival_changes_leave_lengths_alone() -> None:
    # Same count, another process: the length stream is its own child, so the sizes repeat.
    first = generate(tenant())
    other = generate(tenant(arrivals={"kind": "gamma", "rate_per_s": 5, "cv": 3, "count": 3_000}))
    assert not np.array_equal(first.arrival_ms, other.arrival_ms)
    np.testing.assert_array_equal(first.prefill_tokens, other.prefill_tokens)


def test_workload_is_deterministic_per_seed() -> None:
    tenants = [tenant("a"), tenant("b", arrivals={**POISSON, "rate_per_s": 10})]
    first = build_workload(scenario(*tenants, seed=5))
    again = build_workload(scenario(*tenants, seed=5))
    reseeded = build_workload(scenario(*tenants, seed=6))
    for column in ("request_id", "arrival_ms", "prefill_tokens"):
        np.testing.assert_array_equal(getattr(first, column), getattr(again, column))
    assert not np.array_equal(first.arrival_ms, reseeded.arrival_ms)


ROUND_TRIP_TENANTS = [
    tenant("periodic", arrivals={"kind": "periodic", "interval_ms": 5, "count": 10}),
    tenant("weibull", arrivals={"kind": "weibull", "rate_per_s": 9, "cv": 2, "duration_s": 3}),
    tenant(
        "onoff",
        arrivals={
            "kind": "onoff",
            "on_rate_per_s": 50,
            "off_rate_per_s": 0,
            "mean_on_s": 1,
            "mean_off_s": 1,
            "count": 40,
        },
        prefill_tokens={"dist": "empirical", "values": [10, 20], "weights": [3, 1]},
    ),
    tenant(
        "schedule",
        arrivals={"kind": "rate_schedule", "points": [[0, 5], [2, 30, 2.0]], "duration_s": 4},
        prefill_tokens={"dist": "uniform", "low": 5, "high": 9, "min": 6},
        decode_tokens={"dist": "normal", "mean": 40, "std": 9},
    ),
]


def test_variants_round_trip_every_spec_without_warnings() -> None:
    variants = [
        {"name": "faster", "set": {"tenants.weibull.arrivals.rate_per_s": 30}},
        {
            "name": "longer",
            "set": {"tenants.schedule.decode_tokens": {"dist": "exponential", "mean": 80}},
        },
    ]
    base = scenario(*ROUND_TRIP_TENANTS, variants=variants)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a mis-tagged union warns when it serializes
        resolved = dict(resolve_variants(base, "g.yaml"))
        base.model_dump(mode="json")
    assert resolved["faster"].tenants[1].arrivals.rate_per_s == 30
    assert resolved["longer"].tenants[3].decode_tokens.dist == "exponential"
    assert resolved["longer"].tenants[:3] == base.tenants[:3]


def test_simulate_runs_generated_workloads() -> None:
    result = simulate(scenario(*ROUND_TRIP_TENANTS))
    counts = result.requests.groupby("tenant_id").size()
    assert counts["periodic"] == 10 and counts["onoff"] == 40
    assert result.requests["prefill_tokens"].min() >= 1


def test_trace_lengths_resolve_relative_to_the_scenario_file(tmp_path: Path) -> None:
    pytest.importorskip("simsched.workload.formats")
    rows = [f"r{i},x,{i},{100 + i},{1000 * (100 + i)}" for i in range(50)]
    header = "request_id,tenant_id,arrival_ms,prefill_tokens,decode_tokens"
    (tmp_path / "lengths.csv").write_text("\n".join([header, *rows]) + "\n")
    (tmp_path / "s.yaml").write_text(
        "name: s\n"
        "tenants:\n"
        "  - id: t\n"
        "    arrivals: {kind: poisson, rate_per_s: 100, count: 500}\n"
        "    prefill_tokens: {dist: trace, path: lengths.csv, format: csv}\n"
        "    decode_tokens: {dist: trace, path: lengths.csv, format: csv}\n"
    )
    table = build_workload(load_scenario(tmp_path / "s.yaml"))
    np.testing.assert_array_equal(table.decode_tokens, 1000 * table.prefill_tokens)
    assert set(np.unique(table.prefill_tokens)) <= set(range(100, 150))


def _trace_scenario(tmp_path: Path, first_id: str, generated: bool):
    """A scenario trace of two rows for tenant `t` (`first_id`, then `r1`), beside a tenant `g`
    with generated arrivals (ids `g-000000`, `g-000001`, ...) when `generated`."""
    header = "request_id,tenant_id,arrival_ms,prefill_tokens,decode_tokens"
    rows = [f"{first_id},t,0,10,5", "r1,t,1,10,5"]
    (tmp_path / "trace.csv").write_text("\n".join([header, *rows]) + "\n")
    tenants = [{"id": "t", "prefill_tokens": 10, "decode_tokens": 5}]
    if generated:
        tenants.append(tenant("g", arrivals={"kind": "poisson", "rate_per_s": 10, "count": 3}))
    return scenario(*tenants, trace={"path": str(tmp_path / "trace.csv")})


def test_a_trace_id_equal_to_a_generated_one_is_refused(tmp_path: Path) -> None:
    # the trace's reader checks its own ids; the id it shares with the generated tenant is
    # found only across the two tables
    with pytest.raises(InputError, match="'g-000001' is used twice"):
        build_workload(_trace_scenario(tmp_path, "g-000001", generated=True))


def test_a_trace_alone_keeps_its_ids(tmp_path: Path) -> None:
    table = build_workload(_trace_scenario(tmp_path, "g-000001", generated=False))
    assert list(table.request_id) == ["g-000001", "r1"]
