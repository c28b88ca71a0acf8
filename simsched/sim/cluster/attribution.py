"""Who used each iteration: the replica's iteration observer, and per-tenant cost and energy.

A replica calls its `IterationObserver` once per stepped iteration (`stepped`, with the batch's
prefill chunks and its decoding set) and once per fast-forward jump (`jumped`, with the end
instants of the decode-only iterations it stands for, which the observer walks one by one).
The observer also makes the replica's `DecodeSet`, so an implementation that needs more than the
sums over all decoding sequences (per tenant, per pool) keeps them as sequences come and go.

`NoAttribution` watches nothing (the default: a run without `chargeback` is unchanged).
`TenantAttribution` splits each iteration's time by the latency model's own terms
(docs/chargeback.md):

    T = shared + sum over requests r of own_r
    tenant t gets  own_t + shared * weight_t / sum(weight)

where a request's own time is what only it costs (its attention pairs, the KV it reads, its
per-sequence CPU time and all-reduce bytes) and the shared time (the GEMM term, a max of compute
and the weight read, and the fixed per-iteration time) is split by the GEMM FLOPs each request's
tokens take. The time and the energy of an iteration are both split by these shares, so the
tenants' time adds up to the busy time exactly (up to float rounding).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from simsched.config.chargeback import resolved_power
from simsched.sim.cluster.latency import LinearLatency, RooflineLatency
from simsched.sim.cluster.sequences import DecodeSet, Seq


class IterationObserver(Protocol):
    """What a replica tells about each iteration it runs (see the module's docstring)."""

    def decode_set(self, block_size: int) -> DecodeSet:
        """The replica's set of decoding sequences (asked once, when it is built)."""

    def stepped(
        self, replica: int, start: float, end: float, chunks: list, decoding: DecodeSet, it: int
    ) -> None:
        """Iteration `it` ran from `start` to `end`: prefill `chunks` as (seq, tokens, blocks),
        each seq's `done` still the tokens computed before it, and every decoding sequence."""

    def jumped(
        self, replica: int, start: float, ends: list[float], decoding: DecodeSet, first: int
    ) -> None:
        """Decode-only iterations `first`, `first + 1`, ... ran from `start`, ending at `ends`."""

    def ledger(self) -> ChargebackLedger | None:
        """What was measured, at the end of the run (None: nothing)."""


class NoAttribution:
    """The default observer: nothing measured."""

    def decode_set(self, block_size: int) -> DecodeSet:
        return DecodeSet(block_size)

    def stepped(self, *args: Any) -> None:
        pass

    def jumped(self, *args: Any) -> None:
        pass

    def ledger(self) -> None:
        return None


NO_ATTRIBUTION = NoAttribution()


class TenantDecodeSet(DecodeSet):
    """A `DecodeSet` that also keeps each tenant's decoding sequences and summed offsets, so a
    tenant's decode context in iteration `it` is `count[t] * it + off[t]` in O(1)."""

    def __init__(self, block_size: int, tenants: int) -> None:
        super().__init__(block_size)
        self.tenant_count = [0] * tenants
        self.tenant_off = [0] * tenants

    def add(self, seq: Seq, off: int, finish_it: int) -> None:
        super().add(seq, off, finish_it)
        tenant = seq.request.tenant
        self.tenant_count[tenant] += 1
        self.tenant_off[tenant] += off

    def _forget(self, seq: Seq) -> None:
        tenant = seq.request.tenant
        self.tenant_count[tenant] -= 1
        self.tenant_off[tenant] -= seq.off
        super()._forget(seq)


# --- how a latency model's time divides ---------------------------------------------------
class RooflineSplit:
    """The roofline's terms (latency.RooflineLatency), as own time, GEMM weight and utilisation."""

    def __init__(self, latency: RooflineLatency) -> None:
        self.m = latency

    def prefill_own(self, tokens: int, pairs: int, cached: int) -> float:
        m = self.m
        return m.attention_ms(tokens, pairs) + m.kv_ms * (cached + tokens) + m.comm_ms * tokens

    def decode_own(self, seqs: int, context: int) -> float:
        m = self.m
        return m.kv_ms * context + (m.seq_ms + m.comm_ms) * seqs

    def prefill_weight(self, tokens: int) -> float:
        return self.m.token_ms * tokens

    def decode_weight(self, seqs: int) -> float:
        return (self.m.token_ms + self.m.head_ms) * seqs

    def utilisation(
        self, tokens: int, pairs: int, kv_tokens: int, seqs: int, span: float
    ) -> tuple[float, float]:
        """(compute, memory): time the tensor cores and HBM would need at the model's achieved
        rates, over the iteration's time."""
        m = self.m
        # `tokens` counts the decodes too; the window bounds the prefill tokens' pairs only
        compute = m.token_ms * tokens + m.head_ms * seqs + m.attention_ms(tokens - seqs, pairs)
        memory = m.weights_ms + m.kv_ms * kv_tokens
        return min(1.0, compute / span), min(1.0, memory / span)


class LinearSplit:
    """The linear model: per-token and per-sequence terms are own time, `base` is shared by
    tokens. It has no compute/memory split: a busy GPU counts as fully utilised."""

    def __init__(self, latency: LinearLatency) -> None:
        self.m = latency

    def prefill_own(self, tokens: int, pairs: int, cached: int) -> float:
        return self.m.prefill * tokens

    def decode_own(self, seqs: int, context: int) -> float:
        return self.m.decode * seqs + self.m.attention * context / 1000

    def prefill_weight(self, tokens: int) -> float:
        return float(tokens)

    def decode_weight(self, seqs: int) -> float:
        return float(seqs)

    def utilisation(self, *args: Any) -> tuple[float, float]:
        return 1.0, 1.0


SPLITS = {RooflineLatency: RooflineSplit, LinearLatency: LinearSplit}


def split_for(latency: Any) -> RooflineSplit | LinearSplit:
    kind = SPLITS.get(type(latency))
    if kind is None:
        raise TypeError(f"chargeback cannot split {type(latency).__name__} iterations")
    return kind(latency)


# --- power -------------------------------------------------------------------------------
class BusiestUnitPower:
    """watts = idle + (max - idle) * max(compute utilisation, memory utilisation)."""

    def __init__(self, idle_watts: float, max_watts: float) -> None:
        self.idle = idle_watts
        self.dynamic = max_watts - idle_watts

    def watts(self, compute: float, memory: float) -> float:
        return self.idle + self.dynamic * max(compute, memory)


# --- the ledger ----------------------------------------------------------------------------
@dataclass(frozen=True)
class ChargebackLedger:
    """Per tenant (declaration order): busy ms in prefill and in decode, and joules; per run:
    busy ms and joules over all iterations, GPUs per replica and idle watts per GPU."""

    prefill_ms: tuple[float, ...]
    decode_ms: tuple[float, ...]
    energy_j: tuple[float, ...]
    busy_ms: float
    busy_energy_j: float
    gpus_per_replica: int
    idle_watts: float
    max_watts: float


class ReplicaSums:
    """One replica's running sums: per tenant, and over all its iterations."""

    __slots__ = ("prefill_ms", "decode_ms", "energy_j", "busy_ms", "busy_energy_j")

    def __init__(self, tenants: int) -> None:
        self.prefill_ms = [0.0] * tenants
        self.decode_ms = [0.0] * tenants
        self.energy_j = [0.0] * tenants
        self.busy_ms = 0.0
        self.busy_energy_j = 0.0


class TenantAttribution:
    """Splits every iteration of every replica among the tenants (see the module docstring)."""

    def __init__(
        self, tenants: int, split: RooflineSplit | LinearSplit, power: BusiestUnitPower, gpus: int
    ) -> None:
        self.tenants = tenants
        self.split = split
        self.power = power
        self.gpus = gpus  # per replica (tensor parallel)
        # per replica, summed in replica order at the end: a jump adds its iterations when it
        # ends, so across replicas the order of additions differs with fast-forward on and off
        self.sums: dict[int, ReplicaSums] = {}

    def decode_set(self, block_size: int) -> DecodeSet:
        return TenantDecodeSet(block_size, self.tenants)

    def stepped(
        self, replica: int, start: float, end: float, chunks: list, decoding: Any, it: int
    ) -> None:
        n = self.tenants
        tokens, pairs, cached = [0] * n, [0] * n, [0] * n
        for seq, chunk, _ in chunks:
            tenant, done = seq.request.tenant, seq.done
            tokens[tenant] += chunk
            pairs[tenant] += chunk * done + chunk * (chunk + 1) // 2
            cached[tenant] += done
        self._iteration(self._sums(replica), end - start, tokens, pairs, cached, decoding, it)

    def jumped(
        self, replica: int, start: float, ends: list[float], decoding: Any, first: int
    ) -> None:
        zeros = [0] * self.tenants
        sums = self._sums(replica)
        for offset, end in enumerate(ends):
            self._iteration(sums, end - start, zeros, zeros, zeros, decoding, first + offset)
            start = end

    def _sums(self, replica: int) -> ReplicaSums:
        sums = self.sums.get(replica)
        if sums is None:
            sums = self.sums[replica] = ReplicaSums(self.tenants)
        return sums

    def _iteration(self, sums, span, tokens, pairs, cached, decoding, it: int) -> None:
        split = self.split
        seqs = decoding.tenant_count
        contexts = [count * it + off for count, off in zip(seqs, decoding.tenant_off, strict=True)]
        own_prefill = [split.prefill_own(*t) for t in zip(tokens, pairs, cached, strict=True)]
        own_decode = [split.decode_own(s, c) for s, c in zip(seqs, contexts, strict=True)]
        weight_prefill = [split.prefill_weight(t) for t in tokens]
        weight_decode = [split.decode_weight(s) for s in seqs]
        shared = span - sum(own_prefill) - sum(own_decode)
        per_weight = shared / (sum(weight_prefill) + sum(weight_decode))
        kv_tokens = sum(cached) + sum(tokens) + sum(contexts)
        batch = (sum(tokens) + sum(seqs), sum(pairs), kv_tokens, sum(seqs))
        # an iteration of no time (a linear model of zeros) uses no energy
        used = split.utilisation(*batch, span) if span > 0 else (0.0, 0.0)
        joules = self.gpus * self.power.watts(*used) * span / 1000.0
        per_ms = joules / span if span > 0 else 0.0
        for t in range(self.tenants):
            prefill = own_prefill[t] + per_weight * weight_prefill[t]
            decode = own_decode[t] + per_weight * weight_decode[t]
            sums.prefill_ms[t] += prefill
            sums.decode_ms[t] += decode
            sums.energy_j[t] += per_ms * (prefill + decode)
        sums.busy_ms += span
        sums.busy_energy_j += joules

    def ledger(self) -> ChargebackLedger:
        replicas = [self.sums[index] for index in sorted(self.sums)]

        def total(name: str) -> tuple[float, ...]:
            return tuple(sum(getattr(r, name)[t] for r in replicas) for t in range(self.tenants))

        return ChargebackLedger(
            total("prefill_ms"),
            total("decode_ms"),
            total("energy_j"),
            sum(r.busy_ms for r in replicas),
            sum(r.busy_energy_j for r in replicas),
            self.gpus,
            self.power.idle,
            self.power.idle + self.power.dynamic,
        )


def attribution_factory(scenario: Any):
    """`latency -> IterationObserver` for a scenario: per-tenant attribution when it asks for
    chargeback, nothing otherwise."""
    spec = scenario.chargeback
    if spec is None:
        return lambda latency: NO_ATTRIBUTION
    cluster = scenario.cluster
    idle, peak = resolved_power(spec, getattr(cluster.gpu, "name", "custom"))
    power = BusiestUnitPower(idle, peak)
    tenants = len(scenario.tenants)
    return lambda latency: TenantAttribution(tenants, split_for(latency), power, cluster.tp)
