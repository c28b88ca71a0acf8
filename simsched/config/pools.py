"""`cluster.pools`: groups of continuous-batching replicas with their own settings (no SimPy).

A pool is today's continuous-batching cluster with a `name` and a `role`: `mixed` (prefill and
decode on the same replica, as a single-pool cluster), `prefill` (computes prompts and the first
token, then ships the KV cache) or `decode` (receives KV caches and generates the rest). The
prefill and decode pools of one model form a P/D pair joined by `kv_transfer`, a link model
(docs/fleets.md). A single-pool `cluster: {service_model: continuous_batching, ...}` stays what
it was; `cluster: {pools: [...]}` selects this model.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from simsched.config.autoscale import replica_slots
from simsched.config.batching import ContinuousBatchingConfig
from simsched.config.router import uses_prefixes
from simsched.config.spec_base import Measure, MeasureOrZero, SubfieldError

PoolRole = Literal["mixed", "prefill", "decode"]
ENTRY_ROLES = ("mixed", "prefill")  # where a dispatched request starts


def pools_of(cluster: Any) -> list[Any]:
    """The pools of `cluster: {pools: [...]}`, or the one cluster as its only pool."""
    return getattr(cluster, "pools", None) or [cluster]


# Named links: Gb/s per direction and a one-way latency. docs/fleets.md, "KV transfer", gives the
# sources: NVLink 4 is 900 GB/s per H100 over both directions (NVIDIA H100 datasheet), so 450
# GB/s = 3,600 Gb/s each way; ConnectX-7 / Quantum-2 NDR InfiniBand and 400 GbE RoCE ports carry
# 400 Gb/s (NVIDIA ConnectX-7 product brief); 100 GbE is IEEE 802.3 100GBASE. The latencies are
# hardware orders of magnitude (a few microseconds for RDMA, tens for TCP); a transfer engine's
# own setup time is not in them (the measurements found none for NIXL or Mooncake).
KV_LINK_PRESETS: dict[str, dict[str, float]] = {
    "nvlink": {"gbps": 3600.0, "latency_ms": 0.005},
    "infiniband_400g": {"gbps": 400.0, "latency_ms": 0.01},
    "roce_400g": {"gbps": 400.0, "latency_ms": 0.01},
    "ethernet_100g": {"gbps": 100.0, "latency_ms": 0.05},
}
DEFAULT_KV_LINK = "roce_400g"  # the llm-d P/D guide's fabric (measurements PD-L1, S-LLMD-PD)


class KvTransferSpec(BaseModel):
    """A prefill-to-decode link: each transfer takes bytes / bandwidth + latency."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str = "custom"
    gbps: Measure  # gigabits per second, one direction
    latency_ms: MeasureOrZero = 0.0

    def transfer_ms(self, nbytes: int) -> float:
        """bytes * 8 / (gbps * 1e9) s = bytes * 8 / (gbps * 1e6) ms, plus the latency."""
        return nbytes * 8 / (self.gbps * 1e6) + self.latency_ms


def _link(value: Any) -> Any:
    if isinstance(value, str):
        if value not in KV_LINK_PRESETS:
            raise ValueError(
                f"unknown kv_transfer preset {value!r} (known: {', '.join(KV_LINK_PRESETS)})"
            )
        return {"name": value, **KV_LINK_PRESETS[value]}
    return value


class PoolSpec(ContinuousBatchingConfig):
    """One pool: every per-replica setting of continuous_batching, a name and a role."""

    service_model: Literal["continuous_batching"] = "continuous_batching"
    name: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9_-]+$")]
    role: PoolRole = "mixed"

    @model_validator(mode="after")
    def _decode_ttft_is_not_its_own(self) -> PoolSpec:
        # a decode pool's client TTFT is mostly the prefill pool's queue and the transfer:
        # scaling decode replicas on it would chase a delay they do not cause
        # (docs/autoscaling.md, "Pools")
        if self.role == "decode" and self.autoscale and self.autoscale.metric == "ttft_p90_ms":
            raise SubfieldError(
                "autoscale.metric",
                "ttft_p90_ms does not measure a decode pool (its first "
                "token waits on the prefill pool and the transfer); scale it on queue_depth, "
                "kv_utilization or running (docs/autoscaling.md)",
            )
        return self

    @model_validator(mode="after")
    def _decode_pools_cache_nothing(self) -> PoolSpec:
        if self.role == "decode" and self.prefix_caching:
            raise ValueError(
                "prefix_caching: a decode pool receives whole prompts' KV; caching on the "
                "decode side is not modelled (docs/fleets.md)"
            )
        return self


