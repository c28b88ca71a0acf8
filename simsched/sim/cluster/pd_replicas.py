"""The two ends of a P/D handoff: a replica that hands its requests off after the first token,
and one that takes them in with their prompt's KV already computed.

`PrefillReplica` runs prompts exactly as a mixed replica does (chunked prefill, prefix cache);
the iteration that completes a prompt yields the first token, and the sequence leaves the batch
with its blocks still held, until `release` says the transfer is over. `DecodeReplica` receives
no prompts: a handed-off sequence first books its prompt's blocks (`offer`), which waits while
they are not free; the transfer then runs, and the sequence joins the decode batch at the next
iteration boundary (`arrive`). Bookings and joins happen only at iteration boundaries (or at
once on an idle replica), and both cut a fast-forward jump, so stepping and jumping give the same
instants. That needs one more rule at an instant where a decode iteration ends: the offer comes
after it (the handoff is offered at `HANDOFF` priority, kernel.py), so it is booked at the next
boundary whether the replica steps or jumps (a jump's boundaries are no events). A preempted
sequence recomputes here, as a vLLM decode instance does.
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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.held = 0  # handed-off sequences whose blocks are held until their transfer ends

    def _stalled(self) -> None:
        # Blocks held for transfers belong to no running sequence, so the next prompt (or the
        # only running one, preempted) may not fit beside them: the replica waits, idle, for a
        # transfer to end (`release`) instead of scheduling an empty batch.
        if not self.held:
            super()._stalled()
        self.busy = False
        self.batch_tokens = 0

    def _prefilled(self, seq: Seq, it: int, end: float) -> None:
        if seq.generated > 0 or seq.decode == 1:  # a one-token answer is done here
            super()._prefilled(seq, it, end)
            return
        self.prefilling.remove(seq)
        seq.generated = 1  # the client sees it from the decode replica (DecodeReplica._end_step)
        del self.running[seq.request.seq]  # leaves the batch; its blocks stay held
        self.held += 1
        self.handoff(self, seq, end)

    @property
    def before_ms(self) -> float:
        """What the API server adds to the first token (FixedDelays' before_ms; a queueing
        `cluster.frontend` adds nothing there): the decode side shifts its instants by it."""
        return self.frontend.first_token_ms(0.0)

    def holds_work(self) -> bool:
        """Also while it holds blocks for a transfer: a draining replica stays up until the
        decode side has them (an autoscaler turns it off only then)."""
        return self.held > 0 or super().holds_work()

    def release(self, seq: Seq) -> None:
        """The transfer is over: the prompt's blocks go (a prefix cache keeps what it shares),
        and a replica idle for want of them starts again."""
        self.kv.finish(seq, seq.blocks)
        self.held -= 1
        if not self.busy and self.waiting:
            self.busy = True
            At(self.env, 0.0, SCHEDULER).callbacks.append(self._kick)
        elif not self.holds_work():
            self.on_idle()  # its last transfer ended: a draining replica may now go


class DecodeReplica(Replica):
    """A replica that takes in handed-off sequences and only decodes them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bookings: deque[tuple[Seq, Callable[[Seq], None]]] = deque()
        self.arrived: list[Seq] = []
        self.booked = 0  # blocks held for sequences in transfer
        self.in_transfer = 0  # sequences booked here whose transfer has not ended
        # per request: the front-end time its prefill replica added to its first token; the
        # client sees every later instant shifted by it too (Replica.last_ms, for a mixed one)
        self.front_ms: dict[int, float] = {}
        # joined sequences whose first decode step has not ended yet: the client's first token
        # (vLLM's NIXL connector behind llm-d streams the answer from the decode instance)
        self.awaiting_first: list[Seq] = []

    def holds_work(self) -> bool:
        """Also while a booking waits or a transfer to it runs: a draining decode replica takes
        no new transfer, but the one already reserved on it lands and is decoded here."""
        return bool(self.bookings or self.in_transfer or self.arrived) or super().holds_work()

    def outstanding(self) -> int:
        """Running, waiting, booking and in transfer: what a router should count as load."""
        return len(self.running) + len(self.waiting) + len(self.bookings) + self.in_transfer

    def offer(self, seq: Seq, booked: Callable[[Seq], None], before_ms: float = 0.0) -> None:
        """Book the prompt's blocks; `booked(copy)` runs when they are held (the transfer starts).

        The copy is the sequence as this replica keeps it, so that the prefill side still has
        its own blocks and cache references to let go when the transfer ends."""
        seq = arriving(seq)
        self.front_ms[seq.request.seq] = before_ms
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
            if len(self.running) + self.in_transfer >= self.max_seqs:
                return  # a seat for it in the batch, as vLLM schedules a remote-KV request
            self.bookings.popleft()
            self.kv.hold(need)
            self.booked += need
            seq.blocks = need
            self.in_transfer += 1
            booked(seq)

    def _start_jump(self) -> bool:
        # a step, not a jump, while a joined sequence awaits its first token: its instant is
        # the end of that step (the jump would give the same instants, without the hook)
        return not self.awaiting_first and super()._start_jump()

    def _end_step(self) -> None:
        self._first_tokens(self._end)
        super()._end_step()

    def _first_tokens(self, end: float) -> None:
        """The client's first token: the end of the first decode step a joined sequence ran in
        (one preempted before it gets it at the end of its recompute, `_prefilled`), shifted as
        every client instant."""
        waiting = []
        for seq in self.awaiting_first:
            if seq.request.seq in self.running and seq not in self.prefilling:
                front = self.front_ms[seq.request.seq]
                self.recorder.first_token(seq.request, end + front)
            else:
                waiting.append(seq)
        self.awaiting_first = waiting

    def _prefilled(self, seq: Seq, it: int, end: float) -> None:
        # one preempted before its first decode step recomputes here: the step that completes
        # the recompute emits its next token, so the client's first token is that step's end
        # (read before `_finish`, which may follow at once and forgets `front_ms`)
        if seq in self.awaiting_first:
            self.awaiting_first.remove(seq)
            self.recorder.first_token(seq.request, end + self.front_ms[seq.request.seq])
        super()._prefilled(seq, it, end)

    def _finish(self, seq: Seq, blocks: int, end: float) -> None:
        self.kv.finish(seq, blocks)
        del self.running[seq.request.seq]
        front = self.front_ms.pop(seq.request.seq)
        # the decode pool's API server answers: its time after the last token (a queueing
        # `cluster.frontend` serves the output there); its time before the first token was
        # the prefill pool's, already in `front`
        shifted = end + front
        last = self.frontend.respond(seq.request, shifted) - self.frontend.first_token_ms(0.0)
        self.recorder.finished(seq.request, last)

    def _stalled(self) -> None:
        # Blocks booked for transfers belong to no running sequence, so a preempted one may not
        # fit beside them: the replica waits, idle, for a transfer to end (`arrive`).
        if not self.in_transfer:
            super()._stalled()
        self.busy = False
        self.batch_tokens = 0

    def _join(self) -> None:
        it = self.it
        for seq in self.arrived:
            self.booked -= seq.blocks
            self.in_transfer -= 1
            self.running[seq.request.seq] = seq
            # the first decode iteration `it` computes token target + 1; it finishes after
            # decode - generated more tokens (as Replica._prefilled adds a local prefill)
            self.decoding.add(seq, seq.target + 1 - it, it + seq.decode - seq.generated - 1)
        self.awaiting_first += self.arrived
        self.arrived = []


def arriving(seq: Seq) -> Seq:
    """The decode side's record of a handed-off sequence: its prompt computed, its first token
    generated, no blocks yet (booking sets them)."""
    copy = Seq(seq.request)
    copy.target = copy.done = seq.target
    copy.generated = seq.generated
    return copy
