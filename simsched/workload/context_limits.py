"""Refusing requests longer than the model serves (docs/continuous_batching.md, "Context length").

A served engine refuses a request whose prompt and output tokens together exceed the model's
context: vLLM's API server answers such a request with an error (its `--max-model-len`, which
defaults to what the config.json states). Simulated, such a request would be served as if the
model could attend that far, a number no deployment gives. So a workload with one is refused
before the run, naming the tenant's setting, how many requests and the longest; the model's
`max_position_embeddings` states the limit (the presets carry their config's), and a model
without one is not checked.

A tenant's limit is the shortest context among the pools that may serve it (pool_eligibility.py):
the router does not look at lengths, so any of them may get the request. Sessions are checked on
their plans: a turn's prompt is the conversation so far (the system prompt, every earlier message
and answer) and its message, so a session's longest request is its last turn. Closed-loop clients
that stop at `duration_s` send as many of their planned requests as the run lets them: theirs are
checked as they are sent (`send_limits`, sim/session_feed.py), the first too long ending the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from simsched.config import presets
from simsched.config.load_scale import at_load_scale
from simsched.config.pool_eligibility import eligible_pools
from simsched.errors import InputError
from simsched.workload.build import prefix_rng, tenant_rng
from simsched.workload.session_plans import session_plans


class ContextError(InputError):
    """A workload with requests longer than the model serves: bad input, which a plan reports
    as a combination that cannot run rather than a value to narrow its range around."""


@dataclass(frozen=True)
class Limit:
    """The shortest context a tenant's requests may meet, and whose it is."""

    tokens: int
    model: str
    pool: str | None = None  # the pool serving it (cluster.pools), None for a single pool


@dataclass(frozen=True)
class Overrun:
    """One tenant's requests (or sessions) longer than its limit."""

    tenant: int
    over: int
    total: int
    longest: int
    sessions: bool = False


def tenant_limits(scenario: Any) -> list[Limit | None]:
    """Per tenant, in declaration order: the shortest context that may serve it, or None when
    no model states one (or the cluster has no model)."""
    cluster = scenario.cluster
    pools = getattr(cluster, "pools", None)
    if pools is None:
        limit = _limit_of(getattr(cluster, "model", None))
        return [limit] * len(scenario.tenants)
    by_name = {pool.name: _limit_of(pool.model, pool.name) for pool in pools}
    limits = []
    for entry, decode in eligible_pools(scenario.tenants, pools):
        stated = [by_name[name] for name in (*entry, *decode) if by_name[name] is not None]
        limits.append(min(stated, key=lambda limit: limit.tokens) if stated else None)
    return limits


def _limit_of(model: Any, pool: str | None = None) -> Limit | None:
    tokens = getattr(model, "max_position_embeddings", None)
    return None if tokens is None else Limit(tokens, model.name, pool)


def check_context(scenario: Any, table: Any) -> None:
    """Refuse a workload (its generated or replayed requests, and its sessions, drawn up front
    as the run draws them) with a request longer than its tenant's model serves: one line, the
    first such tenant in the scenario's order, and how many others have them too."""
    limits = tenant_limits(scenario)
    if all(limit is None for limit in limits):
        return
    plans = session_plans(at_load_scale(scenario), tenant_rng, prefix_rng)
    overruns = table_overruns(limits, table) + session_overruns(limits, plans)
    if overruns:
        overruns.sort(key=lambda overrun: overrun.tenant)
        raise _refusal(scenario, limits, overruns[0], len(overruns) - 1)


def table_overruns(limits: list[Limit | None], table: Any) -> list[Overrun]:
    """Each tenant's requests longer than its limit: one NumPy pass over the columns."""
    if len(table) == 0:
        return []
    most = np.array([np.inf if limit is None else limit.tokens for limit in limits])
    tenant = table.tenant.astype(np.int64)
    lengths = table.prefill_tokens.astype(np.int64) + table.decode_tokens.astype(np.int64)
    over = lengths > most[tenant]
    if not over.any():
        return []
    overruns = []
    for index in np.unique(tenant[over]).tolist():
        mine, hit = tenant == index, over & (tenant == index)
        overruns.append(Overrun(index, int(hit.sum()), int(mine.sum()), int(lengths[hit].max())))
    return overruns


def session_overruns(limits: list[Limit | None], plans: Sequence[Any]) -> list[Overrun]:
    """Each reactive tenant's sessions (or closed-loop requests) whose longest request, a
    session's last turn with the whole conversation before it, is longer than its limit."""
    overruns = []
    for plan in plans:
        limit = limits[plan.tenant]
        if limit is None or len(plan.turns) == 0 or sent_as_it_goes(plan):
            continue
        longest = session_lengths(plan)
        over = longest > limit.tokens
        if over.any():
            sessions = plan.kind == "sessions"
            worst = int(longest.max())
            overruns.append(Overrun(plan.tenant, int(over.sum()), len(longest), worst, sessions))
    return overruns


