"""The two ends of a P/D handoff: a replica that hands its requests off after the first token,
and one that takes them in with their prompt's KV already computed.

`PrefillReplica` runs prompts exactly as a mixed replica does (chunked prefill, prefix cache);
the iteration that completes a prompt yields the first token, and the sequence leaves the batch
with its blocks still held, until `release` says the transfer is over. `DecodeReplica` receives
no prompts: a handed-off sequence first books its prompt's blocks (`offer`), which waits while
they are not free; the transfer then runs, and the sequence joins the decode batch at the next
iteration boundary (`arrive`). Bookings and joins happen only at iteration boundaries (or at
once on an idle replica), and both cut a fast-forward jump, so stepping and jumping give the same
instants. A preempted sequence recomputes here, as a vLLM decode instance does.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from simsched.sim.cluster.replica import Replica
from simsched.sim.cluster.sequences import Seq, ceil_div
from simsched.sim.kernel import SCHEDULER, At


class PrefillReplica(Replica):
    """A replica whose sequences leave after their first token (`handoff(replica, seq, end)`)."""

    handoff: Callable[[PrefillReplica, Seq, float], None]

    def _prefilled(self, seq: Seq, it: int, end: float) -> None:
        if seq.generated > 0 or seq.decode == 1:  # a one-token answer is done here
            super()._prefilled(seq, it, end)
            return
        self.prefilling.remove(seq)
        seq.generated = 1
        self.recorder.first_token(seq.request, end + self.before_ms)
        del self.running[seq.request.seq]  # leaves the batch; its blocks stay held
        self.handoff(self, seq, end)

    def release(self, seq: Seq) -> None:
        """The transfer is over: the prompt's blocks go (a prefix cache keeps what it shares)."""
        self.kv.finish(seq, seq.blocks)


class DecodeReplica(Replica):
    """A replica that takes in handed-off sequences and only decodes them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bookings: deque[tuple[Seq, Callable[[], None]]] = deque()
        self.arrived: list[Seq] = []
        self.booked = 0  # blocks held for sequences in transfer
        self.in_transfer = 0  # sequences booked here whose transfer has not ended

    def outstanding(self) -> int:
        """Running, waiting, booking and in transfer: what a router should count as load."""
        return len(self.running) + len(self.waiting) + len(self.bookings) + self.in_transfer

    def offer(self, seq: Seq, booked: Callable[[], None]) -> None:
        """Book the prompt's blocks; `booked()` runs when they are held (the transfer starts)."""
        self.bookings.append((seq, booked))
        if not self.busy:
            self._book()
        elif self.jump is not None:
            self._cut_jump()

    def arrive(self, seq: Seq) -> None:
        """The transfer ended: the sequence joins the batch at the next iteration boundary."""
        self.arrived.append(seq)
        if not self.busy:
            self.busy = True
            At(self.env, 0.0, SCHEDULER).callbacks.append(self._kick)
        elif self.jump is not None:
            self._cut_jump()

    def _begin(self) -> None:
        self._join()
        self._book()
        super()._begin()

    def _book(self) -> None:
        """Hold blocks for waiting bookings, in order, while they fit (vLLM's watermark kept)."""
        while self.bookings:
            seq, booked = self.bookings[0]
            need = ceil_div(seq.target, self.block_size)
            margin = self.watermark if self.running else 0
            if need > self.kv.free() - margin:
                return
            self.bookings.popleft()
            self.kv.hold(need)
            self.booked += need
            seq.blocks = need
            self.in_transfer += 1
            booked()

    def _join(self) -> None:
        it = self.it
        for seq in self.arrived:
            self.booked -= seq.blocks
            self.in_transfer -= 1
            self.running[seq.request.seq] = seq
            # the first decode iteration `it` computes token target + 1; it finishes after
            # decode - generated more tokens (as Replica._prefilled adds a local prefill)
            self.decoding.add(seq, seq.target + 1 - it, it + seq.decode - seq.generated - 1)
        self.arrived = []
