"""One session's state while a run goes (or one closed-loop request's): its plan, its turn, its
retries and the conversation so far as prefix segments (session_feed.py sends the turns)."""

from __future__ import annotations

from simsched.workload.prefixes import ChainIds
from simsched.workload.session_plans import SessionPlan


class Session:
    __slots__ = ("plan", "number", "turn", "retries", "ids", "ends", "tokens")

    def __init__(self, plan: SessionPlan, number: int, head: tuple[int, int] | None) -> None:
        self.plan, self.number, self.turn, self.retries = plan, number, 0, 0
        self.ids: list[int] = [head[0]] if head else []  # the history's chain ids
        self.ends: list[int] = [head[1]] if head else []
        self.tokens = head[1] if head else 0  # the conversation so far

    @property
    def index(self) -> int:
        """This turn's place in the plan's per-turn arrays."""
        return self.plan.first_turn[self.number] + self.turn

    def think_ms(self) -> float:
        return self.plan.think_ms[self.index]

    def sizes(self) -> tuple[int, int]:
        """This turn's prompt (history + new message) and answer."""
        index = self.index
        return self.tokens + self.plan.message[index], self.plan.answer[index]

    def segments(self, interner: ChainIds) -> tuple[list[int], list[int]]:
        """The history's segments, then this turn's message and its answer (so that a finished
        turn's answer is cached for the next turn)."""
        prompt, answer = self.sizes()
        parent = self.ids[-1] if self.ids else 0
        message = interner.chain(parent, ("message", self.plan.tenant_id, self.number, self.index))
        reply = interner.chain(message, "answer")
        return self.ids + [message, reply], self.ends + [prompt, prompt + answer]

    def answered(self, interner: ChainIds) -> None:
        """The turn was answered: it joins the history; the next turn is due."""
        self.ids, self.ends = self.segments(interner)
        self.tokens = self.ends[-1]
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