def sent_as_it_goes(plan: Any) -> bool:
    """Closed-loop clients that stop at `duration_s`: how many of their `count` planned
    requests they send depends on the run, so each is checked as it is sent (`send_limits`)."""
    return plan.kind == "closed_loop" and plan.spec.duration_s is not None


def send_limits(scenario: Any, plans: Sequence[Any]) -> dict[int, Limit]:
    """The limits the reactive feed checks as it sends (`sent_as_it_goes`), by tenant index."""
    limits = tenant_limits(scenario)
    return {
        plan.tenant: limits[plan.tenant]
        for plan in plans
        if sent_as_it_goes(plan) and limits[plan.tenant] is not None
    }


def sent_refusal(
    scenario: Any, index: int, limit: Limit, tokens: int, at_ms: float
) -> ContextError:
    """A closed-loop client's request, as it is sent, longer than its model serves."""
    tenant = scenario.tenants[index]
    parts = _parts(scenario, index, Overrun(index, 1, 1, tokens))
    return ContextError(
        "",
        _setting(scenario, index),
        f"a request the closed-loop clients of tenant {tenant.id!r} sent at "
        f"{at_ms / 1000:,.3f} s has {tokens:,} tokens, more than {_whose(limit)} serves, "
        f"{limit.tokens:,} ({parts}), "
        "which a served engine refuses: shorten its lengths, or serve a model with a longer "
        f"context ({_longer(limit)}, N your deployment's --max-model-len)",
    )


def session_lengths(plan: Any) -> np.ndarray:
    """Each session's longest request: its system prompt (if it has one) and every turn's
    message and answer, the last turn's prompt and answer together."""
    sizes = np.asarray(plan.message, dtype=np.int64) + np.asarray(plan.answer, dtype=np.int64)
    starts = np.asarray(plan.first_turn, dtype=np.int64)
    totals = np.add.reduceat(sizes, starts) if len(sizes) else np.zeros(0, dtype=np.int64)
    system = np.where(np.asarray(plan.group) >= 0, plan.system_tokens, 0)
    return totals + system


def _refusal(
    scenario: Any, limits: list[Limit | None], overrun: Overrun, others: int
) -> ContextError:
    index = overrun.tenant
    tenant, limit = scenario.tenants[index], limits[index]
    what = "sessions" if overrun.sessions else "requests"
    verb = "reaches" if overrun.over == 1 else "reach"
    also = f"; {others} other tenant{'s' * (others != 1)} too" if others else ""
    parts = _parts(scenario, index, overrun)
    return ContextError(
        "",  # the caller names the scenario file
        _setting(scenario, index),
        f"{overrun.over:,} of the {overrun.total:,} {what} of tenant {tenant.id!r} {verb} more "
        f"tokens than {_whose(limit)} serves, {limit.tokens:,} ({parts}; the longest "
        f"{overrun.longest:,}), which a served engine refuses{also}: shorten them, or serve a "
        f"model with a longer context ({_longer(limit)}, N your deployment's --max-model-len)",
    )


def _whose(limit: Limit) -> str:
    return f"model {limit.model!r}" + (f" (pool {limit.pool!r})" if limit.pool else "")


def _longer(limit: Limit) -> str:
    """How to give the model a longer context: on a preset, the mapping that keeps the preset."""
    if limit.model in presets.MODEL_PRESETS:
        return f"model: {{preset: {limit.model}, max_position_embeddings: N}}"
    return "the model's max_position_embeddings: N"


def _parts(scenario: Any, index: int, overrun: Overrun) -> str:
    """What a request's length is made of, as the tenant's settings make it."""
    tenant = scenario.tenants[index]
    if overrun.sessions:
        return "a turn's prompt carries the conversation so far: the prefix, every earlier turn"
    if getattr(tenant, "prefix", None) is not None:
        return f"prompt and output, with the prefix's {tenant.prefix.tokens:,} tokens"
    own = tenant.arrivals is not None and getattr(tenant, "trace", None) is None
    if own and getattr(scenario, "trace", None) is not None:  # its rows may be the trace's
        return "prompt and output together, from its lengths or the scenario's trace"
    return "prompt and output together"


def _setting(scenario: Any, index: int) -> str:
    """The tenant's setting its lengths come from: its trace, the scenario's, or the tenant
    (its lengths, a shared prefix and, for sessions, its turns add up)."""
    tenant = scenario.tenants[index]
    if getattr(tenant, "trace", None) is not None:
        return f"tenants[{index}].trace"
    if tenant.arrivals is None and getattr(scenario, "trace", None) is not None:
        return "trace"
    if getattr(tenant, "prefix", None) is None and tenant.arrivals.kind not in ("sessions",):
        return f"tenants[{index}].prefill_tokens"
    return f"tenants[{index}]"
