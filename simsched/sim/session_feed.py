"""A feed that reacts to finishes: sessions and closed-loop clients (session_specs.py).

`ReactiveFeed` offers the `Feed` interface (next_arrival_ms, arrived_by, pop, take_until,
deliver_until, process) over two sources: the pre-generated requests of every other tenant (a plain
`Feed`, unchanged) and a heap of turns scheduled as the simulation goes. The recorder tells it when
a request finished or was shed (`done`); it then schedules the session's next turn (or the client's
next request) at that instant plus the think time, with a timer at that instant that wakes the
gateway. Requests are numbered (`seq`) in the order they leave the feed, which is arrival order;
`table()` returns what was sent, for the outputs.

Ties at one instant: pre-generated requests first, then scheduled ones in the order they were
scheduled. Only runs with such tenants use this module; the pre-generated path is untouched.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np
import simpy

from simsched.sim.feed import Feed
from simsched.sim.kernel import ARRIVAL, AtInstant
from simsched.sim.requests import Request
from simsched.sim.session_state import Session, rough_mean
from simsched.workload.prefixes import ChainIds
from simsched.workload.session_plans import SessionPlan
from simsched.workload.table import RequestTable

# Chain ids of scheduled turns start here, far above those of the pre-generated prompts (which
# are interned from 1 by the workload), and low enough that block keys stay within int64.
REACTIVE_IDS = 2**36


class ReactiveFeed:
    def __init__(
        self,
        env: simpy.Environment,
        static: Feed,
        plans: list[SessionPlan],
        costs: Callable[[int, int], tuple[int, int]],
        on_sent: Callable[[int], None],
        contexts: dict[int, int] | None = None,
        refusal: Callable[[int, int, float], Exception] | None = None,
    ) -> None:
        self.env = env
        # the context, in tokens, of each tenant whose requests are checked as they are sent
        # (closed-loop clients that stop at a duration: workload/context_limits.py), and the
        # error a longer one raises: refusal(tenant, tokens, now)
        self.contexts, self.refusal = contexts or {}, refusal
        self.static = static
        self.costs = costs  # (prefill, decode) -> (service tokens, kv blocks)
        self.on_sent = on_sent  # told each new seq (the recorder grows)
        self.interner = ChainIds(first=REACTIVE_IDS)
        self.heap: list[tuple[float, int, Session]] = []
        self.pushed = 0
        self.live: dict[int, Session] = {}  # seq -> the session of a request in flight
        self.rows: list[tuple] = []  # what was sent, in seq order
        self.deliver: Callable[[Request], None] | None = None
        self.wake: simpy.Event | None = None
        self.clients: dict[int, int] = {}  # closed loop: tenant -> next request number
        self.closed_loops = [p.spec for p in plans if p.kind == "closed_loop"]
        for plan in plans:
            self._open(plan)

    # --- the Feed interface -----------------------------------------------------------------
    @property
    def next_arrival_ms(self) -> float | None:
        static = self.static.next_arrival_ms
        if not self.heap:
            return static
        mine = self.heap[0][0]
        return mine if static is None or mine < static else static

    def arrived_by(self, now: float) -> bool:
        nxt = self.next_arrival_ms
        return nxt is not None and nxt <= now

    def pop(self) -> Request:
        static = self.static.next_arrival_ms
        if static is not None and (not self.heap or static <= self.heap[0][0]):
            request = self.static.pop()
            row = request.seq  # its row in the pre-generated table
            request.seq = len(self.rows)
            self.on_sent(request.seq)
            self.rows.append((request, -1, -1, None, row))
            return request
        arrival, _, session = heapq.heappop(self.heap)
        return self._request(arrival, session)

    def take_until(self, now: float):
        while self.arrived_by(now):
            yield self.pop()

    def deliver_until(self, now: float, deliver: Callable[[Request], None]) -> None:
        for request in self.take_until(now):
            deliver(request)

    def process(self, env: simpy.Environment, deliver: Callable[[Request], None]):
        """Under `evaluate_at: arrival`: pre-generated requests at their instants; scheduled
        ones are delivered by their own timers."""
        self.deliver = deliver
        # turns due now whose timers fired before this process started (session starts at 0)
        # found no one to deliver them: deliver them at once, not at the next timer
        for request in self.take_until(env.now):
            deliver(request)
        while self.static.next_arrival_ms is not None:
            arrival = self.static.next_arrival_ms
            if arrival > env.now:
                yield AtInstant(env, arrival, ARRIVAL)
            for request in self.take_until(arrival):
                deliver(request)

    def wait(self) -> simpy.Event:
        """Under `scheduler_tick`: an event that fires at the next arrival, including one that
        is scheduled only later (a finish schedules the next turn)."""
        self.wake = self.env.event()
        nxt = self.next_arrival_ms
        if nxt is not None:
            AtInstant(self.env, nxt, ARRIVAL).callbacks.append(self._due)
        return self.wake

    # --- the recorder reports -----------------------------------------------------------------
    def done(self, seq: int, now: float, shed: bool) -> None:
        session = self.live.pop(seq, None)
        if session is None:
            return  # a pre-generated request
        plan = session.plan
        if plan.kind == "closed_loop":
            self._next_client_request(plan, now)
        elif shed:
            spec = plan.spec
            if spec.on_shed == "retry" and session.retries < spec.max_retries:
                session.retries += 1
                self._push(now + spec.retry_after_ms, session)  # a backoff, not a think
        else:
            session.answered()
            if session.turn < plan.turns[session.number]:
                self._push(now + session.think_ms(), session)

    # --- what was sent ------------------------------------------------------------------------
    def span(self) -> tuple[float, float] | None:
        """First and last arrival as far as known before the run (session starts, pre-generated
        requests, closed-loop clients' first requests and their expected end), for the
        timeline's sampling interval."""
        times = [entry[0] for entry in self.heap]
        static = self.static.table_span
        if static is not None:
            times += list(static)
        for spec in self.closed_loops:
            think = (
                1000.0 if spec.think_time_ms is None else 1000.0 + rough_mean(spec.think_time_ms)
            )
            guess = spec.start_ms + think * spec.count / spec.concurrency
            if spec.duration_s is not None:
                guess = min(guess, spec.start_ms + 1000.0 * spec.duration_s)
            times.append(guess)
        return (min(times), max(times)) if times else None

    @property
    def last_arrival_ms(self) -> float:
        """The last arrival known before the run (the timeline slows its sampling after it)."""
        span = self.span()
        return span[1] if span is not None else 0.0

    def __len__(self) -> int:
        return len(self.rows)

    def table(self, static: RequestTable) -> tuple[RequestTable, np.ndarray, np.ndarray]:
        """The requests sent, in seq order, and each one's session and turn (-1: none)."""
        rows = self.rows
        requests = [row[0] for row in rows]
        table = RequestTable(
            request_id=np.array(
                [rid if at < 0 else static.request_id[at] for _, _, _, rid, at in rows],
                dtype=object,
            ),
            tenant=np.array([r.tenant for r in requests], dtype=np.int64),
            lane=np.array([r.lane for r in requests], dtype=np.int64),
            arrival_ms=np.array([r.arrival_ms for r in requests], dtype=np.float64),
            prefill_tokens=np.array([r.prefill_tokens for r in requests], dtype=np.int64),
            decode_tokens=np.array([r.decode_tokens for r in requests], dtype=np.int64),
        )
        session = np.array([row[1] for row in rows], dtype=np.int64)
        turn = np.array([row[2] for row in rows], dtype=np.int64)
        return table, session, turn

    # --- scheduling -----------------------------------------------------------------------------
    def _open(self, plan: SessionPlan) -> None:
        if plan.kind == "closed_loop":
            self.clients[plan.tenant] = 0
            for _ in range(min(plan.spec.concurrency, plan.spec.count)):
                self._next_client_request(plan, plan.spec.start_ms, first=True)
            return
        for number, start in enumerate(plan.starts_ms.tolist()):
            self._push(start, Session(plan, number, self._head(plan, number)))

    def _next_client_request(self, plan: SessionPlan, now: float, first: bool = False) -> None:
        number = self.clients[plan.tenant]
        spec = plan.spec
        if number >= spec.count:
            return
        at = now if first else now + plan.think_ms[number]
        if spec.duration_s is not None and at >= spec.start_ms + 1000.0 * spec.duration_s:
            return
        self.clients[plan.tenant] = number + 1
        self._push(at, Session(plan, number, self._head(plan, number)))

    def _head(self, plan: SessionPlan, number: int) -> tuple[int, int] | None:
        group = plan.group[number]
        if group < 0:
            return None
        return self.interner.chain(0, ("system", plan.tenant_id, group)), plan.system_tokens

    def _push(self, at: float, session: Session) -> None:
        """Schedule a request, with a timer at its instant: under `evaluate_at: arrival` it is
        delivered then; under `scheduler_tick` the timer wakes a waiting scheduler."""
        heapq.heappush(self.heap, (at, self.pushed, session))
        self.pushed += 1
        AtInstant(self.env, at, ARRIVAL).callbacks.append(self._due)

    def _due(self, _event: simpy.Event) -> None:
        if self.deliver is not None:
            for request in self.take_until(self.env.now):
                self.deliver(request)
        elif self.wake is not None and not self.wake.triggered:
            self.wake.succeed()

    def _request(self, arrival: float, session: Session) -> Request:
        plan = session.plan
        prompt, answer = session.sizes()
        most = self.contexts.get(plan.tenant)
        if most is not None and prompt + answer > most:
            raise self.refusal(plan.tenant, prompt + answer, arrival)
        prefix = session.segments(self.interner)  # shares the history's segments
        service, blocks = self.costs(prompt, answer)
        seq = len(self.rows)
        self.on_sent(seq)
        request = Request(
            seq, plan.tenant, plan.lane, arrival, prompt, answer, service, blocks, prefix
        )
        self.live[seq] = session
        if plan.kind == "sessions":  # turns count from 1
            self.rows.append((request, session.number, session.turn + 1, session.request_id(), -1))
        else:
            self.rows.append((request, -1, -1, session.request_id(), -1))
        return request
