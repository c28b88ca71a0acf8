"""The SimPy process that delivers a `RequestTable` to the gateway, each request at its instant."""

from __future__ import annotations

from collections.abc import Generator

import numpy as np
import simpy

from simsched.requests import Request
from simsched.timing import ARRIVAL, At, delay_until
from simsched.workload.table import RequestTable


def replay(
    env: simpy.Environment,
    table: RequestTable,
    service_tokens: np.ndarray,
    kv_blocks: np.ndarray,
    deliver,
) -> Generator[simpy.Event, None, None]:
    """Deliver requests in (arrival_ms, request_id) order; equal instants go out together."""
    columns = zip(
        table.tenant.tolist(),
        table.lane.tolist(),
        table.arrival_ms.tolist(),
        table.prefill_tokens.tolist(),
        table.decode_tokens.tolist(),
        service_tokens.tolist(),
        kv_blocks.tolist(),
        strict=True,
    )
    for seq, (tenant, lane, arrival, prefill, decode, svc, blocks) in enumerate(columns):
        if arrival > env.now:
            yield At(env, delay_until(env.now, arrival), ARRIVAL)
        deliver(Request(seq, tenant, lane, arrival, prefill, decode, svc, blocks))
