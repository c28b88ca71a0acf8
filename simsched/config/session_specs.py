"""Arrival kinds that depend on the simulation: multi-turn sessions and closed-loop clients.

Imported by `arrival_specs.py` (at its end, after the open kinds they nest), never directly.
Their requests are not generated in advance: the session feed (`session_feed.py`) sends a
turn when the previous one has finished, as a client would. Everything random is still drawn up
front from the tenant's streams, so runs stay deterministic.

- `sessions`: sessions begin as an ordinary arrival process (`start`, any open kind); each has
  `turns` turns (a length distribution, at least 1). A turn's prompt is the conversation so far
  (the earlier prompts and answers) plus a new message of `prefill_tokens`; it answers with
  `decode_tokens`. The next turn arrives `think_time_ms` after the previous one's last token.
  If a turn is shed (429), the session ends (`on_shed: end`) or sends it again
  `retry_after_ms` after the 429 (`retry`, at most `max_retries` times, then it ends).
- `closed_loop`: `concurrency` clients, each sending a request, waiting for its last token (or
  its 429), thinking `think_time_ms`, and sending the next, as benchmark clients run with
  `--max-concurrency`; `count` requests in all, none started after `duration_s` if given.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from simsched.config.arrival_specs import OpenArrivalSpec
from simsched.config.length_specs import LengthSpec
from simsched.config.spec_base import (
    Count,
    MeasureOrZero,
    NonNegativeFloat,
    PositiveFloat,
    Spec,
)


class SessionArrivals(Spec):
    kind: Literal["sessions"]
    start: OpenArrivalSpec
    turns: LengthSpec
    think_time_ms: LengthSpec | None = None  # None: the next turn comes at once
    on_shed: Literal["end", "retry"] = "end"
    max_retries: Annotated[int, Field(ge=0, le=1000)] = 3
    # a client backs off after a 429 (as after an HTTP Retry-After); sending again at once
    # would meet the same full gateway at the same instant
    retry_after_ms: MeasureOrZero = 1000.0

    @field_validator("turns")
    @classmethod
    def _at_least_one_turn(cls, turns: LengthSpec) -> LengthSpec:
        # a fixed count may be 0 as a token count, but a session has at least one turn
        # (drawn counts are already clipped to at least 1)
        if isinstance(turns, int) and turns < 1:
            raise ValueError("a session has at least 1 turn")
        return turns


class ClosedLoopArrivals(Spec):
    kind: Literal["closed_loop"]
    start_ms: NonNegativeFloat = 0.0
    concurrency: Annotated[int, Field(ge=1, le=1_000_000)]
    count: Count
    duration_s: PositiveFloat | None = None
    think_time_ms: LengthSpec | None = None
