"""Columnar outcome recording: one append per decision, one DataFrame at the end.

Metric names and shed reasons live here, in one place. Values are rounded as the reference
rounds them (Python's `round`, to 2 decimals for times and 4 for occupancy) at the moment they
are recorded, so the frames and summaries agree with the reference to the last digit.
"""

from __future__ import annotations

import math

ADMITTED = "admitted"
SHED_KV_WATERMARK = "shed_kv_watermark"
SHED_QUEUE_WAIT = "shed_queue_wait_slo"
SHED_TOKEN_QUOTA = "shed_tenant_token_quota"
SHED_REASONS = (SHED_KV_WATERMARK, SHED_QUEUE_WAIT, SHED_TOKEN_QUOTA)

STATUS_OK = 200
STATUS_SHED = 429


class Recorder:
    """Outcome columns in decision order; `seq` ties each row to its request."""

    def __init__(self) -> None:
        self.seq: list[int] = []
        self.status_code: list[int] = []
        self.reason: list[str] = []
        self.ttft_ms: list[float] = []
        self.queue_wait_ms: list[float] = []
        self.kv_occupancy_ratio: list[float] = []
        self.dispatch_ms: list[float] = []

    def admitted(
        self, seq: int, now: float, wait_ms: float, ttft_ms: float, occupancy: float
    ) -> None:
        self._append(seq, STATUS_OK, ADMITTED, ttft_ms, wait_ms, occupancy, now)

    def shed(self, seq: int, reason: str, wait_ms: float, occupancy: float) -> None:
        self._append(seq, STATUS_SHED, reason, 0.0, wait_ms, occupancy, math.nan)

    def _append(
        self,
        seq: int,
        status: int,
        reason: str,
        ttft_ms: float,
        wait_ms: float,
        occupancy: float,
        dispatch_ms: float,
    ) -> None:
        self.seq.append(seq)
        self.status_code.append(status)
        self.reason.append(reason)
        self.ttft_ms.append(round(ttft_ms, 2))
        self.queue_wait_ms.append(round(wait_ms, 2))
        self.kv_occupancy_ratio.append(round(occupancy, 4))
        self.dispatch_ms.append(dispatch_ms)

    def __len__(self) -> int:
        return len(self.seq)