class PooledClusterConfig(BaseModel):
    """`cluster.pools`: the pools in declaration order, and the P/D link."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    service_model: Literal["pools"] = "pools"
    pools: Annotated[list[PoolSpec], Field(min_length=1)]
    kv_transfer: Annotated[KvTransferSpec, BeforeValidator(_link)] = Field(
        default_factory=lambda: KvTransferSpec.model_validate(_link(DEFAULT_KV_LINK))
    )

    @model_validator(mode="after")
    def _layout(self) -> PooledClusterConfig:
        check_layout(self.pools)
        return self

    # --- what the rest of simsched reads of a cluster ------------------------------------------
    @property
    def replicas(self) -> int:
        return sum(pool.replicas for pool in self.pools)

    @property
    def block_size(self) -> int:
        return self.pools[0].block_size

    @property
    def kv_block_tokens(self) -> int:
        return self.block_size

    @property
    def total_kv_blocks(self) -> int:
        return sum(pool.total_kv_blocks for pool in self.pools)

    @property
    def prefix_caching(self) -> bool:
        """Whether any pool reads prompt prefixes (the workload then builds them)."""
        return any(uses_prefixes(pool) for pool in self.pools)

    def models(self) -> list[str]:
        return list(dict.fromkeys(pool.model.name for pool in self.pools))

    def pool(self, name: str) -> PoolSpec:
        return next(pool for pool in self.pools if pool.name == name)


def check_layout(pools: list[PoolSpec]) -> None:
    """Unique names, one block size, and for each model a way in and a way to decode."""
    names = [pool.name for pool in pools]
    duplicate = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if duplicate is not None:
        raise ValueError(f"duplicate pool name {duplicate!r}")
    sizes = sorted({pool.block_size for pool in pools})
    if len(sizes) > 1:
        raise ValueError(
            f"pools use block sizes {sizes}: every pool must use one block_size (the gateway "
            "counts a request's KV blocks once)"
        )
    for model in dict.fromkeys(pool.model.name for pool in pools):
        roles = {pool.role for pool in pools if pool.model.name == model}
        if "prefill" in roles and "decode" not in roles:
            raise ValueError(f"model {model!r} has a prefill pool but no decode pool")
        if "decode" in roles and "prefill" not in roles:
            raise ValueError(f"model {model!r} has a decode pool but no prefill pool")


def check_pool_slots(pools: list[PoolSpec], most: int) -> None:
    """The replica slots every pool builds (an autoscaled one 2 max - min: a draining slot and
    its replacement may coexist, as for a single pool) stay within limits.max_replicas."""
    slots = sum(replica_slots(pool) for pool in pools)
    if slots > most:
        raise ValueError(
            f"cluster.pools need {slots:,} replica slots (an autoscaled pool 2 x max - min), "
            f"more than limits.max_replicas ({most:,}); raise that limit if the machine can "
            "simulate them"
        )


def check_tenant_pools(cluster: Any, tenants: list[Any]) -> None:
    """Each tenant's `model` is served, and its `pools` exist, serve it and let it in."""
    models = cluster.models() if hasattr(cluster, "models") else _single_model(cluster)
    for index, tenant in enumerate(tenants):
        where = f"tenants[{index}] ({tenant.id})"
        model = tenant.model
        if model is not None and models is None:  # a token_server names no model
            raise ValueError(f"{where}: model: the cluster serves no named model")
        if model is not None and models is not None and model not in models:
            raise ValueError(f"{where}: model {model!r} is served by no pool (known: {models})")
        if model is None and models is not None and len(models) > 1:
            raise ValueError(f"{where}: model is required: the pools serve {', '.join(models)}")
        if tenant.pools is None:
            continue
        if not hasattr(cluster, "pools"):
            raise ValueError(f"{where}: pools: the cluster has no cluster.pools")
        chosen = model or models[0]
        for name in tenant.pools:
            known = [p.name for p in cluster.pools]
            if name not in known:
                raise ValueError(f"{where}: unknown pool {name!r} (known: {', '.join(known)})")
            if cluster.pool(name).model.name != chosen:
                raise ValueError(f"{where}: pool {name!r} does not serve model {chosen!r}")
        if not any(cluster.pool(n).role in ENTRY_ROLES for n in tenant.pools):
            raise ValueError(f"{where}: pools: name a mixed or prefill pool, where requests start")


def _single_model(cluster: Any) -> list[str] | None:
    model = getattr(cluster, "model", None)
    return None if model is None else [model.name]
