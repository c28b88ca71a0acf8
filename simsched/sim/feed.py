"""Delivering a `RequestTable` to the gateway, in (arrival_ms, request_id) order.

`Feed` turns the table's columns into `Request` objects one at a time, so a million-request
workload is never a million objects at once. The gateway consumes it in one of two ways:

- `arrived_by(now)` and `pop()`: requests that have arrived by `now`, pulled when the scheduler
  looks for work (the reference's timing: arrivals are invisible until then, so cost no event);
- `process(env, deliver)`: a SimPy process that hands over each request at its arrival instant
  (requests arriving at the same instant go out together).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator

import numpy as np
import simpy

from simsched.sim.kernel import ARRIVAL, AtInstant
from simsched.sim.requests import Request
from simsched.workload.table import RequestTable

CHUNK = 65_536  # rows turned into Python values at a time: bounded memory, numpy speed


class Feed:
    def __init__(
        self,
        table: RequestTable,
        service_tokens: np.ndarray,
        kv_blocks: np.ndarray,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        columns = (
            table.tenant,
            table.lane,
            table.arrival_ms,
            table.prefill_tokens,
            table.decode_tokens,
            service_tokens,
            kv_blocks,
        )
        if table.prefix is not None:
            columns += (table.prefix,)
        self._requests = _requests(columns, len(table), progress or _silent)
        # first and last arrival (the session feed's timeline interval reads them)
        self.table_span = (
            (float(table.arrival_ms[0]), float(table.arrival_ms[-1])) if len(table) else None
        )
        self.last_arrival_ms = float(table.arrival_ms[-1]) if len(table) else 0.0
        self._next: Request | None = next(self._requests, None)

    @property
    def next_arrival_ms(self) -> float | None:
        """When the next request arrives; None once every request has been delivered."""
        return None if self._next is None else self._next.arrival_ms

    def arrived_by(self, now: float) -> bool:
        """Whether a request not yet delivered has arrived by `now`."""
        return self._next is not None and self._next.arrival_ms <= now

    def pop(self) -> Request:
        request = self._next
        self._next = next(self._requests, None)
        return request

    def take_until(self, now: float) -> Iterator[Request]:
        while self.arrived_by(now):
            yield self.pop()

    def deliver_until(self, now: float, deliver: Callable[[Request], None]) -> None:
        """Hand every request that has arrived by `now` to `deliver`, in order: `take_until`
        without a generator and two method calls a request (the scheduler's tick runs this
        once per dispatch, so on the token server it is a tenth of the simulation)."""
        request, requests = self._next, self._requests
        while request is not None and request.arrival_ms <= now:
            self._next = next(requests, None)  # before `deliver`, which may read the feed
            deliver(request)
            request = self._next

    def process(
        self, env: simpy.Environment, deliver: Callable[[Request], None]
    ) -> Generator[simpy.Event, None, None]:
        while self._next is not None:
            arrival = self._next.arrival_ms
            if arrival > env.now:
                yield AtInstant(env, arrival, ARRIVAL)
            for request in self.take_until(arrival):
                deliver(request)


def _requests(
    columns: tuple[np.ndarray, ...], size: int, progress: Callable[[int, int], None]
) -> Iterator[Request]:
    for start in range(0, size, CHUNK):
        progress(start, size)
        rows = zip(*(column[start : start + CHUNK].tolist() for column in columns), strict=True)
        for seq, row in enumerate(rows, start):
            yield Request(seq, *row)
    progress(size, size)


def _silent(done: int, total: int) -> None:
    pass
