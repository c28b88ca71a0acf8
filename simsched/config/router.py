"""`cluster.router`: a named router, or scorers combined by weights (no SimPy here).

A named router is a shorthand: `round_robin`, `least_outstanding` (the `queue_depth` scorer
alone) or `least_kv` (fewest KV blocks in use, then fewest outstanding requests). A mapping
`{scorers: [{name, weight}, ...]}` scores every replica with room and picks the highest sum, as
llm-d's scheduler does; `cluster/scorers.py` has the scorers.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

ROUTER_NAMES = ("round_robin", "least_outstanding", "least_kv")
SCORER_NAMES = ("prefix_cache", "prefix_cache_approx", "queue_depth", "kv_utilization")
CACHE_SCORERS = ("prefix_cache",)  # read the replicas' simulated caches


class ScorerSpec(BaseModel):
    # strict, as every scenario model is: a weight of "3" or `true` is a typo, not a number
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: Literal["prefix_cache", "prefix_cache_approx", "queue_depth", "kv_utilization"]
    weight: Annotated[float, Field(gt=0, le=1e6, allow_inf_nan=False)] = 1.0


class WeightedRouter(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    scorers: Annotated[list[ScorerSpec], Field(min_length=1)]


def _parse(value: Any) -> Any:
    """A name or a scorer mapping, with one error that says which part is wrong."""
    if isinstance(value, str):
        if value not in ROUTER_NAMES:
            raise ValueError(f"unknown router {value!r} (known: {', '.join(ROUTER_NAMES)})")
        return value
    if isinstance(value, WeightedRouter):
        return value
    if not isinstance(value, dict):
        raise ValueError("must be a router name or a mapping {scorers: [{name, weight}, ...]}")
    try:
        return WeightedRouter.model_validate(value)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        if error["type"] == "literal_error":
            known = ", ".join(SCORER_NAMES)
            raise ValueError(
                f"{where}: unknown scorer {error['input']!r} (known: {known})"
            ) from None
        raise ValueError(f"{where}: {error['msg']}") from None


def uses_prefixes(cluster: Any) -> bool:
    """Whether a cluster setting reads prompt prefixes: it caches them, or a scorer routes on
    them (the approximate one works without caching). Trace prefix ids are read only then."""
    if cluster is None:
        return False
    if getattr(cluster, "prefix_caching", False):
        return True
    router = getattr(cluster, "router", None)
    return isinstance(router, WeightedRouter) and any(
        scorer.name in ("prefix_cache", "prefix_cache_approx") for scorer in router.scorers
    )


RouterSetting = Annotated[
    Literal["round_robin", "least_outstanding", "least_kv"] | WeightedRouter,
    BeforeValidator(_parse),
]
