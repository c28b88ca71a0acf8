"""One replica: a paged KV cache and iteration-level batching, like vLLM's scheduler.

Each iteration ends with one SimPy event. At its start the replica picks its batch: every
running sequence past its prefill decodes one token; running sequences still in prefill, then
waiting ones from the front, get prefill chunks while the token budget
(`max_num_batched_tokens`), `max_num_seqs`, the free KV blocks and the free-block watermark
allow. A sequence of `n`
tokens holds `ceil(n / block_size)` blocks, taken as it grows. When the running sequences need
more blocks than are free, the newest running sequence is preempted (recompute: its blocks are
freed and it returns to the front of the waiting queue, to prefill its prompt and the tokens it
has generated again), and no waiting request starts in that iteration. The iteration that
completes a prefill yields a token: the first token, or the next one after a recompute; a
sequence finishes with its `decode_tokens`-th token.

Decoding sequences are kept in aggregate (`DecodeSet`, in sequences.py), so an iteration costs
O(1) plus the sequences that start, stop or are preempted in it. Stretches where only decoding
happens are jumped over with one event (`Jump`, planned in fast_forward.py); a request placed
here meanwhile cuts the jump short at the end of the iteration in progress, and everything read
during a jump is worked out for the instant it is read. Iteration ends take the `RELEASE`
priority: at any instant the replica has finished its iteration and picked the next batch before
anything else looks at it, in both modes.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import simpy

from simsched.sim.cluster.attribution import NO_ATTRIBUTION, IterationObserver
from simsched.sim.cluster.capacity import AdmitThenPreempt, build_capacity_rule
from simsched.sim.cluster.contract import LatencyModel
from simsched.sim.cluster.fast_forward import Jump, plan_jump
from simsched.sim.cluster.frontend import build_frontend
from simsched.sim.cluster.kv_level import FleetKv
from simsched.sim.cluster.kv_memory import KvMemory, PlainKv
from simsched.sim.cluster.prefix_cache import PrefixCachedKv
from simsched.sim.cluster.sequences import Seq
from simsched.sim.cluster.speculative import build_decode_set
from simsched.sim.cluster.utilisation import UtilisationMeter
from simsched.sim.kernel import RELEASE, SCHEDULER, Alarm
from simsched.sim.recorder import Recorder
from simsched.sim.requests import Request


def build_kv_memory(
    env: simpy.Environment, capacity: int, config: Any, recorder: Recorder, fleet: FleetKv
) -> KvMemory:
    """The replica's KV memory, reporting to `fleet`: prefix-cached when `cluster.prefix_caching`
    is on."""
    kind = PrefixCachedKv if config.prefix_caching else PlainKv
    return kind(env, capacity, config.block_size, recorder, fleet)


class NoObserver:
    """What tests may watch; by default nothing. Jumped-over iterations are not reported."""

    def iteration(self, *args: Any) -> None:
        """Each stepped iteration: (replica, start_ms, end_ms, prefill, decodes, kv_used)."""

    def preempting(self, *args: Any) -> None:
        """Before each preemption: (replica, blocks needed, blocks free)."""


class Replica:
    def __init__(
        self,
        env: simpy.Environment,
        index: int,
        config: Any,
        latency: LatencyModel,
        recorder: Recorder,
        attribution: IterationObserver = NO_ATTRIBUTION,
        fleet: FleetKv | None = None,
    ) -> None:
        self.env = env
        self.index = index
        self.block_size = config.block_size
        self.max_tokens = config.max_num_batched_tokens
        self.max_seqs = config.max_num_seqs
        # who used each iteration (attribution.py): nothing watched unless chargeback asks
        self.attribution = attribution
        # speculative.py: one token a step (the observer's set: per-tenant sums for chargeback),
        # or several with speculative decoding
        self.decoding = build_decode_set(config, attribution.decode_set)
        # a speculative decode set is stepped through (its sequences emit unequal tokens)
        self.fast_forward = config.fast_forward and self.decoding.jumpable
        self.latency = latency
        # The API server (frontend.py): fixed delays that shift the recorded instants, or
        # `cluster.frontend`'s queueing stage before and after the engine. Multi-step
        # scheduling admits new requests every `steps` iterations only.
        self.frontend = build_frontend(env, config, latency)
        self.steps = getattr(config, "num_scheduler_steps", 1)
        self.recorder = recorder
        self.on_room = lambda: None  # set by the cluster: a request left the waiting queue
        self.on_idle = lambda: None  # set by an autoscaler: the replica ran out of work
        self.config = config
        self.observer = NoObserver()  # a property: it tells `_watched` whether anyone watches
        # nothing to tell when nobody attributes: each iteration skips the call (a plan's runs
        # step half a million iterations)
        self._attributing = attribution is not NO_ATTRIBUTION
        self.capacity = config.blocks_per_replica
        self.meter = UtilisationMeter(self.max_tokens, self.capacity)  # utilisation.py
        # the cluster's KV total that this replica's memory keeps up to date (kv_level.py)
        self.fleet = FleetKv(env) if fleet is None else fleet
        self._use_memory(build_kv_memory(env, self.capacity, config, recorder, self.fleet))
        # an idle replica batches what is placed on it within one scheduling step; vLLM's
        # free-block watermark for admitting waiting requests, in blocks (floored, as vLLM's
        # block manager does); docs/continuous_batching.md, "An iteration"
        self.step_ms = config.schedule_step_ms
        self.watermark = int(config.block_watermark * self.capacity)
        # which waiting request may start (capacity.py: vLLM's rule or TensorRT-LLM's no-evict)
        self.capacity_rule = build_capacity_rule(config, self.capacity, self.watermark)
        # whether the rule keeps count of what starts and ends (TensorRT-LLM's reservations);
        # vLLM's does not, and the replica then skips the two calls a request
        self._reserves = type(self.capacity_rule) is not AdmitThenPreempt
        self.waiting: deque[Seq] = deque()
        self.running: dict[int, Seq] = {}  # by request seq, in the order they started running
        self.prefilling: list[Seq] = []  # running, prefill not complete, in running order
        self.it = 0  # iterations completed
        self.t = 0.0  # when the last iteration ended
        self.busy = False
        self.chunks: list[tuple[Seq, int, int]] = []  # (seq, tokens, blocks) in this iteration
        self.batch_tokens = 0
        self.jump: Jump | None = None
        self._timer: Alarm | None = None
        self._end = 0.0
        self._timer_callback = self._on_timer  # bound once: one alarm per iteration or jump
        self._deliver = self._enter  # bound once: the front end delivers every request here
        # whether `outstanding` is the sum below, which the default router then adds up itself
        # without the call (a subclass that counts more, as the P/D decode side, keeps the call)
        self.counts_plainly = type(self).outstanding is Replica.outstanding

    @property
    def observer(self) -> Any:
        return self._observer

    @observer.setter
    def observer(self, observer: Any) -> None:
        self._observer = observer
        self._watched = type(observer) is not NoObserver  # else its calls are skipped

    def _use_memory(self, kv: KvMemory) -> None:
        self.kv = kv
        # blocks held now, mid-jump included: the memory's own view, bound once (routers and
        # the KV gate ask it for every replica on every request)
        self.blocks_in_use = kv.in_use
        # whether the memory registers computed chunks and finds prompts' cached blocks (a
        # prefix cache); a plain one does neither, so a step skips those calls
        kind = type(kv)
        self._registers = kind.computed is not PlainKv.computed
        self._caches = (
            kind.prompt_hits is not PlainKv.prompt_hits or kind.start is not PlainKv.start
        )

    # --- what others read ---------------------------------------------------------------
    def outstanding(self) -> int:
        return len(self.running) + len(self.waiting) + self.frontend.entering

    def snapshot(self) -> tuple[int, int, int, int, int]:
        batch = self.batch_tokens if self.busy else 0
        return (len(self.running), len(self.waiting), self.blocks_in_use(), self.capacity, batch)

    def holds_work(self) -> bool:
        """A request runs or waits here, or is in the API server's inbound stage on its way."""
        return self.busy or self.frontend.entering > 0

    def fresh_memory(self) -> None:
        """An empty KV memory, as a newly started engine has (an autoscaler reusing this slot
        for a new replica); only while the replica holds nothing."""
        if self.holds_work():
            raise RuntimeError(f"simulation bug: replica {self.index} restarted while busy")
        # the old memory holds nothing (an idle replica runs no sequence) and jumps no more,
        # so the fleet's total is the same without it
        kv = build_kv_memory(self.env, self.capacity, self.config, self.recorder, self.fleet)
        self._use_memory(kv)

    # --- arrivals -----------------------------------------------------------------------
    def submit(self, request: Request) -> None:
        self.frontend.accept(request, self._deliver)

    def _enter(self, request: Request) -> None:
        """The request reaches the engine's waiting queue (from the front end)."""
        self.waiting.append(Seq(request))
        if not self.busy:
            # Pick the first batch one scheduling step from now (with a step of 0: at this
            # instant, after the scheduler has placed all it places now), so that what is placed
            # here meanwhile joins it.
            self.busy = True
            self.env.alarm_after(self.step_ms, SCHEDULER, self._kick)
        elif self.jump is not None:
            self._cut_jump()

    def _kick(self, _event: Alarm) -> None:
        self.t = self.env.now
        self._begin()

    # --- one iteration ------------------------------------------------------------------
    def _begin(self) -> None:
        if not self.running and not self.waiting:
            self.busy = False
            self.batch_tokens = 0
            self.on_idle()
            return
        if self.fast_forward and not self.waiting and not self.prefilling and self._start_jump():
            return
        self._start_step()

    def _start_step(self) -> None:
        it = self.it
        plan, need, budget, free, preempted = self._plan_running(it)
        # as vLLM: after a preemption no waiting request starts this iteration
        if not preempted and (self.steps == 1 or it % self.steps == 0 or not self.running):
            need = self._admit_waiting(plan, need, budget, free)
        decoding, kv = self.decoding, self.kv
        decodes = decoding.count
        if not plan and not decodes:
            self._stalled()
            return
        kv.hold(need)
        prefill = pairs = context = 0
        for seq, chunk, blocks in plan:
            seq.blocks += blocks
            done = seq.done
            prefill += chunk
            pairs += chunk * done + chunk * (chunk + 1) // 2
            context += done
        step = self.latency.iteration_ms(prefill, pairs, context, decodes, decoding.context(it))
        self.chunks = plan
        tokens = prefill + decoding.verified_tokens()  # the decodes' tokens through the model
        self.batch_tokens = tokens
        start, level = self.t, kv.level
        end = start + step
        if self._watched:
            self._observer.iteration(self.index, start, end, prefill, decodes, level)
        self.meter.step(start, end, tokens, len(self.running), level)
        if self._attributing:
            self.attribution.stepped(self.index, start, end, plan, decoding, it)
        self._timer = self.env.alarm_at(end, RELEASE, self._timer_callback)  # `_schedule`
        self._end = end

    def _stalled(self) -> None:
        """Nothing can run: a replica whose blocks all belong to running sequences always fits
        one of them, so here that is a bug (a P/D prefill replica holding blocks for transfers
        waits instead: pd_replicas.py)."""
        raise RuntimeError(f"simulation bug: replica {self.index} scheduled an empty batch")

    def _plan_running(self, it: int) -> tuple[list, int, int, int, bool]:
        """Chunks for running prefills and the blocks this iteration needs, preempting as needed."""
        # min, max and ceil_div written out below: this runs once per stepped iteration
        preempted = False
        kv, decoding, size = self.kv, self.decoding, self.block_size
        while True:
            free = kv.free()
            need = decoding.new_blocks(it)
            # with speculation the verified tokens may fill the budget: decodes still run
            budget = self.max_tokens - decoding.verified_tokens()
            if budget < 0:
                budget = 0
            plan = []
            for seq in self.prefilling:
                if budget == 0:
                    break
                chunk = seq.target - seq.done
                if chunk > budget:
                    chunk = budget
                blocks = -(-(seq.done + chunk) // size) - seq.blocks
                plan.append((seq, chunk, blocks))
                need += blocks
                budget -= chunk
            if need <= free:
                return plan, need, budget, free, preempted
            self._observer.preempting(self.index, need, free)
            self._preempt_newest(it)
            preempted = True

    def _admit_waiting(self, plan: list, need: int, budget: int, free: int) -> int:
        """Start waiting requests from the front while budget, seats and blocks allow."""
        waiting, kv, size = self.waiting, self.kv, self.block_size
        admits = self.capacity_rule.admits
        caches, reserves = self._caches, self._reserves
        hits = revived = 0  # a plain memory's prompt_hits
        left = False
        while waiting and budget > 0 and len(self.running) < self.max_seqs:
            seq = waiting[0]
            # cached leading blocks (prefix caching) need no compute and no new block; those
            # that are free now leave the free blocks
            if caches:
                hits, revived = kv.prompt_hits(seq)
            done = hits * size
            chunk = seq.target - done
            if chunk > budget:  # min(seq.target - done, budget), without the call
                chunk = budget
            blocks = -(-(done + chunk) // size) - hits  # ceil_div
            # a request the capacity rule refuses waits, and so does everything behind it
            # (FIFO); nothing is preempted for it (capacity.py)
            if not admits(seq, hits, need + revived, blocks, free, bool(self.running)):
                break
            waiting.popleft()
            if reserves:
                self.capacity_rule.started(seq)
            if caches:
                kv.start(seq, hits)
            need += revived
            self.running[seq.request.seq] = seq
            self.prefilling.append(seq)
            plan.append((seq, chunk, blocks))
            need += blocks
            budget -= chunk
            left = True
        if left:
            self.on_room()
        return need

    def _preempt_newest(self, it: int) -> None:
        """Recompute preemption, as vLLM's (V1 `Scheduler._preempt_request`: its blocks freed,
        `num_computed_tokens = 0`, its output kept): it prefills its prompt and the tokens it has
        emitted again, then decodes on from there (docs/continuous_batching.md, "Preemption")."""
        seq = self.running.pop(next(reversed(self.running)))
        if seq.finish >= 0:
            blocks = self.decoding.blocks_held(seq, it - 1)
            # read from the decode set before it forgets the sequence: `restart` recomputes them
            seq.generated = self.decoding.generated(seq, it - 1)
            self.decoding.remove(seq)
        else:
            blocks = seq.blocks
            self.prefilling.remove(seq)
        self.kv.preempt(seq, blocks)
        if self._reserves:
            self.capacity_rule.released(seq)
        seq.restart()
        self.waiting.appendleft(seq)
        self.recorder.preempted(seq.request)

    def _schedule(self, end: float) -> None:
        self._timer = self.env.alarm_at(end, RELEASE, self._timer_callback)
        self._end = end

    def _on_timer(self, event: Alarm) -> None:
        if event is not self._timer:
            return  # the end of a jump that a new request cut short
        if self.jump is not None:
            self._end_jump()
        else:
            self._end_step()

    def _end_step(self) -> None:
        it, end, kv, registers = self.it, self._end, self.kv, self._registers
        for seq, chunk, _ in self.chunks:
            seq.done += chunk
            if registers:
                kv.computed(seq)
            if seq.done == seq.target:
                self._prefilled(seq, it, end)
        self.chunks = []
        finishing = self.decoding.pop_finishing(it)  # `_finish_decodes`, without a call when
        if finishing:  # nothing finishes (most iterations)
            self._finish_decodes(finishing, it, end)
        self.it, self.t = it + 1, end
        self._begin()

    def _prefilled(self, seq: Seq, it: int, end: float) -> None:
        self.prefilling.remove(seq)
        seq.generated += 1
        if seq.generated == 1:
            self.recorder.first_token(seq.request, self.frontend.first_token_ms(end))
        if seq.generated >= seq.decode:
            self._finish(seq, seq.blocks, end)
        else:
            # The next iteration decodes with target + 1 tokens: tokens = iteration + off.
            self.decoding.add(seq, seq.target - it, it + seq.decode - seq.generated)

    def _finish_decodes(self, finishing: list[Seq], it: int, end: float) -> None:
        """The decoding sequences that finish at the end of iteration `it` (`pop_finishing`)."""
        blocks_held = self.decoding.blocks_held
        for seq in finishing:
            self._finish(seq, blocks_held(seq, it), end)

    def _finish(self, seq: Seq, blocks: int, end: float) -> None:
        self.kv.finish(seq, blocks)
        del self.running[seq.request.seq]
        if self._reserves:
            self.capacity_rule.released(seq)
        self.recorder.finished(seq.request, self.frontend.respond(seq.request, end))

    # --- fast-forward (planned in fast_forward.py) ----------------------------------------
    def _start_jump(self) -> bool:
        """Jump over the decode-only iterations ahead, if there are enough to be worth it."""
        jump = plan_jump(self.decoding, self.it, self.t, self.kv.free(), self.latency)
        if jump is None:
            return False
        self.jump = jump
        self.kv.grow(jump)
        self.batch_tokens = self.decoding.count
        end = jump.ends[-1]
        self._timer = self.env.alarm_at(end, RELEASE, self._timer_callback)  # `_schedule`
        self._end = end
        return True

    def _cut_jump(self) -> None:
        end = self.jump.cut(self.env.now)
        if end is not None:
            self._schedule(end)

    def _end_jump(self) -> None:
        jump, self.jump = self.jump, None
        k, ends, need = jump.k, jump.ends, jump.need
        if k < len(ends):  # a cut jump took fewer iterations than planned
            ends, need = ends[:k], need[:k]
        decoding = self.decoding
        self.meter.jump(self.t, ends, decoding.count, self.kv.level, need)
        if self._attributing:
            self.attribution.jumped(self.index, self.t, ends, decoding, jump.first)
        self.kv.end_growth()
        end, last = ends[-1], jump.last
        finishing = decoding.pop_finishing(last)
        if finishing:
            self._finish_decodes(finishing, last, end)
        self.it, self.t = last + 1, end
        self._begin()
