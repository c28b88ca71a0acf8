"""Small scenarios whose event times can be computed by hand.

The token server serves one request at a time for `service_tokens / service_tokens_per_ms`;
with 1 token/ms and requests of 96 prompt + 1 output token (service tokens 96 + 4 = 100), each
takes exactly 100 ms, and holds ceil(97 / 16) = 7 KV blocks for `kv_hold_factor` x 100 ms.
"""

from __future__ import annotations

from typing import Any

import simsched
from simsched.config.loading import scenario_from_mapping

EXEC_MS = 100.0
BLOCK_TOKENS = 7 * 16  # one request's KV, in tokens


def tenant(name: str, count: int, start_ms: float = 0.0, priority: str = "interactive") -> dict:
    return {
        "id": name,
        "priority": priority,
        "arrivals": {"kind": "periodic", "start_ms": start_ms, "interval_ms": 1, "count": count},
        "prefill_tokens": 96,
        "decode_tokens": 1,
    }


def scenario(
    tenants: list[dict], flow: dict[str, Any], hold_factor: float = 1.0, kv_blocks: int = 100_000
):
    raw = {
        "name": "flow",
        "tenants": tenants,
        "cluster": {
            "service_model": "token_server",
            "total_kv_blocks": kv_blocks,
            "kv_block_tokens": 16,
            "service_tokens_per_ms": 1.0,
            "kv_hold_factor": hold_factor,
            "prefill_tokens_per_ms": 1000.0,
            "min_prefill_ms": 1.0,
        },
        "admission": {"enabled": False},
        "flow_control": flow,
        "timeline": {"enabled": False},
    }
    return scenario_from_mapping(raw, None, "test")


def outcomes(scenario_) -> dict[str, tuple[str, float, float, int]]:
    """request id -> (reason, dispatch ms, queue wait ms, status code)."""
    frame = simsched.simulate(scenario_).requests
    return {
        row.request_id: (row.reason, row.dispatch_ms, row.queue_wait_ms, row.status_code)
        for row in frame.itertuples()
    }


def dispatch_times(scenario_, tenant_id: str) -> list[float]:
    frame = simsched.simulate(scenario_).requests
    mine = frame[(frame.tenant_id == tenant_id) & (frame.reason == "admitted")]
    return sorted(float(t) for t in mine.dispatch_ms)
