"""`token_server`: the reference's service model.

One logical server works through service tokens at `service_tokens_per_ms`. A dispatched request
occupies it for `exec_ms = service_tokens / service_tokens_per_ms`, non-preemptively; its KV blocks
(`ceil((prefill + decode) / kv_block_tokens)`) stay held for `kv_hold_factor * exec_ms` from
dispatch, a stand-in for decoding that overlaps later requests. Its first token comes
`max(min_prefill_ms, prefill / prefill_tokens_per_ms)` after dispatch; it counts as finished when
its KV blocks are freed, or at its first token if that comes later.

KV blocks are counted in a `KvPool`. Its capacity is not enforced here: with
admission disabled the reference lets the accounted occupancy exceed the total, and the recorded
ratio shows it. With admission enabled, the dispatch gate keeps it under the class watermark
(at most 1).
"""

from __future__ import annotations

import simpy

from simsched.sim.cluster.kv import KvPool
from simsched.sim.kernel import RELEASE
from simsched.sim.recorder import Recorder
from simsched.sim.requests import Request


class TokenServer:
    # Its finish time is a stand-in (the end of the KV hold), not the last token's time: TPOT
    # and goodput figures from it mean nothing, and the terminal table shows them as n/a.
    per_token_timing = False
    lean_kernel = True  # it only ever waits for times (kernel.LeanEnvironment)

    def __init__(self, env: simpy.Environment, config, recorder: Recorder) -> None:
        self.env = env
        self.recorder = recorder
        self.tput = self.sustained_tokens_per_ms(config)
        self.hold_factor = config.kv_hold_factor
        self.prefill_rate = config.prefill_tokens_per_ms
        self.min_prefill_ms = config.min_prefill_ms
        self.kv_blocks_total = config.total_kv_blocks
        self.kv = KvPool()
        self._release = self.kv.release  # bound once: every request schedules one
        self.busy_until = 0.0

    @staticmethod
    def sustained_tokens_per_ms(config) -> float:
        return config.service_tokens_per_ms

    def kv_blocks_in_use(self) -> int:
        return self.kv.level

    def kv_peak_ratio(self) -> float:
        return self.kv.peak / self.kv_blocks_total

    def first_token_delay_ms(self, request: Request) -> float:
        """max(min_prefill_ms, prefill / prefill rate), as a comparison: the dispatcher asks
        for it twice a request (`known_ttft_ms`, then `start`), a call and a `max` each time.
        `max` returns its first argument on a tie, and equal floats are the same number."""
        delay = request.prefill_tokens / self.prefill_rate
        return delay if delay > self.min_prefill_ms else self.min_prefill_ms

    def known_ttft_ms(self, request: Request, wait_ms: float) -> float:
        # Summed in the reference's order (wait, then prefill) so the rounding agrees with it.
        return wait_ms + self.first_token_delay_ms(request)

    def fits(self, request: Request) -> bool:
        return True  # KV here is an accounting measure, not a hard limit

    def has_room(self) -> bool:
        return True  # the scheduler only asks between services: `start` returns the busy time

    def room_available(self) -> simpy.Event:
        raise AssertionError("the token server always has room when asked")

    def start(self, request: Request) -> simpy.Event:
        """Serve `request` from now; the returned event fires when the server is free again."""
        now = self.env.now
        exec_ms = request.service_tokens / self.tput
        hold_ms = exec_ms * self.hold_factor
        blocks = request.kv_blocks
        self.kv.hold(blocks)
        self.busy_until = now + exec_ms
        first_token = now + self.first_token_delay_ms(request)
        # A short request's KV hold can end before its minimum prefill time; it is not finished
        # before its first token.
        finish = now + hold_ms
        self.recorder.served(
            request, 0, first_token, first_token if first_token > finish else finish
        )
        self.env.call_later(hold_ms, RELEASE, self._release, blocks)
        return self.env.timeout(exec_ms)

    def snapshot(self) -> list[tuple[int, int, int, int, int]]:
        """Per replica: (running, waiting, kv_blocks_used, kv_blocks_total, batch_tokens)."""
        busy = int(self.env.now < self.busy_until)
        return [(busy, 0, self.kv.level, self.kv_blocks_total, 0)]

    def is_idle(self) -> bool:
        return self.kv.level == 0 and self.env.now >= self.busy_until
