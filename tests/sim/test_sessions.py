"""Sessions and closed-loop clients: turns follow finishes, prompts grow with the conversation,
sheds end or retry a session, clients never exceed their concurrency, and runs repeat exactly."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from simsched.config.loading import validate
from simsched.errors import InputError
from simsched.results.simulate import simulate


def sessions(**settings: Any) -> dict:
    arrivals = {
        "kind": "sessions",
        "start": {"kind": "poisson", "rate_per_s": 4, "count": 12},
        "turns": {"dist": "uniform", "low": 2, "high": 5},
        "think_time_ms": {"dist": "exponential", "mean": 800},
    } | settings
    return {
        "id": "chat",
        "arrivals": arrivals,
        "prefill_tokens": {"dist": "lognormal", "median": 120, "sigma": 0.5},
        "decode_tokens": {"dist": "lognormal", "median": 60, "sigma": 0.5},
        "prefix": {"tokens": 400},
    }


def run(tenants: list[dict], seed: int = 7, **raw: Any):
    cluster = {"service_model": "continuous_batching", "replicas": 2, "prefix_caching": True}
    cluster |= raw.pop("cluster", {})
    scenario = validate({"seed": seed, "tenants": tenants, "cluster": cluster} | raw, "x.yaml")
    return simulate(scenario)


def by_turn(result) -> pd.DataFrame:
    return result.requests.sort_values(["session", "turn"]).reset_index(drop=True)


def test_each_turn_resends_the_conversation_after_the_previous_answer() -> None:
    aware = {"scorers": [{"name": "prefix_cache", "weight": 3}, {"name": "queue_depth"}]}
    result = run([sessions()], cluster={"router": aware}, admission={"enabled": False})
    rows = by_turn(result)
    assert rows["turn"].min() == 1 and rows["session"].nunique() == 12
    for _, turns in rows.groupby("session"):
        turns = turns.reset_index(drop=True)
        assert turns["turn"].tolist() == list(range(1, len(turns) + 1))
        assert 2 <= len(turns) <= 5
        pairs = zip(turns.iloc[:-1].itertuples(), turns.iloc[1:].itertuples(), strict=True)
        for before, after in pairs:
            history = before.prefill_tokens + before.decode_tokens
            assert after.prefill_tokens > history  # history plus a new message
            assert after.arrival_ms > before.finish_ms  # after the answer, plus a think time
            if after.replica == before.replica:  # the answer is cached too (full blocks; the
                # last token of the answer is never computed)
                assert after.cached_tokens == (history - 1) // 16 * 16
    first = rows[rows["turn"] == 1]
    assert (first["prefill_tokens"] > 400).all()  # the system prompt comes first
    assert result.requests["request_id"].is_unique


def test_think_time_is_exact() -> None:
    tenant = sessions(think_time_ms=250, turns=3)
    result = run([tenant], admission={"enabled": False})
    rows = by_turn(result)
    for _, turns in rows.groupby("session"):
        gaps = turns["arrival_ms"].to_numpy()[1:] - turns["finish_ms"].to_numpy()[:-1]
        assert np.allclose(gaps, 250.0)


@pytest.mark.parametrize(("on_shed", "per_session"), [("end", 1), ("retry", 3)])
def test_a_shed_turn_ends_the_session_or_is_sent_again(on_shed, per_session) -> None:
    # a watermark below any request's share of the cache: every request is shed at the gateway
    admission = {"interactive_kv_watermark": 1e-9, "batch_kv_watermark": 1e-9}
    tenant = sessions(on_shed=on_shed, max_retries=2)
    result = run([tenant], admission=admission)
    requests = result.requests
    assert (requests["status_code"] == 429).all()
    assert requests.groupby("session").size().tolist() == [per_session] * 12
    assert (requests["turn"] == 1).all()
    if on_shed == "retry":
        assert requests["request_id"].str.endswith("-r2").sum() == 12


@pytest.mark.parametrize("retry_after", [None, 250.0])
def test_a_retry_waits_its_backoff_even_without_think_time(retry_after) -> None:
    admission = {"interactive_kv_watermark": 1e-9, "batch_kv_watermark": 1e-9}
    backoff = {} if retry_after is None else {"retry_after_ms": retry_after}
    tenant = sessions(on_shed="retry", max_retries=2, think_time_ms=None, **backoff)
    requests = run([tenant], admission=admission).requests
    for _, sends in requests.groupby("session"):
        shed_at = (sends["arrival_ms"] + sends["queue_wait_ms"]).to_numpy()[:-1]
        gaps = sends["arrival_ms"].to_numpy()[1:] - shed_at
        assert np.allclose(gaps, retry_after or 1000.0)  # 1000 ms by default


def test_closed_loop_clients_keep_at_most_their_concurrency_in_flight() -> None:
    tenant = {
        "id": "bench",
        "arrivals": {"kind": "closed_loop", "concurrency": 3, "count": 30, "think_time_ms": 40},
        "prefill_tokens": {"dist": "uniform", "low": 100, "high": 900},
        "decode_tokens": {"dist": "uniform", "low": 10, "high": 200},
    }
    result = run([tenant], admission={"enabled": False})
    requests = result.requests
    assert len(requests) == 30 and requests["session"].isna().all()
    starts = requests["arrival_ms"].to_numpy()
    ends = requests["finish_ms"].to_numpy()
    for t in starts:
        assert ((starts <= t) & (ends > t)).sum() <= 3
    assert ((starts <= 0) & (ends > 0)).sum() == 3  # all three start at once
    # each new request follows some finish by exactly the think time
    later = np.sort(starts)[3:]
    assert all(np.isclose(ends + 40.0, t).any() for t in later)


def test_closed_loop_stops_at_its_duration() -> None:
    arrivals = {"kind": "closed_loop", "concurrency": 2, "count": 1000, "duration_s": 1.0}
    tenant = {"id": "b", "arrivals": arrivals, "prefill_tokens": 500, "decode_tokens": 50}
    requests = run([tenant], admission={"enabled": False}).requests
    assert 2 < len(requests) < 1000
    assert requests["arrival_ms"].max() < 1000.0


def test_sessions_beside_generated_tenants_repeat_exactly_and_ignore_fast_forward() -> None:
    plain = {
        "id": "plain",
        "arrivals": {"kind": "poisson", "rate_per_s": 20, "count": 40},
        "prefill_tokens": 300,
        "decode_tokens": 40,
    }
    results = [
        run([sessions(), plain], cluster={"fast_forward": ff}, timeline={"interval_ms": 5})
        for ff in (True, False, True)
    ]
    pd.testing.assert_frame_equal(results[0].requests, results[1].requests)
    pd.testing.assert_frame_equal(results[0].requests, results[2].requests)
    pd.testing.assert_frame_equal(results[0].timeline, results[1].timeline)
    requests = results[0].requests
    assert requests.loc[requests["tenant_id"] == "plain", "session"].isna().all()
    assert requests["request_id"].is_unique and len(requests) > 40 + 24
    other = run([sessions(), plain], seed=8).requests
    assert not other["arrival_ms"].equals(requests["arrival_ms"])


@pytest.mark.parametrize("timing", ["scheduler_tick", "arrival"])
def test_sessions_alone_are_all_sent_under_either_gateway_timing(timing) -> None:
    # no pre-generated request at all: every turn, the first ones too, comes from the feed
    tenant = sessions(turns=3, think_time_ms=100)
    result = run([tenant], admission={"evaluate_at": timing, "interactive_kv_watermark": 0.99})
    requests = result.requests
    assert len(requests) == 36 and (requests["status_code"] == 200).all()
    assert requests.groupby("session")["turn"].max().tolist() == [3] * 12


def test_the_token_server_serves_sessions_too() -> None:
    tenant = sessions(turns=2)
    scenario = validate({"tenants": [tenant], "admission": {"enabled": False}}, "x.yaml")
    requests = simulate(scenario).requests
    assert len(requests) == 24 and "cached_tokens" not in requests


@pytest.mark.parametrize(
    ("arrivals", "where"),
    [
        ({"kind": "sessions", "start": {"kind": "sessions"}, "turns": 2}, "arrivals.start"),
        ({"kind": "sessions", "start": {"kind": "poisson", "rate_per_s": 1}}, "arrivals"),
        ({"kind": "closed_loop", "count": 3}, "arrivals.concurrency"),
        ({"kind": "closed_loop", "concurrency": 0, "count": 3}, "arrivals.concurrency"),
        (
            {"kind": "sessions", "start": {"kind": "poisson", "rate_per_s": 1, "count": 1}}
            | {"turns": 2, "on_shed": "wait"},
            "arrivals.on_shed",
        ),
        (
            {"kind": "sessions", "start": {"kind": "poisson", "rate_per_s": 1, "count": 1}}
            | {"turns": 0},
            "arrivals.turns",
        ),
    ],
)
def test_bad_session_settings_name_the_field(arrivals, where) -> None:
    tenant = {"id": "a", "arrivals": arrivals, "prefill_tokens": 10, "decode_tokens": 1}
    with pytest.raises(InputError) as caught:
        validate({"tenants": [tenant]}, "x.yaml")
    assert f"tenants[0].{where}" in str(caught.value)
