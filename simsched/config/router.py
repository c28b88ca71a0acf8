"""`cluster.router`: a named router, or scorers combined by weights (no SimPy here).

A named router is a shorthand: `llm_d` (the default: llm-d's default weights, with simsched's
queue scorer, below), `round_robin`, `least_outstanding` (the `queue_depth` scorer alone) or
`least_kv` (fewest KV blocks in use, then fewest outstanding requests). A mapping
`{scorers: [{name, weight}, ...]}` scores every replica with room and picks the highest sum,
as llm-d's scheduler does; `cluster/scorers.py` has the scorers.

`llm_d` is llm-d's default weights, with simsched's queue scorer. The weights are the default
profile of the Gateway API Inference Extension's endpoint picker, which llm-d deploys:
`queue-scorer` weight 2, `kv-cache-utilization-scorer` weight 2 and `prefix-cache-scorer`
weight 3 (kubernetes-sigs/gateway-api-inference-extension,
config/charts/inferencepool/templates/epp-config.yaml, `default-plugins.yaml`, at commit
0ae94dfb). Its prefix scorer remembers where prefixes were routed (here `prefix_cache_approx`),
and it is included only when `prefix_caching` is on: without caches a prefix hit saves nothing.
The queue scorer is simsched's `queue_depth`, which counts running + waiting requests; the
extension's `queue-scorer` counts waiting requests only. Kept so: every default-router output
would change with it.

`least_kv` keeps llm-d's KV-utilisation scorer's blind spot on purpose (production-faithful):
waiting requests hold no blocks, so a replica with a long queue and a light cache looks idle to
it. WARNED_ROUTERS lists the routers the docs warn about; `plan` and `scenario` say so.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

ROUTER_NAMES = ("llm_d", "round_robin", "least_outstanding", "least_kv")
DEFAULT_ROUTER = "llm_d"
# Why each is warned about, in the words `plan` and `scenario` print (docs/continuous_batching.md)
WARNED_ROUTERS = {
    "least_kv": "waiting requests hold no KV blocks, so it keeps feeding a replica with a long "
    "queue while others idle; a capacity answer can depend on it (use the default llm_d, or "
    "least_outstanding)",
}
# llm-d's default weights, with simsched's queue scorer: (scorer, weight), the prefix scorer
# only with prefix caching on
LLM_D_LOAD_SCORERS = (("queue_depth", 2.0), ("kv_utilization", 2.0))
LLM_D_PREFIX_SCORER = ("prefix_cache_approx", 3.0)
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


def llm_d_profile(prefix_caching: bool) -> WeightedRouter:
    """The scorers and weights `llm_d` stands for (the module's docstring gives the source)."""
    pairs = [*LLM_D_LOAD_SCORERS, *([LLM_D_PREFIX_SCORER] if prefix_caching else [])]
    return WeightedRouter(scorers=[ScorerSpec(name=n, weight=w) for n, w in pairs])


def router_warning(cluster: Any) -> str | None:
    """A note on the cluster's router, when it is one the docs warn about; else None. Weighted
    scorers with no `queue_depth` share least_kv's blind spot: none of them counts a waiting
    request (KV blocks are taken when a request starts; a prefix is cached once computed)."""
    router = getattr(cluster, "router", None)
    if isinstance(router, WeightedRouter):
        names = [scorer.name for scorer in router.scorers]
        if "queue_depth" in names:
            return None
        return (
            f"cluster.router scorers ({', '.join(names)}): none counts waiting requests (no "
            "queue_depth), so it can keep feeding a replica with a long queue while others "
            "idle; a capacity answer can depend on it (add queue_depth, or use the default llm_d)"
        )
    if not isinstance(router, str) or router not in WARNED_ROUTERS:
        return None
    return f"cluster.router={router}: {WARNED_ROUTERS[router]}"


RouterSetting = Annotated[
    Literal["llm_d", "round_robin", "least_outstanding", "least_kv"] | WeightedRouter,
    BeforeValidator(_parse),
]
