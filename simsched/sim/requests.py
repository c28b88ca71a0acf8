"""The request as the simulation sees it: a small, slotted record with its costs precomputed."""

from __future__ import annotations

INTERACTIVE = 0
BATCH = 1
CLASS_NAMES = ("interactive", "batch")
CLASS_INDEX = {name: index for index, name in enumerate(CLASS_NAMES)}


class Request:
    """One inference request. `seq` is its place in the global (arrival_ms, request_id) order."""

    __slots__ = (
        "seq",
        "tenant",
        "lane",
        "arrival_ms",
        "prefill_tokens",
        "decode_tokens",
        "service_tokens",
        "kv_blocks",
    )

    def __init__(
        self,
        seq: int,
        tenant: int,
        lane: int,
        arrival_ms: float,
        prefill_tokens: int,
        decode_tokens: int,
        service_tokens: int,
        kv_blocks: int,
    ) -> None:
        self.seq = seq
        self.tenant = tenant
        self.lane = lane
        self.arrival_ms = arrival_ms
        self.prefill_tokens = prefill_tokens
        self.decode_tokens = decode_tokens
        self.service_tokens = service_tokens
        self.kv_blocks = kv_blocks

    def __repr__(self) -> str:
        return (
            f"Request(seq={self.seq}, tenant={self.tenant}, lane={CLASS_NAMES[self.lane]}, "
            f"arrival_ms={self.arrival_ms}, service_tokens={self.service_tokens})"
        )
