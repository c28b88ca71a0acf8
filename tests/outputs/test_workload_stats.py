"""Workload statistics and the trace-CSV export (`inspect.py`)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from simsched.errors import InputError
from simsched.outputs.workload_stats import workload_stats, write_trace_csv
from simsched.workload.table import RequestTable
from simsched.workload.trace_csv import read_trace_csv


def table_of(rows: list[tuple]) -> RequestTable:
    """(request_id, tenant, lane, arrival_ms, prefill, decode) rows."""
    ids, tenant, lane, arrival, prefill, decode = zip(*rows, strict=True)
    return RequestTable(
        request_id=np.array(ids, dtype=object),
        tenant=np.array(tenant, dtype=np.int64),
        lane=np.array(lane, dtype=np.int64),
        arrival_ms=np.array(arrival, dtype=np.float64),
        prefill_tokens=np.array(prefill, dtype=np.int64),
        decode_tokens=np.array(decode, dtype=np.int64),
    )


# tenant a: arrivals 0, 1000, 3000 ms (gaps 1000, 2000); tenant b: one request; tenant c: none
HANDMADE = table_of(
    [
        ("a-0", 0, 0, 0.0, 100, 10),
        ("b-0", 1, 1, 500.0, 7, 1),
        ("a-1", 0, 0, 1000.0, 300, 30),
        ("a-2", 0, 0, 3000.0, 200, 20),
    ]
)


def test_per_tenant_rows_and_all():
    stats = workload_stats(HANDMADE, ["a", "b", "c"]).set_index("tenant_id")
    assert stats.index.tolist() == ["a", "b", "c", "all"]
    assert stats["requests"].tolist() == [3, 1, 0, 4]
    assert stats.loc["a", "mean_rate_per_s"] == pytest.approx(2 / 3)  # 1 / mean gap (1.5 s)
    assert stats.loc["a", "interarrival_cv"] == pytest.approx(500 / 1500)  # std 500, mean 1500
    assert stats.loc["all", "mean_rate_per_s"] == pytest.approx(1.0)  # 3 gaps over 3 s
    # gaps 500, 500, 2000: mean 1000, population std sqrt(500000)
    assert stats.loc["all", "interarrival_cv"] == pytest.approx(math.sqrt(500_000) / 1000)
    for column in ("mean_rate_per_s", "interarrival_cv", "prefill_tokens_p50"):
        assert math.isnan(stats.loc["c", column])
    assert math.isnan(stats.loc["b", "mean_rate_per_s"])  # one request has no span
    assert stats.loc["b", "prefill_tokens_p99"] == 7


def test_nearest_rank_percentiles():
    stats = workload_stats(HANDMADE, ["a", "b", "c"]).set_index("tenant_id")
    # a's prefill sorted 100, 200, 300: p50 index ceil(1.5)-1 = 1, p90/p99 index 2
    assert stats.loc[
        "a", ["prefill_tokens_p50", "prefill_tokens_p90", "prefill_tokens_p99"]
    ].tolist() == [200, 300, 300]
    # all prefill sorted 7, 100, 200, 300: p50 index 1, p90 index ceil(3.6)-1 = 3
    assert stats.loc["all", ["prefill_tokens_p50", "prefill_tokens_p90"]].tolist() == [100, 300]
    assert stats.loc["all", ["decode_tokens_p50", "decode_tokens_p99"]].tolist() == [10, 30]


def test_percentiles_on_a_hundred_values():
    n = 100
    table = table_of([(f"r{i}", 0, 0, float(i), i + 1, 2 * (i + 1)) for i in range(n)])
    row = workload_stats(table, ["t"]).iloc[0]
    assert [row["prefill_tokens_p50"], row["prefill_tokens_p90"], row["prefill_tokens_p99"]] == [
        50,
        90,
        99,
    ]
    assert row["decode_tokens_p99"] == 198


def test_trace_csv_round_trip_is_exact(tmp_path):
    rng = np.random.default_rng(7)
    n = 2_000
    arrivals = np.sort(rng.exponential(1234.5678, n).cumsum() * rng.uniform(0.5, 1.5))
    arrivals[:3] = [0.0, 0.1 + 0.2, 1e-9]  # values with long decimal expansions
    arrivals.sort()
    table = RequestTable(
        request_id=np.array([f"r{i:05d}" for i in range(n)], dtype=object),
        tenant=rng.integers(0, 2, n),
        lane=rng.integers(0, 2, n),
        arrival_ms=arrivals,
        prefill_tokens=rng.integers(0, 10_000, n),
        decode_tokens=rng.integers(0, 1_000, n),
    )
    tenants = [
        SimpleNamespace(id="alpha", priority="interactive"),
        SimpleNamespace(id="beta", priority="interactive"),
    ]
    path = write_trace_csv(table, ["alpha", "beta"], tmp_path / "out.csv")
    header = path.read_text().splitlines()[0]
    assert header == "request_id,tenant_id,arrival_ms,prefill_tokens,decode_tokens,priority_class"
    back = read_trace_csv(path, tenants)
    assert np.array_equal(back.arrival_ms, table.arrival_ms)  # bit-identical floats
    for column in ("request_id", "tenant", "lane", "prefill_tokens", "decode_tokens"):
        assert np.array_equal(getattr(back, column), getattr(table, column)), column
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]  # the temporary file is gone


def test_write_into_missing_folder_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot write"):
        write_trace_csv(HANDMADE, ["a", "b"], tmp_path / "no" / "out.csv")
