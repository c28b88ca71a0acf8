"""A replica's KV memory: the one seam between the batching loop and where KV blocks live.

The replica (replica.py) decides *what* runs; its `KvMemory` owns *the blocks*: what a prompt
about to start already has (prefix-cache hits), taking blocks as sequences grow, letting them go
when a sequence finishes or is preempted, the growth of a fast-forward jump, and a read-only view
for routers and the timeline that is right at the instant it is read, mid-jump included.

Two implementations: `PlainKv` here (blocks are a counter; nothing outlives its request) and
`PrefixCachedKv` (prefix_cache.py: vLLM's automatic prefix caching, indexed by prompt segment).
The replica picks one from `cluster.prefix_caching` (`replica.build_kv_memory`);
tests/sim/cluster/test_kv_memory.py runs one conformance suite over both.

`level` counts the blocks held by running sequences at the last iteration boundary (what the
batching loop plans with); during a jump the iterations take blocks as they start, so `in_use()`
adds the jump's growth up to now (`Jump.need`, cumulated per iteration). Every memory reports its
holds, releases and jumps to a `FleetKv` (kv_level.py), the cluster's running total that the KV
gate reads instead of asking every replica; a memory built alone reports to a fleet of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from simsched.sim.cluster.kv import KvPool
from simsched.sim.cluster.kv_level import FleetKv
from simsched.sim.recorder import Recorder

if TYPE_CHECKING:
    import simpy

    from simsched.sim.cluster.fast_forward import Jump
    from simsched.sim.cluster.sequences import Seq
    from simsched.workload.prefixes import Run


class KvMemory(Protocol):
    """What a replica asks of its KV memory (the conformance suite checks both implementations)."""

    capacity: int
    level: int  # held by running sequences at the last iteration boundary
    peak: int  # the most blocks ever held at once

    # --- the batching loop ------------------------------------------------------------------
    def free(self) -> int:
        """Blocks the batching loop may take (cached free blocks give way, so they count)."""
        ...

    def prompt_hits(self, seq: Seq) -> tuple[int, int]:
        """(leading blocks of a waiting sequence's prompt held here, of which free now)."""
        ...

    def start(self, seq: Seq, hits: int) -> None:
        """The sequence starts running with its first `hits` blocks computed (from `prompt_hits`);
        the caller takes the free ones among them with the iteration's `hold`."""
        ...

    def hold(self, blocks: int) -> None:
        """Take `blocks` new blocks now (the caller checked that `free()` covers them)."""
        ...

    def computed(self, seq: Seq) -> None:
        """A prefill chunk of the sequence was computed (its full blocks may now be shared)."""
        ...

    def finish(self, seq: Seq, blocks: int) -> None:
        """The sequence finished holding `blocks` blocks: let them go."""
        ...

    def preempt(self, seq: Seq, blocks: int) -> None:
        """The sequence is preempted holding `blocks` blocks: let them go. It will recompute its
        prompt and the tokens it emitted (`seq.target`, set by `Seq.restart`), so starting
        again needs ceil(seq.target / block_size) blocks less what `prompt_hits` finds."""
        ...

    def grow(self, jump: Jump) -> None:
        """A fast-forward jump starts: its iterations take `jump.need` blocks as they start."""
        ...

    def end_growth(self) -> None:
        """The jump (possibly cut short: `jump.k`) is over: hold what its iterations took."""
        ...

    # --- the read-only view: right at the instant it is read, mid-jump included ----------------
    def in_use(self) -> int:
        """Blocks held now."""
        ...

    def hit_blocks(self, runs: tuple[Run, ...], limit: int) -> int:
        """Leading blocks of a prompt (at most `limit`) that a request placed here now would hit."""
        ...

    def cached_free(self) -> int:
        """Free blocks that hold cached prefixes now (evictable)."""
        ...

    def clear(self) -> None:
        """Drop what the memory indexes at the end of a run (it is the bulk of a run's memory)."""
        ...


class PlainKv(KvPool):
    """KV blocks as a counter: a sequence's blocks are its own and go when it does."""

    def __init__(
        self,
        env: simpy.Environment,
        capacity: int,
        block_size: int,
        recorder: Recorder,
        fleet: FleetKv | None = None,
    ):
        super().__init__(capacity)
        self.env = env
        self.block_size = block_size
        self.recorder = recorder
        self.growth: Jump | None = None
        # the cluster's total this memory keeps up to date (its own when built alone)
        self.fleet = FleetKv(env) if fleet is None else fleet

    def hold(self, blocks: int) -> None:
        super().hold(blocks)
        self.fleet.held += blocks

    def release(self, blocks: int) -> None:
        super().release(blocks)
        self.fleet.held -= blocks

    def free(self) -> int:
        return self.capacity - self.level

    def prompt_hits(self, seq: Seq) -> tuple[int, int]:
        return 0, 0

    def start(self, seq: Seq, hits: int) -> None:
        pass

    def computed(self, seq: Seq) -> None:
        pass

    def finish(self, seq: Seq, blocks: int) -> None:
        self.release(blocks)

    def preempt(self, seq: Seq, blocks: int) -> None:
        self.release(blocks)

    def grow(self, jump: Jump) -> None:
        self.growth = jump
        self.fleet.jump_started(self)

    def end_growth(self) -> None:
        jump, self.growth = self.growth, None
        self.fleet.jump_ended(self)
        self.hold(jump.need[jump.k - 1])

    def in_use(self) -> int:
        jump = self.growth
        if jump is None:
            return self.level
        return self.level + jump.need_now(self.env.now)

    def hit_blocks(self, runs: tuple[Run, ...], limit: int) -> int:
        return 0

    def cached_free(self) -> int:
        return 0

    def clear(self) -> None:
        pass
