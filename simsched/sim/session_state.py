"""One session's state while a run goes (or one closed-loop request's): its plan, its turn, its
retries and the conversation so far as prefix segments (session_feed.py sends the turns).

The conversation is a chain of segments, each pointing at the one before it (`Segment`): a turn
adds its message and its answer on top of the history it shares with every earlier turn, so a
session of n turns holds n pairs of segments, not the n(n+1)/2 a copied list per turn would (a
request keeps its prompt's prefix for the whole run).
"""

from __future__ import annotations

from simsched.workload.prefixes import ChainIds, Run, block_keys, block_runs
from simsched.workload.session_plans import SessionPlan


class Segment:
    """The prompt's tokens `[0, end)`, named by `chain_id`, after the segment `parent`."""

    __slots__ = ("chain_id", "end", "parent")

    def __init__(self, chain_id: int, end: int, parent: Segment | None) -> None:
        self.chain_id, self.end, self.parent = chain_id, end, parent


class ChainedPrefix:
    """A turn's prefix (the `workload.prefixes.Prefix` interface) over shared segments: the
    segment lists are rebuilt when asked (block keys, while the request runs) and not kept."""

    __slots__ = ("last",)

    def __init__(self, last: Segment) -> None:
        self.last = last

    @property
    def ids(self) -> list[int]:
        return [segment.chain_id for segment in self._chain()]

    @property
    def ends(self) -> list[int]:
        return [segment.end for segment in self._chain()]

    @property
    def tokens(self) -> int:
        return self.last.end

    def keys(self, block_size: int) -> list[int]:
        chain = self._chain()
        return block_keys([s.chain_id for s in chain], [s.end for s in chain], block_size)

    def runs(self, block_size: int) -> tuple[Run, ...]:
        """The keys as runs (what the replicas' caches index), rebuilt when asked."""
        chain = self._chain()
        return block_runs([s.chain_id for s in chain], [s.end for s in chain], block_size)

    def _chain(self) -> list[Segment]:
        chain, node = [], self.last
        while node is not None:
            chain.append(node)
            node = node.parent
        chain.reverse()
        return chain

    def __repr__(self) -> str:
        return f"ChainedPrefix(ids={self.ids}, ends={self.ends})"


class Session:
    __slots__ = ("plan", "number", "turn", "retries", "history", "sent")

    def __init__(self, plan: SessionPlan, number: int, head: tuple[int, int] | None) -> None:
        self.plan, self.number, self.turn, self.retries = plan, number, 0, 0
        # the conversation so far (its last segment; None: nothing yet)
        self.history: Segment | None = Segment(head[0], head[1], None) if head else None
        self.sent: ChainedPrefix | None = None  # the prefix of this turn's latest request

    @property
    def index(self) -> int:
        """This turn's place in the plan's per-turn arrays."""
        return self.plan.first_turn[self.number] + self.turn

    @property
    def tokens(self) -> int:
        """The conversation so far, in tokens."""
        return self.history.end if self.history is not None else 0

    def think_ms(self) -> float:
        return self.plan.think_ms[self.index]

    def sizes(self) -> tuple[int, int]:
        """This turn's prompt (history + new message) and answer."""
        index = self.index
        return self.tokens + self.plan.message[index], self.plan.answer[index]

    def segments(self, interner: ChainIds) -> ChainedPrefix:
        """The history's segments, then this turn's message and its answer (so that a finished
        turn's answer is cached for the next turn)."""
        prompt, answer = self.sizes()
        history = self.history
        parent = history.chain_id if history is not None else 0
        message = interner.chain(parent, ("message", self.plan.tenant_id, self.number, self.index))
        reply = interner.chain(message, "answer")
        asked = Segment(message, prompt, history)
        self.sent = ChainedPrefix(Segment(reply, prompt + answer, asked))
        return self.sent

    def answered(self) -> None:
        """The turn was answered: the segments its request was sent with join the history (the
        next turn's prompt shares them); the next turn is due."""
        self.history = self.sent.last
        self.turn += 1
        self.retries = 0

    def request_id(self) -> str:
        plan = self.plan
        if plan.kind == "closed_loop":
            return f"{plan.tenant_id}-{self.number:06d}"
        retry = f"-r{self.retries}" if self.retries else ""
        return f"{plan.tenant_id}-s{self.number:06d}-t{self.turn + 1:03d}{retry}"


def rough_mean(spec) -> float:
    """A think-time spec's rough mean in ms (for the timeline's sampling interval only)."""
    if isinstance(spec, int):
        return float(spec)
    for key in ("mean", "median"):
        if getattr(spec, key, None) is not None:
            return float(getattr(spec, key))
    low, high = getattr(spec, "low", None), getattr(spec, "high", None)
    return (low + high) / 2.0 if low is not None and high is not None else 1000.0
