"""Names the scenario format accepts for parts that the simulation implements.

The configuration layer checks names without importing the simulation: loading a scenario
(for `sweep` workers, `plan`, the Python API) does not load SimPy or pandas. The simulation's
registries check themselves against these lists when they load (`simsched.sim.policies`; service
models against `config.cluster.SERVICE_MODEL_NAMES`), so a name cannot be accepted here and then
be missing there.
"""

from __future__ import annotations

POLICY_NAMES = (
    "service_token_drr",
    "request_count_fifo",
    "vtc",
    "wfq",
    "fcfs",
    "strict_priority",
    "edf",
)
