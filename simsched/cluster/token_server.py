"""`token_server`: the reference's service model.

One logical server works through service tokens at `service_tokens_per_ms`. A dispatched request
occupies it for `exec_ms = service_tokens / service_tokens_per_ms`, non-preemptively; its KV blocks
(`ceil((prefill + decode) / kv_block_tokens)`) stay held for `kv_hold_factor * exec_ms` from
dispatch, a stand-in for decoding that overlaps later requests. Its first token comes
`max(min_prefill_ms, prefill / prefill_tokens_per_ms)` after dispatch.

KV blocks live in a `simpy.Container` (`KvPool`). Its capacity is not enforced here: with
admission disabled the reference lets the accounted occupancy exceed the total, and the recorded
ratio shows it. With admission enabled, the dispatch gate keeps it under the class watermark
(at most 1).
"""

from __future__ import annotations

import simpy

from simsched.cluster.kv import KvPool
from simsched.requests import Request
from simsched.timing import RELEASE, At


class TokenServer:
    def __init__(self, env: simpy.Environment, config) -> None:
        self.env = env
        self.tput = config.service_tokens_per_ms
        self.hold_factor = config.kv_hold_factor
        self.prefill_rate = config.prefill_tokens_per_ms
        self.min_prefill_ms = config.min_prefill_ms
        self.kv_blocks_total = config.total_kv_blocks
        self.kv = KvPool(env)

    def kv_blocks_in_use(self) -> int:
        return self.kv.level

    def first_token_delay_ms(self, request: Request) -> float:
        return max(self.min_prefill_ms, request.prefill_tokens / self.prefill_rate)

    def start(self, request: Request) -> simpy.Event:
        """Serve `request` from now; the returned event fires when the server is free again."""
        exec_ms = request.service_tokens / self.tput
        blocks = request.kv_blocks
        self.kv.hold(blocks)
        release = At(self.env, exec_ms * self.hold_factor, RELEASE)
        release.callbacks.append(lambda _event: self.kv.release(blocks))
        return self.env.timeout(exec_ms)
