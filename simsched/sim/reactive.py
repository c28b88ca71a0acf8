"""Wiring for runs with sessions or closed-loop clients (workload/session_feed.py).

Such runs need three things the pre-generated path does not: a recorder that grows as turns
are sent and tells the feed when a request finished or was shed, a scheduler-tick gateway that
can be woken by a turn scheduled after it went to sleep, and the table of what was sent (known
only at the end). Runs without such tenants never touch this module.
"""

from __future__ import annotations

from array import array

import numpy as np
import simpy

from simsched.config.load_scale import at_load_scale
from simsched.sim.feed import Feed
from simsched.sim.gateway import TickGateway
from simsched.sim.recorder import PER_REQUEST_ARRAYS, Recorder
from simsched.sim.requests import Request
from simsched.sim.session_feed import ReactiveFeed
from simsched.workload.build import prefix_rng, tenant_rng
from simsched.workload.context_limits import send_limits, sent_refusal
from simsched.workload.session_plans import is_reactive, session_plans

_GROWING = PER_REQUEST_ARRAYS


def has_reactive(scenario) -> bool:
    return any(is_reactive(tenant) for tenant in scenario.tenants)


class GrowingRecorder(Recorder):
    """A recorder sized as requests are sent, reporting each outcome to the feed."""

    def __init__(self, shed_status_codes: dict[str, int] | None, env: simpy.Environment) -> None:
        super().__init__(0, shed_status_codes)
        self.env = env
        self.size = 0
        self.feed: ReactiveFeed | None = None

    def ensure(self, seq: int) -> None:
        if seq < self.size:
            return
        more = max(self.size, 1024)
        for name in _GROWING:
            column = getattr(self, name)
            column.extend(array(column.typecode, [_blank(name)]) * more)
        self.reason.extend([None] * more)
        self.size += more

    def shed(self, seq: int, reason: str, wait_ms: float, occupancy: float) -> None:
        super().shed(seq, reason, wait_ms, occupancy)
        self.feed.done(seq, self.env.now, shed=True)

    def finished(self, request: Request, now: float) -> None:
        super().finished(request, now)
        self.feed.done(request.seq, now, shed=False)

    def served(self, request: Request, replica: int, first_token: float, finish: float) -> None:
        super().served(request, replica, first_token, finish)
        self.feed.done(request.seq, finish, shed=False)

    def trimmed(self, count: int) -> GrowingRecorder:
        """Only the first `count` entries (the requests sent), as the outputs expect."""
        for name in (*_GROWING, "reason"):
            setattr(self, name, getattr(self, name)[:count])
        return self


_BLANKS = {"status_code": 0, "preemptions": 0, "replica": -1, "cached_tokens": 0}


def _blank(name: str) -> float:
    return (_BLANKS | {"preempted_cached_tokens": 0}).get(name, float("nan"))


class ReactiveTickGateway(TickGateway):
    def next_arrival(self) -> simpy.Event:
        return self.feed.wait()


def reactive_feed(env, scenario, feed: Feed, recorder: GrowingRecorder, costs) -> ReactiveFeed:
    plans = session_plans(at_load_scale(scenario), tenant_rng, prefix_rng)
    limits = send_limits(scenario, plans)  # the rest were checked before the run
    contexts = {tenant: limit.tokens for tenant, limit in limits.items()}

    def refusal(tenant: int, tokens: int, now: float) -> Exception:
        return sent_refusal(scenario, tenant, limits[tenant], tokens, now)

    reactive = ReactiveFeed(env, feed, plans, costs, recorder.ensure, contexts, refusal)
    recorder.feed = reactive
    return reactive


def cost_of(scenario):
    """(prefill, decode) -> (service tokens, KV blocks), as `engine.request_costs` computes."""
    weights, block = scenario.scheduler, scenario.cluster.kv_block_tokens

    def costs(prefill: int, decode: int) -> tuple[int, int]:
        service = weights.prefill_weight * prefill + weights.decode_weight * decode
        return service, -(-(prefill + decode) // block)

    return costs


def session_columns(session: np.ndarray, turn: np.ndarray) -> dict:
    """requests.csv's `session` and `turn`, empty for requests outside sessions."""
    return {
        "session": np.where(session >= 0, session, np.nan),
        "turn": np.where(turn >= 0, turn, np.nan),
    }
