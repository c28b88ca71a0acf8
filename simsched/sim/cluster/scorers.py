"""Scoring routers: each scorer rates every replica with room in [0, 1]; the router takes the
highest weighted sum, as llm-d's scheduler combines its scorers.

- `prefix_cache` (precise): the share of the request's prompt blocks that the replica's prefix
  cache holds now, as a leading run (what the request would hit there). Reads the simulated
  caches, so it needs `prefix_caching: true`.
- `prefix_cache_approx`: the same share, from an index of the block keys of requests routed to
  each replica (least recently routed forgotten beyond the replica's block count), as llm-d's
  approximate scorer remembers where prefixes went instead of asking the engines.
- `queue_depth`: `(max - q) / (max - min)` of outstanding (running + waiting) requests `q`
  across the candidates (all 1 when equal).
- `kv_utilization`: `1 - blocks in use / blocks`.

A scorer rates all candidates in one call (`scores`: one column of the sums); one that keeps
state of its own (`remembers`) hears where each request went (`routed`), and the router calls
only those (scorers that read the replicas need no word, and a call per scorer per request
adds up).

Ties (equal sums) are broken at random from the run's own stream (`TieBreak`, from the scenario
seed), never by replica index, so a light load spreads evenly.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from simsched.sim.requests import Request
from simsched.workload.prefixes import KEY_SPAN, Run

ROUTER_STREAM = 0x524F55544552  # "ROUTER": the router's own child of the scenario seed
BUFFER = 4096


class TieBreak:
    """Uniform picks among tied replicas, from a numpy stream drawn in blocks."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(np.random.SeedSequence([seed, ROUTER_STREAM]))
        self._draws: list[float] = []

    def pick(self, tied: list[Any]) -> Any:
        if len(tied) == 1:
            return tied[0]
        if not self._draws:
            self._draws = self._rng.random(BUFFER).tolist()[::-1]
        return tied[int(self._draws.pop() * len(tied))]


