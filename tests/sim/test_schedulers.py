"""The scheduler process comes from the table keyed by service model (sim/schedulers.py): the
engine asks it, so a kind of cluster chooses its dispatch loop without a flag the engine tests."""

from __future__ import annotations

from typing import Any

import pytest

from simsched.config.loading import validate
from simsched.results.simulate import simulate
from simsched.sim import schedulers
from simsched.sim.dispatcher import scheduler_process
from simsched.sim.tenant_room import per_tenant_scheduler_process


def test_pools_get_the_per_tenant_scheduler_and_the_others_the_plain_one() -> None:
    assert schedulers.scheduler_for("pools") is per_tenant_scheduler_process
    assert schedulers.scheduler_for("continuous_batching") is scheduler_process
    assert schedulers.scheduler_for("token_server") is scheduler_process


@pytest.mark.parametrize(
    ("cluster", "kind"),
    [
        ({"pools": [{"name": "a", "role": "mixed"}]}, "pools"),
        ({"service_model": "continuous_batching"}, "continuous_batching"),
    ],
)
def test_the_engine_runs_the_process_the_table_names(monkeypatch, cluster, kind) -> None:
    ran: list[str] = []
    table = dict(schedulers.SCHEDULER_PROCESSES)

    def spied(name: str) -> Any:
        def process(stages):
            ran.append(name)
            return table[name](stages)

        return process

    for name in table:
        monkeypatch.setitem(schedulers.SCHEDULER_PROCESSES, name, spied(name))
    arrivals = {"kind": "periodic", "interval_ms": 1, "count": 3}
    tenants = [{"id": "t", "arrivals": arrivals, "prefill_tokens": 8, "decode_tokens": 4}]
    result = simulate(validate({"tenants": tenants, "cluster": cluster}, "x.yaml"))
    assert ran == [kind]
    assert (result.requests["status_code"] == 200).all()
