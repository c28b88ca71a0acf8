"""The seams between the scheduler and a cluster model, as `typing.Protocol`s.

`ServiceModel` is what the engine, the dispatcher, the gateway's admission rules and the timeline
ask of a cluster; a new model implements every member. tests/sim/cluster/test_service_models.py
runs a conformance suite over every registered model and checks docs/architecture.md's contract
table against this class. `LatencyModel` is what a continuous-batching replica asks of its latency
model once per iteration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import simpy

from simsched.sim.recorder import Recorder
from simsched.sim.requests import Request

# Per replica: (running, waiting, kv_blocks_used, kv_blocks_total, batch_tokens).
ReplicaSnapshot = tuple[int, int, int, int, int]


@runtime_checkable
class ServiceModel(Protocol):
    """A cluster model, built as `Model(env, config, recorder)` from its `cluster` settings."""

    kv_blocks_total: int  # the KV blocks of the whole cluster
    tput: float  # sustained service tokens per ms: the gateway's queue-wait estimate divides by it

    def __init__(self, env: simpy.Environment, config: Any, recorder: Recorder) -> None: ...

    @staticmethod
    def sustained_tokens_per_ms(config: Any) -> float:
        """`tput` from the settings alone, for describing a scenario without running it."""
        ...

    def kv_blocks_in_use(self) -> int:
        """Blocks held now; the admission rules and the dispatch gate compare it with the total."""
        ...

    def kv_peak_ratio(self) -> float:
        """The largest fraction of a KV cache held at any instant so far, over the fullest
        replica; above 1 only for a model that does not enforce its capacity (token_server)."""
        ...

    def fits(self, request: Request) -> bool:
        """Whether the cluster could ever hold the request; one that cannot is shed at dispatch."""
        ...

    def has_room(self) -> bool:
        """Whether the scheduler may dispatch another request now."""
        ...

    def room_available(self) -> simpy.Event:
        """An event that fires when `has_room` may have become true."""
        ...

    def known_ttft_ms(self, request: Request, wait_ms: float) -> float:
        """The TTFT when it is known at dispatch, else NaN (the model records it later)."""
        ...

    def start(self, request: Request) -> simpy.Event | None:
        """Take the request; an event means "busy until it fires", None means "ask has_room"."""
        ...

    def snapshot(self) -> list[ReplicaSnapshot]:
        """The timeline's view, one tuple per replica."""
        ...

    def is_idle(self) -> bool:
        """No request in service and no KV held: the timeline may stop sampling."""
        ...


@runtime_checkable
class LatencyModel(Protocol):
    """The duration of one iteration from what it computes (see `latency.py` for the terms).

    `maximum` is `max` for one iteration or `np.maximum` for a run of decode-only iterations
    with an array `decode_context`; both must evaluate the same operations in the same order.
    """

    before_ms: float  # front-end time per request before its first token (the replica adds it)
    after_ms: float  # and after its last token

    def iteration_ms(
        self,
        prefill_tokens: int,
        prefill_pairs: int,
        prefill_context: int,
        decode_seqs: int,
        decode_context: Any,
        maximum: Callable = max,
    ) -> Any: ...
