"""Refusing requests longer than the model serves (docs/continuous_batching.md, "Context length").

A served engine refuses a request whose prompt and output tokens together exceed the model's
context: vLLM's API server answers such a request with an error (its `--max-model-len`, which
defaults to the config.json's `max_position_embeddings`). Simulated, such a request would be
served as if the model could attend that far, a number no deployment gives. So a workload with
one is refused before the run, naming the tenant's setting, how many requests and the longest;
the model's `max_position_embeddings` states the limit (the presets carry their config's), and a
model without one is not checked.

A tenant's limit is the shortest context among the pools that may serve it (pool_eligibility.py):
the router does not look at lengths, so any of them may get the request. Sessions are checked on
their plans: a turn's prompt is the conversation so far (the system prompt, every earlier message
and answer) and its message, so a session's longest request is its last turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from simsched.config.pool_eligibility import eligible_pools
from simsched.errors import InputError


def tenant_limits(scenario: Any) -> list[tuple[int, str] | None]:
    """Per tenant, in declaration order: (context tokens, the model's name) of the shortest
    context that may serve it, or None when no model states one (or the cluster has none)."""
    cluster = scenario.cluster
    pools = getattr(cluster, "pools", None)
    if pools is None:
        limit = _limit_of(getattr(cluster, "model", None))
        return [limit] * len(scenario.tenants)
    by_name = {pool.name: _limit_of(pool.model) for pool in pools}
    limits = []
    for entry, decode in eligible_pools(scenario.tenants, pools):
        stated = [by_name[name] for name in (*entry, *decode) if by_name[name] is not None]
        limits.append(min(stated) if stated else None)
    return limits


def _limit_of(model: Any) -> tuple[int, str] | None:
    tokens = getattr(model, "max_position_embeddings", None)
    return None if tokens is None else (tokens, model.name)


def check_table_context(scenario: Any, table: Any) -> None:
    """Refuse a generated or replayed workload with a request longer than its tenant's model
    serves. One pass over the columns (a NumPy comparison), so a plan pays it per probe."""
    limits = tenant_limits(scenario)
    if len(table) == 0 or all(limit is None for limit in limits):
        return
    most = np.array([np.inf if limit is None else limit[0] for limit in limits])
    tenant = table.tenant.astype(np.int64)
    lengths = table.prefill_tokens.astype(np.int64) + table.decode_tokens.astype(np.int64)
    over = lengths > most[tenant]
    if not over.any():
        return
    index = int(tenant[over][0])  # the first tenant, in arrival order, with such a request
    mine = over & (tenant == index)
    count, longest = int((tenant == index).sum()), int(lengths[mine].max())
    raise _refusal(scenario, index, int(mine.sum()), count, "requests", longest)


def check_session_context(scenario: Any, plans: Sequence[Any]) -> None:
    """Refuse sessions (and closed-loop clients) whose longest request, a session's last turn
    with the whole conversation before it, is longer than its tenant's model serves."""
    limits = tenant_limits(scenario)
    for plan in plans:
        limit = limits[plan.tenant]
        if limit is None or len(plan.turns) == 0:
            continue
        longest = _session_lengths(plan)
        over = longest > limit[0]
        if over.any():
            what = "sessions" if plan.kind == "sessions" else "requests"
            raise _refusal(scenario, plan.tenant, int(over.sum()), len(longest), what,
                           int(longest.max()))  # fmt: skip


def _session_lengths(plan: Any) -> np.ndarray:
    """Each session's longest request: its system prompt (if it has one) and every turn's
    message and answer, the last turn's prompt and answer together."""
    sizes = np.asarray(plan.message, dtype=np.int64) + np.asarray(plan.answer, dtype=np.int64)
    starts = np.asarray(plan.first_turn, dtype=np.int64)
    totals = np.add.reduceat(sizes, starts) if len(sizes) else np.zeros(0, dtype=np.int64)
    system = np.where(np.asarray(plan.group) >= 0, plan.system_tokens, 0)
    return totals + system


def _refusal(
    scenario: Any, index: int, over: int, total: int, what: str, longest: int
) -> InputError:
    tenant = scenario.tenants[index]
    tokens, model = tenant_limits(scenario)[index]
    carried = " (a turn's prompt carries the conversation so far)" if what == "sessions" else ""
    return InputError(
        "",  # the caller names the scenario file
        _setting(scenario, index),
        f"{over:,} of the {total:,} {what} of tenant {tenant.id!r} reach more prompt and output "
        f"tokens than {model}'s context of {tokens:,}{carried}, the longest {longest:,}, which a "
        "served engine refuses: shorten them, or serve a model with a longer context (the "
        "model's max_position_embeddings; set it to your deployment's --max-model-len)",
    )


def _setting(scenario: Any, index: int) -> str:
    """The tenant's setting its lengths come from: its trace, the scenario's, or its lengths."""
    tenant = scenario.tenants[index]
    if getattr(tenant, "trace", None) is not None:
        return f"tenants[{index}].trace"
    if tenant.arrivals is None and getattr(scenario, "trace", None) is not None:
        return "trace"
    return f"tenants[{index}].prefill_tokens"
