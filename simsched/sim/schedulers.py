"""The scheduler process each kind of cluster needs, by service model (`cluster.service_model`).

A cluster with one pool of replicas for everyone (`token_server`, `continuous_batching`) runs
`dispatcher.scheduler_process`: it dispatches while the cluster has room. One whose tenants may
use different replicas (`pools`) runs `tenant_room.per_tenant_scheduler_process`, which offers
the policy only the tenants with room (sim/tenant_room.py). Flow control brings its own
dispatcher (sim/flow/dispatch.py) and is chosen before this table is read. A new service model
adds its entry here, beside its class in sim/cluster/registry.py.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from simsched.config.cluster import SERVICE_MODEL_NAMES
from simsched.sim.dispatcher import Stages, scheduler_process
from simsched.sim.tenant_room import per_tenant_scheduler_process

SchedulerProcess = Callable[[Stages], Generator[Any, None, None]]

SCHEDULER_PROCESSES: dict[str, SchedulerProcess] = {
    "token_server": scheduler_process,
    "continuous_batching": scheduler_process,
    "pools": per_tenant_scheduler_process,  # room differs per tenant
}

if set(SCHEDULER_PROCESSES) != set(SERVICE_MODEL_NAMES):  # every model must have its scheduler
    raise ImportError(
        f"scheduler processes {sorted(SCHEDULER_PROCESSES)} != service models "
        f"{sorted(SERVICE_MODEL_NAMES)}"
    )


def scheduler_for(service_model: str) -> SchedulerProcess:
    return SCHEDULER_PROCESSES[service_model]
