"""A request admitted but never finished fails the run, naming it; the timeline never hangs."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from simsched.sim import engine
from simsched.sim.cluster.token_server import TokenServer
from simsched.sim.engine import run_variant
from simsched.workload.build import build_workload

ROWS = [(f"r{i}", "a", float(10 * i), 100, 10) for i in range(5)]
TENANTS = [{"id": "a", "priority": "interactive"}]


class LosesOneRequest(TokenServer):
    """A broken cluster: request `r2` takes its KV blocks and is never served nor released."""

    def start(self, request):
        if request.seq != 2:
            return super().start(request)
        self.kv.hold(request.kv_blocks)
        return self.env.timeout(1.0)


@pytest.fixture
def broken_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(engine.SERVICE_MODELS, "token_server", LosesOneRequest)


@pytest.fixture
def no_hang() -> Iterator[None]:
    def expire(signum, frame):
        raise TimeoutError("the run did not return within 20 s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, 20.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("timeline", [False, True])
def test_an_admitted_request_that_never_finishes_fails_the_run(
    make_scenario, broken_cluster, no_hang, timeline: bool
) -> None:
    scenario = make_scenario(ROWS, TENANTS, timeline={"enabled": timeline, "interval_ms": 1.0})
    with pytest.raises(RuntimeError, match="'r2'.*admitted.*never finished"):
        run_variant(scenario, build_workload(scenario))


def test_a_healthy_run_passes_the_check(make_scenario) -> None:
    scenario = make_scenario(ROWS, TENANTS, timeline={"enabled": True, "interval_ms": 1.0})
    run = run_variant(scenario, build_workload(scenario))
    assert len(run.recorder) == len(ROWS) and len(run.timeline) > 0


class NeverFreesRoom(TokenServer):
    """A broken cluster: after `r1` it reports no room, and room never comes."""

    def has_room(self) -> bool:
        return self.kv.level == 0 and self.env.now == 0

    def room_available(self):
        return self.env.never()  # on either kernel (sim/kernel.py)


def test_a_request_left_without_an_outcome_is_named(make_scenario, monkeypatch, no_hang) -> None:
    monkeypatch.setitem(engine.SERVICE_MODELS, "token_server", NeverFreesRoom)
    scenario = make_scenario(ROWS, TENANTS, timeline={"enabled": True, "interval_ms": 1.0})
    with pytest.raises(RuntimeError, match="outcomes for 5 requests; request 'r1' has none"):
        run_variant(scenario, build_workload(scenario))