class PromptKeys:
    """The key runs of the request being routed and how many of its blocks could hit (never
    the last prompt token), computed once per request for all scorers; its block keys only for
    the approximate scorer, which indexes keys."""

    def __init__(self, block_size: int) -> None:
        self.block_size = block_size
        self._request: Request | None = None
        self._runs: tuple[tuple[Run, ...], int] = ((), 0)
        self._keys: list[int] | None = None

    def __call__(self, request: Request) -> tuple[tuple[Run, ...], int]:
        if request is not self._request:
            prefix, size = request.prefix, self.block_size
            self._request = request
            self._keys = None
            self._runs = (
                ((), 0)
                if prefix is None
                else (prefix.runs(size), (max(1, request.prefill_tokens) - 1) // size)
            )
        return self._runs

    def keys(self, request: Request) -> tuple[list[int], int]:
        runs, limit = self(request)
        if self._keys is None:
            self._keys = [chain * KEY_SPAN + j for chain, lo, hi in runs for j in range(lo, hi)]
        return self._keys, limit


class PrefixCacheScorer:
    """Reads each candidate's KV memory as it is at this instant (a fast-forward jump's
    evictions included), so fast-forward on and off route alike."""

    remembers = False  # reads the replicas; `routed` has nothing to note

    def __init__(self, replicas: Sequence[Any], keys: PromptKeys) -> None:
        self.keys = keys

    def scores(self, request: Request, candidates: list[Any]) -> list[float]:
        runs, limit = self.keys(request)
        if limit == 0 or not runs:
            return [0.0] * len(candidates)
        return [r.kv.hit_blocks(runs, limit) / limit for r in candidates]

    def routed(self, request: Request, replica: Any) -> None:
        pass


class ApproxPrefixScorer:
    remembers = True  # indexes the keys of the requests routed to each replica (`routed`)

    def __init__(self, replicas: Sequence[Any], keys: PromptKeys) -> None:
        self.keys = keys
        self.index: list[OrderedDict[int, None]] = [OrderedDict() for _ in replicas]
        self.capacity = [r.capacity for r in replicas]

    def scores(self, request: Request, candidates: list[Any]) -> list[float]:
        keys, limit = self.keys.keys(request)
        if limit == 0 or not keys:
            return [0.0] * len(candidates)
        out = []
        for replica in candidates:
            seen = self.index[replica.index]
            hits = 0
            for key in keys:
                if hits >= limit or key not in seen:
                    break
                hits += 1
            out.append(hits / limit)
        return out

    def routed(self, request: Request, replica: Any) -> None:
        keys, _ = self.keys.keys(request)
        seen = self.index[replica.index]
        for key in keys:
            seen[key] = None
            seen.move_to_end(key)
        excess = len(seen) - self.capacity[replica.index]
        for _ in range(max(0, excess)):
            seen.popitem(last=False)


class QueueDepthScorer:
    remembers = False

    def __init__(self, replicas: Sequence[Any], keys: PromptKeys) -> None:
        pass

    def scores(self, request: Request, candidates: list[Any]) -> list[float]:
        depth = [r.outstanding() for r in candidates]
        low, high = min(depth), max(depth)
        if high == low:
            return [1.0] * len(candidates)
        return [(high - q) / (high - low) for q in depth]

    def routed(self, request: Request, replica: Any) -> None:
        pass


class KvUtilizationScorer:
    remembers = False

    def __init__(self, replicas: Sequence[Any], keys: PromptKeys) -> None:
        pass

    def scores(self, request: Request, candidates: list[Any]) -> list[float]:
        return [1.0 - r.blocks_in_use() / r.capacity for r in candidates]

    def routed(self, request: Request, replica: Any) -> None:
        pass


SCORERS = {
    "prefix_cache": PrefixCacheScorer,
    "prefix_cache_approx": ApproxPrefixScorer,
    "queue_depth": QueueDepthScorer,
    "kv_utilization": KvUtilizationScorer,
}


def weighted_choice(scored: list[tuple[Any, float]], candidates: list[Any], request, ties):
    """The candidate with the highest weighted sum of scores; ties at random.

    Each scorer rates all candidates in one call (a column); the sums are folded column by
    column in the scorers' order, so each candidate's sum is `w1 * s1 + w2 * s2 + ...` added
    left to right, as a loop over scorers adds them (starting from `w1 * s1` rather than
    `0.0 + w1 * s1` differs only in the sign of a zero, which no comparison sees).
    """
    columns = iter(scored)
    scorer, weight = next(columns)
    totals = [weight * score for score in scorer.scores(request, candidates)]
    for scorer, weight in columns:
        scores = scorer.scores(request, candidates)
        totals = [total + weight * score for total, score in zip(totals, scores, strict=True)]
    return best_of(candidates, totals, ties)


def load_choice(queue_weight: float, kv_weight: float, candidates: list[Any], ties) -> Any:
    """`weighted_choice` for exactly [queue_depth, kv_utilization] (llm_d without prefix
    caching, the default router): the same two columns and sums, folded in one pass.

    Each total is `queue_weight * queue_score + kv_weight * kv_score`, the two products added
    left to right as `weighted_choice` adds them (`queue_weight * 1.0` is `queue_weight`), so
    the floats and the choice are the same; the router runs once per dispatched request, and
    the four lists and the zips of the general fold were most of its cost."""
    depth = [r.outstanding() for r in candidates]
    kv_terms = [kv_weight * (1.0 - r.blocks_in_use() / r.capacity) for r in candidates]
    return best_of(candidates, load_totals(queue_weight, depth, kv_terms), ties)


def load_totals(queue_weight: float, depth: list[int], kv_terms: list[float]) -> list[float]:
    """Each candidate's `queue_weight * queue_score + kv_term`: the queue score is 1 for the
    shallowest queue and 0 for the deepest (all 1 when every depth is the same), and the KV term
    the product `kv_weight * kv_score`, computed by the caller (a product is the same float
    whenever it is computed, so the sums are `weighted_choice`'s)."""
    low, high = min(depth), max(depth)
    if high == low:
        return [queue_weight + kv_term for kv_term in kv_terms]
    span = high - low
    return [
        queue_weight * ((high - q) / span) + kv_term
        for q, kv_term in zip(depth, kv_terms, strict=True)
    ]


def load_pick(
    queue_weight: float,
    kv_weight: float,
    replicas: Sequence[Any],
    limit: int,
    plain_counts: bool,
    ties: TieBreak,
) -> Any:
    """The default router's pick: the replicas with fewer than `limit` waiting (`with_room`),
    then `load_choice` over them, in one pass that takes each candidate's depth and KV term.

    A total is `queue_weight * queue_score + kv_term`, where the KV term is the product
    `kv_weight * (1.0 - in use / capacity)` that `load_choice` computes, taken earlier: a
    product is the same float whenever it is computed, so the sums and the choice are the
    same. `plain_counts`: every replica counts its outstanding requests as `Replica` does
    (running + waiting + entering), added up here without a call per replica."""
    candidates: list[Any] = []
    depth: list[int] = []
    kv_terms: list[float] = []
    # the appends bound once and the loop chosen once, not per replica: this runs once per
    # dispatched request over every replica
    candidate, add_depth, add_kv = candidates.append, depth.append, kv_terms.append
    if plain_counts:
        for replica in replicas:
            waiting = len(replica.waiting)
            if waiting < limit:
                candidate(replica)
                add_depth(len(replica.running) + waiting + replica.frontend.entering)
                add_kv(kv_weight * (1.0 - replica.blocks_in_use() / replica.capacity))
    else:
        for replica in replicas:
            if len(replica.waiting) < limit:
                candidate(replica)
                add_depth(replica.outstanding())
                add_kv(kv_weight * (1.0 - replica.blocks_in_use() / replica.capacity))
    if not candidates:
        raise AssertionError("no replica has room: the scheduler checks has_room first")
    return best_of(candidates, load_totals(queue_weight, depth, kv_terms), ties)


def best_of(candidates: list[Any], totals: list[float], ties) -> Any:
    """The candidate with the highest total; ties at random. A single best is taken without
    building the list of tied candidates (the tie-break draws nothing then)."""
    best = max(totals)
    if totals.count(best) == 1:
        return candidates[totals.index(best)]
    return ties.pick([r for r, total in zip(candidates, totals, strict=True) if total == best])
