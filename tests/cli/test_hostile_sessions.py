"""Issue 21 items 3 and 7: session and closed-loop settings that would exhaust memory or the
clock are refused before anything runs, through the real entry point: exit 2, one stderr line
naming the file and the field, nothing written, no input touched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

BIG_TRACE = (
    "request_id,tenant_id,arrival_ms,prefill_tokens,decode_tokens\n"
    "r1,a,0,2000000,10\nr2,a,1,1000000,10\n"
)


def sessions(**arrivals: Any) -> dict[str, Any]:
    spec = {"kind": "sessions", "start": {"kind": "periodic", "count": 20, "interval_ms": 1}}
    return {
        "name": "hostile",
        "tenants": [
            {"id": "chat", "arrivals": spec | arrivals, "prefill_tokens": 1, "decode_tokens": 1}
        ],
    }


def closed_loop(**arrivals: Any) -> dict[str, Any]:
    spec = {"kind": "closed_loop", "concurrency": 2, "count": 10}
    return {
        "name": "hostile",
        "tenants": [
            {"id": "ide", "arrivals": spec | arrivals, "prefill_tokens": 1, "decode_tokens": 1}
        ],
    }


def refused(raw: dict, folder: Path, monkeypatch, simsched_cli, command: str) -> str:
    """Exit 2 with one line, nothing on stdout, nothing written and no input changed."""
    (folder / "x.yaml").write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    (folder / "big.csv").write_text(BIG_TRACE, encoding="utf-8")
    monkeypatch.chdir(folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    out = ("--out", "out") if command == "scenario" else ()
    code, stdout, err = simsched_cli(command, "x.yaml", *out)
    assert (code, stdout) == (2, "")
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    return err.strip()


RETRIES = {"turns": 1, "on_shed": "retry", "max_retries": 1000, "retry_after_ms": 0}
CASES = {
    # 20 sessions x 1 turn x (1 + 1000 retries) = 20,020 requests at their worst, over 20,000
    "retries past the budget": (
        sessions(**RETRIES) | {"limits": {"max_requests": 20_000}},
        "x.yaml: tenants[0].arrivals: the workload would have about 20,020 requests",
        ("counting each session turn 1,001 times", "max_retries"),
    ),
    # trace-drawn turns: the file's mean (1.5 million) per session, not 1
    "trace turns without max": (
        sessions(turns={"dist": "trace", "path": "big.csv"}),
        "x.yaml: tenants[0].arrivals: the workload would have about 30,000,000 requests",
        ("limits.max_requests",),
    ),
    "closed loop starting past the clock": (
        closed_loop(start_ms=1e20),
        "x.yaml: tenants[0].arrivals.start_ms: an arrival falls at 1e+20 ms",
        ("31,700 years",),
    ),
    "sessions starting past the clock": (
        sessions(
            turns=2, start={"kind": "periodic", "count": 2, "interval_ms": 1, "start_ms": 2e15}
        ),
        "x.yaml: tenants[0].arrivals.start: an arrival falls at 2e+15 ms",
        (),
    ),
}


@pytest.mark.parametrize("command", ["validate", "scenario"])
@pytest.mark.parametrize("name", list(CASES))
def test_session_budgets_refuse_with_one_line(
    name: str, command: str, tmp_path: Path, monkeypatch, simsched_cli
) -> None:
    raw, starts, pieces = CASES[name]
    line = refused(raw, tmp_path, monkeypatch, simsched_cli, command)
    assert line.startswith(starts), line
    for piece in pieces:
        assert piece in line, line


@settings(max_examples=15, deadline=None)
@given(
    count=st.integers(1, 50),
    turns=st.integers(1, 20),
    retries=st.integers(0, 30),
    on_shed=st.sampled_from(["end", "retry"]),
    budget=st.integers(1, 3000),
)
def test_the_budget_counts_every_retry_at_its_worst(count, turns, retries, on_shed, budget):
    # the worst case, by hand: every turn of every session sent 1 + max_retries times when
    # shed turns are retried, once when a shed ends the session
    from simsched.config.loading import validate
    from simsched.errors import InputError
    from simsched.workload.limits import check_request_budget

    raw = sessions(
        start={"kind": "periodic", "count": count, "interval_ms": 1},
        turns=turns,
        on_shed=on_shed,
        max_retries=retries,
    ) | {"limits": {"max_requests": budget}}
    worst = count * turns * (1 + retries if on_shed == "retry" else 1)
    scenario = validate(raw, "x.yaml")
    if worst > budget:
        with pytest.raises(InputError, match=f"about {worst:,} requests"):
            check_request_budget(scenario)
    else:
        check_request_budget(scenario)


@settings(max_examples=10, deadline=None)
@given(start=st.floats(1.0000001e15, 1e300))
def test_any_closed_loop_start_past_the_clock_is_refused(start: float) -> None:
    from simsched.config.loading import validate
    from simsched.errors import InputError
    from simsched.outputs.describe import describe_scenario

    with pytest.raises(InputError) as info:
        describe_scenario(validate(closed_loop(start_ms=start), "x.yaml"))
    assert info.value.where == "tenants[0].arrivals.start_ms"
