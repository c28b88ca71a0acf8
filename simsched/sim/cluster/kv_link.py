"""How long a prefill-to-decode KV transfer takes: the link-model seam of P/D disaggregation.

A `KvLink` answers one question, the duration of shipping `nbytes` of KV cache that is ready at
`now`. `DedicatedLink` gives every transfer the whole link (`bytes / bandwidth + latency`,
docs/fleets.md): a fabric with a NIC per GPU, as the llm-d P/D guide's RoCE nodes have, rarely
queues transfers. A shared link with contention would be a second implementation.

Bytes are the prompt's KV: every prompt token's keys and values in every layer, at the KV cache's
precision (`presets.kv_bytes_per_token`); the decode side caches nothing, so none is skipped.
"""

from __future__ import annotations

from typing import Any, Protocol

from simsched.config import presets


class KvLink(Protocol):
    def transfer_ms(self, nbytes: int, now: float) -> float:
        """The transfer's duration in ms, for `nbytes` ready at `now`."""
        ...


class DedicatedLink:
    """Every transfer has the full bandwidth: nbytes * 8 / (gbps * 1e6) ms + latency_ms."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec

    def transfer_ms(self, nbytes: int, now: float) -> float:
        return self.spec.transfer_ms(nbytes)


def prompt_kv_bytes(model: Any, prompt_tokens: int) -> int:
    """The KV cache of a prompt: tokens x 2 x layers x kv_heads x head_dim x KV dtype bytes."""
    return prompt_tokens * presets.kv_bytes_per_token(model)
