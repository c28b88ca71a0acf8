"""The API server in front of a replica: the front-end seam (docs/engines.md, "The API server").

`FixedDelays` is the front end without a `cluster.frontend` section: the latency model's
`frontend_before_ms` shifts the first token, `frontend_before_ms + frontend_after_ms` the last,
with no capacity limit (the replica's behaviour before this seam, to the bit).

`ApiServer` is `cluster.frontend`: `processes` identical servers taking jobs first come, first
served, each job going to the process free soonest. A request's inbound job (tokenise, chat
template) takes `per_request_ms + per_input_token_us * prompt / 1000` and ends when the request
reaches the engine's waiting queue; its outbound job (detokenise, stream) takes
`per_output_token_us * output / 1000`, queued when the engine emits the last token, and ends when
the client has the response; with `per_output_token_us` 0 there is no outbound job (a job of no
work does not wait behind the inbound queue). With `c` processes free at `f_1 <= ... <= f_c`,
a job arriving at `a` with service `s` starts at `max(a, f_1)` and ends `s` later. Jobs arrive
in simulated-time order, so assigning each at its arrival is exactly FIFO. The first token is
recorded when the engine emits it (its streaming cost is in the outbound job).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any, Protocol

import simpy

from simsched.sim.kernel import SCHEDULER, AtInstant
from simsched.sim.requests import Request


class FrontEnd(Protocol):
    entering: int  # requests in the inbound stage, not yet at the engine

    def accept(self, request: Request, deliver: Callable[[Request], None]) -> None:
        """Take a request placed on the replica; call `deliver` when it reaches the engine."""
        ...

    def first_token_ms(self, engine_ms: float) -> float:
        """When the client sees the first token the engine emitted at `engine_ms` (now)."""
        ...

    def respond(self, request: Request, engine_ms: float) -> float:
        """When the client has the whole response whose last token the engine emitted now."""
        ...


class FixedDelays:
    def __init__(self, before_ms: float, after_ms: float) -> None:
        self.before_ms = before_ms
        self.last_ms = before_ms + after_ms
        self.entering = 0

    def accept(self, request: Request, deliver: Callable[[Request], None]) -> None:
        deliver(request)

    def first_token_ms(self, engine_ms: float) -> float:
        return engine_ms + self.before_ms

    def respond(self, request: Request, engine_ms: float) -> float:
        return engine_ms + self.last_ms


class FifoProcesses:
    """`processes` identical servers taking jobs first come, first served, each on the process
    free soonest; jobs must come in time order. The API server's queue, and what the output's
    API-server note replays from the recorded dispatch instants (outputs/api_server_notes.py)."""

    def __init__(self, processes: int) -> None:
        self.free_at = [0.0] * processes  # a heap: when each process is next free

    def serve(self, arrival_ms: float, service_ms: float) -> float:
        """The end of a job arriving at `arrival_ms` with `service_ms`."""
        start = max(arrival_ms, self.free_at[0])
        end = start + service_ms
        heapq.heapreplace(self.free_at, end)
        return end


def inbound_ms(spec: Any, prompt_tokens: float) -> float:
    """A request's inbound job: `per_request_ms + per_input_token_us * ISL / 1000`."""
    return spec.per_request_ms + spec.per_input_token_us / 1000 * max(1, prompt_tokens)


class ApiServer:
    def __init__(self, env: simpy.Environment, spec: Any) -> None:
        self.env = env
        self.spec = spec
        self.output_ms = spec.per_output_token_us / 1000
        self.processes = FifoProcesses(spec.processes)
        self.serve = self.processes.serve  # bound once: called for every job
        self.entering = 0

    def accept(self, request: Request, deliver: Callable[[Request], None]) -> None:
        end = self.serve(self.env.now, inbound_ms(self.spec, request.prefill_tokens))
        self.entering += 1

        def arrived(_event: simpy.Event) -> None:
            self.entering -= 1
            deliver(request)

        AtInstant(self.env, end, SCHEDULER).callbacks.append(arrived)

    def first_token_ms(self, engine_ms: float) -> float:
        return engine_ms

    def respond(self, request: Request, engine_ms: float) -> float:
        service = self.output_ms * max(1, request.decode_tokens)
        if service == 0:  # no outbound work (the profiles' default): nothing to queue behind
            return engine_ms
        return self.serve(engine_ms, service)


def build_frontend(env: simpy.Environment, config: Any, latency: Any) -> FrontEnd:
    """`cluster.frontend` as a queueing stage; without it (or at no cost), the fixed delays."""
    spec = getattr(config, "frontend", None)
    if spec is None:
        return FixedDelays(latency.before_ms, latency.after_ms)
    if spec.costs_nothing:
        return FixedDelays(0.0, 0.0)
    return ApiServer(env, spec)
